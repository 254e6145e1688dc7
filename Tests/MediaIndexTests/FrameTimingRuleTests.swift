import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// FrameTiming: AVAssetTrack's nominalFrameRate and minFrameDuration from a frame index on the track's grid.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FrameTimingRuleTests {
    /// An index of stored samples (decode order) at `ticks` of `grid`, each `duration` ticks long, as a demuxer
    /// timestamps them (⌊ticks × 10⁹ / timescale⌋ ns).
    static func index(_ ticks: [Int64], duration: Int64, grid: TimeGrid) -> FrameIndex {
        let ns = { (t: Int64) in grid.nanoseconds(MediaTime(value: t, timescale: grid.timescale))! }
        return FrameIndex(parsedSamples: ticks.map {
            FrameIndex.StoredSample(presentationTime: ns($0), duration: ns($0 + duration) - ns($0), isSync: true)
        })
    }

    /// ffmpeg's Matroska of 30 frames at 30 fps then 20 at 10 fps (ms): 33 ms at least, 50 frames over 2.933 s —
    /// the stored order does not matter (B-frames).
    @Test func variableRateOnAMillisecondGrid() throws {
        let grid = try #require(TimeGrid(timescale: 1000))
        let fast: [Int64] = (Int64(0)..<30).map { ($0 * 1000 + 15) / 30 }
        let slow: [Int64] = (Int64(0)..<20).map { 1000 + $0 * 100 }
        var ticks = fast + slow
        ticks.swapAt(3, 4)
        let timing = try #require(FrameTiming(Self.index(ticks, duration: 33, grid: grid), grid: grid))
        #expect(timing.frames == 50 && timing.span == 2933 && timing.timescale == 1000)
        #expect(timing.minFrameDuration == MediaTime(value: 33, timescale: 1000))
        #expect(timing.nominalFrameRate == 50_000.0 / 2933.0)
    }

    /// 90 kHz (MPEG-TS): the times are exact on the grid whatever the nanoseconds' rounding; a constant rate.
    @Test func constantRateOn90kHz() throws {
        let grid = try #require(TimeGrid(timescale: 90_000))
        let timing = try #require(FrameTiming(Self.index((0..<60).map { 132_000 + $0 * 3003 }, duration: 3003, grid: grid), grid: grid))
        #expect(timing.span == 60 * 3003 && timing.minFrameDuration == MediaTime(value: 3003, timescale: 90_000))
        #expect(timing.nominalFrameRate == 60.0 * 90_000 / (60 * 3003))
    }

    /// An elementary stream's frames timed by its parser (frame k at k × 33 366 666 ns, each as long) are on the frame
    /// grid of 30000/1001: its timing is in frames of 1001/30000; a frame of another length, or a rate whose frames
    /// are not these, has no frame grid.
    @Test func framesOfAStatedRateAreOnItsFrameGrid() throws {
        let stored = (Int64(0)..<60).map { FrameIndex.StoredSample(presentationTime: $0 * 33_366_666, duration: 33_366_666, isSync: $0 % 12 == 0) }
        let grid = try #require(FrameIndex(parsedSamples: stored).frameGrid(rate: 30000, 1001))
        #expect(grid.timescale == 30000 && grid.tick == 1001)
        let timing = try #require(FrameTiming(FrameIndex(parsedSamples: stored), grid: grid))
        #expect(timing.span == 60 * 1001 && timing.start == 0 && timing.minFrameDuration == MediaTime(value: 1001, timescale: 30000))
        #expect(FrameIndex(parsedSamples: stored).frameGrid(rate: 30, 1) == nil)
        var longer = stored
        longer[59].duration = 2 * 33_366_666
        #expect(FrameIndex(parsedSamples: longer).frameGrid(rate: 30000, 1001) == nil)
    }

    /// One frame: its own duration; no frames: nothing.
    @Test func oneFrameAndNone() throws {
        let grid = try #require(TimeGrid(timescale: 15_360))
        let timing = try #require(FrameTiming(Self.index([0], duration: 512, grid: grid), grid: grid))
        #expect(timing.minFrameDuration == MediaTime(value: 512, timescale: 15_360) && timing.span == 512)
        #expect(timing.nominalFrameRate == 30)
        #expect(FrameTiming(FrameIndex(frames: []), grid: grid) == nil)
    }
}
