// Streaming-thread callbacks that wire dynamic pads. Each context object is handed to GStreamer retained
// (Unmanaged.passRetained) together with a destroy notify that releases it, so it lives exactly as long as the
// signal handler or probe that uses it.
import CGStreamer
import MediaIndex
import CGstShim
import TrackdProtocol
import Synchronization

/// Routes parsebin's pads: the pad of each wanted track is linked to its target; every other pad gets a probe that
/// drops its buffers (answering OK, so the demuxer neither stops with not-linked nor blocks on a sink that prerolls
/// — in pull mode one streaming thread serves all tracks, and a prerolling fakesink would hold it).
final class PadRouter: @unchecked Sendable {
    // @unchecked: the references are set once in init; `linked`/`order` live in the Mutex.
    /// The wanted tracks' targets, by track id.
    private let targets: [UInt32: GstRef<GstPadObject>]
    /// The pipeline's bus, for AppMessage (not the pipeline: parsebin, which holds this router, is in it).
    private let bus: GstRef<GstBusObject>
    /// Decoding: the media type the track must have (nil for passthrough).
    private let requiredType: MediaType?
    /// Matroska: the track's pad goes through its clock first.
    private let clock: MatroskaClock?
    /// MPEG-PS: each wanted track's pad goes through what times its untimed MPEG video pictures (one per track).
    private let pictureTimes: [UInt32: ProgramStreamVideoTimes]
    /// How the source's stream ids name tracks (containerTrackID).
    private let numbering: TrackNumbering
    private struct State: Sendable {
        var order = 0
        var linked: Set<UInt32> = []
        var reported = false
    }
    private let state = Mutex(State())

    /// Routes the wanted track of `pipeline`'s parsebin, with the pipeline's Matroska clock and MPEG-PS picture times.
    convenience init(wantedTrack: UInt32, target: GstRef<GstPadObject>, pipeline: Pipeline, requiredType: MediaType?) {
        self.init(targets: [wantedTrack: target], bus: pipeline.bus, requiredType: requiredType, clock: pipeline.matroskaClock,
                  pictureTimes: pipeline.programStreamVideo.map { [wantedTrack: $0] } ?? [:], numbering: pipeline.numbering)
    }

    init(targets: [UInt32: GstRef<GstPadObject>], bus: GstRef<GstBusObject>, requiredType: MediaType?,
         clock: MatroskaClock?, pictureTimes: [UInt32: ProgramStreamVideoTimes], numbering: TrackNumbering) {
        self.targets = targets
        self.numbering = numbering
        self.bus = bus
        self.requiredType = requiredType
        self.clock = clock
        self.pictureTimes = pictureTimes
    }

    /// The wanted tracks whose pads were linked so far.
    var linkedTracks: Set<UInt32> { state.withLock { $0.linked } }

    /// Connects pad-added and no-more-pads of `parsebin`.
    func attach(to parsebin: GstRef<GstElementObject>) {
        parsebin.onPadAdded { [self] pad in padAdded(pad) }
        parsebin.onNoMorePads { [self] in noMorePads() }
    }

    private func padAdded(_ pad: GstRef<GstPadObject>) {
        let order = state.withLock { s in
            s.order += 1
            return s.order
        }
        let id = containerTrackID(pad, numbering: numbering) ?? UInt32(order)
        let take = targets[id] != nil && state.withLock { s in s.linked.insert(id).inserted }
        guard take, let target = targets[id] else {
            dropBuffersAndCheck(pad)
            return
        }
        if let requiredType {
            let type = CapsView(pad.currentOrQueriedCaps)?.mediaType ?? .other
            if type != requiredType {
                pad.dropBuffers()
                AppMessage.post(bus, AppMessage.wrongMediaType,
                                text: "Output settings are not compatible with media type \(type.avMediaType)")
                return
            }
        }
        clock?.attach(to: pad)
        pictureTimes[id]?.attach(to: pad)
        let result = pad.link(to: target)
        if result != GST_PAD_LINK_OK {
            pad.dropBuffers()
            AppMessage.post(bus, AppMessage.notDecodable, text: "could not link track \(id) (link result \(result.rawValue))")
        }
    }

    private func noMorePads() { checkLinked() }

    /// Posts noSuchTrack once when a wanted track's pad was not linked. parsebin 1.22 does not emit no-more-pads,
    /// but it exposes a group's pads all at once before data flows: data on an unwanted pad while a wanted track is
    /// not linked means that track does not exist.
    private func checkLinked() {
        let missing = state.withLock { s -> UInt32? in
            guard !s.reported, let id = targets.keys.sorted().first(where: { !s.linked.contains($0) }) else { return nil }
            s.reported = true
            return id
        }
        if let missing {
            AppMessage.post(bus, AppMessage.noSuchTrack, text: "the asset has no track with id \(missing)")
        }
    }

    /// Drops the pad's buffers; the first buffer or EOS also checks that the wanted track was found.
    private func dropBuffersAndCheck(_ pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.is(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
                if info.eventType == GST_EVENT_EOS { checkLinked() }
                return GST_PAD_PROBE_OK
            }
            checkLinked()
            return GST_PAD_PROBE_DROP
        }
    }
}

/// Links decodebin's raw video (or audio) pad to the converter; a non-raw pad means decodebin found no decoder.
final class DecodeLinker: @unchecked Sendable {
    // @unchecked: set once in init; `linked` lives in the Mutex.
    private let target: GstRef<GstPadObject>
    private let bus: GstRef<GstBusObject>  // the pipeline's, for AppMessage
    private let linked = Mutex(false)
    /// The caps name of decoded output: video/x-raw or audio/x-raw.
    private let rawName: String
    /// Audio with AVChannelLayoutKey: told the decoder's caps before the link, to pick the output positions.
    private let channelOrder: ChannelOrder?

    init(target: GstRef<GstPadObject>, bus: GstRef<GstBusObject>, rawName: String = "video/x-raw", channelOrder: ChannelOrder? = nil) {
        self.target = target
        self.bus = bus
        self.rawName = rawName
        self.channelOrder = channelOrder
    }

    func attach(to decodebin: GstRef<GstElementObject>) {
        decodebin.onPadAdded { [self] pad in padAdded(pad) }
    }

    private func padAdded(_ pad: GstRef<GstPadObject>) {
        let caps = pad.currentOrQueriedCaps
        let name = CapsView(caps)?.name ?? ""
        guard name == rawName else {
            pad.dropBuffers()
            AppMessage.post(bus, AppMessage.notDecodable, text: "no GStreamer decoder installed for \(capsToString(caps))")
            return
        }
        let first = linked.withLock { l in
            defer { l = true }
            return !l
        }
        guard first else { pad.dropBuffers(); return }
        channelOrder?.decoderCapsKnown(caps)
        let result = pad.link(to: target)
        if result != GST_PAD_LINK_OK {
            AppMessage.post(bus, AppMessage.notDecodable, text: "could not link the decoder (link result \(result.rawValue))")
        }
    }
}

/// GstVideoDecoder clips the first frame after an ACCURATE seek to the segment: its PTS becomes the seek position
/// and its duration shrinks to match. AVFoundation reports the frame's own timing (the frame displayed at the
/// start time, with its real PTS), so this remembers the decoder's recent input timestamps and maps a clipped
/// frame back to the input frame that ends at the same time.
final class ClipRestorer: @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private struct Frame: Sendable {
        var pts: GstClockTime
        var end: GstClockTime
    }
    private let frames = Mutex<[Frame]>([])
    private static let capacity = 256

    /// Watches the buffers entering the decoder (`pad`: the decoder branch's input).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let (pts, duration) = info.bufferTiming {
                record(pts: pts, duration: duration)
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                frames.withLock { $0.removeAll() }
            }
            return GST_PAD_PROBE_OK
        }
    }

    private func record(pts: GstClockTime, duration: GstClockTime) {
        guard pts != clockTimeNone, duration != clockTimeNone, duration > 0 else { return }
        frames.withLock { f in
            if f.count >= Self.capacity { f.removeFirst(f.count - Self.capacity + 1) }
            f.append(Frame(pts: pts, end: pts + duration))
        }
    }

    /// Audio: GstAudioDecoder clips the first buffer after an ACCURATE seek with gst_audio_buffer_clip, which rounds
    /// the frames to drop down from nanosecond timestamps that were themselves truncated (a 1024-frame AAC packet at
    /// 490666666 ns instead of 490666666.67): it can keep one frame before the range start while restating the PTS as
    /// the start. The end of the kept frames is still the input packet's end, so the true first frame is that end
    /// minus the frames. Returns the end (buffer time) of the input packet an output buffer starting exactly at the
    /// segment start was cut from — the packet whose end is within `tolerance` ns of the buffer's end — or nil.
    func clippedEnd(pts: GstClockTime, duration: GstClockTime, segment: GstSegment?,
                    tolerance: GstClockTime) -> GstClockTime? {
        guard let segment, segment.format == GST_FORMAT_TIME, pts != clockTimeNone,
              duration != clockTimeNone, pts == GstClockTime(segment.start) else { return nil }
        let end = pts + duration
        return frames.withLock { f in
            f.last { $0.pts < pts && $0.end > pts && ($0.end > end ? $0.end - end : end - $0.end) <= tolerance }?.end
        }
    }

    /// The unclipped (pts, duration) of an output buffer; unchanged unless it starts exactly at the segment start.
    func restore(pts: GstClockTime, duration: GstClockTime, segment: GstSegment?) -> (GstClockTime, GstClockTime) {
        guard let segment, segment.format == GST_FORMAT_TIME, pts != clockTimeNone,
              duration != clockTimeNone, pts == GstClockTime(segment.start) else { return (pts, duration) }
        let end = pts + duration
        let original = frames.withLock { f in f.last { $0.end == end && $0.pts < pts } }
        guard let original else { return (pts, duration) }
        return (original.pts, original.end - original.pts)
    }
}
