import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded video of an MPEG-PS without a frame index cannot be cut after its beginning (PROTOCOL.md §12.7): a range
/// that does not start at 0 fails with −11838 and a message that says so, the same on every attempt, and the
/// connection goes on serving reads. The file: x264's H.264 elementary stream (ffmpeg, `-f h264`, no timestamps) put
/// into a PS by GStreamer's mpegpsmux — no PES header states a time, so the parse-only pass finds a sample with no
/// presentation time and the track has no frame index.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ProgramStreamRefusalTests {
    static let elementary = Media.make("ps-untimed.h264", TimescaleTests.source + TimescaleTests.x264 + ["-f", "h264"])
    static let file = Media.makeWithGStreamer("ps-untimed.mpg", ["filesrc", "location=\(elementary)", "!", "h264parse",
                                                                 "!", "mpegpsmux"])
    static let message = "decoded MPEG-PS video can be read by time range only with a frame index, which this track does not have; read it from the start"

    /// One read of `range` that is refused before any frame: its error.
    static func refused(_ asset: Asset, _ track: AssetTrack, range: MediaTimeRange) throws -> TrackError? {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: TimescaleTests.y420)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(range)
        var frames = 0
        if try reader.startReading() {
            while try output.copyNextSampleBuffer() != nil { frames += 1 }
        }
        #expect(reader.status == .failed && frames == 0, "\(reader.status), \(frames) frames")
        return reader.error
    }

    @Test func decodedRangeAfterTheStartIsRefusedTheSameEveryTime() throws {
        let packets = try Probe.packets(Self.file, "v:0")
        try #require(packets.count == 30 && packets.allSatisfy { $0.pts == nil }, "ffprobe: \(packets.count) packets, times \(packets.map(\.pts))")
        let oracle = try Oracle.frameMD5(Self.file, pixFmt: "yuv420p").map(\.md5)
        try #require(oracle.count == 30, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let range = MediaTimeRange(start: MediaTime(value: 1, timescale: 10), duration: MediaTime(value: 3, timescale: 10))
        let first = try #require(try Self.refused(asset, track, range: range))
        #expect(first.code == -11838 && first.knownCode == .operationNotSupportedForAsset, "\(first)")
        #expect(first.message == Self.message, "\(first.message)")
        let second = try Self.refused(asset, track, range: range)
        #expect(second == first, "the second attempt: \(String(describing: second))")
        // The same connection still reads: decoded from the start, every frame ffmpeg decodes; passthrough, as many
        // stored samples as ffprobe lists packets.
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        #expect(decoded.map { md5Hex($0.packedBytes()) } == oracle, "\(decoded.count) frames decoded from the start")
        let stored = try TimescaleTests.read(asset, track, nil)
        #expect(stored.count == packets.count, "\(stored.count) stored samples")
    }
}
