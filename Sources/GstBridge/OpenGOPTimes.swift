import CGStreamer
import MediaIndex
import MediaVocabulary
import Synchronization

/// Decoded AVI video of MPEG-4 Part 2 or H.264 with B-pictures (a track without a frame index) in open GOPs (ffmpeg's
/// `mpeg4` encoder without `-flags +cgop`; x264's `open-gop=1`, whose key frames are I-pictures that are not IDR):
/// there the B-pictures decoded right after a key frame may be shown before it.
/// - avidemux gives key frames alone a PTS, their decode time; GstVideoDecoder times the other frames by the lowest
///   decode time still pending, which is the n-th decode time for the n-th frame shown (PROTOCOL.md §7.2). An open
///   GOP's key frame is shown after its leading B-pictures, so its PTS was two ticks early and every frame after
///   it one tick early. An open GOP's key frame without leading B-pictures (x264's, mostly) is shown at its decode
///   time, yet GstVideoDecoder keeps that decode time pending and gives it to the next frame shown, after a seek
///   (a range from just after the key frame delivered one frame early, the range's first frame cut). Such a key
///   frame's PTS is taken away: the decoder times it like the others. It then times the frames after it by adding
///   the frame duration, in whole nanoseconds (33 333 333 at 30 fps), which drifts below the ticks, so it let a
///   frame pass that starts at the range's stop; on the decoder's output each frame's PTS is put back on the tick
///   of the stream's frame rate nearest to it (avidemux's own times, ⌊n × 10⁹ × d / r⌋) and a frame then at or
///   after the segment's stop is dropped (H.264: once an open GOP's key frame came).
/// - A read that starts at such a key frame after a seek (a time range, or a reset, past the first GOP) cannot
///   decode its leading B-pictures (they refer to the GOP before, which the seek skipped; libav leaves MPEG-4's out
///   and makes H.264's of wrong pictures) nor know the times of what follows: the output fails with −11838 at the
///   first leading B-picture, before any frame of the range is decoded, instead of delivering shifted frames.
final class OpenGOPTimes: Sendable {
    private struct State {
        /// The stored track's codec, when it is one whose open GOPs this reads (`mp4v`, `avc1`).
        var codec: FourCC?
        /// The decoded frames' rate (their caps' framerate), when the track is such a codec.
        var rate: (n: guint64, d: guint64)?
        /// Whether a key frame of an open GOP came (its PTS taken away). H.264's frames are put on the ticks only
        /// then: a closed-GOP track's keep the decoder's times (a damaged one's concealed frames are not on them).
        var openGOPs = false
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
                let codec: FourCC? = caps?.name == "video/x-h264" ? "avc1"
                    : caps?.name == "video/mpeg" && caps?.int("mpegversion") == 4 ? "mp4v" : nil
                state.withLock { $0.codec = codec }
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
                let (rate, stop) = state.withLock { s in (s.codec == "mp4v" || s.openGOPs ? s.rate : nil, s.stop) }
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
        guard let codec = state.withLock({ $0.codec }), let (pts, _) = info.bufferTiming else { return GST_PAD_PROBE_OK }
        let bytes = info.bufferBytes ?? []
        let opensGOP = pts != clockTimeNone && DecodeOrderTimes.opensGOP(bytes, codec: codec) == true
        let leading = state.withLock { s in
            let leading = s.afterFlush == .openKey && DecodeOrderTimes.isBidirectional(bytes, codec: codec) == true
            s.afterFlush = s.afterFlush == .nothing && opensGOP ? .openKey : .other
            s.openGOPs = s.openGOPs || opensGOP
            return leading
        }
        if leading {
            let at = info.bufferDTS.map { "\(Double($0) / 1e9) s" } ?? "its start"
            let name = codec == "avc1" ? "H.264" : "MPEG-4 Part 2"
            AppMessage.post(bus, AppMessage.notSupported, text: "the AVI track is \(name) with B-pictures in open GOPs, "
                + "and the GOP the read starts in (decode time \(at)) shows pictures of the one before it: "
                + "only a read from the track's start is exact")
            return info.refuse(GST_FLOW_ERROR)
        }
        if opensGOP { info.setBufferTimes(pts: clockTimeNone, dts: info.bufferDTS ?? clockTimeNone) }
        return GST_PAD_PROBE_OK
    }
}
