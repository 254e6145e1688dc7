import MediaVocabulary

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
        /// The wanted frames (indices, ascending) the range produces.
        public let frames: [Int]
    }

    /// Runs of needed samples this close (in samples) are decoded in one pass, the samples between them dropped
    /// before the decoder: the demuxer parsing a few seconds of skipped samples costs less than a flush-seek, which
    /// restarts the decoder's threads and drains it (about 10 ms a seek at 1080p on 2 CPUs, measured with a plain
    /// GStreamer pipeline, against about 2 ms a sample decoded).
    public static let maxSkippedSamples = 120

    /// A run of needed samples: the wanted frames it holds, first and last needed decode position.
    private typealias Run = (frames: [Int], start: Int, needed: Int)

    /// Plans the decoding of `wanted` frame indices: ranges, ascending in decode order, each decoded after one
    /// accurate seek, such that every GOP is decoded once and only as far as a wanted frame needs. A run of needed
    /// samples goes from the sync sample before a wanted frame's decode position to the last decode position a
    /// wanted frame of that GOP has; runs less than `maxSkip` samples apart share a range. Runs are built in decode
    /// order — a crafted ctts can show a GOP before one that is decoded earlier, and a run built in presentation
    /// order then started at the wrong sync sample and missed the frame.
    public func plan(_ wanted: Set<Int>, maxSkip: Int = FrameIndex.maxSkippedSamples) -> [DecodeRange] {
        switch timing {
        case .stored: break
        case .fromStart: return wanted.isEmpty ? [] : [decodeRange([(wanted.sorted(), 0, 0)], samples: false)]
        case .decodeTimes: return planBySeeks(wanted)
        }
        var runs: [Run] = []
        for i in wanted.sorted(by: { (frames[$0].decodePosition, $0) < (frames[$1].decodePosition, $1) }) {
            let position = frames[i].decodePosition
            let gopStart = syncBefore[position]
            if let run = runs.last, gopStart <= run.needed {
                runs[runs.count - 1].frames.append(i)
                runs[runs.count - 1].needed = max(run.needed, position)
            } else {
                runs.append(([i], gopStart, position))
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
        return groups.map { decodeRange($0) }
    }

    /// How many pictures shown before a key frame, decoded after it, a read may meet (the leading B-pictures of an
    /// open GOP): H.264 reorders at most 16 frames (`max_num_reorder_frames`), ffmpeg's MPEG-4 encoder makes at most
    /// 16 B-frames in a row. A decoded read of a `.decodeTimes` track seeks this many frames before its start
    /// (GstBridge's OpenGOPTimes).
    public static let maxLeadingPictures = 16

    /// A `.decodeTimes` index's plan: each range is read as a decoded time range is — an accurate seek
    /// `maxLeadingPictures` frames before its first wanted frame, from the key frame at or before that on, every
    /// stored sample decoded up to the range's end, which is the end of its last wanted frame. A wanted frame (in
    /// presentation order) joins the range before it unless its own seek starts at a key frame after that range's
    /// last wanted frame: then the frames between are not decoded, only that key frame's GOP. So the frames of one
    /// GOP are one range, decoded once.
    private func planBySeeks(_ wanted: Set<Int>) -> [DecodeRange] {
        var runs: [Run] = []
        for i in wanted.sorted() {
            let key = syncBefore[max(0, i - Self.maxLeadingPictures)]
            if let run = runs.last, key <= run.needed {
                runs[runs.count - 1].frames.append(i)
                runs[runs.count - 1].needed = i
            } else {
                runs.append(([i], key, i))
            }
        }
        return runs.map { decodeRange([$0], samples: false) }
    }

    /// The range that decodes a group of runs (ascending in decode order, non-empty): its time range spans its
    /// wanted frames. `samples` false: which stored samples the frames need is not known (a `.fromStart` or
    /// `.decodeTimes` index), every sample after the seek is decoded.
    private func decodeRange(_ group: [Run], samples: Bool = true) -> DecodeRange {
        let wanted = group.flatMap(\.frames).sorted()
        let start = frames[wanted[0]].presentationTime
        let end = wanted.map { frames[$0].presentationTime + max(frames[$0].duration, 1) }.max()!
        guard samples else {
            return DecodeRange(range: MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(end - start)),
                               neededSamples: nil, lastNeededSample: nil, firstPosition: group[0].start, frames: wanted)
        }
        let positions = group.flatMap { Array($0.start...$0.needed) }
        let times = positions.map { presentationAtPosition[$0] }
        let stop = presentationAtPosition[group[group.count - 1].needed]
        return DecodeRange(range: MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(end - start)),
                           neededSamples: times.contains { $0 < 0 } ? nil : times.sorted(),
                           lastNeededSample: stop >= 0 ? stop : nil, firstPosition: group[0].start, frames: wanted)
    }

    /// How a decoded time range is read: the frames it delivers (`framesDisplayed(in:)`), the seek that starts it
    /// (accurate, at the first of them — so the decoder clips nothing it delivers — with no stop) and the last
    /// stored sample they need (decoding ends after it, DecodeStop; nil: at the track's end).
    public struct RangeRead: Sendable, Equatable {
        public let frames: [Int]
        public let seek: MediaTimeRange
        public let lastNeededSample: Int64?
    }

    public func read(_ range: MediaTimeRange) -> RangeRead {
        let wanted = framesDisplayed(in: range)
        guard let first = wanted.first else {
            return RangeRead(frames: [], seek: range, lastNeededSample: nil)
        }
        let seek = MediaTimeRange(start: .nanoseconds(frames[first].presentationTime), duration: .positiveInfinity)
        let lastPosition = wanted.map { frames[$0].decodePosition }.max()!
        let stop = lastPosition >= 0 && lastPosition < presentationAtPosition.count ? presentationAtPosition[lastPosition] : -1
        let toTheEnd = wanted.last == frames.count - 1
        return RangeRead(frames: wanted, seek: seek, lastNeededSample: stop >= 0 && !toTheEnd ? stop : nil)
    }
}
