import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// Inputs the libFuzzer targets (Fuzz/, `make fuzz`) found that broke MediaIndex, each kept as a test.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FuzzRegressionTests {
    /// fuzz-planner: `nearest` trapped on an overflow computing |time − ns| when a decoded sample's time is near
    /// Int64.max (MediaTime.nanoseconds saturates there) and a frame's time is negative — a worker crash.
    /// Input (planner layout): 00 01 05 80 00 05 80 00 01 01 ff ff ff ff ff ff ff 7f.
    @Test func nearestOfAnExtremeTimeDoesNotOverflow() {
        let index = FrameIndex(parsedSamples: [
            .init(presentationTime: -5120, duration: nil, isSync: true),
            .init(presentationTime: -5080, duration: nil, isSync: true),
        ])
        #expect(index.nearest(.max) == 1)
        #expect(index.nearest(.min) == 0)
        let wide = FrameIndex(frames: [
            .init(presentationTime: -(1 << 62), duration: 1, isSync: true, decodePosition: 0),
            .init(presentationTime: 0, duration: 1, isSync: true, decodePosition: 1),
            .init(presentationTime: 1 << 62, duration: 1, isSync: true, decodePosition: 2),
        ])
        let cases: [(Int64, Int)] = [(.min, 0), (-(1 << 61), 0), (-(1 << 61) + 1, 1), (.max, 2), (1 << 61, 1), ((1 << 61) + 1, 2)]
        for (t, frame) in cases { #expect(wide.nearest(t) == frame, "nearest \(t)") }
    }

    /// fuzz-planner (the invariant it skipped): a crafted ctts that shows a GOP before one decoded earlier. The
    /// planner built its runs in presentation order, so the later-shown frame of the earlier-decoded GOP joined the
    /// other GOP's run, which starts at the wrong sync sample: its samples were never decoded (ReadFrames failed
    /// "not produced by the decoder"). Decode order: GOP A (sync) 100, 110; GOP B (sync) 0, 10.
    @Test func gopsShownInAnotherOrderThanDecodedAreEachPlanned() throws {
        let index = FrameIndex(parsedSamples: [
            .init(presentationTime: 100, duration: 10, isSync: true),
            .init(presentationTime: 110, duration: 10, isSync: false),
            .init(presentationTime: 0, duration: 10, isSync: true),
            .init(presentationTime: 10, duration: 10, isSync: false),
        ])
        #expect(index.frames.map(\.decodePosition) == [2, 3, 0, 1])
        for maxSkip in [0, 120] {
            let plan = index.plan([1, 3], maxSkip: maxSkip)  // the frames at 10 (GOP B) and 110 (GOP A)
            let needed = plan.flatMap { $0.neededSamples ?? [] }
            #expect(needed.contains(110) && needed.contains(100), "GOP A's run, maxSkip \(maxSkip): \(plan)")
            #expect(needed.contains(10) && needed.contains(0), "GOP B's run, maxSkip \(maxSkip): \(plan)")
            #expect(plan.flatMap(\.frames).sorted() == [1, 3])
            #expect(zip(plan, plan.dropFirst()).allSatisfy { $0.firstPosition < $1.firstPosition })
            for range in plan {
                let start = range.range.start.nanoseconds!, end = start + range.range.duration.nanoseconds!
                for frame in range.frames { #expect((start..<end).contains(index.frames[frame].presentationTime)) }
            }
        }
        // The two runs are adjacent in decode order: one range from the first sync sample, every sample needed.
        #expect(index.plan([1, 3], maxSkip: 0).map(\.neededSamples) == [[0, 10, 100, 110]])
        #expect(index.plan([1, 3], maxSkip: 0).map(\.firstPosition) == [0])
    }
}
