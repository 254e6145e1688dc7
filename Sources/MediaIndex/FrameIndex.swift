import MediaVocabulary

/// Every frame of a video track: presentation time, duration, whether it is a sync sample, and where it is in
/// decode order. Made once per track — from an MP4/MOV's sample tables (`ContainerIndex`), else by GstBridge's
/// parse-only pass (`FrameIndex.build`: the track's stored samples through the passthrough pipeline, demuxing, no
/// decoding) — and kept by the frame-index cache (IndexCache stores `Frame`s).
///
/// The rules ReadFrames follows live here: which frame a requested time names (`frameDisplayed(at:)`) and what to
/// decode for a set of frames (`plan`, DecodePlan.swift).
public struct FrameIndex: Sendable {
    /// One frame: presentation time and duration (stream time, the clock decoded samples report, in nanoseconds),
    /// sync, and position in decode order. The frame-index cache's blob (IndexCacheWire) holds these.
    public struct Frame: Equatable, Sendable {
        public var presentationTime: Int64
        public var duration: Int64
        public var isSync: Bool
        public var decodePosition: Int

        public init(presentationTime: Int64, duration: Int64, isSync: Bool, decodePosition: Int) {
            self.presentationTime = presentationTime
            self.duration = duration
            self.isSync = isSync
            self.decodePosition = decodePosition
        }
    }

    /// One stored sample as a demuxer or a sample table gives it, in decode order; `duration` nil: not known.
    public struct StoredSample: Equatable, Sendable {
        public var presentationTime: Int64
        public var duration: Int64?
        public var isSync: Bool

        public init(presentationTime: Int64, duration: Int64?, isSync: Bool) {
            self.presentationTime = presentationTime
            self.duration = duration
            self.isSync = isSync
        }
    }

    /// What the frames' times are, and so how a set of them is decoded (`plan`).
    public enum Timing: Sendable, Equatable {
        /// Each stored sample's own presentation time: which sample holds each frame is known.
        case stored
        /// An elementary stream's (GstBridge's `FrameIndex.untimed`): its samples carry no times, frame k is at the
        /// sum of the durations before it, where the decoder puts it only when it decodes from the stream's
        /// beginning; the decode positions are those times' (decode order), not the frames'.
        case fromStart
        /// An AVI track with B-pictures (GstBridge's `FrameIndex.decodeTimed`): frame k (presentation order) is at
        /// the k-th stored decode time, where the decoder shows it; which sample holds it is not known, only where
        /// the key frames are.
        case decodeTimes
    }

    /// Presentation order: frame index i is `frames[i]`.
    public let frames: [Frame]
    public let timing: Timing
    /// decode position → the decode position of the last sync sample at or before it (where decoding must start).
    let syncBefore: [Int]
    /// decode position → that sample's presentation time (how DecodeStop recognises it among the stored samples);
    /// -1 where no frame has that position.
    let presentationAtPosition: [Int64]

    public init(frames: [Frame], timing: Timing = .stored) {
        self.frames = frames
        self.timing = timing
        var decodeOrder = [Frame?](repeating: nil, count: frames.count)
        for f in frames where f.decodePosition >= 0 && f.decodePosition < frames.count { decodeOrder[f.decodePosition] = f }
        var last = 0
        syncBefore = decodeOrder.enumerated().map { position, frame in
            if frame?.isSync == true { last = position }
            return last
        }
        presentationAtPosition = decodeOrder.map { $0?.presentationTime ?? -1 }
    }

    /// The index of stored samples as a parse-only pass pulls them (decode order): in presentation order, and a
    /// frame without a duration (none, 0 or less) lasts until the next one — the last one as long as the one before.
    public init(parsedSamples stored: [StoredSample], timing: Timing = .stored) {
        var frames = Self.presentationOrder(stored)
        for i in frames.indices where frames[i].duration <= 0 {
            if i + 1 < frames.count {
                frames[i].duration = frames[i + 1].presentationTime - frames[i].presentationTime
            } else if i > 0 {
                frames[i].duration = frames[i - 1].duration
            }
        }
        self.init(frames: frames, timing: timing)
    }

    /// Stored samples (decode order) as frames in presentation order, each with its decode position; samples with
    /// the same presentation time keep their decode order. An unknown duration is 0.
    public static func presentationOrder(_ stored: [StoredSample]) -> [Frame] {
        let order = stored.indices.sorted { (stored[$0].presentationTime, $0) < (stored[$1].presentationTime, $1) }
        return order.map { Frame(presentationTime: stored[$0].presentationTime, duration: stored[$0].duration ?? 0,
                                 isSync: stored[$0].isSync, decodePosition: $0) }
    }

    /// Where the track ends (ns): the last frame's presentation time plus its duration, at least 1 ns; nil for an
    /// index without frames.
    public var end: Int64? {
        frames.last.map { $0.presentationTime + max($0.duration, 1) }
    }

    /// This index with its last frame displayed until `trackEnd` (ns, the track's end by its container) when the
    /// track ends inside that frame's stored duration — an MP4 edit that ends inside its last sample (ffmpeg's VFR
    /// MP4: the last frame stored as 0.1 s, the edit ending 34 ms after its PTS) — so that the frame is displayed, and
    /// its decoded duration lasts, until the track's end (PROTOCOL.md §7.1). Unchanged otherwise (nil; an end at or
    /// before the last frame's PTS, which no container means; one after the stored duration).
    public func endingAt(_ trackEnd: Int64?) -> FrameIndex {
        guard let trackEnd, let last = frames.last, let end, trackEnd < end, trackEnd > last.presentationTime else {
            return self
        }
        var frames = self.frames
        frames[frames.count - 1].duration = trackEnd - last.presentationTime
        return FrameIndex(frames: frames, timing: timing)
    }

    /// The frame displayed at `ns` (stream time): a frame is displayed from its presentation time until the next
    /// frame's, in presentation order — its own duration does not matter, so there are no gaps and no overlaps —
    /// and the last frame until the track's `end`. A time before the first frame is the first frame (it is what is
    /// shown there); nil at or after `end`. Of frames with the same presentation time, the last one is displayed.
    public func frameDisplayed(at ns: Int64) -> Int? {
        guard let end, ns < end else { return nil }
        // The last frame whose presentation time is at or before ns (the first one when none is).
        var low = 0, high = frames.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if frames[mid].presentationTime <= ns { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// Until when frame `i` is displayed (ns): the next frame's presentation time, the last frame until `end`.
    /// Every decoded frame's duration is this interval (`displayEnd(of:) - presentationTime`), whatever the
    /// container says its duration is.
    public func displayEnd(of i: Int) -> Int64 {
        i + 1 < frames.count ? frames[i + 1].presentationTime : end ?? frames[i].presentationTime
    }

    /// The frames a time range delivers (AVAssetReader's rule): every frame displayed at some time in
    /// [start, start + duration) — from the frame displayed at the start to the last one presenting before the end
    /// (a duration of +infinity or one past the track: to the last frame). Empty for an empty range, one starting
    /// at or after the track's end, and one ending at or before the first frame's presentation time (nothing is
    /// displayed before it: a range wholly before a track that starts later than 0). Frames are displayed as
    /// `frameDisplayed(at:)` says; a frame sharing its presentation time with the next one is never displayed and
    /// is left out.
    public func framesDisplayed(in range: MediaTimeRange) -> [Int] {
        guard let start = streamTime(range.start), let first = frameDisplayed(at: start) else { return [] }
        var stop = frames.count  // the frames before `stop` present before the range's end
        if !range.duration.isPositiveInfinity {
            guard let end = Self.rangeEnd(range).flatMap(streamTime), end > start,
                  end > frames[first].presentationTime else { return [] }
            var low = first, high = frames.count  // the first frame at or after `end`
            while low < high {
                let mid = (low + high) / 2
                if frames[mid].presentationTime < end { low = mid + 1 } else { high = mid }
            }
            stop = max(low, first + 1)  // the frame displayed at the start presents at or before it (or is frame 0)
        }
        return (first..<stop).filter { displayEnd(of: $0) > frames[$0].presentationTime }
    }

    /// The end of a numeric range, exact when start and duration share a timescale (the sum of two rounded times can
    /// be a nanosecond short of the exact end), else in ns; nil when it is not numeric.
    public static func rangeEnd(_ range: MediaTimeRange) -> MediaTime? {
        let s = range.start, d = range.duration
        if s.isNumeric, d.isNumeric, s.timescale == d.timescale {
            let (sum, overflow) = s.value.addingReportingOverflow(d.value)
            if !overflow { return MediaTime(value: sum, timescale: s.timescale) }
        }
        guard let start = s.nanoseconds, let duration = d.nanoseconds else { return nil }
        let (sum, overflow) = start.addingReportingOverflow(duration)
        return .nanoseconds(overflow ? (duration < 0 ? .min : .max) : sum)
    }

    /// A requested time on the frames' clock (stream time, ns). A whole number of nanoseconds is itself. A rational
    /// time that is not lies between two, and demuxers round a frame's stored time either way (qtdemux up, others
    /// down): `nanoseconds` truncates, so when a frame presents at the other of the two, the time is that frame's
    /// (k·512/15360 s names frame k of a 30 fps MP4, whose PTS qtdemux gives as ⌈k/30 s⌉ in ns).
    public func streamTime(_ t: MediaTime) -> Int64? {
        guard let ns = t.nanoseconds else { return nil }
        guard t.timescale > 0, t.timescale != MediaTime.nanosecondTimescale,
              (Int128(t.value) * 1_000_000_000) % Int128(t.timescale) != 0, !frames.isEmpty else { return ns }
        let (other, overflow) = ns.addingReportingOverflow(t.value < 0 ? -1 : 1)
        guard !overflow else { return ns }
        return frames[nearest(other)].presentationTime == other ? other : ns
    }

    /// The frame index a ReadFrames request names: for a time, the frame displayed then (`frameDisplayed(at:)`);
    /// for an index, itself. `seconds`: how a time of the index is written in an error (the track's clock, whose
    /// frame grid's nanoseconds are not whole: PROTOCOL.md §7.1).
    public func resolve(_ request: FrameRequest,
                        seconds: (Int64) -> Double = { Double($0) / 1e9 }) throws(TrackError) -> Int {
        switch request {
        case .index(let i):
            guard i < UInt64(frames.count) else {
                throw TrackError(.invalidArgument, "frame index \(i) is out of range: the track has \(frames.count) frames (0–\(frames.count - 1))")
            }
            return Int(i)
        case .time(let t):
            // Every numeric time has nanoseconds (saturated at ±2^63).
            guard let ns = streamTime(t) else {
                throw TrackError(.invalidArgument, "frame time \(t) is not a numeric time")
            }
            guard let last = frames.last else {
                throw TrackError(.invalidArgument, "frame time \(t.seconds) s: the track has no frames")
            }
            guard let frame = frameDisplayed(at: ns) else {
                throw TrackError(.invalidArgument, "frame time \(seconds(ns)) s is after the last frame, which ends at \(seconds(last.presentationTime + last.duration)) s")
            }
            return frame
        }
    }

    /// The frame index whose presentation time is nearest `ns` (how a decoded sample is matched to its frame); the
    /// earlier one of two as near.
    public func nearest(_ ns: Int64) -> Int {
        var low = 0, high = frames.count - 1
        while low < high {
            let mid = (low + high) / 2
            if frames[mid].presentationTime < ns { low = mid + 1 } else { high = mid }
        }
        if low > 0 && Self.distance(frames[low - 1].presentationTime, ns) <= Self.distance(frames[low].presentationTime, ns) {
            return low - 1
        }
        return low
    }

    /// |a − b|, which does not fit in an Int64 when a decoded sample's time is near ±2^63 (MediaTime saturates there).
    static func distance(_ a: Int64, _ b: Int64) -> UInt64 {
        a >= b ? UInt64(bitPattern: a &- b) : UInt64(bitPattern: b &- a)
    }
}

extension FrameIndex {
    /// The frame grid of `numerator / denominator` frames per second (TimeGrid(frameRate:_:)) when this index's frames
    /// are its frames — frame k at k frames of its `frameNanoseconds`, each lasting one — as an elementary stream's
    /// parser times them by the rate it states (PROTOCOL.md §7.1); nil otherwise (a rate too fine or not positive, a
    /// frame of another length).
    public func frameGrid(rate numerator: Int64, _ denominator: Int64) -> TimeGrid? {
        guard let grid = TimeGrid(frameRate: numerator, denominator) else { return nil }
        for (k, frame) in frames.enumerated() {
            let (at, overflow) = Int64(k).multipliedReportingOverflow(by: grid.frameNanoseconds)
            guard !overflow, frame.presentationTime == at, frame.duration == grid.frameNanoseconds else { return nil }
        }
        return grid
    }
}
