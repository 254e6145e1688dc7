// The first layer of the output path: one builder per output mode, each naming its elements. TrackPipeline makes
// the source and parser, asks the mode's chain to build its branch, and links the track's pad to the branch's
// target; the chain hands back the output's SampleMaker (the second layer).
//   decode:      parsebin ─(track pad)→ [DecodeStop] queue ! decodebin ─→ [FrameGate, untagged matrix] queue
//                [! videoconvert ! videoflip: rotation applied] [! trackdswscale] ! videoconvert ! videoscale ! capsfilter ! appsink
//   audio:       parsebin ─(track pad)→ [StartSegment] queue ! decodebin ─→ audioconvert ! capsfilter ! appsink (resampled by AudioSamples)
//   passthrough: parsebin ─(track pad)→ appsink
import CGStreamer
import CGstShim
import TrackdProtocol

/// What a chain built: the element the track's pad links to, the appsink, the media type the track must have, and
/// the sample maker.
struct OutputBranch {
    let target: GstRef<GstElementObject>
    let appsink: GstRef<GstElementObject>
    /// Decoding: the track must be of this type (nil for passthrough).
    let requiredType: MediaType?
    let samples: any SampleMaker
    /// What widens a read's first segment back to the stream's start (the chain attaches it where its own elements
    /// clip; TrackPipeline also to an MPEG-PS demuxer's pads).
    let start: StartSegment
}

/// What every mode's appsink is: no clock sync, a queue of two samples that blocks (no drops), no signals, no copy
/// of the last sample, and an EOS that does not wait for the queue to drain (`wait-on-eos` off): the samples queued
/// before it are still pulled first, and the EOS can complete a preroll — with the default, a stream that ends
/// before the pipeline prerolled (a truncated MP4's few video samples, then EOS) blocks its streaming thread in
/// appsink's EOS handler until the queue is pulled, which the worker does only after ASYNC_DONE: a deadlock.
func makeAppSink() throws(TrackError) -> GstRef<GstElementObject> {
    let appsink = try makeElement("appsink")
    appsink.set("wait-on-eos", bool: false)
    appsink.set("sync", bool: false)
    appsink.set("max-buffers", uint: 2)
    appsink.set("drop", bool: false)
    appsink.set("emit-signals", bool: false)
    appsink.set("enable-last-sample", bool: false)
    return appsink
}

/// The stored samples: the track's pad straight to appsink. parsebin plugs no parser for streams their container
/// already frames, so the bytes are the stored ones.
enum PassthroughChain {
    /// `fd`, `trackID`: the file and track, for what qtdemux leaves out of an MP4 audio track (PassthroughEdit).
    static func build(_ pipeline: Pipeline, parser: GstRef<GstElementObject>, fd: Int32, trackID: UInt32) throws(TrackError) -> OutputBranch {
        let appsink = try makeAppSink()
        parser.exposeContainerFramed()
        pipeline.ignoreMissingPlugins = true
        try pipeline.addChain([appsink])
        let samples = PassthroughSamples(fd: fd, trackID: trackID)
        samples.segment.attach(to: appsink.staticPad("sink"))
        return OutputBranch(target: appsink, appsink: appsink, requiredType: nil, samples: samples, start: samples.segment)
    }
}

/// Decoded video: queue ! decodebin ⇢ queue ! [trackdswscale !] videoconvert ! videoscale ! capsfilter ! appsink.
/// The second queue puts the conversion on a thread of its own, so it runs while the decoder works on the next frame
/// (on 2 CPUs, BGRA output took 3.0 s instead of 3.6 s for 300 1080p frames). appsink offers a buffer pool over
/// memfds (zero-copy). For the 8-bit RGB family, trackdswscale (CGstShim/SwscaleConvert.c) converts with
/// libswscale what it converts exactly (8-bit YCbCr), and videoconvert and videoscale then pass its output
/// through; from any other input it passes the frame through to them.
struct VideoChain {
    let appsink: GstRef<GstElementObject>
    let queue: GstRef<GstElementObject>
    let decodebin: GstRef<GstElementObject>
    let convertQueue: GstRef<GstElementObject>
    let convert: GstRef<GstElementObject>
    let scale: GstRef<GstElementObject>
    let filter: GstRef<GstElementObject>

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
    /// `decodeOrder`: the container stores decode times only and the track has no B-picture (an indexed AVI track):
    /// see DecodeOrderPresentation. `avi` without `decodeOrder` (an AVI track with B-pictures): OpenGOPTimes.
    func build(_ pipeline: Pipeline, request: VideoOutputRequest, threads: Int?, limits: DecodeLimits, trackID: UInt32,
               stop: DecodeStop, selection: FrameSelection?, decodeOrder: Bool, avi: Bool) throws(TrackError) -> OutputBranch {
        let shared = SharedAllocator(maxLive: Self.maxSharedMemories)
        shared.offer(to: appsink, minBuffers: 2)
        if VideoCaps.copiesAsNV12(request.pixelFormat) { shared.reserveNV12() }
        // Direct rendering for the formats trackdswscale makes (a converter reads the decoder's frames; only a decoder
        // of that very RGB format would reach appsink, and is copied then): libav decodes into GStreamer buffers,
        // which saves gst-libav's copy of each picture on the decoder's thread (docs/BENCHMARKS.md).
        let converted = swift_gst_swscale_makes(request.pixelFormat.gstFormat) != 0
        decodebin.tuneDecoders(maxThreads: gint(min(threads ?? 0, 64)), directRendering: converted)
        let converters = try converters(request, threads: threads)
        convertQueue.set("max-size-buffers", uint: 3)
        convertQueue.set("max-size-bytes", uint: 0)
        convertQueue.set("max-size-time", uint64: 0)
        filter.set("caps", caps: VideoCaps.output(request))
        try pipeline.addChain([queue, decodebin])
        try pipeline.addChain([convertQueue] + ConverterInput.turn(degrees: request.rotation) + converters + [filter, appsink])
        if let matrix = request.untaggedMatrix { ConverterInput.assume(matrix, at: convertQueue.staticPad("sink")) }
        ConverterInput.stateStreamColour(at: queue.staticPad("sink"))
        ConverterInput.stateRawMPEG4Rate(selection?.index, in: pipeline, at: queue.staticPad("sink"))
        DecodeLinker(target: convertQueue.staticPad("sink"), bus: pipeline.bus, rawName: "video/x-raw")
            .attach(to: decodebin)
        // On the converter branch's input, before FrameGate (probes run in the order they were added): every decoded
        // frame counts against the budget, delivered or not.
        DecodeGuard(limits: limits, audio: false, trackID: trackID, bus: pipeline.bus).attach(to: convertQueue)
        let tally = DecodeTally(decodeTimes: avi && !decodeOrder)  // also before FrameGate: every frame out of the decoder
        tally.attach(input: queue.staticPad("src"), output: convertQueue.staticPad("sink"))
        let restorer = ClipRestorer()
        let queueSrc = queue.staticPad("src")
        restorer.attach(to: queueSrc)
        stop.count(at: queueSrc)
        stop.deliver(selection)
        // Both before DecodeStop, which reads the buffers' PTS.
        if decodeOrder { DecodeOrderPresentation().attach(to: queue.staticPad("sink")) }
        if avi && !decodeOrder {  // before FrameGate too (probes run in the order they were added)
            OpenGOPTimes.install(in: pipeline, input: queue.staticPad("sink"), output: convertQueue.staticPad("sink"))
        }
        stop.attach(to: queue.staticPad("sink"))
        let start = StartSegment()  // attached to mpegpsdemux's pads only (TrackPipeline)
        let gate = FrameGate(selection: selection, restorer: restorer)
        gate.attach(to: convertQueue.staticPad("sink"))
        gate.countConversions(at: converters[0].staticPad("sink"))
        let samples = VideoSamples(format: request.pixelFormat.code, targetRange: request.pixelFormat.range,
                                   allocator: shared, restorer: restorer, stop: stop, gate: gate, tally: tally,
                                   segment: start, selection: selection)
        return OutputBranch(target: queue, appsink: appsink, requiredType: .video, samples: samples, start: start)
    }
}

extension VideoChain {
    /// The converting elements, in order: trackdswscale for a format it makes, videoconvert and videoscale.
    /// `threads`: as for `build`.
    private func converters(_ request: VideoOutputRequest, threads: Int?) throws(TrackError) -> [GstRef<GstElementObject>] {
        convert.set("n-threads", uint: guint(min(threads ?? 2, 2)))
        // GST_VIDEO_DITHER_NONE: the default (bayer) dithers whenever the output has fewer bits than videoconvert's
        // 16-bit intermediate — even 10-bit to 10-bit (I420_10LE → P010_10LE), which must be a lossless repack.
        // Without it, outputs of the same depth as the decoder's are exact.
        convert.set("dither", int: 0)
        guard swift_gst_swscale_makes(request.pixelFormat.gstFormat) != 0 else { return [convert, scale] }
        let swscale = try makeElement("trackdswscale")
        swscale.set("caps", caps: VideoCaps.output(request))
        return [swscale, convert, scale]
    }
}

/// Decoded audio: queue ! decodebin ⇢ audioconvert ! capsfilter ! appsink, at the decoded rate. A requested rate
/// is made by AudioSamples with GStreamer's resampler (GstAudioConverter, audioresample's defaults), started afresh
/// at a known frame for every range: the audioresample element keeps its phase across flushes (AudioResampling.swift).
struct AudioChain {
    let appsink: GstRef<GstElementObject>
    let queue: GstRef<GstElementObject>
    let decodebin: GstRef<GstElementObject>
    let convert: GstRef<GstElementObject>
    let filter: GstRef<GstElementObject>

    init() throws(TrackError) {
        appsink = try makeAppSink()
        queue = try makeElement("queue")
        decodebin = try makeElement("decodebin")
        convert = try makeElement("audioconvert")
        filter = try makeElement("capsfilter")
    }

    /// `fd`: the file (Opus in Matroska: its CodecDelay, OpusDelayClipping).
    func build(_ pipeline: Pipeline, request: AudioOutputRequest, limits: DecodeLimits, fd: Int32, trackID: UInt32,
               range: MediaTimeRange) throws(TrackError) -> OutputBranch {
        // Deterministic conversion: no random dither, no noise shaping (both enums' value 0 is "none").
        convert.set("dithering", int: 0)
        convert.set("noise-shaping", int: 0)
        let caps = AudioCaps.output(request)
        var channelOrder: ChannelOrder?
        if let layout = request.channelLayout, layout.speakers.count > 1 {
            channelOrder = ChannelOrder(layout: layout, baseCaps: caps, filter: filter)
        }
        filter.set("caps", caps: caps)
        try pipeline.addChain([queue, decodebin])
        try pipeline.addChain([convert, filter, appsink])
        DecodeLinker(target: convert.staticPad("sink"), bus: pipeline.bus, rawName: "audio/x-raw",
                     channelOrder: channelOrder).attach(to: decodebin)
        DecodeGuard(limits: limits, audio: true, trackID: trackID, bus: pipeline.bus).attach(to: convert)
        let restorer = ClipRestorer()  // see ClipRestorer.clippedEnd
        restorer.attach(to: queue.staticPad("src"))
        let start = StartSegment()  // the decoder keeps what comes before the first segment's start (MPEG-TS)
        start.attach(to: queue.staticPad("sink"))
        OpusDelayClipping(fd: fd, trackID: trackID)?.attach(to: queue.staticPad("sink"))
        let grid = MatroskaAudioGrid.forFile(fd: fd, trackID: trackID)
        grid?.attach(to: queue.staticPad("sink"))
        let codec = InputCodec()
        codec.attach(to: queue.staticPad("sink"))
        let samples = AudioSamples(request: request, channelOrder: channelOrder, restorer: restorer, range: range,
                                   startSegment: start, grid: grid, codec: codec)
        return OutputBranch(target: queue, appsink: appsink, requiredType: .audio, samples: samples, start: start)
    }
}

enum VideoCaps {
    /// video/x-raw,format=<gst format>[,width][,height][,pixel-aspect-ratio=1/1 when a size is requested].
    static func output(_ request: VideoOutputRequest) -> GstRef<GstCapsObject> {
        let raw = GstRef<GstCapsObject>.empty("video/x-raw")
        var caps = raw.with("format", string: request.pixelFormat.gstFormat)
        if copiesAsNV12(request.pixelFormat) {
            // 420v/420f: the worker makes NV12 out of I420 itself (in the frame's memfd, nv12InPlace), so I420 from
            // the decoder is as good and saves videoconvert a pass; videoconvert passes through the input format
            // when it can. Measured (1080p H.264, 600 frames, 2 CPUs): videoconvert writing NV12 into the zero-copy
            // pool cost the worker 2.86 s of CPU per read, a fused I420→NV12 copy 2.37 s, y420 2.09 s.
            caps.append(raw.with("format", string: "I420"))
        }
        func set(_ field: String, _ value: Int?) {
            guard let value, value > 0, value <= Int(Int32.max) else { return }
            caps = caps.with(field, int: gint(value))
        }
        set("width", request.width)
        set("height", request.height)
        if (request.width ?? 0) > 0 || (request.height ?? 0) > 0 {
            caps = caps.with("pixel-aspect-ratio", fraction: 1, 1)
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
    static func output(_ request: AudioOutputRequest) -> GstRef<GstCapsObject> {
        var caps = GstRef<GstCapsObject>.empty("audio/x-raw").with("format", string: request.gstFormat)
        caps = caps.with("layout", string: request.isNonInterleaved ? "non-interleaved" : "interleaved")
        if let channels = request.channels { caps = caps.with("channels", int: gint(channels)) }
        return caps
    }
}
