import MediaIndex
import TrackdProtocol

/// The packet times ffmpeg's Matroska demuxer gives passthrough samples that matroskademux 1.22 leaves without: a
/// Matroska block has a presentation time only, and a duration only when it states one (BlockDuration, the track's
/// DefaultDuration).
///
/// - Decode times: libavformat's rule (`compute_pkt_fields`) — with a decoder delay of d frames, a packet's DTS is
///   the smallest of d + 1 PTSs it keeps (each packet's replacing the smallest), and the first d packets after the
///   start or a seek have none. d is H.264's `max_num_reorder_frames` (VUI, in avcC's SPS); VP8, VP9, AV1 and
///   audio never reorder (DTS = PTS). Other codecs, and H.264 whose SPS does not declare its reordering (libav
///   guesses it while decoding), keep no decode time.
/// - Durations of audio blocks without one: the packet's samples (AAC: 1024 or 960 from the AudioSpecificConfig;
///   Opus: from its TOC byte; FLAC frames have theirs from flacparse). Every Matroska duration is whole ticks of
///   the segment's TimestampScale, rounded down as ffmpeg does (`av_rescale_rnd(…, AV_ROUND_DOWN)`, DefaultDuration
///   / scale): a 1024-frame AAC packet at 48 kHz lasts 21 ms, a 648-frame FLAC packet at 44.1 kHz 14 ms.
final class MatroskaPacketTimes {
    /// Nanoseconds per tick (TimestampScale).
    let tick: Int64
    private enum Codec { case reordering(Int), inOrder, aac(samples: Int, rate: Int32), opus, other }
    private var codec = Codec.other
    /// libav's `pts_buffer`: PTSs (ns) read since the start or the last seek, ascending, at most delay + 1.
    private var window: [Int64] = []

    private init(tick: Int64) { self.tick = tick }

    /// The times for a passthrough output of `fd` when the file is Matroska/WebM; nil for every other container.
    static func forFile(fd: Int32) -> MatroskaPacketTimes? {
        guard TrackTimescale.container(fd: fd) == .matroska,
              let grid = TrackTimescale.read(fd: fd).first(where: { $0.kind == .any })?.grid, !grid.isNanoseconds
        else { return nil }
        return MatroskaPacketTimes(tick: 1_000_000_000 * grid.tick / Int64(grid.timescale))
    }

    func negotiated(_ format: OutputFormat) {
        switch format.format {
        case "avc1", "avc3":
            let delay = H264Pictures(avcC: format.codecConfig)?.reorderFrames
            codec = delay.map { $0 == 0 ? .inOrder : .reordering($0) } ?? .other
        case "vp08", "vp09", "av01": codec = .inOrder
        case "mp4a":
            codec = AudioPackets.aacSamples(config: format.codecConfig).map { .aac(samples: $0.samples, rate: Int32($0.rate)) } ?? .other
        case "Opus": codec = .opus
        default: codec = .other
        }
        window = []
    }

    func seeking() { window = [] }

    /// The sample with the decode time and duration ffmpeg gives it (`plain` itself when nothing changes). `rate`:
    /// an audio track's sample rate (nil: video).
    func place(_ plain: PulledSample, bytes: [UInt8], rate: Int32?,
               remake: (_ decode: MediaTime?, _ duration: MediaTime) -> PulledSample) -> PulledSample {
        guard let pts = plain.presentationTime.nanoseconds else { return plain }
        var decode: MediaTime?
        switch codec {
        case .reordering(let delay):
            let dts = decodeTime(pts: pts, delay: delay)
            decode = plain.decodeTime.isValid ? nil : dts.map { .nanoseconds($0) } ?? .invalid
        default:  // audio (its caps have a rate) is in decode order
            let inOrder = if case .inOrder = codec { true } else { rate != nil }
            if inOrder, !plain.decodeTime.isValid { decode = plain.presentationTime }
        }
        var duration = plain.duration.nanoseconds
        if duration == nil, let (samples, rate) = samples(bytes), rate > 0 {
            duration = Int64(samples) * 1_000_000_000 / Int64(rate)
        }
        let floored = duration.map { MediaTime.nanoseconds($0 / tick * tick) } ?? plain.duration
        guard decode != nil || floored != plain.duration else { return plain }
        return remake(decode, floored)
    }

    /// libavformat's decode time for the next packet (pts ns), nil for the first `delay` packets.
    private func decodeTime(pts: Int64, delay: Int) -> Int64? {
        // libav starts with delay + 1 unknown entries and replaces the smallest each time, even by a smaller PTS.
        if window.count == delay + 1 { window[0] = pts } else { window.append(pts) }
        window.sort()
        return window.count == delay + 1 ? window[0] : nil
    }

    /// The packet's samples and their rate (Opus: 48 kHz; AAC: its configuration's, not the caps').
    private func samples(_ bytes: [UInt8]) -> (Int, Int32)? {
        switch codec {
        case .aac(let samples, let rate): (samples, rate)
        case .opus: AudioPackets.opusSamples(bytes).map { ($0, 48000) }
        default: nil
        }
    }
}
