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
/// - A read after a seek (a time range, or a reset) that the demuxer starts at such a key frame cannot decode its
///   leading B-pictures (they refer to the GOP before, which the seek skipped; libav makes H.264's of wrong pictures
///   and leaves MPEG-4's out, and either way the decoder then times every frame after them wrong). So the seek
///   starts `leadingFrames` frames before the range (`seekStart`, the seek's segment given the range's start back,
///   `attach`): the key frame the demuxer starts at is then shown at or before the range's start, and its leading
///   B-pictures before it. They are dropped before the decoder, and the key frame, held back until the next picture
///   that is not one, is given the decode time of the last of them, which the decoder gives it (`release`). A leading
///   B-picture that would be shown in the range (more than `leadingFrames` of them) fails the output with −11838
///   before any frame of the range is decoded, instead of delivering it wrong.
final class OpenGOPTimes: Sendable {
    private struct State {
        /// The stored track's codec, when it is one whose open GOPs this reads (`mp4v`, `avc1`).
        var codec: FourCC?
        /// How an H.264 track's NAL units are delimited (its caps' stream-format; DecodeOrderTimes).
        var framing: H264Pictures.Framing?
        /// The decoded frames' rate (their caps' framerate), when the track is such a codec.
        var rate: (n: guint64, d: guint64)?
        /// Whether a key frame of an open GOP came (its PTS taken away). H.264's frames are put on the ticks only
        /// then: a closed-GOP track's keep the decoder's times (a damaged one's concealed frames are not on them).
        var openGOPs = false
        /// The decoded frames' segment's stop (clockTimeNone: none).
        var stop: GstClockTime = clockTimeNone
        /// What came since the last flush: nothing, a key frame of an open GOP and the B-pictures decoded right after
        /// it (its leading ones; the next picture tells whether there are more), or anything else.
        var afterFlush: AfterFlush = .other
        /// The start of the range the last seek was for (ns), and whether its flush came: the next segment is the
        /// seek's, given this start (clockTimeNone: no seek shifted).
        var rangeStart: GstClockTime = clockTimeNone
        var flushed = false
        /// The decoder's segment's start (ns): a leading B-picture decoded after it is shown in the range.
        var segmentStart: GstClockTime = 0
        /// The key frame held back (Held), and whether it is being chained (its own probe lets it pass).
        var held: Held?
        var injecting = false
    }
    private enum AfterFlush { case nothing, openKey, other }
    /// An open GOP's key frame met first after a flush, held back while its leading B-pictures pass (dropped), then
    /// chained before the next picture with the decode time of the last of them (`release`).
    private struct Held {
        var bytes: [UInt8]
        var decodeTime: GstClockTime
        var duration: GstClockTime
    }
    private enum Step { case hold, dropLeading, refuse, release, pass }
    private let state = Mutex(State())
    private let bus: GstRef<GstBusObject>  // the pipeline's, for AppMessage

    /// How many frames before a range its seek starts: at least as many as an open GOP's key frame has leading
    /// B-pictures (FrameIndex.maxLeadingPictures, which ReadFrames plans by).
    static let leadingFrames = guint64(FrameIndex.maxLeadingPictures)

    init(bus: GstRef<GstBusObject>) { self.bus = bus }

    /// Installs the rule on a decoder branch of `pipeline` (a decoded range's, GenerateImage's): `input`, the decoder
    /// branch's input, before DecodeStop (`attach`); `output`, the decoded frames' way to the converter, before
    /// FrameGate (`snap`); the pipeline's ACCURATE seeks start before the range (`seekStart`).
    static func install(in pipeline: Pipeline, input: GstRef<GstPadObject>, output: GstRef<GstPadObject>) {
        let times = OpenGOPTimes(bus: pipeline.bus)
        pipeline.openGOPTimes = times
        times.attach(to: input)
        times.snap(at: output)
    }

    /// The position to seek the demuxer to (ACCURATE) for a range starting at `start` (ns): `leadingFrames` frames
    /// earlier at the decoded frames' rate (0 before the rate is known), so that avidemux, which starts at the last
    /// key frame before the position, starts at one shown no later than `start`. The seek's segment is given
    /// `start` back (`attach`). Another codec's seek is left as it is.
    func seekStart(_ start: Int64) -> Int64 {
        state.withLock { s in
            guard start > 0, s.codec != nil else {
                s.rangeStart = clockTimeNone
                return start
            }
            s.rangeStart = GstClockTime(start)
            s.flushed = false
            guard let rate = s.rate else { return 0 }
            let lead = gst_util_uint64_scale_ceil(Self.leadingFrames, rate.d * 1_000_000_000, rate.n)
            return start - Int64(clamping: min(lead, GstClockTime(start)))
        }
    }

    /// The last tick of the decoded frames' rate before `end` (ns; avidemux's time of the frame shown just before
    /// it): where GenerateImage seeks for a time at or after the end. A seek to `end` − 1 ns gives no frame on these
    /// tracks (the decoder cuts the last frame there: its end, by the decoder's times, is not after `end` − 1). nil
    /// before the rate is known.
    func lastTick(before end: Int64) -> Int64? {
        guard end > 0, let rate = state.withLock({ $0.rate }) else { return nil }
        let ticks = gst_util_uint64_scale_ceil(GstClockTime(end), rate.n, rate.d * 1_000_000_000)
        return ticks == 0 ? nil : Int64(clamping: gst_util_uint64_scale(ticks - 1, rate.d * 1_000_000_000, rate.n))
    }

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
                let framing = caps?.h264Pictures?.framing
                state.withLock { ($0.codec, $0.framing) = (codec, framing) }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { s in
                    (s.afterFlush, s.held) = (.nothing, nil)
                    s.flushed = s.rangeStart != clockTimeNone
                }
            } else if info.eventType == GST_EVENT_EOS {
                _ = release(info)  // a key frame held at the end: its leading B-pictures were the last pictures
            } else if var segment = info.segment, segment.format == GST_FORMAT_TIME {
                let start = state.withLock { s in
                    guard s.flushed, s.rangeStart != clockTimeNone, segment.start < s.rangeStart else {
                        s.segmentStart = segment.start
                        return clockTimeNone
                    }
                    (s.flushed, s.segmentStart) = (false, s.rangeStart)
                    return s.rangeStart
                }
                if start != clockTimeNone {
                    (segment.start, segment.time, segment.position) = (start, start, start)
                    info.replaceSegment(segment)
                }
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
        let (codec, framing) = state.withLock { s in (s.injecting ? nil : s.codec, s.framing) }
        guard let codec, let (pts, duration) = info.bufferTiming else {
            return GST_PAD_PROBE_OK  // another codec, or the held key frame passing (release)
        }
        let bytes = info.bufferBytes ?? []
        let opensGOP = pts != clockTimeNone && DecodeOrderTimes.opensGOP(bytes, codec: codec, framing: framing) == true
        let dts = info.bufferDTS ?? clockTimeNone
        let step: Step = state.withLock { s in
            s.openGOPs = s.openGOPs || opensGOP
            if s.afterFlush == .nothing && opensGOP {
                s.afterFlush = .openKey
                s.held = Held(bytes: bytes, decodeTime: dts, duration: duration)
                return .hold
            }
            guard s.afterFlush == .openKey else {
                s.afterFlush = .other
                return .pass
            }
            if DecodeOrderTimes.isBidirectional(bytes, codec: codec, framing: framing) == true {
                // The j-th leading B-picture is decoded j frames after the key frame, and the j leading ones are
                // shown from the key frame's decode time on: the last of them no earlier than this one's decode
                // time − 1 frame, in the range when this decode time is after the range's start.
                guard dts == clockTimeNone || dts <= s.segmentStart else { return .refuse }
                s.held?.decodeTime = dts
                return .dropLeading
            }
            s.afterFlush = .other
            return .release
        }
        switch step {
        case .hold, .dropLeading: return GST_PAD_PROBE_DROP
        case .refuse:
            let at = "\(Double(dts) / 1e9) s"
            let name = codec == "avc1" ? "H.264" : "MPEG-4 Part 2"
            AppMessage.post(bus, AppMessage.notSupported, text: "the AVI track is \(name) with B-pictures in open GOPs, "
                + "and more than \(Self.leadingFrames) of them (decoded up to \(at)) are shown before a key frame and refer to "
                + "the GOP before it: a range starting among them cannot be decoded; read the track from its start")
            return info.refuse(GST_FLOW_ERROR)
        case .release:
            let flow = release(info)
            guard flow == GST_FLOW_OK else { return info.refuse(flow) }
        case .pass: break
        }
        if opensGOP { info.setBufferTimes(pts: clockTimeNone, dts: dts) }
        return GST_PAD_PROBE_OK
    }

    /// Chains the held key frame (if any) into the probed pad, before what passes: untimed, at the decode time of its
    /// last leading B-picture (its own without one), so that the decoder, which gives the n-th frame shown the n-th
    /// decode time pending, shows it at its time.
    private func release(_ info: borrowing ProbeInfo) -> GstFlowReturn {
        guard let held = state.withLock({ s in
            defer { s.held = nil }
            s.injecting = s.held != nil
            return s.held
        }) else { return GST_FLOW_OK }
        defer { state.withLock { $0.injecting = false } }
        let time = { (t: GstClockTime) in t == clockTimeNone ? nil : Int64(clamping: t) }
        return info.chain(held.bytes, pts: nil, dts: time(held.decodeTime), duration: time(held.duration), sync: true,
                          clip: (0, 0))
    }
}
