import CGStreamer
import CGstShim
import Synchronization

/// Decoded video: the stored samples the decoder was given and made no frame of — a damaged H.264 keyframe and the
/// pictures that refer to it, which libav conceals by leaving them out (ffmpeg does the same: 48 frames of 60). Each
/// stored video sample is one picture, so what the decoder owes at the end of a stretch of decoding (its EOS, when
/// it has given every frame it will) is the samples that entered since the last flush, less the frames that came
/// out. Samples it has reason not to show are not owed: ones flagged DECODE_ONLY (VP8/VP9 alt-ref frames), and ones
/// outside the segment, which GstVideoDecoder itself drops (the reference pictures before an accurate seek's
/// target). A flush (a seek) discards what is in flight: the counts start again.
final class DecodeTally: @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private struct State: @unchecked Sendable {  // GstSegment is plain values
        var segment = GstSegment()
        var hasSegment = false
        var entered: UInt64 = 0
        var left: UInt64 = 0
        var undecodable: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Samples given to the decoder that it made no frame of, all ranges.
    var undecodable: UInt64 { state.withLock { $0.undecodable } }

    /// `input`: the decoder branch's input (after what drops samples before the decoder); `output`: the converter
    /// branch's input, where every decoded frame passes (before anything there drops one).
    func attach(input: GstRef<GstPadObject>, output: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        input.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let timing = info.bufferTiming {
                let shown = !info.bufferIsDecodeOnly && inSegment(timing)
                if shown { state.withLock { $0.entered += 1 } }
            } else if let segment = info.segment {
                state.withLock { ($0.segment, $0.hasSegment) = (segment, true) }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.entered = 0 }
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
                    s.undecodable += s.entered > s.left ? s.entered - s.left : 0
                    (s.entered, s.left) = (0, 0)
                }
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Whether a sample of these times is one GstVideoDecoder shows: its interval reaches into the segment (no time
    /// or no segment: yes).
    private func inSegment(_ timing: (pts: GstClockTime, duration: GstClockTime)) -> Bool {
        let (segment, has) = state.withLock { ($0.segment, $0.hasSegment) }
        guard has, segment.format == GST_FORMAT_TIME, timing.pts != clockTimeNone else { return true }
        let end = timing.duration != clockTimeNone ? timing.pts + timing.duration : timing.pts + 1
        if segment.start != clockTimeNone, end <= segment.start, timing.pts < segment.start { return false }
        if segment.stop != clockTimeNone, timing.pts >= segment.stop { return false }
        return true
    }
}
