import MediaIndex
import MediaVocabulary
import SamplePools
import TestSupport
import Testing

/// How an output reads its track: the mode its loop switches on, and a decoded range read by the frame index.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct OutputReadingTests {
    static let index = FramePlanTests.index  // 100 frames, 10 ns each, a sync frame every 10

    @Test func onlyRangeReadingsTakeMoreRanges() {
        let frames = FramePlan(index: Self.index, order: [3])
        let readings: [OutputReading<Int>] = [
            .passthrough(randomAccess: true), .passthrough(randomAccess: false), .clipped(randomAccess: true),
            .indexed(first: IndexedRead(.everything, index: Self.index), randomAccess: true), .frames(frames, keep: 1),
        ]
        #expect(readings.map(\.randomAccess) == [true, false, true, true, false])
        #expect(readings.map(\.isPassthrough) == [true, true, false, false, false])
    }

    @Test func aRangeIsReadFromItsFirstFrameToTheLastSampleItNeeds() {
        let read = IndexedRead(MediaTimeRange(start: .nanoseconds(25), duration: .nanoseconds(30)), index: Self.index)
        #expect(read.frames == [2, 3, 4, 5])  // frame 2 is displayed at 25 ns; frame 5 presents before 55 ns
        #expect(read.seek.start == .nanoseconds(20))
        #expect(read.seek.duration.isPositiveInfinity)
        #expect(read.lastNeededSample == 50)
        #expect(read.needsFallback(delivered: 0))  // frames were due and none came: the index does not match
        #expect(!read.needsFallback(delivered: 1))
    }

    @Test func theWholeTrackDeliversEveryDecodedFrameToTheEnd() {
        let read = IndexedRead(.everything, index: Self.index)
        #expect(read.frames == nil)
        #expect(read.seek == .everything)
        #expect(read.lastNeededSample == nil)
        #expect(!read.needsFallback(delivered: 0))  // nothing selected: the decoder's frames are what there is
    }

    @Test func aRangePastTheEndDeliversNothingAndNeedsNoFallback() {
        let read = IndexedRead(MediaTimeRange(start: .nanoseconds(5_000), duration: .nanoseconds(10)), index: Self.index)
        #expect(read.frames == [])
        #expect(!read.needsFallback(delivered: 0))
    }
}
