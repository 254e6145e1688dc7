import MediaVocabulary

/// A video track's frame timing as AVAssetTrack defines it, from every frame's presentation time (the frame index):
/// `nominalFrameRate` is the frame count over the track's span, and `minFrameDuration` the smallest difference
/// between consecutive presentation times in display order. Both are computed on the track's grid (its own
/// timescale), so they are the same whichever container or demuxer gave the times (docs/PROTOCOL.md §7.2).
public struct FrameTiming: Sendable, Equatable {
    /// Frames in the track.
    public var frames: Int
    /// The first frame's presentation time on the grid, in `timescale` units.
    public var start: Int64
    /// The track's span on the grid: the last frame's end (presentation time + duration, display order) minus the
    /// first frame's presentation time, in `timescale` units.
    public var span: Int64
    /// Units per second of `span` and `minFrameDuration`.
    public var timescale: Int32
    /// The smallest positive difference between consecutive presentation times; for a single frame (or frames
    /// all at one time), the span.
    public var minFrameDuration: MediaTime

    /// frames / span seconds, divided once from the exact integers; 0 when the span is not positive.
    public var nominalFrameRate: Double {
        span > 0 ? Double(Int128(frames) * Int128(timescale)) / Double(span) : 0
    }

    /// The timing of `index` (times in the demuxer's nanoseconds) on `grid`: each time first to its grid time
    /// (exact for the demuxer's own timestamps), then the differences; nil for an index without frames.
    public init?(_ index: FrameIndex, grid: TimeGrid) {
        guard let end = index.end else { return nil }
        let times = index.frames.map { grid.time(nanoseconds: $0.presentationTime).value }
        frames = index.frames.count
        timescale = grid.timescale
        start = times[0]
        span = grid.time(nanoseconds: end).value - start
        let smallest = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 0 }.min()
        minFrameDuration = MediaTime(value: smallest ?? span, timescale: grid.timescale)
    }
}
