import CGStreamer
import CGstShim
import TrackdProtocol

/// Where a range of decoded audio starts, so that it is a slice of the whole track's read, bit for bit.
///
/// A decoder restarted by a seek, and a resampler started on the range's first frame, make other samples than a read
/// of the whole track: the decoder's first packets lack the previous packets' overlap (AAC, MP3, Opus), and a
/// resampler's output depends on its phase — which input frame it started on — and on the input it has seen (its
/// filter's history). So a range is read from an earlier input frame, `firstInput`, with a fresh resampler:
/// `firstInput` is a whole number of the resampler's phase periods from the track's start (in/gcd input frames make
/// out/gcd output frames, phase 0 again), so the resampler is in the phase the whole read has there; and it is at
/// least the filter's reach plus the codec's `decoderPreroll` frames before the range, so that by the range's first
/// frame both the decoder and the filter see exactly the input the whole read saw. The frames before the range are made and
/// dropped (AudioSamples' trimming). Measured: every range of a 44.1 kHz stereo source resampled to 22050, 48000 and
/// 8000 Hz, and 48 kHz 5.1 to 44100 Hz, equals the whole read from the range's first frame on.
struct AudioRangePlan: Equatable {
    /// The first input (decoded) frame fed to the resampler, and the output frame it makes first.
    let firstInput: Int64
    let firstOutput: Int64
    /// The input frame after the last one the range needs (nil: to the end).
    let inputEnd: Int64?

    /// Frames decoded and dropped before a range besides the resampler's reach, by the decoder's input (`codec`:
    /// its caps' name; nil: unknown): enough for the decoder's output from the range's first frame on
    /// to be the whole decode's, bit for bit.
    /// - PCM: 0. Every frame decodes alone, and the seek lands on the frame (AudioTests: WAV ranges exact).
    /// - Vorbis: 8192, the longest block Vorbis I allows. A packet's output is the overlap of its block with the one
    ///   before (§1.3.2): the first packet after a seek makes nothing, the second the whole decode's frames.
    /// - Opus: 48000. RFC 7845 §4.6 asks for 80 ms, enough to sound right, not to be exact: CELT predicts each band's
    ///   energy from the previous frame's (inter-frame prediction, coefficient 0.5 for 20 ms frames up to 0.9 for
    ///   2.5 ms ones), so a decoder started from a reset state converges geometrically and never exactly in theory;
    ///   by those coefficients, an error of tens of log-energy units falls under float rounding after about 25
    ///   frames of 20 ms (0.5 s) or 160 of 2.5 ms (0.4 s) — an estimate, not a measurement. Measured on libopus stereo in Matroska: 8192 frames (170 ms, 8 frames)
    ///   left the 16-bit output up to 10 LSB off; a second, twice the convergence, none.
    /// - FLAC: 48000. Its frames decode alone, but with no pre-roll a range at 1.0 s of ffmpeg's 4608-frame native
    ///   FLAC had the right count and other samples (AudioTests.timeRangesAreSampleExact): the first buffer after a
    ///   seek is not where the range needs it, and FLAC's frames may be up to 65535 frames long.
    /// - AAC, MP3 and anything else: 48000. AAC's output depends on the packet before (the MDCT overlap, 1024
    ///   frames), but HE-AAC's SBR and PS code envelopes as differences from the previous frame's, a chain with no
    ///   bound; MP3's bit reservoir reaches 511 bytes back (a frame or two), but the decoders' synthesis filters keep
    ///   state too. No exact range test covers either, so neither is cut.
    static func decoderPreroll(codec: String?) -> Int64 {
        switch codec {
        case "audio/x-raw": 0
        case "audio/x-vorbis": 8192
        default: 48000
        }
    }

    /// `window`: the range's output frames [first, end); `latency`: the resampler's reach in input frames (0 when
    /// the rate does not change).
    init(window: (first: Int64, end: Int64?), inputRate: Int, outputRate: Int, latency: Int, preroll: Int64) {
        let (inRate, outRate) = (Int64(inputRate), Int64(outputRate))
        let divisor = gcd(inRate, outRate)
        let (inPeriod, outPeriod) = (inRate / divisor, outRate / divisor)
        let history = Int64(latency) + 2 + preroll
        let wanted = window.first * inRate / outRate - history
        let periods = wanted > 0 ? wanted / inPeriod : 0
        firstInput = periods * inPeriod
        firstOutput = periods * outPeriod
        inputEnd = window.end.map { ($0 * inRate + outRate - 1) / outRate + Int64(latency) + 2 }
    }

    /// The seek's start (stream time, ns): one frame before `firstInput`, so that the decoder's clipping of its first
    /// buffer (which rounds) keeps `firstInput`.
    func seekStart(inputRate: Int) -> Int64 {
        firstInput <= 1 ? 0 : (firstInput - 1) * 1_000_000_000 / Int64(inputRate)
    }

    /// The seek's stop (stream time, ns) before the demuxer's lead is added; nil: to the end.
    func seekStop(inputRate: Int) -> Int64? {
        inputEnd.map { ($0 * 1_000_000_000 + Int64(inputRate) - 1) / Int64(inputRate) }
    }
}

private func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return max(a, 1)
}

/// One range's resampler (a GstAudioConverter changing only the rate, fresh for every range: GStreamer's
/// audioresample element keeps its phase across flushes, so a range read after another would start in whatever
/// phase the previous one ended in). It is fed contiguous input from the plan's first frame and numbers its output
/// from the plan's first output frame.
@safe final class RangeResampler {  // owns the C resampler it wraps
    private let resampler: OpaquePointer
    let latency: Int
    /// The next input frame it expects, and the output frame it makes next.
    private(set) var nextInput: Int64
    private(set) var nextOutput: Int64

    init?(caps: GstRef<GstCapsObject>, outputRate: Int, plan: AudioRangePlan) {
        guard let made = unsafe swift_gst_resampler_new(caps.pointer, gint(outputRate)) else { return nil }
        unsafe resampler = made
        latency = unsafe Int(swift_gst_resampler_latency(made))
        nextInput = plan.firstInput
        nextOutput = plan.firstOutput
    }

    deinit { unsafe swift_gst_resampler_free(resampler) }

    /// The resampler's reach for `caps` at `outputRate` (input frames), 0 when it cannot be made.
    static func latency(caps: GstRef<GstCapsObject>, outputRate: Int) -> Int {
        guard let made = unsafe swift_gst_resampler_new(caps.pointer, gint(outputRate)) else { return 0 }
        defer { unsafe swift_gst_resampler_free(made) }
        return unsafe Int(swift_gst_resampler_latency(made))
    }

    /// Feeds the frames of `buffer` (its first input frame `first`, `frames` frames) from `nextInput` on — frames
    /// before it (already fed, or before the plan's first frame) are skipped — and returns what the resampler made
    /// (a sample with `segment`), its first output frame and frame count. Decoded audio is contiguous; a gap (a
    /// decoder that lost a packet) is not filled but closed, as audioresample does within 1/32 s.
    func feed(_ sample: GstRef<GstSampleObject>, first: Int64, frames: Int) -> Made? {
        let skip = Int(clamping: max(0, nextInput - first))
        guard skip < frames else { return nil }
        nextInput = max(nextInput, first) + Int64(frames - skip)
        return run(sample, skip: skip, frames: frames - skip)
    }

    /// At the end of the input: the filter's last frames (its reach of silence fed).
    func drain() -> Made? { run(nil, skip: 0, frames: latency) }

    typealias Made = (sample: GstRef<GstSampleObject>, first: Int64, frames: Int)

    /// `sample`: its buffer is fed and its segment given to the output (nil: silence, no segment).
    private func run(_ sample: GstRef<GstSampleObject>?, skip: Int, frames: Int) -> Made? {
        var made: gsize = 0
        guard frames > 0, let out = unsafe process(sample, skip: skip, frames: frames, made: &made) else { return nil }
        let first = nextOutput
        nextOutput += Int64(made)
        return unsafe (GstRef(full: out), first, Int(made))
    }

    private func process(_ sample: GstRef<GstSampleObject>?, skip: Int, frames: Int, made: inout gsize) -> OpaquePointer? {
        guard let sample else {
            return unsafe swift_gst_resampler_process(resampler, nil, gsize(skip), gsize(frames), nil, &made)
        }
        return unsafe swift_gst_resampler_process(resampler, sample.buffer, gsize(skip), gsize(frames),
                                                  gst_sample_get_segment(sample.pointer), &made)
    }
}
