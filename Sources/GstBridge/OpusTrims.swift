import MediaIndex
import TrackdProtocol

/// Passthrough Opus from Ogg and Matroska/WebM: the frames a decoder drops — the encoder's pre-skip at the start
/// (Ogg: OpusHead's; Matroska: the track's CodecDelay) and the padding of the last packet (Ogg: the last page's
/// granule position; Matroska: the block's DiscardPadding) — as trims (TrimDurationAtStart / TrimDurationAtEnd, in
/// 48 kHz frames, Opus's clock), and the packet times ffmpeg's demuxers give.
///
/// oggdemux and matroskademux parse all four and state them as a GstAudioClippingMeta of 48 kHz frames on the packets
/// they concern; the times they give differ from ffmpeg's at the start, and are restated here:
/// - Ogg: oggdemux stamps the packets the pre-skip covers after it (the first of libopus's at PTS 0 lasting 648 of its
///   960 frames; with GStreamer's 2.5 ms frames three packets at 0, lasting 0, 0 and 48); ffmpeg lists them from
///   −pre-skip (OpusHead's) on, each lasting what it decodes to: −312 lasting 960; −312, −192, −72 lasting 120.
/// - Matroska: matroskademux takes the CodecDelay off every block's time in nanoseconds (a block at 21 ms: 14.5 ms)
///   and sets a block within the delay to 0; ffmpeg takes it off in whole ticks of the segment (MatroskaCodecDelay:
///   21 − 7 = 14 ms, the first block −7 ms). Durations stay MatroskaPacketTimes' (ffprobe's: the whole packet).
/// A pre-skip longer than the packet it starts in (short frames) is spread over the packets that follow, each
/// trimmed at most by what it decodes to, as Core Media spreads TrimDurationAtStart: oggdemux clips each packet by
/// its part already — a packet wholly inside the pre-skip by the granule position it ends at (more than the packet:
/// all of it, nothing carried over; 120, 240 and 72 for three 120-frame packets of a 312-frame pre-skip); in
/// Matroska each block within the delay is trimmed by the part of the delay it covers
/// (matroskademux clips every such block by the whole delay and sets its time to 0, so its time is taken as the
/// previous clipped block's end).
final class OpusTrims {
    /// Opus counts pre-skip, CodecDelay and padding at 48 kHz (RFC 7845 §4.2; matroskademux's clipping meta too).
    static let rate: Int64 = 48000
    /// Matroska: the track's CodecDelay (ns) and the segment's tick (ns); nil for Ogg.
    private let matroska: (delay: Int64, tick: Int64)?
    /// Matroska: where the next block matroskademux clips starts (ns; the previous clipped block's end). Ogg: where
    /// the next packet the pre-skip clips starts (ns; from −pre-skip on), nil after the first it does not clip.
    private var nextClipped: Int64 = 0
    private var nextOggClipped: Int64?

    /// For track `trackID` of `fd`; `matroskaTick`: the segment's tick (ns) when the file is Matroska.
    init(fd: Int32, trackID: UInt32, matroskaTick: Int64?) {
        matroska = matroskaTick.flatMap { tick in
            MatroskaCodecDelay.delay(fd: fd, trackNumber: trackID).map { (delay: $0, tick: tick) }
        }
    }

    func seeking() { (nextClipped, nextOggClipped) = (0, nil) }

    /// `plain` (a stored Opus packet of `bytes`, with `clipping` from the demuxer; `preSkip`: OpusHead's, from the
    /// caps) with ffmpeg's PTS and duration and its trims; `plain` itself when nothing changes.
    func place(_ plain: PulledSample, bytes: [UInt8], clipping: (start: UInt64, end: UInt64)?, preSkip: Int?,
               remake: (_ timing: (pts: MediaTime, duration: MediaTime), _ trims: (atStart: MediaTime, atEnd: MediaTime)?)
                   -> PulledSample) -> PulledSample {
        guard let pts = plain.presentationTime.nanoseconds else { return plain }
        // A packet decodes to at most 120 ms (RFC 6716 §3.2.5): a trim is never more than that.
        let frames = Int64(AudioPackets.opusSamples(bytes) ?? 5760)
        let start = Int64(min(clipping?.start ?? 0, 5760)), end = Int64(min(clipping?.end ?? 0, 5760))
        var (newPTS, duration) = (pts, plain.duration)
        var (atStart, atEnd) = (Int64(0), end)
        if let (delay, tick) = matroska {
            let (sum, overflow) = pts.addingReportingOverflow(delay)
            let block = start > 0 ? nextClipped : overflow ? .max : sum
            if start > 0 { nextClipped = min(block, Int64.max / 2) + Self.nanoseconds(frames) }
            let ticks = MatroskaCodecDelay.ffmpegTicks(block: block, delay: delay, tick: tick)
            let (ns, over) = ticks.multipliedReportingOverflow(by: tick)
            if !over { newPTS = ns }
            atStart = min(frames, max(0, Self.frames(nanoseconds: delay - block)))
        } else {
            if start > 0 {
                let first = nextOggClipped ?? pts - Self.nanoseconds(Int64(max(preSkip ?? 0, Int(start))))
                (newPTS, duration) = (first, .nanoseconds(Self.nanoseconds(frames)))
                nextOggClipped = first + Self.nanoseconds(frames)
            } else {
                nextOggClipped = nil
            }
            atStart = min(start, frames)
        }
        atEnd = min(atEnd, frames - atStart)
        let trims: (atStart: MediaTime, atEnd: MediaTime)? = atStart > 0 || atEnd > 0
            ? (MediaTime(value: atStart, timescale: Int32(Self.rate)), MediaTime(value: atEnd, timescale: Int32(Self.rate)))
            : nil
        guard newPTS != pts || trims != nil else { return plain }
        return remake((.nanoseconds(newPTS), duration), trims)
    }

    /// `ns` in 48 kHz frames, to the nearest (gst_util_uint64_scale_round, as matroskademux converts CodecDelay).
    static func frames(nanoseconds ns: Int64) -> Int64 { ns <= 0 ? 0 : (ns * rate + 500_000_000) / 1_000_000_000 }

    /// `frames` at 48 kHz in nanoseconds, rounded down (the grid's nearest tick restores the frame).
    static func nanoseconds(_ frames: Int64) -> Int64 { frames * 1_000_000_000 / rate }
}
