import MediaIndex
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
}
