import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol

/// What generatePNG made: the frame's own PTS, its size, the PNG bytes, and the frames the decoder gave and those
/// converted (one, with an index: the others are dropped before conversion).
public struct PNGImage: Sendable {
    public let actualTime: MediaTime
    public let width: UInt32
    public let height: UInt32
    public let png: [UInt8]
    public let framesDecoded: UInt64
    public let framesConverted: UInt64
}

/// The frame displayed at `time`, converted to RGB and encoded by pngenc. With the track's frame `index`, that is
/// the index's rule (`FrameIndex.frameDisplayed(at:)`, the one ReadFrames and decoded ranges follow; past the end:
/// the last frame): an ACCURATE seek to that frame's own PTS (an elementary stream's: to 0, its untimed index's
/// frames read from the beginning, as its decoded ranges are), and every other decoded frame dropped before
/// conversion (FrameGate). Without one, the frame with the largest PTS ≤ time by an ACCURATE seek (the decoder drops
/// every frame that ends before the segment start, by the container's durations); AVI video without one (B-pictures)
/// by the seek and times of its decoded ranges (OpenGOPTimes). With an index, the decoder is
/// handed no H.264 picture that no other refers to but the frame's own, and nothing after it (DecodeStop).
///
///   trackdfdsrc ! parsebin ─(track pad)→ [DecodeStop] queue ! decodebin ─→ [FrameGate] videoconvert ! capsfilter(RGB) ! pngenc ! appsink
/// `limits.maxFramePixels` is enforced on the decoder's output (DecodeGuard; one frame needs no budget).
public func generatePNG(source: MediaSource, trackID: UInt32, at time: MediaTime, index: FrameIndex? = nil,
                        limits: DecodeLimits = DecodeLimits()) throws(TrackError) -> PNGImage {
    try Gst.initialize()
    let pipeline = try Pipeline()
    // With an index, the preroll converts nothing: every frame is dropped (a GAP event) until the seek.
    let chain = try ImageChain(pipeline, fd: source.fd, trackID: trackID, limits: limits,
                               preroll: index.map { FrameSelection(index: $0, frames: []) })
    let context = "Cannot generate an image of track \(trackID)"
    try pipeline.setState(GST_STATE_PAUSED, context: context)
    try pipeline.waitAsyncDone(timeoutNs: TrackPipeline.prerollTimeoutNs, context: context)

    let target = max(0, time.nanoseconds ?? 0)
    if let index, !index.frames.isEmpty {
        let frame = index.frameDisplayed(at: max(0, index.streamTime(time) ?? 0)) ?? index.frames.count - 1
        let selection = FrameSelection(index: index, frames: [frame])
        chain.gate.select(selection)
        // An elementary stream's samples carry no times and the decoder times its frames exactly only from the
        // beginning (after the parser's byte seek, by an estimate): read from there, every sample decoded
        // (DecodeStop judges samples by their times; after the seek the parser times the first one only).
        let fromStart = source.container == .elementaryStream
        if !fromStart {
            chain.stop.deliver(selection)  // the frame is the last sample it needs in decode order: EOS after it
            chain.stop.arm(needed: nil, lastNeeded: index.frames[frame].presentationTime)
        }
        if let result = try chain.frame(at: fromStart ? 0 : index.frames[frame].presentationTime, pipeline,
                                        context: context) {
            return result
        }
        throw TrackError(.decodeFailed, "\(context): frame \(frame) was not produced by the decoder")
    }
    if let result = try chain.frame(at: target, pipeline, context: context) { return result }
    // Past the last frame: the frame displayed just before the end (AVI with B-pictures: at its tick, OpenGOPTimes).
    if let duration = pipeline.duration, duration > 0, duration <= target,
       let result = try chain.frame(at: pipeline.openGOPTimes?.lastTick(before: duration) ?? duration - 1, pipeline,
                                    context: context) {
        return result
    }
    throw TrackError(.invalidArgument, "\(context): no frame at \(time)")
}

/// The image pipeline's elements, by name, and the frame at one time.
private struct ImageChain {
    let sink: GstRef<GstElementObject>
    let restorer = ClipRestorer()
    let gate: FrameGate
    /// Pictures no other refers to are not decoded unless delivered; decoding ends after the frame.
    let stop = DecodeStop(needed: nil, lastNeeded: nil)

    init(_ pipeline: Pipeline, fd: Int32, trackID: UInt32, limits: DecodeLimits, preroll: FrameSelection?) throws(TrackError) {
        gate = FrameGate(selection: preroll, restorer: restorer, gapsAfterSelect: false)
        let parser = try pipeline.addSourceAndParser(fd: fd)
        let queue = try makeElement("queue"), decodebin = try makeElement("decodebin")
        let convert = try makeElement("videoconvert"), filter = try makeElement("capsfilter")
        let encoder = try makeElement("pngenc")
        sink = try makeElement("appsink")
        sink.set("sync", bool: false)
        sink.set("max-buffers", uint: 1)
        sink.set("enable-last-sample", bool: false)
        filter.set("caps", caps: GstRef<GstCapsObject>.empty("video/x-raw").with("format", string: "RGB"))
        try pipeline.addChain([queue, decodebin])
        try pipeline.addChain([convert, filter, encoder, sink])
        DecodeLinker(target: convert.staticPad("sink"), bus: pipeline.bus).attach(to: decodebin)
        var frameLimit = limits
        (frameLimit.videoBudgetPixels, frameLimit.audioBudgetSamples) = (.max, .max)
        DecodeGuard(limits: frameLimit, audio: false, trackID: trackID, bus: pipeline.bus).attach(to: convert)
        restorer.attach(to: queue.staticPad("src"))
        ConverterInput.stateRawMPEG4Rate(preroll?.index, in: pipeline, at: queue.staticPad("sink"))
        // AVI without a frame index (B-pictures): the ranges' rule, before DecodeStop and FrameGate.
        if pipeline.container == .avi && preroll == nil {
            OpenGOPTimes.install(in: pipeline, input: queue.staticPad("sink"), output: convert.staticPad("sink"))
        }
        stop.deliver(pipeline.container == .elementaryStream ? nil : preroll)
        stop.attach(to: queue.staticPad("sink"))
        gate.attach(to: convert.staticPad("sink"))
        gate.countConversions(at: filter.staticPad("sink"))  // what came out of the converter
        PadRouter(wantedTrack: trackID, target: queue.staticPad("sink"), pipeline: pipeline, requiredType: .video)
            .attach(to: parser)
    }

    /// Seeks (accurate) to `ns` and takes the prerolled PNG; nil at the end (no frame).
    func frame(at ns: Int64, _ pipeline: Pipeline,
               context: String) throws(TrackError) -> PNGImage? {
        let flags = GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue
        guard pipeline.seek(flags: flags, start: ns, stopType: GST_SEEK_TYPE_NONE, stop: -1) else {
            throw pipeline.popError(context: context)
                ?? TrackError(.operationNotSupportedForAsset, "\(context): the demuxer refused to seek to \(ns) ns")
        }
        try pipeline.waitAsyncDone(timeoutNs: TrackPipeline.prerollTimeoutNs, context: context)
        guard let sample = sink.tryPullPreroll(timeoutNs: 0), sample.hasBuffer else { return nil }  // EOS: no frame
        let view = CapsView(sample.caps)
        let png = sample.bytes(count: sample.size)
        let segment = sample.segment
        let (pts, _) = restorer.restore(pts: sample.pts, duration: sample.duration, segment: segment)
        return PNGImage(actualTime: streamTime(pts, segment: segment), width: UInt32(max(0, view?.int("width") ?? 0)),
                              height: UInt32(max(0, view?.int("height") ?? 0)), png: png,
                              framesDecoded: gate.framesDecoded, framesConverted: gate.framesConverted)
    }
}
