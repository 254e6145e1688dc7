import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded video of an MPEG-PS without a frame index cannot be cut after its beginning (PROTOCOL.md §12.7): a range
/// that does not start at 0 fails with −11838 and a message that says so, the same on every attempt, and the
/// connection goes on serving reads. The file: x264's H.264 elementary stream (ffmpeg, `-f h264`, no timestamps) put
/// into a PS by GStreamer's mpegpsmux — no PES header states a time, so the parse-only pass finds a sample with no
/// presentation time and the track has no frame index. No stored sample of that PS, nor of the elementary stream
/// read directly, carries a time, so no passthrough range can be placed in either: every range but the whole track
/// fails with −11838 too, in CreateOutput and in a ResetOutput range, while the whole track is every packet.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ProgramStreamRefusalTests {
    static let elementary = Media.make("ps-untimed.h264", TimescaleTests.source + TimescaleTests.x264 + ["-f", "h264"])
    static let file = Media.makeWithGStreamer("ps-untimed.mpg", ["filesrc", "location=\(elementary)", "!", "h264parse",
                                                                 "!", "mpegpsmux"])
    static let message = "decoded MPEG-PS video can be read by time range only with a frame index, which this track does not have; read it from the start"
    static func untimed(_ track: AssetTrack) -> String {
        "the stored samples of track \(track.trackID) carry no presentation times, so a passthrough time range cannot be placed in them; read the track whole, from 0 to its end"
    }
    /// From 0.1 s for 0.3 s; from 0 for 0.3 s (an end the samples cannot place either); from 0.5 s to the end.
    static let ranges = [MediaTimeRange(start: MediaTime(value: 1, timescale: 10), duration: MediaTime(value: 3, timescale: 10)),
                         MediaTimeRange(start: .zero, duration: MediaTime(value: 3, timescale: 10)),
                         MediaTimeRange(start: MediaTime(value: 1, timescale: 2), duration: .positiveInfinity)]

    /// One read of `range` that is refused before any frame: its error. `settings` nil: passthrough.
    static func refused(_ asset: Asset, _ track: AssetTrack, range: MediaTimeRange,
                        settings: [String: SettingValue]? = TimescaleTests.y420) throws -> TrackError? {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
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

    /// Passthrough of the PS and of the elementary stream it was made from: each range other than the whole track
    /// is refused with −11838 and the same message, twice on one connection, before any sample; the whole track is
    /// as many stored samples as ffprobe lists packets, and so is a random-access output's first range, whose
    /// ResetOutput range then fails the output (resetRangeFails).
    @Test(arguments: ["ps", "elementary"]) func passthroughRangeOfUntimedSamplesIsRefused(kind: String) throws {
        let file = kind == "ps" ? Self.file : Self.elementary
        let packets = try Probe.packets(file, "v:0")
        try #require(packets.count == 30 && packets.allSatisfy { $0.pts == nil }, "ffprobe: \(packets.count) packets, times \(packets.map(\.pts))")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        for range in Self.ranges {
            let first = try #require(try Self.refused(asset, track, range: range, settings: nil), "\(kind) \(range)")
            #expect(first.code == -11838 && first.message == Self.untimed(track), "\(kind) \(range): \(first)")
            let second = try Self.refused(asset, track, range: range, settings: nil)
            #expect(second == first, "\(kind) \(range), the second attempt: \(String(describing: second))")
        }
        let stored = try TimescaleTests.read(asset, track, nil)
        #expect(stored.count == packets.count, "\(kind): \(stored.count) stored samples")
        try Self.resetRangeFails(asset, track, packets: packets.count)
    }

    /// A random-access passthrough output of an untimed track: the whole track first (`packets` samples), then a
    /// ResetOutput range, which fails the output with the refusal's error instead of ending it empty.
    static func resetRangeFails(_ asset: Asset, _ track: AssetTrack, packets: Int) throws {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var whole = 0
        while try output.copyNextSampleBuffer() != nil { whole += 1 }
        #expect(whole == packets && reader.status == .reading, "\(whole) samples, \(reader.status)")
        try output.reset(forReadingTimeRanges: [Self.ranges[0]])
        var after = 0
        while try output.copyNextSampleBuffer() != nil { after += 1 }
        #expect(after == 0 && reader.status == .failed, "\(after) samples, \(reader.status)")
        #expect(reader.error?.code == -11838 && reader.error?.message == Self.untimed(track), "\(String(describing: reader.error))")
    }
}
