// The first layer of the output path: one builder per output mode, each naming its elements. TrackPipeline makes
// the source and parser, asks the mode's chain to build its branch, and links the track's pad to the branch's
// target; the chain hands back the output's SampleMaker (the second layer).
//   decode:      parsebin ─(track pad)→ queue ! decodebin ─→ [FrameGate] queue ! videoconvert ! videoscale ! capsfilter ! appsink
//   audio:       parsebin ─(track pad)→ queue ! decodebin ─→ audioconvert ! capsfilter ! appsink (resampled by AudioSamples)
//   passthrough: parsebin ─(track pad)→ appsink
import CGStreamer
import CGstShim
import TrackdProtocol

/// What a chain built: the element the track's pad links to, the appsink, the media type the track must have, and
/// the sample maker.
struct OutputBranch {
    let target: GstRef<GstElement>
    let appsink: GstRef<GstElement>
    /// Decoding: the track must be of this type (nil for passthrough).
    let requiredType: MediaType?
    let samples: any SampleMaker
}

/// What every mode's appsink is: no clock sync, a queue of two samples that blocks (no drops), no signals, no copy
/// of the last sample, and an EOS that does not wait for the queue to drain (`wait-on-eos` off): the samples queued
/// before it are still pulled first, and the EOS can complete a preroll — with the default, a stream that ends
/// before the pipeline prerolled (a truncated MP4's few video samples, then EOS) blocks its streaming thread in
/// appsink's EOS handler until the queue is pulled, which the worker does only after ASYNC_DONE: a deadlock.
private func makeAppSink() throws(TrackError) -> GstRef<GstElement> {
    let appsink = try makeElement("appsink")
    swift_gst_object_set_bool(appsink.pointer, "wait-on-eos", 0)
    swift_gst_object_set_bool(appsink.pointer, "sync", 0)
    swift_gst_object_set_uint(appsink.pointer, "max-buffers", 2)
    swift_gst_object_set_bool(appsink.pointer, "drop", 0)
    swift_gst_object_set_bool(appsink.pointer, "emit-signals", 0)
    swift_gst_object_set_bool(appsink.pointer, "enable-last-sample", 0)
    return appsink
}

/// The stored samples: the track's pad straight to appsink. parsebin plugs no parser for streams their container
/// already frames, so the bytes are the stored ones.
enum PassthroughChain {
    /// `fd`, `trackID`: the file and track, for what qtdemux leaves out of an MP4 audio track (PassthroughEdit).
    static func build(_ pipeline: Pipeline, parser: ElementPtr, fd: Int32, trackID: UInt32) throws(TrackError) -> OutputBranch {
        let appsink = try makeAppSink()
        swift_gst_parsebin_expose_container_framed(parser)
        pipeline.ignoreMissingPlugins = true
        try pipeline.addChain([appsink.pointer])
        return OutputBranch(target: appsink, appsink: appsink, requiredType: nil,
                            samples: PassthroughSamples(fd: fd, trackID: trackID))
    }
}

/// Decoded video: queue ! decodebin ⇢ queue ! videoconvert ! videoscale ! capsfilter ! appsink. The second queue
/// puts the conversion on a thread of its own, so it runs while the decoder works on the next frame (on 2 CPUs,
/// BGRA output took 3.0 s instead of 3.6 s for 300 1080p frames). appsink offers a buffer pool over memfds
/// (zero-copy).
struct VideoChain {
    let appsink: GstRef<GstElement>
    let queue: GstRef<GstElement>
    let decodebin: GstRef<GstElement>
    let convertQueue: GstRef<GstElement>
    let convert: GstRef<GstElement>
    let scale: GstRef<GstElement>
    let filter: GstRef<GstElement>

    /// Live memfd memories per output at most: back-pressure (the client's slots, appsink's queue) keeps far fewer.
    static let maxSharedMemories: guint = 32

    init() throws(TrackError) {
        appsink = try makeAppSink()
        queue = try makeElement("queue")
        decodebin = try makeElement("decodebin")
        convert = try makeElement("videoconvert")
        scale = try makeElement("videoscale")
        filter = try makeElement("capsfilter")
        convertQueue = try makeElement("queue")
    }

    /// `threads`: the most threads the decoder (libav's max-threads) and the converter may use; nil = their defaults.
    /// `stop`: the sample filter (DecodeStop) on the decoder branch's input. `selection`: the frames the first range
    /// delivers (FrameGate, on the converter branch's input; nil: every frame).
    func build(_ pipeline: Pipeline, request: VideoOutputRequest, threads: Int?, limits: DecodeLimits, trackID: UInt32,
               stop: DecodeStop, selection: FrameSelection?) throws(TrackError) -> OutputBranch {
        let shared = SharedAllocator(maxLive: Self.maxSharedMemories)
        swift_gst_appsink_offer_memfd_pool(appsink.pointer, shared.pointer, 2)
        if VideoCaps.copiesAsNV12(request.pixelFormat) { swift_gst_memfd_allocator_reserve_nv12(shared.pointer) }
        swift_gst_bin_tune_decoders(decodebin.pointer, gint(min(threads ?? 0, 64)))
        swift_gst_object_set_uint(convert.pointer, "n-threads", guint(min(threads ?? 2, 2)))
        // GST_VIDEO_DITHER_NONE: the default (bayer) dithers whenever the output has fewer bits than videoconvert's
        // 16-bit intermediate — even 10-bit to 10-bit (I420_10LE → P010_10LE), which must be a lossless repack.
        // Without it, outputs of the same depth as the decoder's are exact.
        swift_gst_object_set_int(convert.pointer, "dither", 0)
        swift_gst_object_set_uint(convertQueue.pointer, "max-size-buffers", 3)
        swift_gst_object_set_uint(convertQueue.pointer, "max-size-bytes", 0)
        swift_gst_object_set_uint64(convertQueue.pointer, "max-size-time", 0)
        let caps = VideoCaps.output(request)
        swift_gst_object_set_caps(filter.pointer, "caps", caps.pointer)
        try pipeline.addChain([queue.pointer, decodebin.pointer])
        try pipeline.addChain([convertQueue.pointer, convert.pointer, scale.pointer, filter.pointer, appsink.pointer])
        DecodeLinker(target: staticPad(convertQueue, "sink"), pipeline: pipeline.element, rawName: "video/x-raw")
            .attach(to: decodebin.pointer)
        // On the converter branch's input, before FrameGate (probes run in the order they were added): every decoded
        // frame counts against the budget, delivered or not.
        DecodeGuard(limits: limits, audio: false, trackID: trackID, pipeline: pipeline.element).attach(to: convertQueue.pointer)
        let restorer = ClipRestorer()
        let queueSrc = staticPad(queue, "src")
        restorer.attach(to: queueSrc.pointer)
        stop.count(at: queueSrc.pointer)
        stop.attach(to: staticPad(queue, "sink").pointer)
        let gate = FrameGate(selection: selection, restorer: restorer)
        gate.attach(to: staticPad(convertQueue, "sink").pointer)
        gate.countConversions(at: staticPad(convert, "sink").pointer)
        let samples = VideoSamples(format: request.pixelFormat.code, targetRange: request.pixelFormat.range,
                                   allocator: shared, restorer: restorer, stop: stop, gate: gate, selection: selection)
        return OutputBranch(target: queue, appsink: appsink, requiredType: .video, samples: samples)
    }
}

/// Decoded audio: queue ! decodebin ⇢ audioconvert ! capsfilter ! appsink, at the decoded rate. A requested rate
/// is made by AudioSamples with GStreamer's resampler (GstAudioConverter, audioresample's defaults), started afresh
/// at a known frame for every range: the audioresample element keeps its phase across flushes (AudioResampling.swift).
struct AudioChain {
    let appsink: GstRef<GstElement>
    let queue: GstRef<GstElement>
    let decodebin: GstRef<GstElement>
    let convert: GstRef<GstElement>
    let filter: GstRef<GstElement>

    init() throws(TrackError) {
        appsink = try makeAppSink()
        queue = try makeElement("queue")
        decodebin = try makeElement("decodebin")
        convert = try makeElement("audioconvert")
        filter = try makeElement("capsfilter")
    }

    func build(_ pipeline: Pipeline, request: AudioOutputRequest, limits: DecodeLimits, trackID: UInt32,
               range: MediaTimeRange) throws(TrackError) -> OutputBranch {
        // Deterministic conversion: no random dither, no noise shaping (both enums' value 0 is "none").
        swift_gst_object_set_int(convert.pointer, "dithering", 0)
        swift_gst_object_set_int(convert.pointer, "noise-shaping", 0)
        let caps = AudioCaps.output(request)
        var channelOrder: ChannelOrder?
        if let layout = request.channelLayout, layout.speakers.count > 1 {
            channelOrder = ChannelOrder(layout: layout, baseCaps: caps.pointer, filter: filter.pointer)
        }
        swift_gst_object_set_caps(filter.pointer, "caps", caps.pointer)
        try pipeline.addChain([queue.pointer, decodebin.pointer])
        try pipeline.addChain([convert.pointer, filter.pointer, appsink.pointer])
        DecodeLinker(target: staticPad(convert, "sink"), pipeline: pipeline.element, rawName: "audio/x-raw",
                     channelOrder: channelOrder).attach(to: decodebin.pointer)
        DecodeGuard(limits: limits, audio: true, trackID: trackID, pipeline: pipeline.element).attach(to: convert.pointer)
        let restorer = ClipRestorer()  // see ClipRestorer.clippedEnd
        restorer.attach(to: staticPad(queue, "src").pointer)
        let samples = AudioSamples(request: request, channelOrder: channelOrder, restorer: restorer, range: range)
        return OutputBranch(target: queue, appsink: appsink, requiredType: .audio, samples: samples)
    }
}

/// gst_element_get_static_pad of a pad every element of the kind has.
func staticPad(_ element: GstRef<GstElement>, _ name: String) -> GstRef<GstPad> {
    GstRef(full: gst_element_get_static_pad(element.pointer, name)!)
}

enum VideoCaps {
    /// video/x-raw,format=<gst format>[,width][,height][,pixel-aspect-ratio=1/1 when a size is requested].
    static func output(_ request: VideoOutputRequest) -> GstRef<GstCaps> {
        let raw = GstRef<GstCaps>(full: gst_caps_new_empty_simple("video/x-raw")!)
        var caps = GstRef<GstCaps>(full: swift_gst_caps_with_string(raw.pointer, "format", request.pixelFormat.gstFormat)!)
        if copiesAsNV12(request.pixelFormat) {
            // 420v/420f: the worker makes NV12 out of I420 itself (in the frame's memfd, nv12InPlace), so I420 from
            // the decoder is as good and saves videoconvert a pass; videoconvert passes through the input format
            // when it can. Measured (1080p H.264, 600 frames, 2 CPUs): videoconvert writing NV12 into the zero-copy
            // pool cost the worker 2.86 s of CPU per read, a fused I420→NV12 copy 2.37 s, y420 2.09 s.
            gst_caps_append(caps.pointer, swift_gst_caps_with_string(raw.pointer, "format", "I420")!)  // takes it
        }
        func set(_ field: String, _ value: Int?) {
            guard let value, value > 0, value <= Int(Int32.max) else { return }
            caps = GstRef(full: swift_gst_caps_with_int(caps.pointer, field, gint(value))!)
        }
        set("width", request.width)
        set("height", request.height)
        if (request.width ?? 0) > 0 || (request.height ?? 0) > 0 {
            caps = GstRef(full: swift_gst_caps_with_fraction(caps.pointer, "pixel-aspect-ratio", 1, 1)!)
        }
        return caps
    }

    /// 420v/420f: made NV12 by the worker from I420 (nv12InPlace; swift_gst_copy_as_nv12 when the frame is not in a
    /// memfd), range converted.
    static func copiesAsNV12(_ format: PixelFormat) -> Bool { format.gstFormat == "NV12" && format.range != nil }
}

enum AudioCaps {
    /// audio/x-raw,format=<S16LE …>,layout=interleaved|non-interleaved[,channels]: channels are left open (the
    /// source's) when not requested; the rate always is (AudioSamples resamples).
    static func output(_ request: AudioOutputRequest) -> GstRef<GstCaps> {
        let raw = GstRef<GstCaps>(full: gst_caps_new_empty_simple("audio/x-raw")!)
        var caps = GstRef<GstCaps>(full: swift_gst_caps_with_string(raw.pointer, "format", request.gstFormat)!)
        func set(_ make: (CapsPtr) -> CapsPtr?) { caps = GstRef(full: make(caps.pointer)!) }
        set { swift_gst_caps_with_string($0, "layout", request.isNonInterleaved ? "non-interleaved" : "interleaved") }
        if let channels = request.channels { set { swift_gst_caps_with_int($0, "channels", gint(channels)) } }
        return caps
    }
}
