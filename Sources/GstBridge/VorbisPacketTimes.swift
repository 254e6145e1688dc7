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
///   what is left, the rest its TrimDurationAtEnd (ffmpeg's `discard_padding`). A read from the start places the
///   packets of the first audio page by that page's granule position (OggVorbisStart, from the file: libvorbis's
///   rule, ffmpeg's but on a stream whose only audio page is its last), not by oggdemux's reckoning, which cuts a
///   start below 0 to 0 on any page.
/// - Matroska: the block's own time, and its duration in frames for MatroskaPacketTimes to floor to whole ticks.
final class VorbisPacketTimes {
    private let matroska: Bool
    /// Ogg: where the packets of the first audio page end; nil when that cannot be known (OggVorbisStart).
    private let oggStart: OggVorbisStart?
    private var durations: VorbisDurations?
    /// The stream's rate (frames per second), from the first packet's caps.
    private var rate: Int64?
    /// The headers and rate were read (well or not): they are read once.
    private var readCaps = false
    /// Ogg: where the packet before ended (frames); nil after a seek (after the start: the first packet's PTS).
    private var previousEnd: Int64?
    /// Ogg, reading from the start: how many packets of the first audio page were placed; nil past that page, or
    /// after a seek elsewhere.
    private var firstPagePlaced: Int?

    /// The largest end (frames) a packet is placed at: a granule position is the file's word, and frames as
    /// nanoseconds (`time`), with a packet's frames added, must not overflow.
    static let largestEnd = UInt64(Int64.max / 1_000_000_000) - (1 << 16)

    /// `fd`: the file (read here for Ogg's first audio page). `fromStart`: whether the first range reads from the start.
    init(matroska: Bool, fd: Int32, fromStart: Bool) {
        self.matroska = matroska
        oggStart = matroska ? nil : OggVorbisStart.read(fd: fd).flatMap { read in
            ([read.start] + read.ends).allSatisfy { $0.magnitude < Self.largestEnd } ? read : nil
        }
        seeking(fromStart: fromStart)
    }

    func seeking(fromStart: Bool) {
        durations?.reset()
        let start = fromStart ? oggStart : nil
        (previousEnd, firstPagePlaced) = (start?.start, start == nil ? nil : 0)
    }

    /// `plain` (a stored Vorbis packet, `sample`) with ffmpeg's times and trims; `plain` itself when they cannot be
    /// known (no rate, headers libvorbis rejects, a packet it does not read).
    func place(_ plain: PulledSample, sample: GstRef<GstSampleObject>,
               remake: (_ timing: (pts: MediaTime, duration: MediaTime), _ trims: (atStart: MediaTime, atEnd: MediaTime)?)
                   -> PulledSample) -> PulledSample {
        if !readCaps {
            readCaps = true
            let caps = CapsView(sample.caps)
            durations = VorbisDurations(headers: caps?.streamHeaders ?? [], container: matroska ? .matroska : .ogg)
            rate = caps?.int("rate").map(Int64.init).flatMap { $0 > 0 ? $0 : nil }
        }
        guard let rate, let frames = durations?.next(sample.bytes(count: min(sample.size, 16))).map(Int64.init) else {
            return plain
        }
        func time(_ frames: Int64) -> MediaTime { .nanoseconds(frames * 1_000_000_000 / rate) }
        if matroska { return remake((plain.presentationTime, time(frames)), nil) }
        let end: Int64
        if let placed = firstPagePlaced, let ends = oggStart?.ends, placed < ends.count {
            (end, firstPagePlaced) = (ends[placed], placed + 1)
        } else {
            firstPagePlaced = nil
            guard let granule = sample.offsetEnd, granule <= UInt64(Int64.max) else { return plain }
            end = Int64(granule)
        }
        guard end.magnitude < Self.largestEnd else { return plain }
        defer { previousEnd = end }
        if let previous = previousEnd, end < previous + frames, end >= previous {
            let kept = end - previous
            return remake((time(previous), time(kept)), (MediaTime(value: 0, timescale: Int32(rate)),
                                                        MediaTime(value: frames - kept, timescale: Int32(rate))))
        }
        return remake((time(end - frames), time(frames)), nil)
    }
}
