import CGStreamer
import MediaIndex
import MediaVocabulary
import Synchronization

/// Decoded Vorbis, Opus, FLAC, AAC and MP3 from Matroska/WebM start where their packets start. Matroska stores a
/// block's time in whole ticks (milliseconds in the files ffmpeg and GStreamer make), so a decoded packet's time is
/// up to half a tick off its first frame, and Opus's up to a whole tick (matroskademux subtracts the exact
/// CodecDelay, 6.5 ms, from a block time ffmpeg rounded after adding the delay rounded to 7 ms): read as frames,
/// ffmpeg's 960-frame packets at 648, 1608 … came as 696, 1656 …, 48 frames late, with a 48-frame hole after the
/// first, and every range after a seek was cut 48 frames off its place; Vorbis's blocks came a few frames early or
/// late, each.
///
/// The packets of these codecs start on a grid: Vorbis's on multiples of a quarter of its short block from the
/// stream's start (a packet decodes to a quarter of the block before it plus a quarter of its own, Vorbis I §1.3.2; a
/// block time of 0 is the first packet's, in every muxer's files), Opus's on multiples of 2.5 ms, its shortest frame
/// (120 frames at 48 kHz), from minus the CodecDelay; FLAC's with a fixed block size on multiples of it from the
/// stream's start (ffmpeg's 1152-frame frames came up to 22 frames off: 1147 after 0 + 1152), AAC's and MP3's on
/// multiples of their frame length from minus the CodecDelay. A decoded packet whose time is within a tick of a grid
/// point, and nearer to it than to any other, starts there (AudioSamples.firstFrame): its frames follow the last
/// packet's without a hole, and a range after a seek gets the whole decode's frames.
final class MatroskaAudioGrid: Sendable {
    /// At `rate` frames per second (nil: the decoder's own): packets start on offset + k × period frames, less
    /// `lead` (ns: a CodecDelay, for a grid at the decoder's rate).
    private struct Grid: Sendable {
        var rate: Int64?
        var period: Int64
        var offset: Int64
        var lead: Int64 = 0
    }
    /// The Matroska tick (ns).
    let tick: Int64
    /// The track's CodecDelay (ns; 0 without one).
    private let delay: Int64
    private let grid = Mutex<Grid?>(nil)
    /// Opus: its DiscardPadding is matroskademux's clipping meta, which opusdec applies itself.
    private let isOpus = Mutex(false)
    /// The track's blocks with a DiscardPadding in the last Cluster.
    private let padded: [MatroskaTail.Block]

    private init(tick: Int64, delay: Int64, padded: [MatroskaTail.Block]) {
        self.tick = tick
        self.delay = delay
        self.padded = padded
    }

    /// For track `trackID` of `fd` when the file is Matroska/WebM; nil for every other container.
    static func forFile(fd: Int32, trackID: UInt32) -> MatroskaAudioGrid? {
        guard TrackTimescale.container(fd: fd) == .matroska,
              let grid = TrackTimescale.read(fd: fd).first(where: { $0.kind == .any })?.grid else { return nil }
        let tick = grid.isNanoseconds ? 1 : 1_000_000_000 * grid.tick / Int64(grid.timescale)
        let padded = MatroskaTail.paddedBlocks(fd: fd, trackNumber: trackID)
        return MatroskaAudioGrid(tick: tick, delay: MatroskaCodecDelay.delay(fd: fd, trackNumber: trackID) ?? 0,
                                 padded: padded)
    }

    /// How much later than a range's last frame the demuxer's stop must be (ns): a block's time can be up to a tick
    /// after its first frame, and matroskademux 1.22 ends a stream at the first block whose *stored* time reaches the
    /// stop — the time before it subtracts the CodecDelay, its first frame's time plus the delay (6.5 ms for Opus).
    /// A block with a DiscardPadding decodes to that much past the track's end: the decoder, which clips what it
    /// makes at the stop, must keep it whole for endPadding to cut it where ffmpeg does.
    var stopLead: Int64 { tick + delay + (padded.map { min($0.discardPadding, MatroskaTail.maxPadding) }.max() ?? 0) }

    /// Reads the codec from the CAPS events passing `pad` (the decoder branch's input).
    func attach(to pad: GstRef<GstPadObject>) {
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { [self] info in
            if let caps = CapsView(info.caps) {
                grid.withLock { $0 = Self.grid(caps, delay: delay) }
                isOpus.withLock { $0 = caps.name == "audio/x-opus" }
            }
            return GST_PAD_PROBE_OK
        }
    }

    private static func grid(_ caps: CapsView, delay: Int64) -> Grid? {
        switch caps.name {
        case "audio/x-vorbis":
            guard let blocks = VorbisBlocks(headers: caps.streamHeaders) else { return nil }
            return Grid(rate: nil, period: Int64(blocks.short / 4), offset: 0)
        case "audio/x-opus":
            // Opus's clock is 48 kHz; a decoder at another rate has 2.5 ms as frames of its own.
            return Grid(rate: 48000, period: 120, offset: -delay * 48000 / 1_000_000_000)
        case "audio/x-flac":
            // A fixed block size: frame n starts at n × the block size (RFC 9639 §9.1.5).
            return caps.flacFixedBlockSize.map { Grid(rate: nil, period: Int64($0), offset: 0) }
        case "audio/mpeg":
            // At the decoder's rate: the demuxer's AAC rate can be SBR's doubled one (ffmpeg writes 88200 for LC).
            let period: Int64
            switch caps.int("mpegversion") {
            case 1 where caps.int("layer") == 3: period = (caps.int("rate") ?? 0) >= 32000 ? 1152 : 576  // MPEG-2: half
            case 2, 4: period = aacFrameLength(config: caps.bufferBytes("codec_data"))
            default: return nil
            }
            return Grid(rate: nil, period: period, offset: 0, lead: delay)
        default: return nil
        }
    }

    /// An AAC packet's frames at the AudioSpecificConfig's rate: 960 when an AAC Main/LC/SSR/LTP config sets
    /// frameLengthFlag (ISO/IEC 14496-3 §1.6.2.1, §4.4.1), else 1024 (SBR's 2048 output frames are 2 grid periods).
    private static func aacFrameLength(config: [UInt8]) -> Int64 {
        guard config.count >= 2 else { return 1024 }
        let objectType = config[0] >> 3, frequencyIndex = (config[0] & 7) << 1 | config[1] >> 7
        return (1...4).contains(objectType) && frequencyIndex != 15 && config[1] >> 2 & 1 == 1 ? 960 : 1024
    }

    /// `frame` (at `rate`), the start or end of a decoded packet read from its time: the grid point within a tick of
    /// it and less than half a period away, or `frame` itself.
    func snap(_ frame: Int64, rate: Int) -> Int64 {
        guard let g = grid.withLock({ $0 }), rate > 0 else { return frame }
        let from = g.rate ?? Int64(rate)
        guard Int64(rate) * g.period % from == 0, Int64(rate) * g.period / from > 1 else { return frame }
        let period = Int64(rate) * g.period / from
        let offset = g.offset * Int64(rate) / from - g.lead * Int64(rate) / 1_000_000_000
        var r = (frame - offset) % period
        if r < 0 { r += period }
        let nearest = 2 * r <= period ? frame - r : frame - r + period
        let reach = (tick * Int64(rate) + 999_999_999) / 1_000_000_000  // a tick, in frames (rounded up)
        return abs(nearest - frame) <= reach && 2 * abs(nearest - frame) < period ? nearest : frame
    }

    /// The frames to drop from the end of a decoded packet whose first frame is `first` (at `rate`): the DiscardPadding
    /// of the block whose time (as `streamTime` gives a stored time on the packet's timeline) snaps to that frame, at
    /// `rate` rounded to the nearest as ffmpeg's demuxer converts it (av_rescale_q), or 0. matroskademux 1.22 states a
    /// DiscardPadding for Opus only: an MP3 block's (libmp3lame's end padding, 227 frames on a 3 s file) was decoded.
    func endPadding(first: Int64, rate: Int, streamTime: (Int64) -> Int64?) -> Int64 {
        guard rate > 0, !isOpus.withLock({ $0 }) else { return 0 }
        for block in padded {
            guard let ns = streamTime(block.time),
                  snap(Int64((Double(ns) * Double(rate) / 1e9).rounded()), rate: rate) == first else { continue }
            return block.paddingFrames(rate: rate)
        }
        return 0
    }
}
