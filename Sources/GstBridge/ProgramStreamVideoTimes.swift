import CGStreamer
import MediaIndex
import Synchronization

/// MPEG-PS: MPEG-1/2 video pictures whose PES header states no time (mpegvideoparse leaves them untimed: ffmpeg's
/// `-f mpeg` and `-f vob` put several pictures into one PES) get the times ffmpeg gives them (MPEGVideoTimes), on
/// the track's pad of parsebin — after the parser, before anything else sees the stream — so that passthrough
/// samples carry them, the track's frame index can be made (every frame has a PTS), and DecodeStop and the decoder
/// see the times the index has. An untimed I- or P-picture is shown at the next one's DTS: it is held (dropped from
/// the pad, a reference kept), with what comes after it, until that picture comes, and then chained into the pad's
/// peer before it; a serialized event that ends what came before (EOS, a segment, a new stream or caps) first
/// chains what is held, placed as at the end of the stream. A flush forgets what came before and drops what is held:
/// the first pictures after a seek stay untimed until a PES header states a time. Each picture is also a sync sample
/// exactly when its header says it is an I-picture: mpegvideoparse leaves the last picture of a stream, which it
/// finishes at the end without reading its header, unflagged (a sync sample), also when it is a P- or B-picture
/// (ffmpeg's `-f mpeg` with B-frames ends on one).
final class ProgramStreamVideoTimes: Sendable {
    private struct State: Sendable {
        var times = MPEGVideoTimes()
        /// The stream is MPEG-1/2 video (its caps); other streams are left alone.
        var isMPEGVideo = false
        /// The samples held (MPEGVideoTimes.Step), in decode order.
        var held: [GstRef<GstBufferObject>] = []
    }
    private let state = Mutex(State())
    /// Bytes read of each sample: a picture header comes after the sequence header (with its quantiser matrices,
    /// at most 140 bytes), its extensions and a GOP header — well inside this.
    static let headerBytes = 4096
    /// The serialized events before which what is held goes, placed as at the end of the stream.
    private static let ending = [GST_EVENT_EOS, GST_EVENT_SEGMENT, GST_EVENT_STREAM_START, GST_EVENT_CAPS]

    /// Times the pictures passing `pad` (the track's pad of parsebin, before it is linked).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let type = info.eventType {
                if type == GST_EVENT_FLUSH_STOP {
                    let dropped = state.withLock { s in
                        s.times.reset()
                        defer { s.held = [] }
                        return s.held
                    }
                    _ = dropped  // released here, outside the lock
                } else if Self.ending.contains(type) {
                    finish(info)
                }
                if type == GST_EVENT_CAPS {
                    let caps = info.caps.flatMap { CapsView($0) }
                    let mpegVideo = caps?.name == "video/mpeg" && [1, 2].contains(caps?.int("mpegversion"))
                    state.withLock { $0.isMPEGVideo = mpegVideo }
                }
                return GST_PAD_PROBE_OK
            }
            return buffer(info)
        }
    }

    /// A buffer: its sync flag from its picture header, then its times (MPEGVideoTimes.take): what was held and is
    /// released now is chained first, and the buffer goes with its times or is held.
    private func buffer(_ info: borrowing ProbeInfo) -> GstPadProbeReturn {
        guard let (pts, duration) = info.bufferTiming, let dts = info.bufferDTS, state.withLock({ $0.isMPEGVideo }) else {
            return GST_PAD_PROBE_OK
        }
        let bytes = info.bufferBytes(upTo: Self.headerBytes) ?? []
        if let picture = MPEGVideoTimes.picture(in: bytes), info.bufferIsDelta == picture.isIntra {
            info.setBufferDelta(!picture.isIntra)
        }
        let known = { (t: GstClockTime) -> Int64? in t == clockTimeNone ? nil : Int64(clamping: t) }
        let step = state.withLock { $0.times.take(pts: known(pts), dts: known(dts), duration: known(duration), bytes: bytes) }
        let taken = step.current == nil ? info.bufferRef : nil
        let released = state.withLock { s in
            if let taken { s.held.append(taken) }
            let count = min(step.released.count, s.held.count)
            defer { s.held.removeFirst(count) }
            return Array(zip(s.held.prefix(count), step.released))
        }
        for (buffer, times) in released {
            let flow = info.chainToPeer(buffer, pts: Self.clockTime(times.pts), dts: Self.clockTime(times.dts))
            if flow != GST_FLOW_OK { return info.refuse(flow) }
        }
        guard let current = step.current else { return GST_PAD_PROBE_DROP }
        let newPTS = current.pts == nil ? pts : Self.clockTime(current.pts)
        let newDTS = current.dts == nil ? dts : Self.clockTime(current.dts)
        if newPTS != pts || newDTS != dts { info.setBufferTimes(pts: newPTS, dts: newDTS) }
        return GST_PAD_PROBE_OK
    }

    /// Chains what is held into the pad's peer, before the event passing (MPEGVideoTimes.finish).
    private func finish(_ info: borrowing ProbeInfo) {
        let released = state.withLock { s in
            defer { s.held = [] }
            return Array(zip(s.held, s.times.finish()))
        }
        for (buffer, times) in released {
            _ = info.chainToPeer(buffer, pts: Self.clockTime(times.pts), dts: Self.clockTime(times.dts))
        }
    }

    /// A time (ns) as a buffer carries it, on the PES clock (onTicks); nil or negative: none.
    static func clockTime(_ ns: Int64?) -> GstClockTime {
        ns.flatMap { GstClockTime(exactly: onTicks($0)) } ?? clockTimeNone
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
