import CGStreamer
import MediaIndex
import MediaVocabulary
import Synchronization

/// Decoded AVI video of MPEG-4 Part 2 with B-pictures (a track without a frame index) in open GOPs (ffmpeg's `mpeg4`
/// encoder without `-flags +cgop`): there the B-pictures decoded right after a key frame are shown before it.
/// - avidemux gives key frames alone a PTS, their decode time; GstVideoDecoder times the other frames by the lowest
///   decode time still pending, which is the n-th decode time for the n-th frame shown (PROTOCOL.md §7.2). An open
///   GOP's key frame is shown after its leading B-pictures, so its PTS was two ticks early and every frame after
///   it one tick early. Such a key frame's PTS is taken away: the decoder times it like the others. It then times
///   the frames after it by adding the frame duration, in whole nanoseconds (33 333 333 at 30 fps), which drifts
///   below the ticks, so it let a frame pass that starts at the range's stop; on the decoder's output each frame's
///   PTS is put back on the tick of the stream's frame rate nearest to it (avidemux's own times, ⌊n × 10⁹ × d / r⌋)
///   and a frame then at or after the segment's stop is dropped.
/// - A read that starts at such a key frame after a seek (a time range, or a reset, past the first GOP) cannot
///   decode its leading B-pictures (they refer to the GOP before, which the seek skipped; libav leaves them out) nor
///   know the times of what follows: the output fails with −11829 at the first leading B-picture, before any frame
///   of the range is decoded, instead of delivering shifted frames.
final class OpenGOPTimes: Sendable {
    private struct State {
        var mpeg4 = false
        /// The decoded frames' rate (their caps' framerate), when the track is MPEG-4 Part 2.
        var rate: (n: guint64, d: guint64)?
        /// The decoded frames' segment's stop (clockTimeNone: none).
        var stop: GstClockTime = clockTimeNone
        /// What came since the last flush: nothing, a key frame of an open GOP (the next picture tells whether it
        /// has leading B-pictures), or anything else.
        var afterFlush: AfterFlush = .other
    }
    private enum AfterFlush { case nothing, openKey, other }
    private let state = Mutex(State())
    private let bus: GstRef<GstBusObject>  // the pipeline's, for AppMessage

    init(bus: GstRef<GstBusObject>) { self.bus = bus }

    /// `pad`: the decoder branch's input, before anything that reads the buffers' PTS (DecodeStop).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.bufferTiming != nil { return buffer(info) }
            if info.eventType == GST_EVENT_CAPS {
                let caps = info.caps.flatMap { CapsView($0) }
                let mpeg4 = caps?.name == "video/mpeg" && caps?.int("mpegversion") == 4
                state.withLock { $0.mpeg4 = mpeg4 }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.afterFlush = .nothing }
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// `pad`: the converter branch's input, before FrameGate: the decoded frames' PTS put on the stream's ticks, and
    /// a frame that then lies at or after the segment's stop dropped (the decoder let it pass with its drifted PTS).
    func snap(at pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let (pts, _) = info.bufferTiming {
                let (rate, stop) = state.withLock { s in (s.mpeg4 ? s.rate : nil, s.stop) }
                guard pts != clockTimeNone, let rate else { return GST_PAD_PROBE_OK }
                let tick = gst_util_uint64_scale_round(pts, rate.n, rate.d * 1_000_000_000)
                let snapped = gst_util_uint64_scale(tick, rate.d * 1_000_000_000, rate.n)
                if stop != clockTimeNone, snapped >= stop { return GST_PAD_PROBE_DROP }
                if snapped != pts { info.setBufferTimes(pts: snapped, dts: info.bufferDTS ?? clockTimeNone) }
            } else if info.eventType == GST_EVENT_CAPS, let (n, d) = info.caps.flatMap({ CapsView($0)?.fraction("framerate") }),
                      n > 0, d > 0 {
                state.withLock { $0.rate = (guint64(n), guint64(d)) }
            } else if let segment = info.segment {
                state.withLock { $0.stop = segment.format == GST_FORMAT_TIME ? segment.stop : clockTimeNone }
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func buffer(_ info: borrowing ProbeInfo) -> GstPadProbeReturn {
        guard state.withLock({ $0.mpeg4 }), let (pts, _) = info.bufferTiming else { return GST_PAD_PROBE_OK }
        let bytes = info.bufferBytes ?? []
        let opensGOP = pts != clockTimeNone && DecodeOrderTimes.mpeg4OpensGOV(bytes) == true
        let leading = state.withLock { s in
            let leading = s.afterFlush == .openKey && DecodeOrderTimes.isBidirectional(bytes, codec: "mp4v") == true
            s.afterFlush = s.afterFlush == .nothing && opensGOP ? .openKey : .other
            return leading
        }
        if leading {
            let at = info.bufferDTS.map { "\(Double($0) / 1e9) s" } ?? "its start"
            AppMessage.post(bus, AppMessage.notSupported, text: "the AVI track is MPEG-4 Part 2 with B-pictures in open GOPs, "
                + "and the GOP the read starts in (decode time \(at)) shows pictures of the one before it: "
                + "only a read from the track's start is exact")
            return info.refuse(GST_FLOW_ERROR)
        }
        if opensGOP { info.setBufferTimes(pts: clockTimeNone, dts: info.bufferDTS ?? clockTimeNone) }
        return GST_PAD_PROBE_OK
    }
}
