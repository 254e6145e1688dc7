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

    /// A requested time in any timescale is first rounded to the nearest tick: frame 1's time as 1/30, as 1001/30030,
    /// in nanoseconds (rounded down or up) all name 512/15360, i.e. qtdemux's 33,333,333 ns.
    @Test func requestedTimesRoundToTheNearestTick() {
        let frame1: Int64 = 33_333_333
        for t in [MediaTime(value: 1, timescale: 30), MediaTime(value: 1001, timescale: 30030), .nanoseconds(33_333_333),
                  .nanoseconds(33_333_334), .nanoseconds(33_310_000), MediaTime(value: 512, timescale: 15360)] {
            #expect(Self.mp4.nanoseconds(t) == frame1, "\(t)")
            #expect(Self.mp4.rounded(t) == MediaTime(value: 512, timescale: 15360), "\(t)")
        }
        // Halves go away from zero: 0.5 tick → 1 tick.
        #expect(Self.mp4.rounded(MediaTime(value: 1, timescale: 30720)) == MediaTime(value: 1, timescale: 15360))
        #expect(Self.mp4.nanoseconds(MediaTime.invalid) == nil)
        #expect(Self.mp4.rounded(.positiveInfinity) == .positiveInfinity)
        #expect(Self.mp4.time(seconds: 2.0 / 30) == MediaTime(value: 1024, timescale: 15360))
    }

    /// Matroska's TimestampScale 1,000,000 is a 1/1000 grid; ticks × TimestampScale is the demuxer's time exactly.
    @Test func matroskaGrid() throws {
        let grid = try #require(TimeGrid(timescale: 1_000_000_000, tick: 1_000_000))
        #expect(grid.timescale == 1000 && grid.tick == 1)
        #expect(grid.time(nanoseconds: 33_000_000) == MediaTime(value: 33, timescale: 1000))
        #expect(grid.nanoseconds(MediaTime(value: 67, timescale: 1000)) == 67_000_000)
        #expect(grid.nanoseconds(MediaTime(value: 2, timescale: 30)) == 67_000_000)  // 66.67 ms → tick 67
    }

    /// AVI at rate 30000, scale 1001: the grid is 1001/30000, values are multiples of 1001.
    @Test func aviGridWithATickOfSeveralUnits() throws {
        let grid = try #require(TimeGrid(timescale: 30000, tick: 1001))
        #expect(grid.time(nanoseconds: 2 * 1001 * 1_000_000_000 / 30000) == MediaTime(value: 2002, timescale: 30000))
        let frame2: Int64 = 2002 * 1_000_000_000 / 30000  // 66,733,333: frame 2 at 2002/30000 s
        #expect(grid.nanoseconds(MediaTime(value: 1, timescale: 15)) == frame2)  // 1/15 s is nearest frame 2
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

    /// A requested time is rounded by its exact value (§7.1), a GStreamer time by the parser's frames: 33 349 999 800
    /// ns is 1000.499994 frames of 1/30 s (frame 1000) but 1000.500004 of the parser's 33 333 333 ns (frame 1001).
    @Test func frameGridsRoundRequestsExactlyAndGStreamerTimesByFrames() throws {
        let grid = try #require(TimeGrid(frameRate: 30, 1))
        #expect(grid.nearest(.nanoseconds(33_349_999_800)) == MediaTime(value: 1000, timescale: 30))
        let frame1000: Int64 = 1000 * 33_333_333
        #expect(grid.nanoseconds(.nanoseconds(33_349_999_800)) == frame1000)
        #expect(grid.rounded(.nanoseconds(33_349_999_800)) == MediaTime(value: 1001, timescale: 30))
        let range = grid.nanoseconds(MediaTimeRange(start: .nanoseconds(33_349_999_800), duration: .nanoseconds(16_666_667)))
        #expect(range.start == .nanoseconds(1000 * 33_333_333) && range.duration == .nanoseconds(33_333_333))
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
