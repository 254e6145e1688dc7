import CGStreamer
import MediaIndex
import Synchronization

/// Matroska's times are the container's (ffprobe's): a block's timestamp, also when the first one is not 0.
/// matroskademux 1.22 gives buffers those times but puts its segment's stream time at the first timestamp it has
/// read (`stream_start_time`), so stream time — what every other container's times are read as — would run early by
/// it: a file whose first frame is at 0.5 s read from 0; and because it lowers `stream_start_time` when a later block
/// is earlier (an ffmpeg remux of an MP4: the video's first block at 21 ms, the AAC priming block at 0 right after),
/// the first two video frames of such a file came 21 ms early and the second seemed 12 ms long.
///
/// A probe on the track's pad (parsebin's, before anything else sees the stream) rewrites every SEGMENT so that its
/// stream time is its position (`time` = `start`): stream time is then the block's own time, for every element that
/// follows. Seeks go the other way (`seekPositions`): matroskademux takes a seek position in its stream time, so the
/// container time asked for is lowered by `stream_start_time` (the latest segment's `start − time`). That value can
/// still fall after the seek was sent (an earlier block read later), which would start the segment early by the
/// difference; so the first segment after a flushing seek is given the requested start (ACCURATE seeks: a key-unit
/// seek's start is the demuxer's) and stop, the positions the rest of the pipeline clips to.
final class MatroskaClock: Sendable {
    private struct Request: Sendable {
        var start: guint64
        var stop: guint64?
        var accurate: Bool
        /// The seek's flush reached the pad: the next segment is the seek's.
        var flushed = false
    }
    private struct State: Sendable {
        /// matroskademux's `stream_start_time` as its latest segment says (ns).
        var streamStart: UInt64 = 0
        var request: Request?
    }
    private let state = Mutex(State())

    /// A clock for the pipeline reading `fd`, when the file is Matroska/WebM; nil for every other container.
    static func forFile(fd: Int32) -> MatroskaClock? {
        TrackTimescale.container(fd: fd) == .matroska ? MatroskaClock() : nil
    }

    /// Rewrites the segments passing `pad` (the track's pad of parsebin, before it is linked).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { s in s.request?.flushed = true }
            } else if let segment = info.segment, let rewritten = rewrite(segment) {
                info.replaceSegment(rewritten)
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// `segment` with stream time = position; after a seek, with the seek's positions. nil: left as it is (not a
    /// forward time segment).
    func rewrite(_ segment: GstSegment) -> GstSegment? {
        guard segment.format == GST_FORMAT_TIME, segment.rate > 0, segment.start != clockTimeNone,
              segment.time != clockTimeNone, segment.start >= segment.time else { return nil }
        var out = segment
        state.withLock { s in
            s.streamStart = UInt64(segment.start - segment.time)
            guard let request = s.request, request.flushed else { return }
            s.request = nil
            if request.accurate { out.start = max(out.start, request.start) }
            if let stop = request.stop { out.stop = max(stop, out.start) }
        }
        out.time = out.start
        out.position = out.start
        return out
    }

    /// The positions to seek matroskademux to for container times `start` and `stop` (ns; stop nil or -1: none),
    /// remembered for the segment the seek makes.
    func seekPositions(start: Int64, stop: Int64?, accurate: Bool) -> (start: Int64, stop: Int64?) {
        state.withLock { s in
            let shift = Int64(clamping: s.streamStart)
            let stop = stop.flatMap { $0 >= 0 ? $0 : nil }
            s.request = Request(start: guint64(max(0, start)), stop: stop.map { guint64(max(0, $0)) }, accurate: accurate)
            return (max(0, start - shift), stop.map { max(0, $0 - shift) })
        }
    }

    /// A duration in matroskademux's stream time (from its first timestamp) as the container time it ends at.
    func containerTime(_ streamTime: Int64) -> Int64 {
        streamTime + Int64(clamping: state.withLock { $0.streamStart })
    }
}
