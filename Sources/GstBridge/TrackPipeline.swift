import CGStreamer
import CGstShim
import Protocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What an output delivers: the pixel format (decode) or codec (passthrough), the size, and for passthrough the
/// codec configuration record (avcC, hvcC, esds… bytes from the caps' codec_data).
public struct OutputFormat: Sendable, Hashable {
    public var format: FourCC
    public var width: UInt32
    public var height: UInt32
    public var codecConfig: [UInt8]

    public init(format: FourCC, width: UInt32, height: UInt32, codecConfig: [UInt8]) {
        self.format = format
        self.width = width
        self.height = height
        self.codecConfig = codecConfig
    }
}

public enum OutputMode: Sendable {
    /// The stored samples, undecoded, in decode order.
    case passthrough
    /// Decoded video frames converted to the requested pixel format (and size), in presentation order.
    case decode(VideoOutputRequest)
    /// Decoded audio converted to the requested linear PCM layout (rate, channels, sample format), in order.
    case audio(AudioOutputRequest)
}

public enum PullResult: Sendable {
    case sample(PulledSample)
    case timeout
    case endOfStream
    case failed(TrackError)
}

/// One track's pipeline:
///   decode:      trackdfdsrc ! parsebin ─(track pad)→ queue ! decodebin ─→ videoconvert ! videoscale ! capsfilter ! appsink
///   audio:       trackdfdsrc ! parsebin ─(track pad)→ queue ! decodebin ─→ audioconvert ! audioresample ! capsfilter ! appsink
///   passthrough: trackdfdsrc ! parsebin ─(track pad)→ appsink
/// Other parsebin pads drop their buffers (see PadRouter).
public final class TrackPipeline: @unchecked Sendable {
    // @unchecked: the GStreamer objects are thread-safe; `stopped` is in a Mutex; the sample cache and the sticky
    // failure are touched only by pull(), which the caller runs on one dedicated thread.
    private let source: MediaSource  // keeps the fd open as long as the pipeline reads it
    private let pipeline: Pipeline
    private let sink: ElementPtr  // borrowed from the pipeline
    private let passthrough: Bool
    public let outputFormat: OutputFormat
    private let stopped = Mutex(false)
    private var failure: TrackError?
    private var layoutCache: (caps: CapsPtr, layout: SwiftGstVideoLayout)?
    private let restorer: ClipRestorer?
    /// Decoded video: ends a range after its last needed sample (ReadFrames); nil for audio and passthrough.
    private let decodeStop: DecodeStop?
    /// 420v/420f/x420/xf20: the range the output must have (converted while copying when the decoder's differs). nil
    /// for every other format: their samples carry the decoder's range.
    private let targetRange: PixelFormat.Range?
    /// Audio output: what was asked for (bytes per sample, layout).
    private let audioRequest: AudioOutputRequest?
    /// Audio output with a channel layout of more than one channel: the order samples are reordered to.
    private let channelOrder: ChannelOrder?
    /// Audio output: how far the track's buffer timestamps run ahead of its timeline (ns; the edit list's media
    /// start, e.g. AAC priming). qtdemux 1.22 ends a stream when a sample's *buffer* timestamp reaches the seek stop,
    /// which is on the timeline: the last packets before the stop (the whole last AAC packet of a file) would never
    /// be pushed. Every audio seek's stop is moved this much later; the sample-exact trimming cuts at the real end.
    private var audioStopLead: Int64 = 0
    /// Audio output: the current range (reader timeRange, then each reset's), in nanoseconds; the delivered frames
    /// are trimmed to it sample-exactly (see audioWindow). Touched only by init, seek(to:) and pull().
    private var audioRange: (start: Int64, duration: Int64?)
    /// Passthrough: the current range's end (stream time, ns; nil: to the end). The seek has no stop: the range ends
    /// at the first sample whose decode time (PTS when there is none) is at or after it, so that every sample a
    /// frame shown before the end depends on is delivered (a demuxer's stop, by PTS, drops the P-frame that the last
    /// B-frames reference). `passthroughEnded`: that sample was seen; pull reports .endOfStream until the next seek.
    private var passthroughEnd: Int64?
    private var passthroughEnded = false
    /// Decoded video: the allocator of the memfd memories appsink offers upstream, so the converter (or the decoder,
    /// when the converter passes through) writes frames straight into memory the client maps (zero-copy outputs,
    /// docs/design/zero-copy.md). nil for audio and passthrough.
    private let allocator: SharedAllocator?
    /// Live memfd memories per output at most: back-pressure (the client's slots, appsink's queue) keeps far fewer.
    static let maxSharedMemories: guint = 32

    static let prerollTimeoutNs: UInt64 = 10_000_000_000

    /// Builds and prerolls the pipeline for one track, seeks to `timeRange` and sets PLAYING.
    /// Decoded outputs enforce `limits` on what leaves the decoder (DecodeGuard); passthrough decodes nothing.
    /// `neededSamples` and `lastNeededSample` (decoded video, ReadFrames): the presentation times of the stored
    /// samples to decode (nil: all) and of the last one — the others never reach the decoder, and decoding ends
    /// after the last instead of at the demuxer's stop (see DecodeStop).
    /// `threads` (decoded video): the most threads the decoder (libav's max-threads) and the converter may use; nil
    /// = their defaults (the decoder: one per CPU; the converter: 2).
    public init(source: MediaSource, trackID: UInt32, mode: OutputMode, timeRange: MediaTimeRange,
                neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil,
                limits: DecodeLimits = DecodeLimits(), threads: Int? = nil) throws(TrackError) {
        try Gst.initialize()
        self.source = source
        audioRange = Self.trimRange(timeRange)
        let pipeline = try Pipeline()
        self.pipeline = pipeline
        let parser = try pipeline.addSourceAndParser(fd: source.fd)

        let factories: [String] = switch mode {
        case .passthrough: ["appsink"]
        case .decode: ["appsink", "queue", "decodebin", "videoconvert", "videoscale", "capsfilter", "queue"]
        case .audio: ["appsink", "queue", "decodebin", "audioconvert", "audioresample", "capsfilter"]
        }
        let elements = try makeElements(factories)
        let appsink = elements[0]
        swift_gst_object_set_bool(appsink, "sync", 0)
        swift_gst_object_set_uint(appsink, "max-buffers", 2)
        swift_gst_object_set_bool(appsink, "drop", 0)
        swift_gst_object_set_bool(appsink, "emit-signals", 0)
        swift_gst_object_set_bool(appsink, "enable-last-sample", 0)
        sink = appsink

        let target: ElementPtr
        var requiredType: MediaType? = .video
        switch mode {
        case .passthrough:
            swift_gst_parsebin_expose_container_framed(parser)
            passthrough = true
            pipeline.ignoreMissingPlugins = true
            restorer = nil
            decodeStop = nil
            targetRange = nil
            audioRequest = nil
            allocator = nil
            channelOrder = nil
            requiredType = nil
            try pipeline.addChain([appsink])
            target = appsink
        case .audio(let request):
            passthrough = false
            targetRange = nil
            decodeStop = nil
            audioRequest = request
            allocator = nil
            requiredType = .audio
            let convert = elements[3]
            // Deterministic conversion: no random dither, no noise shaping (both enums' value 0 is "none").
            swift_gst_object_set_int(convert, "dithering", 0)
            swift_gst_object_set_int(convert, "noise-shaping", 0)
            let caps = Self.audioCaps(request)
            if let layout = request.channelLayout, layout.speakers.count > 1 {
                channelOrder = ChannelOrder(layout: layout, baseCaps: caps, filter: elements[5])
            } else {
                channelOrder = nil
            }
            target = try Self.addDecodeChain(pipeline, elements, caps: caps, rawName: "audio/x-raw",
                                             channelOrder: channelOrder)
            DecodeGuard(limits: limits, audio: true, trackID: trackID, pipeline: pipeline.element).attach(to: convert)
            let clip = ClipRestorer()  // see ClipRestorer.clippedEnd
            let queueSrc = gst_element_get_static_pad(target, "src")!
            clip.attach(to: queueSrc)
            gst_object_unref(queueSrc)
            restorer = clip
        case .decode(let request):
            passthrough = false
            audioRequest = nil
            channelOrder = nil
            let shared = SharedAllocator(maxLive: Self.maxSharedMemories)
            swift_gst_appsink_offer_memfd_pool(appsink, shared.pointer, 2)
            if Self.copiesAsNV12(request.pixelFormat) { swift_gst_memfd_allocator_reserve_nv12(shared.pointer) }
            swift_gst_bin_tune_decoders(elements[2], gint(min(threads ?? 0, 64)))  // decodebin
            allocator = shared
            let convert = elements[3]
            swift_gst_object_set_uint(convert, "n-threads", guint(min(threads ?? 2, 2)))
            // GST_VIDEO_DITHER_NONE: the default (bayer) dithers whenever the output has fewer bits than
            // videoconvert's 16-bit intermediate — even 10-bit to 10-bit (I420_10LE → P010_10LE), which must be a
            // lossless repack. Without it, outputs of the same depth as the decoder's are exact.
            swift_gst_object_set_int(convert, "dither", 0)
            let queue = try Self.addDecodeChain(pipeline, elements, caps: Self.outputCaps(request), rawName: "video/x-raw")
            DecodeGuard(limits: limits, audio: false, trackID: trackID, pipeline: pipeline.element).attach(to: convert)
            targetRange = request.pixelFormat.range
            let clip = ClipRestorer()
            let queueSrc = gst_element_get_static_pad(queue, "src")!
            clip.attach(to: queueSrc)
            let stop = DecodeStop(needed: neededSamples, lastNeeded: lastNeededSample)
            stop.count(at: queueSrc)
            gst_object_unref(queueSrc)
            restorer = clip
            let queueSink = gst_element_get_static_pad(queue, "sink")!
            stop.attach(to: queueSink)
            gst_object_unref(queueSink)
            decodeStop = stop
            target = queue
        }
        let targetPad = gst_element_get_static_pad(target, "sink")!  // transfer full, owned by the router
        PadRouter(wantedTrack: trackID, target: targetPad, pipeline: pipeline.element, requiredType: requiredType)
            .attach(to: parser)

        let context = "Cannot read track \(trackID)"
        try pipeline.setState(GST_STATE_PAUSED, context: context)
        try pipeline.waitAsyncDone(timeoutNs: Self.prerollTimeoutNs, context: context)

        let lead = audioRequest != nil ? Self.timestampLead(sink: appsink) : 0
        audioStopLead = lead
        // With a lead, even reading everything needs a seek: the demuxer's initial stop is the asset's duration.
        if var seek = lead > 0 ? Self.seekBounds(timeRange) : Self.seekRange(timeRange) {
            if passthrough { (passthroughEnd, seek.stop) = (seek.stop, nil) }
            let stopType = seek.stop == nil && lead == 0 ? GST_SEEK_TYPE_NONE : GST_SEEK_TYPE_SET
            seek.stop = seek.stop.map { $0 + lead }
            let flags = Self.seekFlags(passthrough: passthrough)
            let ok = gst_element_seek(pipeline.element, 1.0, GST_FORMAT_TIME, GstSeekFlags(rawValue: flags),
                                      GST_SEEK_TYPE_SET, gint64(seek.start),
                                      stopType, gint64(seek.stop ?? -1))  // SET -1: no stop
            guard ok != 0 else {
                throw pipeline.popError(context: context)
                    ?? TrackError(.operationNotSupportedForAsset, "\(context): the demuxer refused to seek to \(timeRange.start)")
            }
            try pipeline.waitAsyncDone(timeoutNs: Self.prerollTimeoutNs, context: context)
        }
        outputFormat = Self.negotiatedFormat(sink: appsink, mode: mode)
        try pipeline.setState(GST_STATE_PLAYING, context: context)
    }

    deinit {
        stop()
        if let cached = layoutCache { gst_caps_unref(cached.caps) }
    }

    /// Decoded video: the stored samples handed to the decoder so far (every range, preroll included).
    public var samplesDecoded: UInt64 { decodeStop?.samplesDecoded ?? 0 }

    /// Decoded video: the stored samples dropped before the decoder as not needed (ReadFrames).
    public var samplesSkipped: UInt64 { decodeStop?.samplesSkipped ?? 0 }

    /// Zero-copy outputs: the ids of memfd memories (PulledSample.shared) freed since the last call — their pools
    /// are gone. Thread-safe.
    public func takeFreedSharedMemories() -> [UInt32] {
        guard let allocator else { return [] }
        var ids = [UInt32](repeating: 0, count: Int(Self.maxSharedMemories))
        let n = swift_gst_memfd_allocator_take_freed(allocator.pointer, &ids, guint(ids.count))
        return Array(ids.prefix(Int(n)))
    }

    /// video/x-raw,format=<gst format>[,width][,height][,pixel-aspect-ratio=1/1 when a size is requested].
    static func outputCaps(_ request: VideoOutputRequest) -> CapsPtr {
        let raw = gst_caps_new_empty_simple("video/x-raw")!
        var caps = swift_gst_caps_with_string(raw, "format", request.pixelFormat.gstFormat)!
        if copiesAsNV12(request.pixelFormat) {
            // 420v/420f: the worker makes NV12 out of I420 itself (in the frame's memfd, nv12InPlace), so I420 from
            // the decoder is as good and saves videoconvert a pass; videoconvert passes through the input format
            // when it can. Measured (1080p H.264, 600 frames, 2 CPUs): videoconvert writing NV12 into the zero-copy
            // pool cost the worker 2.86 s of CPU per read, a fused I420→NV12 copy 2.37 s, y420 2.09 s.
            gst_caps_append(caps, swift_gst_caps_with_string(raw, "format", "I420")!)  // takes the second caps
        }
        gst_caps_unref(raw)
        func set(_ field: String, _ value: Int?) {
            guard let value, value > 0, value <= Int(Int32.max) else { return }
            let next = swift_gst_caps_with_int(caps, field, gint(value))!
            gst_caps_unref(caps)
            caps = next
        }
        set("width", request.width)
        set("height", request.height)
        if (request.width ?? 0) > 0 || (request.height ?? 0) > 0 {
            let next = swift_gst_caps_with_fraction(caps, "pixel-aspect-ratio", 1, 1)!
            gst_caps_unref(caps)
            caps = next
        }
        return caps
    }

    /// 420v/420f: made NV12 by the worker from I420 (nv12InPlace; swift_gst_copy_as_nv12 when the frame is not in a
    /// memfd), range converted.
    static func copiesAsNV12(_ format: PixelFormat) -> Bool { format.gstFormat == "NV12" && format.range != nil }

    /// audio/x-raw,format=<S16LE …>,layout=interleaved|non-interleaved[,rate][,channels]: rate and channels are
    /// left open (the source's) when not requested.
    static func audioCaps(_ request: AudioOutputRequest) -> CapsPtr {
        let raw = gst_caps_new_empty_simple("audio/x-raw")!
        var caps = swift_gst_caps_with_string(raw, "format", request.gstFormat)!
        gst_caps_unref(raw)
        func set(_ make: (CapsPtr) -> CapsPtr?) {
            let next = make(caps)!
            gst_caps_unref(caps)
            caps = next
        }
        set { swift_gst_caps_with_string($0, "layout", request.isNonInterleaved ? "non-interleaved" : "interleaved") }
        if let rate = request.sampleRate { set { swift_gst_caps_with_int($0, "rate", gint(rate)) } }
        if let channels = request.channels { set { swift_gst_caps_with_int($0, "channels", gint(channels)) } }
        return caps
    }

    /// Links `elements` = [appsink, queue, decodebin, converter, resampler/scaler, capsfilter (, convert queue)] as
    /// queue ! decodebin ⇢ (convert queue !) converter ! resampler/scaler ! capsfilter(caps) ! appsink, where
    /// decodebin's `rawName` pad is linked to the convert queue or the converter when it appears. The convert queue
    /// (video) puts the conversion on a thread of its own, so it runs while the decoder works on the next frame
    /// (on 2 CPUs, BGRA output took 3.0 s instead of 3.6 s for 300 1080p frames). Takes ownership of `caps`;
    /// returns the first queue (the track's pad goes there).
    private static func addDecodeChain(_ pipeline: Pipeline, _ elements: [ElementPtr], caps: CapsPtr,
                                       rawName: String, channelOrder: ChannelOrder? = nil) throws(TrackError) -> ElementPtr {
        let (appsink, queue, decodebin, convert, second, filter) =
            (elements[0], elements[1], elements[2], elements[3], elements[4], elements[5])
        swift_gst_object_set_caps(filter, "caps", caps)
        gst_caps_unref(caps)
        try pipeline.addChain([queue, decodebin])
        var chain = [convert, second, filter, appsink]
        if elements.count > 6 {
            let convertQueue = elements[6]
            swift_gst_object_set_uint(convertQueue, "max-size-buffers", 3)
            swift_gst_object_set_uint(convertQueue, "max-size-bytes", 0)
            swift_gst_object_set_uint64(convertQueue, "max-size-time", 0)
            chain.insert(convertQueue, at: 0)
        }
        try pipeline.addChain(chain)
        let convertSink = gst_element_get_static_pad(chain[0], "sink")!  // transfer full, owned by the linker
        DecodeLinker(target: convertSink, pipeline: pipeline.element, rawName: rawName, channelOrder: channelOrder)
            .attach(to: decodebin)
        return queue
    }

    /// The seek for a time range: nil when it is everything from 0 (no seek needed). Positions in nanoseconds.
    static func seekRange(_ range: MediaTimeRange) -> (start: Int64, stop: Int64?)? {
        let bounds = seekBounds(range)
        if bounds.start == 0 && bounds.stop == nil { return nil }
        return bounds
    }

    static func seekBounds(_ range: MediaTimeRange) -> (start: Int64, stop: Int64?) {
        let start = max(0, range.start.nanoseconds ?? 0)
        var stop: Int64?
        if let d = range.duration.nanoseconds, !range.duration.isPositiveInfinity {
            let (sum, overflow) = start.addingReportingOverflow(max(0, d))
            stop = overflow ? nil : sum
        }
        return (start, stop)
    }

    /// Random access: after the end of a range (pull returned .endOfStream), flush-seeks the running pipeline to
    /// `range` (ACCURATE, stop at its end), so that pull delivers exactly that range's samples, then
    /// .endOfStream again. Call from the pulling thread.
    /// `neededSamples`, `lastNeededSample`: as in init — what the decoder is given (decoded video only).
    public func seek(to range: MediaTimeRange, neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil) throws(TrackError) {
        if let failure { throw failure }
        decodeStop?.arm(needed: neededSamples, lastNeeded: lastNeededSample)
        let bounds = Self.seekBounds(range)
        let flags = Self.seekFlags(passthrough: passthrough)
        let stop = passthrough ? nil : bounds.stop.map { $0 + audioStopLead }
        let ok = gst_element_seek(pipeline.element, 1.0, GST_FORMAT_TIME, GstSeekFlags(rawValue: flags),
                                  GST_SEEK_TYPE_SET, gint64(bounds.start),
                                  GST_SEEK_TYPE_SET, gint64(stop ?? -1))  // -1: to the end (NONE would keep the last stop)
        guard ok != 0 else {
            throw pipeline.popError(context: "Reading failed")
                ?? TrackError(.operationNotSupportedForAsset, "the demuxer refused to seek to \(range.start)")
        }
        audioRange = Self.trimRange(range)
        if passthrough { (passthroughEnd, passthroughEnded) = (bounds.stop, false) }
    }

    /// How far buffer timestamps run ahead of stream time at the appsink (its sticky segment's start − time), in ns;
    /// 0 when they do not.
    static func timestampLead(sink: ElementPtr) -> Int64 {
        guard let pad = gst_element_get_static_pad(sink, "sink") else { return 0 }
        defer { gst_object_unref(pad) }
        guard let segment = stickySegment(pad), segment.format == GST_FORMAT_TIME,
              segment.start != clockTimeNone, segment.time != clockTimeNone, segment.start > segment.time,
              segment.start - segment.time < UInt64(Int64.max / 2) else { return 0 }
        return Int64(segment.start - segment.time)
    }

    /// Decoded outputs seek ACCURATE: the first sample is the one shown at the range start. Passthrough seeks
    /// KEY_UNIT|SNAP_BEFORE: the first sample is the sync sample at or before the range start (what a decoder needs
    /// to show the range, as AVAssetReader returns); pull ends the range (see passthroughEnd).
    static func seekFlags(passthrough: Bool) -> guint {
        GST_SEEK_FLAG_FLUSH.rawValue | (passthrough
            ? GST_SEEK_FLAG_KEY_UNIT.rawValue | GST_SEEK_FLAG_SNAP_BEFORE.rawValue
            : GST_SEEK_FLAG_ACCURATE.rawValue)
    }

    /// The range's start and duration in nanoseconds (duration nil: to the end).
    static func trimRange(_ range: MediaTimeRange) -> (start: Int64, duration: Int64?) {
        let bounds = seekBounds(range)
        return (bounds.start, bounds.stop.map { $0 - bounds.start })
    }

    /// The frames [first, end) of a range at `rate`: first = round(start × rate), end = first + round(duration ×
    /// rate) (nil: to the end) — AVAssetReader's sample-exact trimming.
    static func audioWindow(_ range: (start: Int64, duration: Int64?), rate: Int) -> (first: Int64, end: Int64?) {
        func frames(_ ns: Int64) -> Int64 {
            Int64((Double(ns) * Double(rate) / 1e9).rounded())
        }
        let first = frames(range.start)
        return (first, range.duration.map { first + frames($0) })
    }

    private static func negotiatedFormat(sink: ElementPtr, mode: OutputMode) -> OutputFormat {
        let pad = gst_element_get_static_pad(sink, "sink")!
        defer { gst_object_unref(pad) }
        let caps = gst_pad_get_current_caps(pad)
        defer { if let caps { gst_caps_unref(caps) } }
        let view = CapsView(caps)
        let width = UInt32(max(0, view?.int("width") ?? 0))
        let height = UInt32(max(0, view?.int("height") ?? 0))
        switch mode {
        case .decode(let request):
            return OutputFormat(format: request.pixelFormat.code, width: width, height: height, codecConfig: [])
        case .passthrough:
            return OutputFormat(format: view?.codec ?? "????", width: width, height: height,
                                codecConfig: view?.bufferBytes("codec_data") ?? [])
        case .audio:
            return OutputFormat(format: "lpcm", width: 0, height: 0, codecConfig: [])
        }
    }

    /// Blocking; call from one dedicated thread. .timeout when nothing arrived within `timeoutNs`, .endOfStream at
    /// the end (or after stop()), .failed on a bus error — the bus is checked before EOS is believed, so a decode
    /// error is not mistaken for the end.
    public func pull(timeoutNs: UInt64) -> PullResult {
        if let failure { return .failed(failure) }
        if passthroughEnded { return .endOfStream }
        if let error = pipeline.popError(context: "Reading failed") {
            failure = error
            return .failed(error)
        }
        while let appsinkSample = gst_app_sink_try_pull_sample(appSink(sink), GstClockTime(timeoutNs)) {
            let sample = Self.ownSample(appsinkSample)
            // nil: audio entirely outside the range (dropped by the trimming); pull the next one.
            guard let pulled = makeSample(sample) else { continue }
            if let end = passthroughEnd {
                let time = pulled.decodeTime.isNumeric ? pulled.decodeTime : pulled.presentationTime
                if let ns = time.nanoseconds, ns >= end {
                    passthroughEnded = true
                    return .endOfStream
                }
            }
            return .sample(pulled)
        }
        if let error = pipeline.popError(context: "Reading failed") {
            failure = error
            return .failed(error)
        }
        if stopped.withLock({ $0 }) || gst_app_sink_is_eos(appSink(sink)) != 0 { return .endOfStream }
        return .timeout
    }

    /// A GstSample of our own for what appsink pulled (transfer full in, transfer full out). appsink 1.22 hands out
    /// a ref on the one GstSample object it keeps, and after a flush sets caps on that object without making it
    /// writable first (gst_app_sink_render_common: "queue holding caps event might have been FLUSHed"). While the
    /// worker holds a frame across a flush-seek — a zero-copy frame the client has not released, a ReadFrames frame
    /// kept for its turn — that logged `GStreamer-CRITICAL: gst_sample_set_caps: assertion
    /// 'gst_sample_is_writable (sample)' failed` and left the caps unset. Holding our own sample gives appsink its
    /// object back at once (and saves it the copy gst_sample_make_writable would make on the next pull).
    static func ownSample(_ sample: OpaquePointer) -> OpaquePointer {
        let own = gst_sample_new(gst_sample_get_buffer(sample), gst_sample_get_caps(sample),
                                 gst_sample_get_segment(sample), nil)!  // refs the buffer and caps, copies the segment
        gst_sample_unref(sample)
        return own
    }

    /// Stops the pipeline (state NULL). Idempotent; safe while another thread is blocked in pull (which then
    /// returns .endOfStream).
    public func stop() {
        let first = stopped.withLock { s in
            defer { s = true }
            return !s
        }
        if first { _ = gst_element_set_state(pipeline.element, GST_STATE_NULL) }
    }

    private func makeSample(_ sample: OpaquePointer) -> PulledSample? {
        let buffer = gst_sample_get_buffer(sample)!  // transfer none: the sample holds it
        if passthrough {
            let size = Int(gst_buffer_get_size(buffer))
            return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: outputFormat.width,
                                height: outputFormat.height, colorimetry: Colorimetry(),
                                planes: [PlaneLayout(offset: 0, bytesPerRow: UInt32(clamping: size),
                                                     rowBytes: UInt32(clamping: size), height: 1)],
                                restorer: nil)
        }
        if let audio = audioRequest { return makeAudioSample(sample, buffer: buffer, request: audio) }
        var layout = videoLayout(gst_sample_get_caps(sample))
        _ = swift_gst_video_layout_apply_meta(buffer, &layout)
        var colorimetry = Colorimetry(range: layout.range, matrix: layout.matrix, primaries: layout.primaries,
                                      transfer: layout.transfer)
        if let target = targetRange, layout.format == GST_VIDEO_FORMAT_NV12 || layout.format == GST_VIDEO_FORMAT_I420 {
            // 420v/420f: NV12 made in the frame's memfd (nv12InPlace), else written as tight NV12 by copyBytes, the
            // range converted when the decoder's differs (videoconvert 1.22 keeps the range between YCbCr formats of
            // one matrix).
            let source = layout.range == 0 ? PixelFormat.Range.video.rawValue : layout.range  // unknown: GStreamer's default
            let conversion = source == target.rawValue ? SWIFT_GST_RANGE_KEEP
                : target == .full ? SWIFT_GST_RANGE_TO_FULL : SWIFT_GST_RANGE_TO_VIDEO
            colorimetry.range = target.rawValue
            if layout.format == GST_VIDEO_FORMAT_NV12 && conversion == SWIFT_GST_RANGE_KEEP {
                // Already NV12 in the right range (a decoder that outputs NV12): as is, shared when it can be.
                return plainVideoSample(sample, buffer: buffer, layout: layout, colorimetry: colorimetry)
            }
            if let nv12 = nv12InPlace(sample, buffer: buffer, layout: layout, conversion: conversion,
                                      colorimetry: colorimetry) {
                return nv12
            }
            let w = layout.width, h = layout.height, chromaRow = (w + 1) / 2 * 2
            let nv12 = [PlaneLayout(offset: 0, bytesPerRow: w, rowBytes: w, height: h),
                        PlaneLayout(offset: UInt64(w) * UInt64(h), bytesPerRow: chromaRow, rowBytes: chromaRow,
                                    height: (h + 1) / 2)]
            return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: w, height: h,
                                colorimetry: colorimetry, planes: nv12, restorer: restorer,
                                nv12Copy: (layout, conversion), size: Int(swift_gst_nv12_size(w, h)))
        }
        return plainVideoSample(sample, buffer: buffer, layout: layout, colorimetry: colorimetry)
    }

    /// 420v/420f with zero copies: the frame made NV12 where it lies in its memfd (swift_gst_memfd_make_nv12) — the
    /// luma plane as the decoder wrote it, the CbCr plane in the memory's tail (I420) or in place (NV12). nil when the
    /// frame is not in a memfd memory with room: it is then written as tight NV12 into a copy pool.
    private func nv12InPlace(_ sample: OpaquePointer, buffer: UnsafeMutablePointer<GstBuffer>, layout: SwiftGstVideoLayout,
                             conversion: SwiftGstRangeConversion, colorimetry: Colorimetry) -> PulledSample? {
        guard let allocator else { return nil }
        var layout = layout
        var uvOffset: UInt64 = 0, uvStride: UInt32 = 0
        guard swift_gst_memfd_make_nv12(allocator.pointer, buffer, &layout, conversion, &uvOffset, &uvStride) != 0 else {
            return nil
        }
        var slot = SwiftGstMemfdSlot()
        guard swift_gst_memfd_describe(allocator.pointer, buffer, &slot) != 0 else { return nil }
        let w = layout.width, h = layout.height, chromaRow = (w + 1) / 2 * 2, chromaHeight = (h + 1) / 2
        let planes = [PlaneLayout(offset: tuple(layout.offset, 0), bytesPerRow: UInt32(clamping: tuple(layout.stride, 0) as Int32),
                                  rowBytes: w, height: h),
                      PlaneLayout(offset: uvOffset, bytesPerRow: uvStride, rowBytes: chromaRow, height: chromaHeight)]
        let end = planes.map { $0.offset + UInt64($0.bytesPerRow) * UInt64(max($0.height, 1) - 1) + UInt64($0.rowBytes) }.max()!
        return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: w, height: h,
                            colorimetry: colorimetry, planes: planes, restorer: restorer, size: Int(end),
                            copiesMemoryTail: true, shared: SharedMemory(id: slot.id, mapSize: Int(slot.map_size)),
                            sharedFD: slot.fd)
    }

    /// A decoded frame delivered as GStreamer wrote it (planes from its video meta), shared when it is in a memfd
    /// memory, except for the rewrites below.
    private func plainVideoSample(_ sample: OpaquePointer, buffer: UnsafeMutablePointer<GstBuffer>,
                                  layout: SwiftGstVideoLayout, colorimetry: Colorimetry) -> PulledSample {
        var colorimetry = colorimetry
        let planes = (0..<Int(min(layout.n_planes, 4))).map { i in
            PlaneLayout(offset: tuple(layout.offset, i), bytesPerRow: UInt32(clamping: abs(tuple(layout.stride, i))),
                        rowBytes: tuple(layout.row_bytes, i), height: tuple(layout.plane_height, i))
        }
        var p010Range: (layout: SwiftGstVideoLayout, range: SwiftGstRangeConversion)?
        if let target = targetRange, layout.format == GST_VIDEO_FORMAT_P010_10LE {
            // x420/xf20: copyBytes converts the range in the slot after copying (swift_gst_p010_convert_range), for
            // the reason above.
            let source = layout.range == 0 ? PixelFormat.Range.video.rawValue : layout.range
            if source != target.rawValue {
                p010Range = (layout, target == .full ? SWIFT_GST_RANGE_TO_FULL : SWIFT_GST_RANGE_TO_VIDEO)
            }
            colorimetry.range = target.rawValue
        }
        var padding: PulledSample.RowPadding?
        if layout.format == GST_VIDEO_FORMAT_v210, let plane = planes.first {
            // v210 rows are 128 bytes per 48 pixels, but videoconvert writes only the ⌈width/6⌉ 16-byte groups that
            // hold pixels: the rest of each row is whatever the recycled pool buffer held. CoreVideo and ffmpeg's
            // v210 have zeros there, so the copy clears it (rowBytes covers the whole 128-byte-aligned row).
            let visible = (Int(layout.width) + 5) / 6 * 16
            if visible < Int(plane.rowBytes) {
                padding = .init(offset: Int(plane.offset), stride: Int(plane.bytesPerRow), start: visible,
                                end: Int(plane.rowBytes), rows: Int(plane.height))
            }
        }
        var shared: SharedMemory?
        var slot = SwiftGstMemfdSlot()
        // Frames the worker must rewrite (v210 padding, a P010 range conversion) are copied into a copy pool.
        if padding == nil, p010Range == nil, let allocator, swift_gst_memfd_describe(allocator.pointer, buffer, &slot) != 0 {
            shared = SharedMemory(id: slot.id, mapSize: Int(slot.map_size))
        }
        return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: layout.width,
                            height: layout.height, colorimetry: colorimetry, planes: planes, restorer: restorer,
                            p010Range: p010Range, padding: padding, shared: shared, sharedFD: slot.fd)
    }

    /// Linear PCM: one plane (interleaved) or one per channel (GstAudioMeta's offsets), and the frame count,
    /// trimmed to the range's frames (audioWindow): the decoder's segment clipping keeps partial buffers at both
    /// ends with its own rounding, AVAssetReader delivers exactly round(duration × rate) frames from
    /// round(start × rate). The trimming is a view change (which bytes copyBytes copies, PTS and duration); nil
    /// when no frame of the buffer is in the range (the sample is released).
    private func makeAudioSample(_ sample: OpaquePointer, buffer: UnsafeMutablePointer<GstBuffer>,
                                 request: AudioOutputRequest) -> PulledSample? {
        let size = Int(gst_buffer_get_size(buffer))
        let caps = CapsView(gst_sample_get_caps(sample))
        let channels = max(1, Int(caps?.int("channels") ?? 1))
        let rate = Int(caps?.int("rate") ?? 0)
        let bytesPerSample = request.bytesPerSample
        var frames = size / (channels * bytesPerSample)
        var offsets: [UInt64]? = nil  // non-interleaved: where each channel's plane starts in the buffer
        if request.isNonInterleaved {
            offsets = (0..<channels).map { UInt64($0 * frames * bytesPerSample) }
            if let meta = gst_buffer_get_meta(buffer, gst_audio_meta_api_get_type()) {
                let audioMeta = UnsafeRawPointer(meta).assumingMemoryBound(to: GstAudioMeta.self)
                frames = Int(audioMeta.pointee.samples)
                if let metaOffsets = audioMeta.pointee.offsets {
                    offsets = (0..<min(channels, Int(audioMeta.pointee.info.channels))).map { UInt64(metaOffsets[$0]) }
                }
            }
        }
        // AVChannelLayoutKey: the layout's order (GStreamer's is canonical).
        let reorder = channelOrder?.reordering(for: gst_sample_get_caps(sample))
        if let reorder, let planeOffsets = offsets, planeOffsets.count == reorder.order.count {
            offsets = reorder.order.map { planeOffsets[$0] }  // non-interleaved: permute the planes
        }
        // Trimming: the buffer's first frame is its stream time × rate (rounded: frames are 1/rate apart, far more
        // than a nanosecond).
        var skip = 0
        var timing: (pts: MediaTime, duration: MediaTime)?
        let pts = swift_gst_buffer_pts(buffer)
        if rate > 0, pts != GstClockTime.max {  // GST_CLOCK_TIME_NONE
            let time = streamTime(pts, segment: gst_sample_get_segment(sample))
            if let ns = time.nanoseconds {
                var first = Int64((Double(ns) * Double(rate) / 1e9).rounded())
                let frameNs = GstClockTime(1_000_000_000 / rate + 1)
                if let end = restorer?.clippedEnd(pts: pts, duration: swift_gst_buffer_duration(buffer),
                                                  segment: gst_sample_get_segment(sample), tolerance: frameNs),
                   let endNs = streamTime(end, segment: gst_sample_get_segment(sample)).nanoseconds {
                    // Clipped by the decoder: its frames end where the input packet ends.
                    first = Int64((Double(endNs) * Double(rate) / 1e9).rounded()) - Int64(frames)
                }
                let window = Self.audioWindow(audioRange, rate: rate)
                skip = Int(clamping: max(0, window.first - first))
                var keep = frames - skip
                if let end = window.end { keep = min(keep, Int(clamping: end - first) - skip) }
                if keep <= 0 {
                    gst_sample_unref(sample)
                    return nil
                }
                // The decoder's clipping leaves the range start (not the first frame's time) as the PTS: restate it.
                let aligned = abs(ns - first * 1_000_000_000 / Int64(rate)) <= 1
                if skip > 0 || keep < frames || !aligned {
                    frames = keep
                    // Exact, in the output rate's timescale (frame numbers).
                    timing = (MediaTime(value: first + Int64(skip), timescale: Int32(clamping: rate)),
                              MediaTime(value: Int64(keep), timescale: Int32(clamping: rate)))
                }
            }
        }
        let row = frames * bytesPerSample
        var planes: [PlaneLayout]
        var pieces: [(from: Int, to: Int, length: Int)]? = nil
        if let offsets {
            let used = offsets.prefix(Wire.maxPlanes)
            planes = used.indices.map {
                PlaneLayout(offset: UInt64($0 * row), bytesPerRow: UInt32(clamping: row), rowBytes: UInt32(clamping: row), height: 1)
            }
            let tight = used.enumerated().allSatisfy { $0.element == UInt64($0.offset * row) }
            if !tight || skip > 0 {
                // Each channel's kept frames, packed one plane after the other (copied per plane, no more bytes).
                pieces = used.enumerated().map { (Int($0.element) + skip * bytesPerSample, $0.offset * row, row) }
            }
            return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: 0, height: 0,
                                colorimetry: Colorimetry(), planes: planes, restorer: nil, size: used.count * row,
                                frameCount: UInt32(clamping: frames), timing: timing, pieces: pieces)
        }
        let frameBytes = channels * bytesPerSample
        planes = [PlaneLayout(offset: 0, bytesPerRow: UInt32(clamping: frames * frameBytes),
                              rowBytes: UInt32(clamping: frames * frameBytes), height: 1)]
        if skip > 0 { pieces = [(skip * frameBytes, 0, frames * frameBytes)] }
        return PulledSample(sample: sample, buffer: buffer, format: outputFormat.format, width: 0, height: 0,
                            colorimetry: Colorimetry(), planes: planes, restorer: nil, size: frames * frameBytes,
                            frameCount: UInt32(clamping: frames), timing: timing, pieces: pieces,
                            reorder: reorder.map { ($0.format, $0.from, $0.to) })
    }

    /// The layout for `caps`, parsed once per caps object (the cache holds a ref, so the pointer stays unique).
    private func videoLayout(_ caps: CapsPtr?) -> SwiftGstVideoLayout {
        guard let caps else { return SwiftGstVideoLayout() }
        if let cached = layoutCache, cached.caps == caps { return cached.layout }
        var layout = SwiftGstVideoLayout()
        _ = swift_gst_video_layout_from_caps(caps, &layout)
        if let old = layoutCache { gst_caps_unref(old.caps) }
        layoutCache = (gst_caps_ref(caps), layout)
        return layout
    }
}

/// Element `i` of a homogeneous C array imported as a tuple.
func tuple<T, E>(_ t: T, _ i: Int) -> E {
    withUnsafeBytes(of: t) { $0.load(fromByteOffset: i * MemoryLayout<E>.stride, as: E.self) }
}

/// Owns one ref on a memfd allocator (swift_gst_memfd_allocator_new).
final class SharedAllocator: @unchecked Sendable {
    // @unchecked: the allocator's state is behind its own mutex.
    let pointer: UnsafeMutablePointer<GstAllocator>

    init(maxLive: guint) { pointer = swift_gst_memfd_allocator_new(maxLive)! }
    deinit { gst_object_unref(pointer) }
}

/// A decoded frame that already lives in shared memory: a memfd of `mapSize` bytes, the frame at its offset 0.
/// The memfd itself is handed out once, with the first sample in that memory (PulledSample.takeSharedFD).
public struct SharedMemory: Sendable {
    /// Names the memory for its whole life (TrackPipeline.takeFreedSharedMemories reports it when freed).
    public var id: UInt32
    public var mapSize: Int
}

/// One sample pulled from appsink; holds a ref on the GstSample until deinit. Times are stream time (the asset's
/// timeline), in nanoseconds.
public final class PulledSample: @unchecked Sendable {
    // @unchecked: immutable; the GstSample and its buffer are read-only once pulled, and refcounted thread-safely.
    private let sample: OpaquePointer
    private let buffer: UnsafeMutablePointer<GstBuffer>  // transfer none from the sample
    /// 420v/420f: the frame is written as tight NV12 from the decoder's I420/NV12 (see swift_gst_copy_as_nv12).
    private let nv12Copy: (layout: SwiftGstVideoLayout, range: SwiftGstRangeConversion)?
    /// Interleaved audio with AVChannelLayoutKey: the copied frames are reordered in place (gst_audio_reorder_channels).
    private let reorder: (format: GstAudioFormat, from: [GstAudioChannelPosition], to: [GstAudioChannelPosition])?
    /// 420v/420f made NV12 in its memfd (TrackPipeline.nv12InPlace): the CbCr plane is past the buffer's size, in
    /// the memory's tail, so a copy reads the memory rather than the buffer.
    private let copiesMemoryTail: Bool
    /// x420/xf20 from a source of the other range: the copied P010 frame's range is converted in place.
    private let p010Range: (layout: SwiftGstVideoLayout, range: SwiftGstRangeConversion)?
    /// Nanosecond timescale; .invalid when GStreamer has no timestamp.
    public let presentationTime: MediaTime
    public let decodeTime: MediaTime
    public let duration: MediaTime
    /// !GST_BUFFER_FLAG_DELTA_UNIT
    public let isSync: Bool
    /// GST_BUFFER_FLAG_DISCONT: the first buffer after a discontinuity (a seek, a gap).
    public let isDiscontinuity: Bool
    /// GST_BUFFER_FLAG_DROPPABLE: no other buffer depends on this one.
    public let isDroppable: Bool
    /// Pixel format code (decode) or codec code (passthrough).
    public let format: FourCC
    public let width: UInt32
    public let height: UInt32
    public let colorimetry: Colorimetry
    /// Offsets from the start of what copyBytes writes. Passthrough: one plane covering the whole sample.
    public let planes: [PlaneLayout]
    /// Bytes [start, end) of each of `rows` rows (from `offset`, `stride` apart) that copyBytes sets to zero.
    struct RowPadding {
        var offset: Int, stride: Int, start: Int, end: Int, rows: Int
    }
    private let padding: RowPadding?
    /// The bytes copyBytes writes: gst_buffer_get_size, except for 420v/420f (tight NV12, see swift_gst_nv12_size).
    public let size: Int
    /// Decoded audio: frames (one sample per channel); 0 otherwise.
    public let frameCount: UInt32
    /// Trimmed audio: the byte ranges of the buffer copyBytes copies, and where to (nil: the buffer from 0).
    private let pieces: [(from: Int, to: Int, length: Int)]?
    /// Zero-copy: the frame is already in a memfd memory (`size` bytes from its offset 0); keeping this object
    /// keeps the memory out of the buffer pool, so nothing writes it while the client reads.
    public let shared: SharedMemory?
    /// The memory's fd when this is the first sample in it, until taken; closed in deinit otherwise.
    private let sharedFD: Mutex<Int32>

    init(sample: OpaquePointer, buffer: UnsafeMutablePointer<GstBuffer>, format: FourCC, width: UInt32,
         height: UInt32, colorimetry: Colorimetry, planes: [PlaneLayout], restorer: ClipRestorer?,
         nv12Copy: (layout: SwiftGstVideoLayout, range: SwiftGstRangeConversion)? = nil,
         p010Range: (layout: SwiftGstVideoLayout, range: SwiftGstRangeConversion)? = nil, size: Int? = nil,
         copiesMemoryTail: Bool = false, padding: RowPadding? = nil, frameCount: UInt32 = 0,
         timing: (pts: MediaTime, duration: MediaTime)? = nil,
         pieces: [(from: Int, to: Int, length: Int)]? = nil,
         reorder: (format: GstAudioFormat, from: [GstAudioChannelPosition], to: [GstAudioChannelPosition])? = nil,
         shared: SharedMemory? = nil, sharedFD: Int32 = -1) {
        self.frameCount = frameCount
        self.reorder = reorder
        self.shared = shared
        self.sharedFD = Mutex(shared == nil ? -1 : sharedFD)
        self.pieces = pieces
        self.sample = sample
        self.padding = padding
        self.nv12Copy = nv12Copy
        self.copiesMemoryTail = copiesMemoryTail
        self.p010Range = p010Range
        self.buffer = buffer
        // Buffer timestamps are in the demuxer's media time; the sample's segment maps them to the asset timeline
        // (edit lists: an H.264 track with B-frames starts at PTS 0 there, not at the composition offset).
        let segment = gst_sample_get_segment(sample)  // transfer none
        var pts = swift_gst_buffer_pts(buffer), length = swift_gst_buffer_duration(buffer)
        if let restorer { (pts, length) = restorer.restore(pts: pts, duration: length, segment: segment) }
        presentationTime = timing?.pts ?? streamTime(pts, segment: segment)
        let dts = streamTime(swift_gst_buffer_dts(buffer), segment: segment)
        decodeTime = timing != nil && dts.isValid ? timing!.pts : dts  // trimmed audio: DTS = PTS when there is one
        duration = timing?.duration ?? mediaTime(length)
        isSync = swift_gst_buffer_is_delta_unit(buffer) == 0
        let flags = buffer.pointee.mini_object.flags
        isDiscontinuity = flags & GST_BUFFER_FLAG_DISCONT.rawValue != 0
        isDroppable = flags & GST_BUFFER_FLAG_DROPPABLE.rawValue != 0
        self.format = format
        self.width = width
        self.height = height
        self.colorimetry = colorimetry
        self.planes = planes
        self.size = size ?? Int(gst_buffer_get_size(buffer))
    }

    deinit {
        discardSharedFD()
        gst_sample_unref(sample)
    }

    /// The memfd of `shared`, once: to send in PoolAdded (the caller closes it). nil when this sample is not the
    /// first in its memory, or the fd was already taken or discarded.
    public func takeSharedFD() -> Int32? {
        let fd = sharedFD.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        return fd >= 0 ? fd : nil
    }

    /// Closes the memfd if nobody took it (the frame is copied instead).
    public func discardSharedFD() {
        if let fd = takeSharedFD() { close(fd) }
    }

    /// Copies the whole sample (`size` bytes) to `destination`.
    public func copyBytes(to destination: UnsafeMutableRawPointer) {
        if let nv12 = nv12Copy {
            var layout = nv12.layout
            _ = swift_gst_copy_as_nv12(buffer, &layout, destination, nv12.range)
        } else if copiesMemoryTail {
            _ = swift_gst_memfd_copy(buffer, destination, gsize(size))
        } else if let pieces {
            for piece in pieces {
                _ = gst_buffer_extract(buffer, gsize(piece.from), destination + piece.to, gsize(piece.length))
            }
        } else {
            _ = gst_buffer_extract(buffer, 0, destination, gsize(size))
            if var p010 = p010Range {
                _ = swift_gst_p010_convert_range(destination, gsize(size), &p010.layout, p010.range)
            }
            if let p = padding {
                for row in 0..<p.rows {
                    let start = p.offset + row * p.stride + p.start
                    let end = min(p.offset + row * p.stride + p.end, size)
                    if start < end { (destination + start).initializeMemory(as: UInt8.self, repeating: 0, count: end - start) }
                }
            }
        }
        if let reorder {
            _ = gst_audio_reorder_channels(destination, gsize(size), reorder.format, gint(reorder.from.count),
                                           reorder.from, reorder.to)
        }
    }
}
