import TrackdProtocol
import TrackClient

/// A frame `frame` and `contact-sheet` show: its index in the track and the decoded sample, whose presentation
/// time is the frame's own.
struct ShownFrame {
    var index: UInt64
    var sample: SampleBuffer

    /// The frames shown at `times`, decoded into `settings`, by ReadFrames (`Asset.frames(at:)`).
    static func at(_ times: [MediaTime], _ asset: Asset, _ track: AssetTrack,
                   settings: [String: SettingValue]) throws(TrackError) -> [ShownFrame] {
        try asset.frames(at: times, track: track, outputSettings: settings).map { ShownFrame(index: $0.index, sample: $0.sample) }
    }
}
