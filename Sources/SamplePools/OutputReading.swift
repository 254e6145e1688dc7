import MediaIndex
import MediaVocabulary

/// How one output reads its track: the one value the output's loop switches on (the worker's OutputStreamer.run).
/// Planning, like `FramePlan` and `RangeSchedule`: no GStreamer, no socket. `Keep` is what a completed ReadFrames
/// offers its pipeline under (the worker's kept-pipeline key).
public enum OutputReading<Keep: Sendable>: Sendable {
    /// Passthrough: the stored samples of each range as the demuxer gives them (copy slots get room for the next,
    /// larger sample). `randomAccess`: RangeEnded after each range, then ResetOutput or FinishOutput.
    case passthrough(randomAccess: Bool)
    /// Decoded, each range cut by GStreamer's accurate seek and clipping (audio; video without a frame index).
    case clipped(randomAccess: Bool)
    /// Decoded video, each range read by the frame index (`IndexedRead`); `first` is the one the pipeline starts at.
    case indexed(first: IndexedRead, randomAccess: Bool)
    /// ReadFrames: the plan's frames in request order; a completed output offers its pipeline under `keep`.
    case frames(FramePlan, keep: Keep)

    /// Whether ResetOutput may give the output more ranges.
    public var randomAccess: Bool {
        switch self {
        case .passthrough(let randomAccess), .clipped(let randomAccess), .indexed(_, let randomAccess): randomAccess
        case .frames: false
        }
    }

    public var isPassthrough: Bool {
        if case .passthrough = self { return true }
        return false
    }
}

/// How a decoded video range is read by the frame index (`FrameIndex.read`): the frames displayed in it, an
/// accurate seek to the first of them, decoding ending after the last sample they need; the decoder's other frames
/// are dropped before conversion.
public struct IndexedRead: Sendable {
    public let index: FrameIndex
    /// The range asked for.
    public let range: MediaTimeRange
    public let seek: MediaTimeRange
    public let lastNeededSample: Int64?
    /// The frames delivered; nil: every frame the decoder gives (a read of the whole track).
    public let frames: [Int]?

    public init(_ range: MediaTimeRange, index: FrameIndex) {
        (self.index, self.range) = (index, range)
        let read = index.read(range)
        // The whole track: every decoded frame goes out (durations still by the index), even one the index does not
        // know, and the decoder runs to the end of the stream — not to the index's last sample, which a stream the
        // parse-only pass saw differently (an MPEG-TS whose frame size changes) may place early.
        let everything = read.frames.count == index.frames.count && read.frames.first == 0
        seek = everything ? range : read.seek
        lastNeededSample = everything ? nil : read.lastNeededSample
        frames = everything ? nil : read.frames
    }

    /// Whether the range must be read again by GStreamer's clipping: it was to deliver frames and `delivered` none —
    /// an index whose times are not the demuxer's (a planted cache entry) matches no decoded frame.
    public func needsFallback(delivered: Int) -> Bool {
        delivered == 0 && frames?.isEmpty == false
    }
}
