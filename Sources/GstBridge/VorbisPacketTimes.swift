import MediaIndex
import TrackdProtocol

/// Passthrough Vorbis from Ogg and Matroska/WebM: every packet with ffmpeg's duration (VorbisDurations: from the
/// block sizes libvorbis reads, which oggdemux and matroskademux do not state) and, in Ogg, ffmpeg's PTS and the end
/// padding as TrimDurationAtEnd (in frames of the stream's rate).
///
/// - Ogg: oggdemux gives each packet its granule position (GST_BUFFER_OFFSET_END: where it ends), and lasts the
///   first packet 0 (ffmpeg: (short + its block) / 4, 128 frames for libvorbis's 256-frame short blocks, at
///   −128) and the last one to its page's granule position. A packet's PTS is its end less its duration; the last
///   packet, whose granule position ends it sooner than its blocks do, starts where the one before it ends and lasts
///   what is left, the rest its TrimDurationAtEnd (ffmpeg's `discard_padding`).
/// - Matroska: the block's own time, and its duration in frames for MatroskaPacketTimes to floor to whole ticks.
final class VorbisPacketTimes {
    private let matroska: Bool
    private var durations: VorbisDurations?
    /// The headers were read (well or not): they are read once.
    private var readHeaders = false
    /// Ogg: where the packet before ended (frames); nil after the start or a seek.
    private var previousEnd: Int64?

    init(matroska: Bool) { self.matroska = matroska }

    func seeking() {
        durations?.reset()
        previousEnd = nil
    }

    /// `plain` (a stored Vorbis packet, `sample`) with ffmpeg's times and trims; `plain` itself when they cannot be
    /// known (no rate, headers libvorbis rejects, a packet it does not read).
    func place(_ plain: PulledSample, sample: GstRef<GstSampleObject>,
               remake: (_ timing: (pts: MediaTime, duration: MediaTime), _ trims: (atStart: MediaTime, atEnd: MediaTime)?)
                   -> PulledSample) -> PulledSample {
        let caps = CapsView(sample.caps)
        if !readHeaders {
            readHeaders = true
            durations = VorbisDurations(headers: caps?.streamHeaders ?? [], container: matroska ? .matroska : .ogg)
        }
        guard let rate = caps?.int("rate").map(Int64.init), rate > 0,
              let frames = durations?.next(sample.bytes(count: min(sample.size, 16))).map(Int64.init) else { return plain }
        func time(_ frames: Int64) -> MediaTime { .nanoseconds(frames * 1_000_000_000 / rate) }
        if matroska { return remake((plain.presentationTime, time(frames)), nil) }
        guard let granule = sample.offsetEnd, granule < UInt64(Int64.max / 1_000_000_000) else { return plain }
        let end = Int64(granule)
        defer { previousEnd = end }
        if let previous = previousEnd, end < previous + frames, end >= previous {
            let kept = end - previous
            return remake((time(previous), time(kept)), (MediaTime(value: 0, timescale: Int32(rate)),
                                                        MediaTime(value: frames - kept, timescale: Int32(rate))))
        }
        return remake((time(end - frames), time(frames)), nil)
    }
}
