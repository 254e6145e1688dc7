import CGStreamer
import CGstShim
import TrackdProtocol
import Synchronization

/// Limits on what one decoded output (or image) may make a decoder produce (issue #4, docs/SECURITY.md "Decode
/// limits"). The supervisor's `--max-frame-pixels`, `--decode-budget` and `--audio-decode-budget` options; each
/// worker gets them on its command line.
public struct DecodeLimits: Sendable, Hashable {
    /// 8192×8192: every 8K format (8192×4320 DCI, 7680×4320 UHD-2) and square 8K sources fit. FFmpeg's fuzzers use
    /// 4096×4096 — enough for fuzzing, too small for 8K production media.
    public static let defaultMaxFramePixels: UInt64 = 8192 * 8192
    /// 2^44 decoded pixels per output: about 6 hours of 8K (8192×4320) at 24 fps, 39 hours of 1080p at 60 fps.
    public static let defaultVideoBudget: UInt64 = 1 << 44
    /// 2^38 decoded samples (frames × channels) per output: about 8 days of 8-channel 48 kHz audio.
    public static let defaultAudioBudget: UInt64 = 1 << 38

    /// Largest width × height of a decoded frame (and of a requested output size).
    public var maxFramePixels: UInt64
    /// Decoded video pixels (width × height of each frame leaving the decoder) one output may consume.
    public var videoBudgetPixels: UInt64
    /// Decoded audio samples (frames × channels leaving the decoder) one output may consume.
    public var audioBudgetSamples: UInt64

    public init(maxFramePixels: UInt64 = defaultMaxFramePixels, videoBudgetPixels: UInt64 = defaultVideoBudget,
                audioBudgetSamples: UInt64 = defaultAudioBudget) {
        self.maxFramePixels = maxFramePixels
        self.videoBudgetPixels = videoBudgetPixels
        self.audioBudgetSamples = audioBudgetSamples
    }

    /// Rejects a frame size over `maxFramePixels` before anything is decoded. `what` names the size ("track 1",
    /// "the requested output size").
    public func checkFrame(width: UInt64, height: UInt64, _ what: String) throws(TrackError) {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard overflow || pixels > maxFramePixels else { return }
        throw TrackError(.limitExceeded,
                         "\(what) is \(width)×\(height) = \(width &* height) pixels per frame, over the limit of \(maxFramePixels) pixels per frame (trackd --max-frame-pixels)")
    }
}

/// Enforces DecodeLimits where decoded data leaves the decoder (the converter's sink pad): a frame size over the
/// limit is refused at the caps event (before downstream buffers of that size are negotiated or allocated; a libav decoder
/// may already hold one decoded frame of it), and each buffer is counted
/// against the budget. A refusal posts a trackd application message (→ .limitExceeded with the text) and answers
/// the decoder with a flow error, which stops the streaming thread.
final class DecodeGuard: @unchecked Sendable {
    // @unchecked: the counters are behind the Mutex; `pipeline` is borrowed and outlives the probe.
    private struct State {
        /// Video: pixels per frame; audio: bytes per sample of one channel. 0 before the first caps.
        var unit: UInt64 = 0
        var used: UInt64 = 0
        var units: UInt64 = 0
        var refused = false
    }

    private let limits: DecodeLimits
    private let audio: Bool
    private let trackID: UInt32
    private let pipeline: ElementPtr
    private let state = Mutex(State())

    init(limits: DecodeLimits, audio: Bool, trackID: UInt32, pipeline: ElementPtr) {
        self.limits = limits
        self.audio = audio
        self.trackID = trackID
        self.pipeline = pipeline
    }

    /// `converter`: the element decoded data enters first; the probe goes on its sink pad.
    func attach(to converter: ElementPtr) {
        let pad = GstRef<GstPad>(full: gst_element_get_static_pad(converter, "sink")!)
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        _ = gst_pad_add_probe(pad.pointer, GstPadProbeType(rawValue: mask), { _, info, data in
            guard let info, let data else { return GST_PAD_PROBE_OK }
            return Unmanaged<DecodeGuard>.fromOpaque(data).takeUnretainedValue().probe(info)
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            if let data { Unmanaged<DecodeGuard>.fromOpaque(data).release() }
        })
    }

    private func probe(_ info: UnsafeMutablePointer<GstPadProbeInfo>) -> GstPadProbeReturn {
        let type = info.pointee.type.rawValue
        if type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue != 0 {
            guard let event = swift_gst_pad_probe_info_event(info), swift_gst_event_type(event) == GST_EVENT_CAPS else {
                return GST_PAD_PROBE_OK
            }
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)  // transfer none
            return accept(caps) ? GST_PAD_PROBE_OK : swift_gst_pad_probe_refuse(info, GST_FLOW_NOT_NEGOTIATED)
        }
        var bytes: UInt64 = 0, count: UInt64 = 1
        if type & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0, let buffer = swift_gst_pad_probe_info_buffer(info) {
            bytes = UInt64(gst_buffer_get_size(buffer))
        } else if type & GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue != 0, let data = info.pointee.data {
            let list = OpaquePointer(data)
            bytes = UInt64(gst_buffer_list_calculate_size(list))
            count = UInt64(gst_buffer_list_length(list))
        } else {
            return GST_PAD_PROBE_OK
        }
        return consume(bytes: bytes, buffers: count) ? GST_PAD_PROBE_OK : swift_gst_pad_probe_refuse(info, GST_FLOW_ERROR)
    }

    /// New caps: checks the frame size (video) or notes the sample size (audio). False: refused.
    private func accept(_ caps: UnsafeMutablePointer<GstCaps>?) -> Bool {
        if audio {
            let size = UInt64(max(0, swift_gst_audio_bytes_per_sample(caps)))
            state.withLock { $0.unit = size }
            return true
        }
        let view = CapsView(caps)
        let width = UInt64(max(0, view?.int("width") ?? 0)), height = UInt64(max(0, view?.int("height") ?? 0))
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > limits.maxFramePixels {
            refuse("track \(trackID): the decoder produces \(width)×\(height) frames = \(width &* height) pixels per frame, over the limit of \(limits.maxFramePixels) pixels per frame (trackd --max-frame-pixels)")
            return false
        }
        return state.withLock { s in
            s.unit = pixels
            return !s.refused
        }
    }

    /// Counts decoded data against the budget. False: over it (or refused before).
    private func consume(bytes: UInt64, buffers: UInt64) -> Bool {
        enum Verdict { case ok, refused, exhausted(UInt64, UInt64) }
        let budget = audio ? limits.audioBudgetSamples : limits.videoBudgetPixels
        let verdict = state.withLock { s -> Verdict in
            if s.refused { return .refused }
            let amount: UInt64 = audio ? (s.unit > 0 ? bytes / s.unit : 0) : s.unit &* buffers
            let (total, overflow) = s.used.addingReportingOverflow(amount)
            guard !overflow, total <= budget else { return .exhausted(s.used, s.units) }
            s.used = total
            s.units += audio ? amount : buffers
            return .ok
        }
        switch verdict {
        case .ok: return true
        case .refused: return false
        case .exhausted(let used, let units):
            let what = audio ? "\(used) samples" : "\(units) frames (\(used) pixels)"
            let (unit, option) = audio ? ("samples", "--audio-decode-budget") : ("pixels", "--decode-budget")
            refuse("track \(trackID): the decode budget of \(budget) \(unit) per output is exhausted after \(what) (trackd \(option))")
            return false
        }
    }

    private func refuse(_ text: String) {
        let first = state.withLock { s in
            defer { s.refused = true }
            return !s.refused
        }
        if first { AppMessage.post(pipeline, AppMessage.limitExceeded, text: text) }
    }
}
