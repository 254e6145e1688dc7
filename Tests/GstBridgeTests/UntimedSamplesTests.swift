import Foundation
import GstBridge
import MediaIndex
import TrackdProtocol
import TestSupport
import Testing

/// A track whose stored samples carry no presentation time (an H.264 elementary stream: ffmpeg's `-f h264`) is told
/// apart from timed ones (FrameIndex.carriesNoTimes), and a passthrough pipeline told so refuses every range but
/// the whole track before it is built (PROTOCOL.md §12.7, "Untimed samples"), as does a decoded one.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct UntimedSamplesTests {
    static func elementary() throws -> String {
        try Fixtures.make("untimed.h264", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=0.5",
                                           "-c:v", "libx264", "-bf", "2", "-g", "6", "-pix_fmt", "yuv420p", "-f", "h264"])
    }

    /// ADTS AAC, a file of no container either: its parser times every packet.
    static func adts() throws -> String {
        try Fixtures.make("timed.aac", ["-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", "-c:a", "aac", "-f", "adts"])
    }

    @Test func untimedTracksAreToldApart() throws {
        #expect(try FrameIndex.carriesNoTimes(source: try Fixtures.source(try Self.elementary()), trackID: 1))
        #expect(try !FrameIndex.carriesNoTimes(source: try Fixtures.source(try Fixtures.clip()), trackID: 1))
        #expect(try !FrameIndex.carriesNoTimes(source: try Fixtures.source(try Self.adts()), trackID: 1))
    }

    @Test func onlyTheWholeTrackIsRead() throws {
        let path = try Self.elementary()
        let tenth = MediaTime(value: 1, timescale: 10)
        let message = "the stored samples of track 1 carry no presentation times, so a passthrough time range cannot be placed in them; read the track whole, from 0 to its end"
        for range in [MediaTimeRange(start: tenth, duration: .positiveInfinity), MediaTimeRange(start: .zero, duration: tenth)] {
            #expect(throws: TrackError(.operationNotSupportedForAsset, message), "\(range)") {
                _ = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .passthrough, timeRange: range,
                                      samplesUntimed: true)
            }
        }
        let whole = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .passthrough,
                                      timeRange: .everything, samplesUntimed: true)
        defer { whole.stop() }
        #expect(try pullAll(whole).count == 15)
        #expect(throws: TrackError(.operationNotSupportedForAsset, message)) { try whole.seek(to: MediaTimeRange(start: tenth, duration: tenth)) }
    }

    /// Decoded video told so (an elementary stream's): the same refusal, saying "decoded"; the whole track decodes
    /// every frame, and a seek to the whole track is allowed while one to a range is not.
    @Test func onlyTheWholeTrackIsDecoded() throws {
        let path = try Self.elementary()
        let tenth = MediaTime(value: 1, timescale: 10)
        let message = "the stored samples of track 1 carry no presentation times, so a decoded time range cannot be placed in them; read the track whole, from 0 to its end"
        #expect(throws: TrackError(.operationNotSupportedForAsset, message)) {
            _ = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(DecodeTests.i420),
                                  timeRange: MediaTimeRange(start: tenth, duration: .positiveInfinity), samplesUntimed: true)
        }
        let whole = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(DecodeTests.i420),
                                      timeRange: .everything, samplesUntimed: true)
        defer { whole.stop() }
        #expect(try pullAll(whole).count == 15)
        #expect(throws: TrackError(.operationNotSupportedForAsset, message)) { try whole.seek(to: MediaTimeRange(start: .zero, duration: tenth)) }
    }
}
