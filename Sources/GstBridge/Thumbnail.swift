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
/// the last frame): an ACCURATE seek to that frame's own PTS, and every other decoded frame dropped before
/// conversion (FrameGate). Without one, the frame with the largest PTS ≤ time by an ACCURATE seek (the decoder drops
/// every frame that ends before the segment start, by the container's durations).
///
///   trackdfdsrc ! parsebin ─(track pad)→ queue ! decodebin ─→ [FrameGate] videoconvert ! capsfilter(RGB) ! pngenc ! appsink
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
        chain.gate.select(FrameSelection(index: index, frames: [frame]))
        if let result = try chain.frame(at: index.frames[frame].presentationTime, pipeline, context: context) {
            return result
        }
        throw TrackError(.decodeFailed, "\(context): frame \(frame) was not produced by the decoder")
    }
    if let result = try chain.frame(at: target, pipeline, context: context) { return result }
    // Past the last frame: the frame displayed just before the end.
    var duration: gint64 = -1
    if gst_element_query_duration(pipeline.element, GST_FORMAT_TIME, &duration) != 0, duration > 0,
       Int64(duration) <= target, let result = try chain.frame(at: Int64(duration) - 1, pipeline, context: context) {
        return result
    }
    throw TrackError(.invalidArgument, "\(context): no frame at \(time)")
}

/// The image pipeline's elements, by name, and the frame at one time.
private struct ImageChain {
    let sink: GstRef<GstElement>
    let restorer = ClipRestorer()
    let gate: FrameGate

    init(_ pipeline: Pipeline, fd: Int32, trackID: UInt32, limits: DecodeLimits, preroll: FrameSelection?) throws(TrackError) {
        gate = FrameGate(selection: preroll, restorer: restorer, gapsAfterSelect: false)
        let parser = try pipeline.addSourceAndParser(fd: fd)
        let queue = try makeElement("queue"), decodebin = try makeElement("decodebin")
        let convert = try makeElement("videoconvert"), filter = try makeElement("capsfilter")
        let encoder = try makeElement("pngenc")
        sink = try makeElement("appsink")
        swift_gst_object_set_bool(sink.pointer, "sync", 0)
        swift_gst_object_set_uint(sink.pointer, "max-buffers", 1)
        swift_gst_object_set_bool(sink.pointer, "enable-last-sample", 0)
        let caps = GstRef<GstCaps>(full: gst_caps_new_empty_simple("video/x-raw")!)
        let rgb = GstRef<GstCaps>(full: swift_gst_caps_with_string(caps.pointer, "format", "RGB")!)
        swift_gst_object_set_caps(filter.pointer, "caps", rgb.pointer)
        try pipeline.addChain([queue.pointer, decodebin.pointer])
        try pipeline.addChain([convert.pointer, filter.pointer, encoder.pointer, sink.pointer])
        DecodeLinker(target: staticPad(convert, "sink"), pipeline: pipeline.element).attach(to: decodebin.pointer)
        var frameLimit = limits
        (frameLimit.videoBudgetPixels, frameLimit.audioBudgetSamples) = (.max, .max)
        DecodeGuard(limits: frameLimit, audio: false, trackID: trackID, pipeline: pipeline.element).attach(to: convert.pointer)
        restorer.attach(to: staticPad(queue, "src").pointer)
        gate.attach(to: staticPad(convert, "sink").pointer)
        gate.countConversions(at: staticPad(filter, "sink").pointer)  // what came out of the converter
        PadRouter(wantedTrack: trackID, target: staticPad(queue, "sink"), pipeline: pipeline.element,
                  requireVideo: true).attach(to: parser)
    }

    /// Seeks (accurate) to `ns` and takes the prerolled PNG; nil at the end (no frame).
    func frame(at ns: Int64, _ pipeline: Pipeline,
               context: String) throws(TrackError) -> PNGImage? {
        let flags = GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue
        guard gst_element_seek(pipeline.element, 1.0, GST_FORMAT_TIME, GstSeekFlags(rawValue: flags), GST_SEEK_TYPE_SET,
                               gint64(ns), GST_SEEK_TYPE_NONE, -1) != 0 else {
            throw pipeline.popError(context: context)
                ?? TrackError(.operationNotSupportedForAsset, "\(context): the demuxer refused to seek to \(ns) ns")
        }
        try pipeline.waitAsyncDone(timeoutNs: TrackPipeline.prerollTimeoutNs, context: context)
        guard let pulled = gst_app_sink_try_pull_preroll(appSink(sink.pointer), 0) else { return nil }  // EOS: no frame
        let sample = GstRef<GstSampleObject>(full: pulled)
        guard let buffer = gst_sample_get_buffer(sample.pointer) else { return nil }  // transfer none
        let view = CapsView(gst_sample_get_caps(sample.pointer))
        let size = Int(gst_buffer_get_size(buffer))
        let png = [UInt8](unsafeUninitializedCapacity: size) { out, count in
            count = Int(gst_buffer_extract(buffer, 0, out.baseAddress, gsize(size)))
        }
        let segment = gst_sample_get_segment(sample.pointer)  // transfer none
        let (pts, _) = restorer.restore(pts: swift_gst_buffer_pts(buffer), duration: swift_gst_buffer_duration(buffer),
                                        segment: segment)
        return PNGImage(actualTime: streamTime(pts, segment: segment), width: UInt32(max(0, view?.int("width") ?? 0)),
                              height: UInt32(max(0, view?.int("height") ?? 0)), png: png,
                              framesDecoded: gate.framesDecoded, framesConverted: gate.framesConverted)
    }
}
