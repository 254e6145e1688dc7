import TrackdProtocol
import TrackClient

/// A frame `frame` and `contact-sheet` show: its index in the track and the decoded sample, whose presentation
/// time is the frame's own.
struct ShownFrame {
    var index: UInt64
    var sample: SampleBuffer

    /// The frames shown at `times`, decoded into `settings`: by ReadFrames (`Asset.frames(at:)`), or, on a track
    /// ReadFrames refuses with −11829 because it has no frame index (an AVI stream with B-pictures, PROTOCOL.md
    /// §7.2), each as the first frame of a decoded range starting at its time — the frame shown then, at its tick,
    /// open GOPs included (§7.2), decoded with the same output settings. There the index is the frame's tick count
    /// from the track's start at its frame rate, and a time at or after the end names the frame at the last
    /// tick of the frame rate before it.
    static func at(_ times: [MediaTime], _ asset: Asset, _ track: AssetTrack,
                   settings: [String: SettingValue]) throws(TrackError) -> [ShownFrame] {
        do {
            return try asset.frames(at: times, track: track, outputSettings: settings)
                .map { ShownFrame(index: $0.index, sample: $0.sample) }
        } catch where error.knownCode == .fileFailedToParse {
            var frames: [ShownFrame] = []
            for time in times { frames.append(try unindexed(time, asset, track, settings: settings)) }
            return frames
        }
    }

    /// The frame shown at `time` on a track without a frame index: the first sample of a range starting there.
    static func unindexed(_ time: MediaTime, _ asset: Asset, _ track: AssetTrack,
                          settings: [String: SettingValue]) throws(TrackError) -> ShownFrame {
        let start = track.timeRangeStart.isNumeric ? track.timeRangeStart.seconds : 0
        let end = track.duration.isNumeric ? start + track.duration.seconds : Double.infinity
        var from = time
        // At or after the end (or in the last half tick of the track's timescale before it, where the last frame is
        // shown either way): the last tick of the frame rate before the end, where GenerateImage finds the last frame.
        if track.time(seconds: time.seconds).seconds >= end, track.nominalFrameRate > 0 {
            let ticks = ((end - start) * track.nominalFrameRate - 1e-6).rounded(.up)
            from = track.time(seconds: start + max(0, ticks - 1) / track.nominalFrameRate)
        }
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        defer { reader.cancelReading() }
        let started = misuse { () throws(AssetReaderUsageError) -> Bool in
            try reader.setTimeRange(MediaTimeRange(start: from, duration: .positiveInfinity))
            try reader.add(output)
            return try reader.startReading()
        }
        guard started else { throw reader.error ?? TrackError(.unknown, "startReading failed") }
        guard let sample = misuse({ () throws(AssetReaderUsageError) in try output.copyNextSampleBuffer() }) else {
            throw reader.error ?? TrackError(.unknown, "trackd returned no frame for \(time)")
        }
        let offset = (sample.presentationTimeStamp.seconds - start) * track.nominalFrameRate
        return ShownFrame(index: UInt64(max(0, offset.rounded())), sample: sample)
    }
}
