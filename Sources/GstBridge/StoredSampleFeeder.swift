import CGStreamer
import MediaIndex
import Synchronization
import SystemCalls

/// MP4/MOV: the stored samples qtdemux leaves out at the end of a read, chained into the output's branch (the
/// decoder's input, or appsink for passthrough) when the demuxer's EOS reaches it, so that a decoder gets them as
/// ffmpeg's does (StoredTrack says which):
///
/// - an audio track's last packet, which qtdemux 1.22 never pushes when the track's edit ends inside it (AAC from
///   ffmpeg: 768 of its 1024 frames on a 2 s 48 kHz track), with a GstAudioClippingMeta of the frames after the
///   edit's end — libav's decoders drop exactly those (AV_PKT_DATA_SKIP_SAMPLES), so the decoded track ends where
///   its edit does, to the frame;
/// - the samples a file cut short still holds whole after the point where qtdemux stopped: it stops at the first
///   sample of any track that lies beyond the end of the file, which can be a few samples of this track early.
///
/// Samples the tables list that the file does not hold whole are counted (`samplesLost`). Only a read that runs to
/// the track's end is completed; times are the demuxer's (⌊ticks × 10⁹ / timescale⌋ ns of media time).
final class StoredSampleFeeder: Sendable {
    private struct State: Sendable {
        /// The newest sample's decode time (ns) that passed since the last seek.
        var lastDecodeNs: Int64?
        /// The range's end (timeline ns; nil: the track's end); no completion at all when false.
        var armed = true
        var stop: Int64?
        var track: StoredTrack??
        var lost: UInt64 = 0
        var restored: UInt64 = 0
    }
    private let fd: Int32
    private let trackID: UInt32
    private let state = Mutex(State())

    /// The largest stored sample read from the file: the table's size field is the file's word (up to 4 GiB), and
    /// the buffer is allocated before the read.
    static let maxSampleBytes = 64 << 20

    /// Whether a decoder is fed (passthrough: appsink, where PassthroughEdit places the samples by their own times).
    private let decoded: Bool

    private init(fd: Int32, trackID: UInt32, decoded: Bool) {
        (self.fd, self.trackID, self.decoded) = (fd, trackID, decoded)
    }

    /// A feeder for track `trackID` of the file `fd`, when it is MP4/MOV; nil for other containers.
    static func forFile(fd: Int32, trackID: UInt32, decoded: Bool) -> StoredSampleFeeder? {
        TrackTimescale.container(fd: fd) == .mp4 ? StoredSampleFeeder(fd: fd, trackID: trackID, decoded: decoded) : nil
    }

    /// Stored samples of the table's that the file does not hold whole, found at the ends of reads so far.
    var samplesLost: UInt64 { state.withLock { $0.lost } }
    /// Stored samples read from the file and chained, all reads.
    var samplesRestored: UInt64 { state.withLock { $0.restored } }

    /// The next range ends at `stop` (timeline ns; nil: the track's end); `completes`: false when something else
    /// ends it early on purpose (DecodeStop's EOS after the last sample a ReadFrames needs).
    func seeking(stop: Int64?, completes: Bool) {
        state.withLock { s in (s.lastDecodeNs, s.stop, s.armed) = (nil, stop, completes) }
    }

    /// Watches the stored samples reaching `pad` (a sink pad) and completes the read at its EOS.
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let dts = info.bufferDTS {
                let time = dts != clockTimeNone ? dts : info.bufferTiming?.pts ?? clockTimeNone
                if time != clockTimeNone, time <= GstClockTime(Int64.max) { passed(Int64(time), info) }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.lastDecodeNs = nil }
            } else if info.eventType == GST_EVENT_EOS {
                complete(info)
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// A stored sample that decodes at `ns` passed: remembered; an audio sample the track's edit (or its shortened
    /// first or last duration) trims is given the trims as a clipping meta, so the decoder drops exactly those frames
    /// (GstAudioDecoder's own clipping to the segment, from nanoseconds, can keep one frame too many).
    private func passed(_ ns: Int64, _ info: borrowing ProbeInfo) {
        let track = state.withLock { s -> StoredTrack? in
            s.lastDecodeNs = max(s.lastDecodeNs ?? .min, ns)
            if s.track == nil { s.track = .some(StoredTrack.mp4(fd: fd, trackID: trackID)) }
            return s.track ?? nil
        }
        guard let track, track.trimsAudio, let k = track.index(decodeNanoseconds: ns) else { return }
        let trim = track.trim(k)
        guard trim != (0, 0) else { return }
        let clip = Self.clip(trim, timescale: track.timescale, rate: Int64(CapsView(info.padCurrentCaps)?.int("rate") ?? 0))
        // A sample the edit starts inside (Opus: the pre-skip, in its first packet) is stamped at the edit's start,
        // where its first kept frame is: else the decoder's clipping to the segment would drop those frames again.
        let s = track.samples[k]
        let shift = decoded && s.decodeTime < track.editStart && trim.atStart < max(s.duration, track.frameDuration)
            ? track.timelineNanoseconds(track.editStart) - track.timelineNanoseconds(s.decodeTime) : 0
        info.clipAudio(start: clip.start, end: clip.end, shift: shift)
    }

    /// At the demuxer's EOS: chains the samples the read still needs, in decode order, before the EOS passes.
    private func complete(_ info: borrowing ProbeInfo) {
        let found = state.withLock { s -> (StoredTrack, Int, Int64?)? in
            guard s.armed, let last = s.lastDecodeNs else { return nil }
            s.armed = false  // once per range
            if s.track == nil { s.track = .some(StoredTrack.mp4(fd: fd, trackID: trackID)) }
            guard let track = s.track ?? nil, let index = track.index(decodeNanoseconds: last) else { return nil }
            return (track, index, s.stop)
        }
        guard let (track, last, stop) = found else { return }
        let tail = track.tail(after: last)
        let rate = Int64(CapsView(info.padCurrentCaps)?.int("rate") ?? 0)
        var restored: UInt64 = 0
        for k in tail.restore {
            let times = track.demuxerTimes(k)
            if let stop, track.timelineNanoseconds(track.presentationTime(k)) >= stop { break }
            guard let bytes = read(track.samples[k]) else { break }
            let clip = track.trimsAudio ? Self.clip(track.trim(k), timescale: track.timescale, rate: rate) : (0, 0)
            let flow = info.chain(bytes, pts: times.presentation, dts: times.decode, duration: times.duration,
                                  sync: track.samples[k].isSync, clip: clip)
            guard flow == GST_FLOW_OK else { break }
            restored += 1
        }
        state.withLock { s in
            s.lost += UInt64(tail.lost)
            s.restored += restored
        }
    }

    /// A trim in the media timescale as samples at the decoded `rate` (the timescale's own when unknown).
    static func clip(_ trim: (atStart: Int64, atEnd: Int64), timescale: Int64,
                     rate: Int64) -> (start: UInt64, end: UInt64) {
        func samples(_ ticks: Int64) -> UInt64 {
            guard rate > 0, rate != timescale else { return UInt64(max(0, ticks)) }
            return UInt64(max(0, (ticks * rate + timescale / 2) / timescale))
        }
        return (samples(trim.atStart), samples(trim.atEnd))
    }

    private func read(_ sample: StoredTrack.Sample) -> [UInt8]? {
        guard sample.size > 0, sample.size <= Self.maxSampleBytes, sample.offset <= UInt64(Int.max) else { return nil }
        let file = FileDescriptor(taking: fd)
        let bytes = try? [UInt8](preading: file, count: sample.size, at: Int(sample.offset))
        _ = file.take()  // the pipeline's descriptor: not closed here
        return bytes?.count == sample.size ? bytes : nil
    }
}
