import CGStreamer
import MediaIndex
import Synchronization

/// MPEG-PS: MPEG-1/2 video pictures whose PES header states no time (mpegvideoparse leaves them untimed: ffmpeg's
/// `-f mpeg` and `-f vob` put several pictures into one PES) get the times ffmpeg's demuxer gives them
/// (MPEGVideoTimes), on the track's pad of parsebin — after the parser, before anything else sees the stream — so
/// that passthrough samples carry ffprobe's times, the track's frame index can be made (every frame has a PTS), and
/// DecodeStop and the decoder see the times the index has. A flush forgets what came before: the first pictures
/// after a seek stay untimed until a PES header states a time. Each picture is also a sync sample exactly when its
/// header says it is an I-picture: mpegvideoparse leaves the last picture of a stream, which it finishes at the end
/// without reading its header, unflagged (a sync sample), also when it is a P- or B-picture (ffmpeg's `-f mpeg` with
/// B-frames ends on one).
final class ProgramStreamVideoTimes: Sendable {
    private struct State: Sendable {
        var times = MPEGVideoTimes()
        /// The stream is MPEG-1/2 video (its caps); other streams are left alone.
        var isMPEGVideo = false
    }
    private let state = Mutex(State())
    /// Bytes read of each sample: a picture header comes after the sequence header (with its quantiser matrices,
    /// at most 140 bytes), its extensions and a GOP header — well inside this.
    static let headerBytes = 4096

    /// Times the pictures passing `pad` (the track's pad of parsebin, before it is linked).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.times.reset() }
            } else if info.eventType == GST_EVENT_CAPS {
                let caps = info.caps.flatMap { CapsView($0) }
                let mpegVideo = caps?.name == "video/mpeg" && [1, 2].contains(caps?.int("mpegversion"))
                state.withLock { $0.isMPEGVideo = mpegVideo }
            } else if let (pts, duration) = info.bufferTiming, let dts = info.bufferDTS,
                      state.withLock({ $0.isMPEGVideo }) {
                let known = { (t: GstClockTime) -> Int64? in t == clockTimeNone ? nil : Int64(clamping: t) }
                // Every picture is read (the timed ones anchor the others); only an untimed one is changed.
                let bytes = info.bufferBytes(upTo: Self.headerBytes) ?? []
                let placed = state.withLock {
                    $0.times.times(pts: known(pts), dts: known(dts), duration: known(duration), bytes: bytes)
                }
                let newPTS = placed.pts.flatMap { GstClockTime(exactly: Self.onTicks($0)) } ?? pts
                let newDTS = placed.dts.flatMap { GstClockTime(exactly: Self.onTicks($0)) } ?? dts
                if newPTS != pts || newDTS != dts { info.setBufferTimes(pts: newPTS, dts: newDTS) }
                if let picture = MPEGVideoTimes.picture(in: bytes), info.bufferIsDelta == picture.isIntra {
                    info.setBufferDelta(!picture.isIntra)
                }
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// A placed time (ns) on the PES clock: its nearest 90 kHz tick in mpegpsdemux's nanoseconds, ⌊ticks × 10⁹ /
    /// 90000⌋, as a stated time is. A sum of mpegvideoparse's durations (⌊10⁹ / 30⌋ ns a frame) falls short of the
    /// tick: the picture ffmpeg decodes at 1.2 s was placed 1 ns before it, and a range ending at 1.2 s (decode
    /// times before its end) delivered it.
    static func onTicks(_ ns: Int64) -> Int64 {
        guard ns >= 0, ns < Int64.max / 9 else { return ns }
        let ticks = (ns * 9 + 50_000) / 100_000
        return ticks * 100_000 / 9
    }
}
