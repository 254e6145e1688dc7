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
    // @unchecked: the counters are behind the Mutex; `bus` is set once.
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
    private let bus: GstRef<GstBusObject>  // the pipeline's, for AppMessage
    private let state = Mutex(State())

    init(limits: DecodeLimits, audio: Bool, trackID: UInt32, bus: GstRef<GstBusObject>) {
        self.limits = limits
        self.audio = audio
        self.trackID = trackID
        self.bus = bus
    }

    /// `converter`: the element decoded data enters first; the probe goes on its sink pad.
    func attach(to converter: GstRef<GstElementObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        converter.staticPad("sink").addProbe(GstPadProbeType(rawValue: mask)) { [self] info in probe(info) }
    }

    private func probe(_ info: borrowing ProbeInfo) -> GstPadProbeReturn {
        if info.is(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
            guard info.eventType == GST_EVENT_CAPS else { return GST_PAD_PROBE_OK }
            return accept(info.caps) ? GST_PAD_PROBE_OK : info.refuse(GST_FLOW_NOT_NEGOTIATED)
        }
        var bytes: UInt64 = 0, count: UInt64 = 1
        if let size = info.bufferSize {
            bytes = size
        } else if let list = info.bufferList {
            (bytes, count) = list
        } else {
            return GST_PAD_PROBE_OK
        }
        return consume(bytes: bytes, buffers: count) ? GST_PAD_PROBE_OK : info.refuse(GST_FLOW_ERROR)
    }

    /// New caps: checks the frame size (video) or notes the sample size (audio). False: refused.
    private func accept(_ caps: GstRef<GstCapsObject>?) -> Bool {
        if audio {
            let size = UInt64(max(0, caps?.audioBytesPerSample ?? 0))
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
        if first { AppMessage.post(bus, AppMessage.limitExceeded, text: text) }
    }
}
