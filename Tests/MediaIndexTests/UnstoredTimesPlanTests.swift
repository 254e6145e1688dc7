import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// `FrameIndex.plan` on indexes whose times are not the stored samples' (so which sample holds a frame is not known):
/// an elementary stream's (`.fromStart`) is one range from the beginning however the frames are asked; an AVI track's
/// with B-pictures (`.decodeTimes`) is one range per group of frames that one seek `maxLeadingPictures` frames early
/// reaches, each decoding every sample from there (no needed samples, no last one).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct UnstoredTimesPlanTests {
    /// `count` frames 10 ns apart in decode order, sync where `syncs` says, with `timing`.
    static func index(count: Int, syncs: Set<Int>, timing: FrameIndex.Timing) -> FrameIndex {
        FrameIndex(frames: (0..<count).map {
            .init(presentationTime: Int64($0) * 10, duration: 10, isSync: syncs.contains($0), decodePosition: $0)
        }, timing: timing)
    }

    static func range(_ first: Int, _ last: Int) -> MediaTimeRange {
        MediaTimeRange(start: .nanoseconds(Int64(first) * 10), duration: .nanoseconds(Int64(last - first + 1) * 10))
    }

    /// Frames far apart, repeated and unsorted: one range from the first wanted frame to the end of the last, every
    /// sample decoded from the beginning.
    @Test func fromStartIsOneRange() throws {
        let index = Self.index(count: 1000, syncs: Set(stride(from: 0, to: 1000, by: 12)), timing: .fromStart)
        let plan = index.plan([990, 5, 400])
        try #require(plan.count == 1)
        #expect(plan[0].range == Self.range(5, 990))
        #expect(plan[0].neededSamples == nil && plan[0].lastNeededSample == nil)
        #expect(plan[0].firstPosition == 0)
        #expect(plan[0].frames == [5, 400, 990])
        #expect(index.plan([]).isEmpty)
    }

    /// Key frames every 24: a frame whose seek (16 frames early) lands at a key frame at or before the last wanted
    /// frame of the range before joins it; one whose seek lands at a later key frame starts a range there.
    @Test func decodeTimesGroupByTheSeeksKeyFrame() throws {
        #expect(FrameIndex.maxLeadingPictures == 16)
        let index = Self.index(count: 300, syncs: Set(stride(from: 0, to: 300, by: 24)), timing: .decodeTimes)
        // 30: its seek at 14, key frame 0 (joins 3); 63: seek at 47, key frame 24, before 30 (joins);
        // 100: seek at 84, key frame 72, after 63 (a new range from 72); 101: joins; 299: seek at 283, key frame 264.
        let plan = index.plan([101, 3, 63, 30, 100, 299])
        try #require(plan.count == 3)
        #expect(plan.map(\.frames) == [[3, 30, 63], [100, 101], [299]])
        #expect(plan.map(\.range) == [Self.range(3, 63), Self.range(100, 101), Self.range(299, 299)])
        #expect(plan.map(\.firstPosition) == [0, 72, 264])
        #expect(plan.allSatisfy { $0.neededSamples == nil && $0.lastNeededSample == nil })
    }

    /// The seek's key frame is the one at or before the frame `maxLeadingPictures` earlier: 40's seek (at 24) lands
    /// on key frame 24, after 23, so 40 starts a range; 39's (at 23) on key frame 0 and joins.
    @Test func decodeTimesBoundaryIsTheLead() throws {
        let index = Self.index(count: 100, syncs: [0, 24, 48, 72], timing: .decodeTimes)
        #expect(index.plan([23, 40]).map(\.frames) == [[23], [40]])
        #expect(index.plan([23, 39]).map(\.frames) == [[23, 39]])
        #expect(index.plan([0]).map(\.firstPosition) == [0])
    }

    /// The timing survives `endingAt` (the track's end applied to the last frame).
    @Test func endingKeepsTheTiming() {
        let index = Self.index(count: 10, syncs: [0], timing: .decodeTimes)
        let ended = index.endingAt(95)
        #expect(ended.timing == .decodeTimes && ended.frames.last?.duration == 5)
        #expect(Self.index(count: 3, syncs: [0], timing: .fromStart).endingAt(25).timing == .fromStart)
    }
}
