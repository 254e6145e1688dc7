import IndexCache
import Protocol

/// Every frame of a video track: presentation time, duration, whether it is a sync sample, and where it is in
/// decode order. Made once per track: from an MP4/MOV's sample tables (`fromContainer`, ContainerIndex), else by a
/// parse-only pass (`build`: the track's stored samples through the passthrough pipeline, demuxing, no decoding —
/// GStreamer 1.22's demuxers do not expose their sample tables).
public struct FrameIndex: Sendable {
    /// Presentation time and duration (stream time, the clock decoded samples report, in nanoseconds), sync, and
    /// position in decode order; the same type the frame-index cache stores.
    public typealias Frame = IndexCacheWire.Frame

    /// Presentation order: frame index i is `frames[i]`.
    public let frames: [Frame]
    /// decode position → the decode position of the last sync sample at or before it (where decoding must start).
    private let syncBefore: [Int]
    /// decode position → that sample's presentation time (how DecodeStop recognises it among the stored samples).
    private let presentationAtPosition: [Int64]

    public init(frames: [Frame]) {
        self.frames = frames
        var decodeOrder = [Frame?](repeating: nil, count: frames.count)
        for f in frames where f.decodePosition >= 0 && f.decodePosition < frames.count { decodeOrder[f.decodePosition] = f }
        var last = 0
        syncBefore = decodeOrder.enumerated().map { position, frame in
            if frame?.isSync == true { last = position }
            return last
        }
        presentationAtPosition = decodeOrder.map { $0?.presentationTime ?? -1 }
    }

    /// The index from an MP4/QuickTime file's sample tables, without demuxing the track; nil for other files and
    /// for tables ContainerIndex does not reproduce exactly (then `build`).
    public static func fromContainer(source: MediaSource, trackID: UInt32) -> FrameIndex? {
        ContainerIndex.mp4(fd: source.fd, trackID: trackID).map { FrameIndex(frames: $0) }
    }

    /// Reads every stored sample of `trackID` (passthrough, no decoding).
    public static func build(source: MediaSource, trackID: UInt32) throws(TrackError) -> FrameIndex {
        let pipeline = try TrackPipeline(source: source, trackID: trackID, mode: .passthrough, timeRange: .everything)
        defer { pipeline.stop() }
        var stored: [(pts: Int64, duration: Int64?, sync: Bool)] = []
        var timeouts = 0
        pulling: while true {
            switch pipeline.pull(timeoutNs: 1_000_000_000) {
            case .sample(let s):
                timeouts = 0
                guard let pts = s.presentationTime.nanoseconds else {
                    throw TrackError(.fileFailedToParse, "sample \(stored.count) of track \(trackID) has no presentation time; frames cannot be indexed")
                }
                stored.append((pts, s.duration.nanoseconds, s.isSync))
            case .endOfStream:
                break pulling
            case .timeout:
                timeouts += 1
                if timeouts >= 30 { throw TrackError(.failedToLoadMediaData, "indexing track \(trackID): no sample for 30 s") }
            case .failed(let error):
                throw error
            }
        }
        guard !stored.isEmpty else { throw TrackError(.operationNotSupportedForAsset, "track \(trackID) has no frames") }
        let order = stored.indices.sorted { (stored[$0].pts, $0) < (stored[$1].pts, $1) }
        var frames = order.map { Frame(presentationTime: stored[$0].pts, duration: stored[$0].duration ?? 0,
                                       isSync: stored[$0].sync, decodePosition: $0) }
        // A frame without a duration lasts until the next one (the last one: as long as the one before it).
        for i in frames.indices where frames[i].duration <= 0 {
            if i + 1 < frames.count {
                frames[i].duration = frames[i + 1].presentationTime - frames[i].presentationTime
            } else if i > 0 {
                frames[i].duration = frames[i - 1].duration
            }
        }
        return FrameIndex(frames: frames)
    }

    /// The frame index a request names: for a time, the frame displayed then ([pts, pts + duration); a time before
    /// the first frame is the first frame); for an index, itself.
    public func resolve(_ request: FrameRequest) throws(TrackError) -> Int {
        switch request {
        case .index(let i):
            guard i < UInt64(frames.count) else {
                throw TrackError(.invalidArgument, "frame index \(i) is out of range: the track has \(frames.count) frames (0–\(frames.count - 1))")
            }
            return Int(i)
        case .time(let t):
            guard t.isNumeric, let ns = t.nanoseconds ?? (t.seconds.isFinite ? Int64(t.seconds * 1e9) : nil) else {
                throw TrackError(.invalidArgument, "frame time \(t) is not a numeric time")
            }
            let last = frames[frames.count - 1]
            guard ns < last.presentationTime + max(last.duration, 1) else {
                throw TrackError(.invalidArgument, "frame time \(t.seconds) s is after the last frame, which ends at \(Double(last.presentationTime + last.duration) / 1e9) s")
            }
            // The last frame whose presentation time is at or before ns.
            var low = 0, high = frames.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if frames[mid].presentationTime <= ns { low = mid } else { high = mid - 1 }
            }
            return low
        }
    }

    /// The frame index whose presentation time is nearest `ns` (how a decoded sample is matched to its frame).
    public func nearest(_ ns: Int64) -> Int {
        var low = 0, high = frames.count - 1
        while low < high {
            let mid = (low + high) / 2
            if frames[mid].presentationTime < ns { low = mid + 1 } else { high = mid }
        }
        if low > 0 && abs(frames[low - 1].presentationTime - ns) <= abs(frames[low].presentationTime - ns) { return low - 1 }
        return low
    }

    /// One accurate seek of a plan, and what to decode after it: the time range its wanted frames span, the
    /// stored samples they need (the runs from a sync sample to the last sample a wanted frame depends on, in
    /// decode order), and the last of those — decoding ends there (DecodeStop drops every other sample before the
    /// decoder and sends EOS after the last).
    public struct DecodeRange: Sendable, Equatable {
        public let range: MediaTimeRange
        /// Presentation times (stream time, ns), ascending, of the stored samples to decode; nil: every sample.
        public let neededSamples: [Int64]?
        /// Presentation time of the last sample the range needs, nil when the index cannot tell.
        public let lastNeededSample: Int64?
        /// Decode position of the range's first needed sample (a sync sample): how far into the track it starts.
        public let firstPosition: Int
    }

    /// Runs of needed samples this close (in samples) are decoded in one pass, the samples between them dropped
    /// before the decoder: the demuxer parsing a few seconds of skipped samples costs less than a flush-seek, which
    /// restarts the decoder's threads and drains it (about 10 ms a seek at 1080p on 2 CPUs, measured with a plain
    /// GStreamer pipeline, against about 2 ms a sample decoded).
    public static let maxSkippedSamples = 120

    /// Plans the decoding of `wanted` frame indices: ranges, ascending, each decoded after one accurate seek, such
    /// that every GOP is decoded once and only as far as a wanted frame needs. A run of needed samples goes from
    /// the sync sample before a wanted frame's decode position to the last decode position a wanted frame of that
    /// GOP has; runs less than `maxSkip` samples apart share a range.
    public func plan(_ wanted: Set<Int>, maxSkip: Int = FrameIndex.maxSkippedSamples) -> [DecodeRange] {
        // Runs: first and last wanted frame (indices), first and last needed decode position.
        var runs: [(first: Int, last: Int, start: Int, needed: Int)] = []
        for i in wanted.sorted() {
            let position = frames[i].decodePosition
            let gopStart = syncBefore[position]
            if let run = runs.last, gopStart <= run.needed {
                runs[runs.count - 1] = (run.first, i, run.start, max(run.needed, position))
            } else {
                runs.append((i, i, gopStart, position))
            }
        }
        var groups: [[(first: Int, last: Int, start: Int, needed: Int)]] = []
        for run in runs {
            if let previous = groups.last?.last, run.start - previous.needed - 1 <= maxSkip {
                groups[groups.count - 1].append(run)
            } else {
                groups.append([run])
            }
        }
        return groups.map { group in
            let first = group[0], last = group[group.count - 1]
            let start = frames[first.first].presentationTime
            let end = frames[last.last].presentationTime + max(frames[last.last].duration, 1)
            let positions = group.flatMap { Array($0.start...$0.needed) }
            let times = positions.map { presentationAtPosition[$0] }
            let stop = presentationAtPosition[last.needed]
            return DecodeRange(range: MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(end - start)),
                               neededSamples: times.contains { $0 < 0 } ? nil : times.sorted(),
                               lastNeededSample: stop >= 0 ? stop : nil, firstPosition: first.start)
        }
    }
}
