import CGStreamer
import CGstShim
import Synchronization

/// A read from the start delivers every stored sample, also those the demuxer's first segment begins after:
/// tsdemux starts its segment at the first video PTS, and ffmpeg's MPEG-TS puts the first AAC packet (its priming)
/// just before it — it ends exactly at the segment's start, and appsink, like every GstBaseSink, drops a buffer
/// that ends at or before the start (47 of ffprobe's 48 packets); GstAudioDecoder clips its decoded frames away the
/// same way (1024 of ffmpeg's 97 280 frames of a 2 s file). A probe on the branch's input (appsink's sink pad for
/// passthrough, the decoder's for decoded audio) moves such a segment's start back to the stream's beginning with
/// its stream time moved by the same amount, so every buffer's stream time — the time on the wire — is unchanged
/// and nothing is clipped at the start. Only while the read starts at the beginning: a segment made by a seek to a
/// later range start is left as it is (its start is that range's). An MP4 edit's segment (start after time: AAC
/// priming the edit skips) is left as it is too.
final class StartSegment: Sendable {
    private let fromStart = Atomic(true)

    /// The next range starts at the stream's beginning (or not).
    func seeking(fromStart: Bool) { self.fromStart.store(fromStart, ordering: .relaxed) }

    /// Watches the SEGMENT events reaching `pad` (the branch's input; `source`: a source pad, whose event is
    /// replaced in place — nothing can be sent to a source pad).
    func attach(to pad: GstRef<GstPadObject>, source: Bool = false) {
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { [self] info in
            guard fromStart.load(ordering: .relaxed), let segment = info.segment, let widened = Self.widened(segment)
            else { return GST_PAD_PROBE_OK }
            if source {
                info.replaceSegment(widened)
                return GST_PAD_PROBE_OK
            }
            info.sendSegment(widened)  // passes this probe unchanged: its start or its time is 0
            return GST_PAD_PROBE_DROP
        }
    }

    /// Also watches the SEGMENT events on each pad of the MPEG-PS demuxer inside `parsebin`, before its parsers see
    /// them: mpegpsdemux starts its first segment (and a key-unit seek's to 0) at the first PTS its scan finds, and
    /// the scan reads only a PES that directly follows a pack header — 0.384 s into GStreamer's mpegpsmux file of
    /// H.264 and MP2, whose first such PES with a PTS is there. Unwidened, baseparse drops what ends before that
    /// start less its lead-in (mpegaudioparse keeps 10 frames: that file's first 5 MP2 frames go, stored and
    /// decoded), and the video decoder the frames that end before it (11 of 60).
    func attachToDemuxer(in parsebin: GstRef<GstElementObject>) {
        parsebin.onElementAdded { [self] element in
            guard element.factoryName == "mpegpsdemux" else { return }
            element.onPadAdded { [self] pad in attach(to: pad, source: true) }
        }
    }

    /// `segment` with start and time both lowered by the smaller of the two (stream time = time + position − start
    /// stays the same), or nil when that is 0 or the segment is not a forward time segment.
    static func widened(_ segment: GstSegment) -> GstSegment? {
        guard segment.format == GST_FORMAT_TIME, segment.rate > 0, segment.applied_rate == 1,
              segment.start != clockTimeNone, segment.time != clockTimeNone else { return nil }
        let shift = min(segment.start, segment.time)
        guard shift > 0 else { return nil }
        var widened = segment
        widened.start -= shift
        widened.time -= shift
        if widened.position != clockTimeNone { widened.position = widened.position >= shift ? widened.position - shift : 0 }
        return widened
    }
}
