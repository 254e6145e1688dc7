import TrackdProtocol

extension FrameIndex {
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

    /// A run of needed samples: first and last wanted frame (indices), first and last needed decode position.
    private typealias Run = (first: Int, last: Int, start: Int, needed: Int)

    /// Plans the decoding of `wanted` frame indices: ranges, ascending, each decoded after one accurate seek, such
    /// that every GOP is decoded once and only as far as a wanted frame needs. A run of needed samples goes from
    /// the sync sample before a wanted frame's decode position to the last decode position a wanted frame of that
    /// GOP has; runs less than `maxSkip` samples apart share a range.
    public func plan(_ wanted: Set<Int>, maxSkip: Int = FrameIndex.maxSkippedSamples) -> [DecodeRange] {
        var runs: [Run] = []
        for i in wanted.sorted() {
            let position = frames[i].decodePosition
            let gopStart = syncBefore[position]
            if let run = runs.last, gopStart <= run.needed {
                runs[runs.count - 1] = (run.first, i, run.start, max(run.needed, position))
            } else {
                runs.append((i, i, gopStart, position))
            }
        }
        var groups: [[Run]] = []
        for run in runs {
            if let previous = groups.last?.last, run.start - previous.needed - 1 <= maxSkip {
                groups[groups.count - 1].append(run)
            } else {
                groups.append([run])
            }
        }
        return groups.map(decodeRange)
    }

    /// The range that decodes a group of runs (ascending, non-empty).
    private func decodeRange(_ group: [Run]) -> DecodeRange {
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
