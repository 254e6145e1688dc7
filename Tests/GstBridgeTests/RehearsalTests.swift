import GstBridge
import TrackdProtocol
import TestSupport
import Testing

/// The warm worker's rehearsal: GStreamer encodes a clip of its own into a memfd, and it is read back the way a
/// client's first read goes. It must really decode — every frame the encoder made comes out.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct RehearsalTests {
    @Test func theRehearsalDecodesEveryFrameOfItsClip() throws {
        let report = try Rehearsal.run()
        #expect(report.frames == 5)
        #expect(report.milliseconds > 0)
        // A second one works the same (a warm worker runs it once, but nothing in it is once-only).
        #expect(try Rehearsal.run().frames == 5)
    }
}
