import CGStreamer
import CGstShim
import Synchronization

/// Decoded video: the stored samples the decoder was given and made no frame of — a damaged H.264 keyframe and the
/// pictures that refer to it, which libav conceals by leaving them out (ffmpeg does the same). Each stored video
/// sample is one picture, so what the decoder owes at the end of a stretch of decoding (its EOS, when it has given
/// every frame it will) is the samples that entered since the last flush, less the frames that came out. Samples it
/// has reason not to show are not owed: ones flagged DECODE_ONLY (VP8/VP9 alt-ref frames) and ones at or after the
/// segment's stop. A stretch that fed the decoder samples timed before the segment's start (a range starting inside
/// a GOP: GstVideoDecoder drops the reference pictures it decodes there) is not tallied. A sample without a PTS
/// (AVI's avidemux times key frames only) is placed by its DTS: GstVideoDecoder gives each frame it outputs without
/// a PTS the lowest decode time still pending, so the frames it keeps inside the segment are as many as the samples
/// whose decode times lie there (those past the stop, up to the next key frame, are decoded and clipped). So an AVI
/// track with B-pictures (`decodeTimes`) is tallied also when decoding starts before the segment (its seeks start
/// before the range, OpenGOPTimes): the frames kept are those whose decode times lie in it. A flush (a seek) discards
/// what is in flight: the counts start again.
final class DecodeTally: @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private struct State: @unchecked Sendable {  // GstSegment is plain values
        var segment = GstSegment()
        var hasSegment = false
        var entered: UInt64 = 0
        var left: UInt64 = 0
        var undecodable: UInt64 = 0
        /// This stretch fed the decoder a sample timed before the segment's start: not tallied.
        var beforeStart = false
    }
    private let state = Mutex(State())
    private let decodeTimes: Bool

    init(decodeTimes: Bool = false) { self.decodeTimes = decodeTimes }

    /// Samples given to the decoder that it made no frame of, all ranges.
    var undecodable: UInt64 { state.withLock { $0.undecodable } }

    /// `input`: the decoder branch's input (after what drops samples before the decoder); `output`: the converter
    /// branch's input, where every decoded frame passes (before anything there drops one).
    func attach(input: GstRef<GstPadObject>, output: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        input.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let timing = info.bufferTiming {
                let decodeOnly = info.bufferIsDecodeOnly
                let time = timing.pts != clockTimeNone ? timing.pts : info.bufferDTS ?? clockTimeNone
                state.withLock { s in
                    switch Self.place(time, in: s) {
                    case .before: s.beforeStart = !decodeTimes
                    case .inside: if !decodeOnly { s.entered += 1 }
                    case .after: break
                    }
                }
            } else if let segment = info.segment {
                state.withLock { ($0.segment, $0.hasSegment) = (segment, true) }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { ($0.entered, $0.beforeStart) = (0, false) }
            }
            return GST_PAD_PROBE_OK
        }
        output.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.bufferTiming != nil {
                state.withLock { $0.left += 1 }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.left = 0 }
            } else if info.eventType == GST_EVENT_EOS {
                state.withLock { s in
                    if !s.beforeStart { s.undecodable += s.entered > s.left ? s.entered - s.left : 0 }
                    (s.entered, s.left, s.beforeStart) = (0, 0, false)
                }
            }
            return GST_PAD_PROBE_OK
        }
    }

    enum Place { case before, inside, after }

    /// Where a sample timed `time` (its PTS, else its DTS) lies against the segment (no time or no segment: inside).
    private static func place(_ time: GstClockTime, in s: State) -> Place {
        guard s.hasSegment, s.segment.format == GST_FORMAT_TIME, time != clockTimeNone else { return .inside }
        if s.segment.start != clockTimeNone, time < s.segment.start { return .before }
        if s.segment.stop != clockTimeNone, time >= s.segment.stop { return .after }
        return .inside
    }
}
