import TestSupport
import Testing
import TrackdProtocol

/// TimeGrid: GStreamer's nanoseconds to the track's ticks and back (PROTOCOL.md §7.1).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TimeGridTests {
    static let mp4 = TimeGrid(timescale: 15360)!

    /// qtdemux's ⌊k × 10⁹ / 15360⌋ comes back as k for every k of a minute, and goes there again.
    @Test func demuxerNanosecondsRoundTripToTicks() {
        for k in Int64(0)..<(10 * 15360) where k % 7 == 0 || k < 2000 {
            let ns = k * 1_000_000_000 / 15360
            #expect(Self.mp4.time(nanoseconds: ns) == MediaTime(value: k, timescale: 15360))
            #expect(Self.mp4.nanoseconds(MediaTime(value: k, timescale: 15360)) == ns)
        }
    }

    /// A time shifted by an edit list (⌊a⌋ − ⌊b⌋, up to 1 ns from the true value either way) still maps to its tick,
    /// negative ones too (a decode time before the edit's start).
    @Test func editListShiftedTimes() {
        let shift = Int64(1024) * 1_000_000_000 / 15360
        for raw in Int64(0)..<5000 {
            let ns = raw * 1_000_000_000 / 15360 - shift
            #expect(Self.mp4.time(nanoseconds: ns).value == raw - 1024)
        }
        #expect(Self.mp4.time(nanoseconds: -66_666_666) == MediaTime(value: -1024, timescale: 15360))
    }

    /// With an edit list starting at media time 1024, qtdemux's frame k is ⌊(k + 1024) × 10⁹ / 15360⌋ − ⌊1024 × 10⁹ /
    /// 15360⌋ ns — frame 1 at 33,333,334, not 33,333,333 — and a requested tick converts to exactly that.
    @Test func editListOffsetRequestsMatchTheDemuxer() throws {
        let grid = try #require(TimeGrid(timescale: 15360, offset: 1024))
        let shift = Int64(1024) * 1_000_000_000 / 15360
        for k in Int64(0)..<3000 {
            let demuxer = (k + 1024) * 1_000_000_000 / 15360 - shift
            #expect(grid.nanoseconds(MediaTime(value: k, timescale: 15360)) == demuxer)
            #expect(grid.time(nanoseconds: demuxer) == MediaTime(value: k, timescale: 15360))
        }
        #expect(grid.nanoseconds(MediaTime(value: 1, timescale: 30)) == 33_333_334)
    }

    /// A requested time that is a tick written in its own timescale names that tick: frame 1's time as 1/30, as
    /// 1001/30030, in nanoseconds (33,333,333.3 rounded) all name 512/15360, i.e. qtdemux's 33,333,333 ns; 1 ns later
    /// is just after it (the same frame shown). At a half either rounding names it: tick 3 is 195,312.5 ns.
    @Test func requestedTimesNameTheTickTheyWrite() {
        let frame1: Int64 = 33_333_333
        for t in [MediaTime(value: 1, timescale: 30), MediaTime(value: 1001, timescale: 30030), .nanoseconds(33_333_333),
                  MediaTime(value: 512, timescale: 15360)] {
            #expect(Self.mp4.nanoseconds(t) == frame1, "\(t)")
            #expect(Self.mp4.rounded(t) == MediaTime(value: 512, timescale: 15360), "\(t)")
        }
        #expect(Self.mp4.nanoseconds(.nanoseconds(33_333_334)) == frame1 + 1)
        #expect(Self.mp4.nanoseconds(.nanoseconds(195_312)) == 195_312 && Self.mp4.nanoseconds(.nanoseconds(195_313)) == 195_312)
        let afterTick2: Int64 = 130_208 + 1
        #expect(Self.mp4.nanoseconds(.nanoseconds(195_311)) == afterTick2)
        // 33,310,000 ns is 511.64 ticks, no tick in nanoseconds: after tick 511 (33,268,229 ns), before 512.
        let afterTick511: Int64 = 33_268_229 + 1
        #expect(Self.mp4.nanoseconds(.nanoseconds(33_310_000)) == afterTick511)
        #expect(Self.mp4.nanoseconds(.nanoseconds(33_333_332)) == afterTick511)  // 2 ns before tick 512's time
        // Halves go away from zero in rounded(): 0.5 tick → 1 tick.
        #expect(Self.mp4.rounded(MediaTime(value: 1, timescale: 30720)) == MediaTime(value: 1, timescale: 15360))
        #expect(Self.mp4.nanoseconds(MediaTime.invalid) == nil)
        #expect(Self.mp4.rounded(.positiveInfinity) == .positiveInfinity)
        #expect(Self.mp4.time(seconds: 2.0 / 30) == MediaTime(value: 1024, timescale: 15360))
    }

    /// On a coarse grid (an AVI at 30 fps: one tick a frame) a time between two frames is the earlier frame's: 0.52 s
    /// is frame 15 (shown from 0.5 s), not frame 16 (0.5333 s), in any timescale; 1 ns after frame 15's time, so
    /// `pts ≤ t` holds for frame 15 and not for 16. Frame 1 written in nanoseconds (33,333,333) is frame 1.
    @Test func aTimeBetweenFramesOnACoarseGridIsTheEarlierFrame() throws {
        let avi = try #require(TimeGrid(timescale: 30))
        let frame15: Int64 = 500_000_000
        for t in [MediaTime.nanoseconds(520_000_000), MediaTime(value: 52, timescale: 100), MediaTime(value: 7987, timescale: 15360),
                  MediaTime(seconds: 0.52, preferredTimescale: 1_000_000_000), MediaTime(value: 31, timescale: 60)] {
            #expect(avi.nanoseconds(t) == frame15 + 1, "\(t)")
        }
        #expect(avi.nanoseconds(.nanoseconds(533_333_333)) == 533_333_333)  // frame 16's start, 533,333,333.3 rounded
        #expect(avi.nanoseconds(.nanoseconds(533_333_334)) == 533_333_334)  // after it: frame 16 shown
        #expect(avi.nanoseconds(.nanoseconds(533_333_332)) == frame15 + 1)  // before it
        #expect(avi.nanoseconds(.nanoseconds(33_333_333)) == 33_333_333)
        #expect(avi.nanoseconds(MediaTime(seconds: 16.0 / 30, preferredTimescale: 1_000_000_000)) == 533_333_333)
        // A frame grid (a raw stream, 30 fps): frame k at k × 33,333,333 ns; between 15 and 16, 1 ns after 15.
        let raw = try #require(TimeGrid(frameRate: 30, 1))
        let (rawFrame15, rawFrame16): (Int64, Int64) = (15 * 33_333_333, 16 * 33_333_333)
        #expect(raw.nanoseconds(.nanoseconds(520_000_000)) == rawFrame15 + 1)
        #expect(raw.nanoseconds(.nanoseconds(33_333_333)) == 33_333_333)
        #expect(raw.nanoseconds(MediaTime(value: 16, timescale: 30)) == rawFrame16)
        // 1/15 s on the 30000/1001 grid is 1.998 frames, written 1.001 fifteenths for frame 2: frame 2.
        let ntsc = try #require(TimeGrid(timescale: 30000, tick: 1001))
        let (ntscFrame1, ntscFrame2): (Int64, Int64) = (1001 * 1_000_000_000 / 30000, 2002 * 1_000_000_000 / 30000)
        #expect(ntsc.nanoseconds(MediaTime(value: 1, timescale: 15)) == ntscFrame2)
        #expect(ntsc.nanoseconds(.nanoseconds(66_000_000)) == ntscFrame1 + 1)  // 1.978 frames
        // 1/2 s at 25 fps is halfway between frames 12 and 13, and both written in halves are 1: it names neither,
        // and is inside frame 12 (0.48 s to 0.52 s).
        let pal = try #require(TimeGrid(timescale: 25))
        let palFrame12: Int64 = 480_000_000
        #expect(pal.nanoseconds(MediaTime(value: 1, timescale: 2)) == palFrame12 + 1)
        #expect(pal.nanoseconds(MediaTime(value: 13, timescale: 25)) == palFrame12 + 40_000_000)
    }

    /// Ranges: the start inclusive, the end exclusive, each compared exactly. (0.51 s, 0.05 s) at 30000/1001 shows
    /// frames 15 (from 0.5005 s) and 16 (0.5339 s): start 1 ns after 15's time, end 2 ns after 16's.
    @Test func rangesKeepEveryFrameShownDuringThem() throws {
        let ntsc = try #require(TimeGrid(timescale: 30000, tick: 1001))
        let (f15, f16, f17): (Int64, Int64, Int64) = (500_500_000, 533_866_666, 567_233_333)
        let r = ntsc.nanoseconds(MediaTimeRange(start: .nanoseconds(510_000_000), duration: .nanoseconds(50_000_000)))
        #expect(r.start == .nanoseconds(f15 + 1) && r.duration == .nanoseconds(f16 + 2 - (f15 + 1)))
        // Exact frame times: [15, 17) is frames 15 and 16.
        let exact = ntsc.nanoseconds(MediaTimeRange(start: MediaTime(value: 15015, timescale: 30000), duration: MediaTime(value: 2002, timescale: 30000)))
        #expect(exact.start == .nanoseconds(f15) && exact.duration == .nanoseconds(f17 - f15))
        // Start and end between the same two frames: not empty (frame 15 is shown), end after start.
        let inside = ntsc.nanoseconds(MediaTimeRange(start: .nanoseconds(510_000_000), duration: .nanoseconds(1_000_000)))
        #expect(inside.start == .nanoseconds(f15 + 1) && inside.duration == .nanoseconds(1))
        // A duration of 0 stays empty; an end exactly at a frame's time excludes that frame.
        let empty = ntsc.nanoseconds(MediaTimeRange(start: .nanoseconds(510_000_000), duration: .nanoseconds(0)))
        #expect(empty.start == .nanoseconds(f15 + 1) && empty.duration == .nanoseconds(0))
        let toFrame16 = ntsc.nanoseconds(MediaTimeRange(start: MediaTime(value: 15300, timescale: 30000), duration: MediaTime(value: 716, timescale: 30000)))
        #expect(toFrame16.start == .nanoseconds(f15 + 1) && toFrame16.duration == .nanoseconds(f16 - (f15 + 1)))
        // Start and duration in different timescales add exactly: 15/30000 s + 1/30 s = 1015/30000 s, 1.014 frames.
        let mixed = ntsc.nanoseconds(MediaTimeRange(start: MediaTime(value: 15, timescale: 30000), duration: MediaTime(value: 1, timescale: 30)))
        #expect(mixed.start == .nanoseconds(1) && mixed.duration == .nanoseconds(33_366_666 + 2 - 1))
    }

    /// With an MP4 edit offset (qtdemux's ⌊(k + 1024) × 10⁹ / 15360⌋ − ⌊1024 × 10⁹ / 15360⌋), 0.52 s (tick 7987.2) is
    /// 1 ns after tick 7987's time and before 7988's; a range ending there keeps 7987.
    @Test func editOffsetGridComparesExactly() throws {
        let grid = try #require(TimeGrid(timescale: 15360, offset: 1024))
        let (t7987, t7988): (Int64, Int64) = (519_986_979, 520_052_084)
        #expect(grid.nanoseconds(.nanoseconds(520_000_000)) == t7987 + 1)
        #expect(grid.nanoseconds(MediaTime(value: 7988, timescale: 15360)) == t7988)
        #expect(grid.nanoseconds(.nanoseconds(520_052_083)) == t7988)  // tick 7988 in ns is 520,052,083.3
        let r = grid.nanoseconds(MediaTimeRange(start: .zero, duration: .nanoseconds(520_000_000)))
        #expect(r.start == .nanoseconds(0) && r.duration == .nanoseconds(t7987 + 2))
    }

    /// Decoded audio's grid of samples keeps §12.7's sample-exact rule: a requested time goes to the nearest sample,
    /// a range's start and duration each (0.6 sample → sample 1; 1.5 samples long → 2), where the track's 1/48000
    /// grid compares exactly (0.6 sample: between samples 0 and 1).
    @Test func audioSampleGridsRoundRequestsToTheNearestSample() throws {
        let samples = try #require(TimeGrid(sampleRate: 48000)), track = try #require(TimeGrid(timescale: 48000))
        #expect(samples.roundsRequests && !track.roundsRequests && samples.timescale == 48000)
        #expect(samples.nanoseconds(.nanoseconds(12_500)) == 20_833 && track.nanoseconds(.nanoseconds(12_500)) == 1)
        let r = samples.nanoseconds(MediaTimeRange(start: .nanoseconds(12_500), duration: .nanoseconds(31_250)))
        #expect(r.start == .nanoseconds(20_833) && r.duration == .nanoseconds(62_500 - 20_833))
        #expect(samples.nanoseconds(MediaTime(value: 1, timescale: 96000)) == 20_833)  // half a sample: away from 0
    }

    /// Times far outside Int64's nanoseconds saturate instead of trapping, in both directions.
    @Test func requestedTimesSaturate() throws {
        let ntsc = try #require(TimeGrid(timescale: 30000, tick: 1001))
        let raw = try #require(TimeGrid(frameRate: 30, 1))
        for grid in [Self.mp4, ntsc, raw] {
            #expect(grid.nanoseconds(MediaTime(value: .max, timescale: 1)) == .max)
            #expect(grid.nanoseconds(MediaTime(value: .min, timescale: 1)) == .min)
            #expect(grid.nanoseconds(MediaTime(value: .max - 1, timescale: 7)) == .max)
            let r = grid.nanoseconds(MediaTimeRange(start: MediaTime(value: 1, timescale: 3), duration: MediaTime(value: .max, timescale: 3)))
            let start = try #require(grid.nanoseconds(MediaTime(value: 1, timescale: 3)))
            #expect(r.start == .nanoseconds(start) && r.duration == .nanoseconds(.max - start), "\(grid)")
        }
    }

    /// Matroska's TimestampScale 1,000,000 is a 1/1000 grid; ticks × TimestampScale is the demuxer's time exactly.
    @Test func matroskaGrid() throws {
        let grid = try #require(TimeGrid(timescale: 1_000_000_000, tick: 1_000_000))
        #expect(grid.timescale == 1000 && grid.tick == 1)
        #expect(grid.time(nanoseconds: 33_000_000) == MediaTime(value: 33, timescale: 1000))
        #expect(grid.nanoseconds(MediaTime(value: 67, timescale: 1000)) == 67_000_000)
        #expect(grid.nanoseconds(MediaTime(value: 2, timescale: 30)) == 67_000_000)  // 66.67 ms: 67 ms is 2.01/30 s
        #expect(grid.nanoseconds(.nanoseconds(66_670_000)) == 66_000_001)  // between ticks 66 and 67
    }

    /// AVI at rate 30000, scale 1001: the grid is 1001/30000, values are multiples of 1001.
    @Test func aviGridWithATickOfSeveralUnits() throws {
        let grid = try #require(TimeGrid(timescale: 30000, tick: 1001))
        #expect(grid.time(nanoseconds: 2 * 1001 * 1_000_000_000 / 30000) == MediaTime(value: 2002, timescale: 30000))
        let frame2: Int64 = 2002 * 1_000_000_000 / 30000  // 66,733,333: frame 2 at 2002/30000 s
        #expect(grid.nanoseconds(MediaTime(value: 1, timescale: 15)) == frame2)  // 1/15 s is frame 2 in fifteenths
        #expect(grid.rounded(MediaTime(value: 1500, timescale: 30000)) == MediaTime(value: 1001, timescale: 30000))
        #expect(TimeGrid(timescale: 60, tick: 2) == TimeGrid(timescale: 30))  // reduced
    }

    /// An elementary stream's frame grid: frame k of a 30 fps stream is GStreamer's k × 33 333 333 ns (the parser adds
    /// one floor-rounded frame per frame) and (k, 30) on the wire, both ways, far into a long stream; frame 30 is at
    /// 999 999 990 ns, so the range [0.5 s, 1 s) ends there, before it. 30000/1001 is (1001k, 30000) at k × 33 366 666.
    @Test func frameGridsCountFramesOfTheParsersLength() throws {
        let grid = try #require(TimeGrid(frameRate: 30, 1))
        #expect(grid.timescale == 30 && grid.tick == 1 && grid.frameNanoseconds == 33_333_333)
        for k in Int64(0)..<10_000_000 where k % 9973 == 0 || k < 100 {
            #expect(grid.time(nanoseconds: k * 33_333_333) == MediaTime(value: k, timescale: 30), "\(k)")
            #expect(grid.rounded(.nanoseconds(k * 33_333_333)) == MediaTime(value: k, timescale: 30), "\(k)")
            #expect(grid.nanoseconds(MediaTime(value: k, timescale: 30)) == k * 33_333_333, "\(k)")
        }
        #expect(grid.nanoseconds(MediaTime(value: 1, timescale: 1)) == 999_999_990)
        let range = grid.nanoseconds(MediaTimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 1, timescale: 2)))
        #expect(range.start == .nanoseconds(499_999_995) && range.duration == .nanoseconds(499_999_995))
        let ntsc = try #require(TimeGrid(frameRate: 30000, 1001))
        #expect(ntsc.timescale == 30000 && ntsc.tick == 1001 && ntsc.frameNanoseconds == 33_366_666)
        for k in Int64(0)..<100_000 where k % 97 == 0 || k < 100 {
            #expect(ntsc.time(nanoseconds: k * 33_366_666) == MediaTime(value: 1001 * k, timescale: 30000), "\(k)")
            #expect(ntsc.nanoseconds(MediaTime(value: 1001 * k, timescale: 30000)) == k * 33_366_666, "\(k)")
        }
        let frame15: Int64 = 15 * 33_366_666
        #expect(ntsc.nanoseconds(MediaTime(value: 1, timescale: 2)) == frame15)  // 14.985 frames
        #expect(TimeGrid(frameRate: 60, 2) == grid && TimeGrid(frameRate: 25, 1)?.frameNanoseconds == 40_000_000)
        #expect(TimeGrid(frameRate: 0, 1) == nil && TimeGrid(frameRate: 1_000_000_000, 1) == nil && !TimeGrid(timescale: 30)!.isFrameGrid)
    }

    /// A requested time goes by its exact value (§7.1), a GStreamer time by the parser's frames: 33 349 999 800 ns
    /// is 1000.499994 frames of 1/30 s (after frame 1000) but 1000.500004 of the parser's 33 333 333 ns (frame 1001).
    @Test func frameGridsTakeRequestsExactlyAndGStreamerTimesByFrames() throws {
        let grid = try #require(TimeGrid(frameRate: 30, 1))
        #expect(grid.nearest(.nanoseconds(33_349_999_800)) == MediaTime(value: 1000, timescale: 30))
        let frame1000: Int64 = 1000 * 33_333_333
        #expect(grid.nanoseconds(.nanoseconds(33_349_999_800)) == frame1000 + 1)
        #expect(grid.rounded(.nanoseconds(33_349_999_800)) == MediaTime(value: 1001, timescale: 30))
        // [1000.49999, 1000.99999) frames: only frame 1000 is shown in it.
        let range = grid.nanoseconds(MediaTimeRange(start: .nanoseconds(33_349_999_800), duration: .nanoseconds(16_666_667)))
        #expect(range.start == .nanoseconds(frame1000 + 1) && range.duration == .nanoseconds(1))
        #expect(grid.rounded(MediaTime(value: 3, timescale: 60)) == MediaTime(value: 2, timescale: 30))  // 1.5 frames
    }

    /// A range: start and end on the grid, the duration the demuxer's end − start; +infinity stays.
    @Test func rangesInNanoseconds() {
        let r = Self.mp4.nanoseconds(MediaTimeRange(start: MediaTime(value: 1, timescale: 30), duration: MediaTime(value: 1, timescale: 30)))
        #expect(r.start == .nanoseconds(33_333_333) && r.duration == .nanoseconds(66_666_666 - 33_333_333))
        let open = Self.mp4.nanoseconds(MediaTimeRange(start: MediaTime(value: 2, timescale: 30), duration: .positiveInfinity))
        #expect(open.start == .nanoseconds(66_666_666) && open.duration == .positiveInfinity)
    }

    /// Timescales that cannot hold the nanosecond times exactly are not used; nanoseconds pass unchanged.
    @Test func tooFineOrInvalidTimescales() {
        #expect(TimeGrid(timescale: 0) == nil && TimeGrid(timescale: 1_000_000_000) == nil && TimeGrid(timescale: 30, tick: 0) == nil)
        #expect(TimeGrid.orNanoseconds(timescale: 0).isNanoseconds)
        #expect(TimeGrid.nanoseconds.time(nanoseconds: 123) == .nanoseconds(123))
        #expect(TimeGrid.nanoseconds.nanoseconds(MediaTime(value: 1, timescale: 3)) == 333_333_333)
        #expect(MediaTime(seconds: 1.0 / 30, preferredTimescale: 15360) == MediaTime(value: 512, timescale: 15360))
    }
}
