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

    /// The ORC warm-up converts every pair it lists: 11 decoded formats to each of the 22 distinct GStreamer formats
    /// trackd offers, and each of those scaled 5 ways. A format name GStreamer did not know, or a pair its converter
    /// refused, would leave programs uncompiled (slower conversions after the filter) and show here as fewer.
    @Test func theORCWarmUpConvertsEveryPairItLists() {
        let offered = Set(PixelFormat.all.map(\.gstFormat)).count
        #expect(offered == 22)
        let warmed = Rehearsal.compileConversions()
        #expect(warmed.conversions == 11 * offered + 5 * offered)
        #expect(warmed.cpuMilliseconds > 0 && warmed.milliseconds > 0)
    }
}
