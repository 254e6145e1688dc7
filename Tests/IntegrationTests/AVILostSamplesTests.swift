import Foundation
import TestSupport
import Testing
import TrackClient

/// AVI stores one time per chunk, its decode time, and GStreamer's avidemux gives only key frames a PTS: with
/// B-frames the decoder times the other frames itself. A read of such a file, whole or a time range, delivers
/// ffmpeg's frames and counts nothing lost (PROTOCOL.md §12.5); a damaged one still counts what it lost.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AVILostSamplesTests {
    /// Two B-frames between references, closed GOPs (x264's default; ffmpeg's mpeg4 encoder needs `cgop`, which it
    /// takes only without scene-change detection): key frames at 0 and 30 (x264), 0, 28 and 56 (mpeg4).
    static let encoders: [String: [String]] = [
        "h264": ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "30"],
        "mpeg4": ["-c:v", "mpeg4", "-bf", "2", "-g", "30", "-flags", "+cgop", "-sc_threshold", "1000000000", "-q:v", "4"],
        // Open GOPs (ffmpeg's default): key frames at 0, 28 and 58, the second shown at 30 after the two B-pictures
        // decoded after it (shown at 28 and 29), which refer to the GOP before it.
        "mpeg4-open": ["-c:v", "mpeg4", "-bf", "2", "-g", "30", "-q:v", "4"],
    ]

    /// 60 frames at 30 fps (time base 1/30: frame n is at n), 320×240.
    static func file(_ codec: String) -> String {
        Media.make("lost-bframes-\(codec).avi", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                 "-pix_fmt", "yuv420p"] + encoders[codec]!)
    }

    /// Ranges in frames: all of it; from the second key frame (`key`, its decode time) to inside its GOP; from
    /// inside the first GOP to inside the second; starting and ending just before, at and just after the key frame.
    static func ranges(key: Int64) -> [(start: Int64, end: Int64?)] {
        [(0, nil), (key, key + 15), (10, 40), (key - 2, key + 3), (key - 1, key + 1), (key + 1, key + 4), (key + 2, nil)]
    }

    static func range(_ start: Int64, _ end: Int64?) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(value: start, timescale: 30),
                       duration: end.map { MediaTime(value: $0 - start, timescale: 30) } ?? .positiveInfinity)
    }

    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    /// Every range delivers ffmpeg's frames of that range (framemd5, display order), and none is counted lost — in
    /// OutputFinished or in Status.
    @Test(arguments: ["h264", "mpeg4"]) func bFramesLoseNothing(_ codec: String) throws {
        let file = Self.file(codec)
        let packets = try Probe.packets(file, "v:0")
        try #require(packets.count == 60 && packets.contains { $0.pts == nil && !$0.keyframe },
                     "\(codec): \(packets.count) packets; B-frames give delta frames no pts in ffprobe")
        let key = try #require(packets.filter(\.keyframe).dropFirst().first?.dts, "\(codec): one key frame")
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count == 60, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        for (start, end) in Self.ranges(key: key) {
            let read = try LostSamplesTests.read(daemon, file, .video, Self.y420, range: Self.range(start, end))
            let wanted = oracle[Int(start)..<Int(end ?? 60)]
            let what = "\(codec) frames \(start)..<\(end ?? 60)"
            #expect(read.samples.count == wanted.count, "\(what): \(read.samples.count) frames, ffmpeg \(wanted.count)")
            #expect(read.samples.map { md5Hex($0.packedBytes()) } == wanted.map(\.md5), "\(what): frames differ from ffmpeg's")
            #expect(read.lost == 0 && read.status.samplesLost == 0, "\(what): lost \(read.lost), Status \(read.status.samplesLost)")
        }
    }

    /// Open GOPs: every range delivers exactly ffmpeg's frames at their times (the n-th shown at the n-th decode
    /// time), the whole file too — also a range starting after the second key frame's decode time, which the seek
    /// decodes from the key frame before it, so that its leading B-pictures are decoded with their references
    /// (PROTOCOL.md §7.2).
    @Test func openGOPRangesAreExact() throws {
        let file = Self.file("mpeg4-open")
        let packets = try Probe.packets(file, "v:0")
        let keys = packets.filter(\.keyframe).compactMap(\.dts)
        try #require(packets.count == 60 && keys.prefix(2) == [0, 28], "\(packets.count) packets, key frames at \(keys)")
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count == 60, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        for (start, end) in Self.ranges(key: 28) {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let read = try AVIOpenGOPTests.read(asset, AVIOpenGOPTests.range(start, end ?? 60))
            AVIOpenGOPTests.expectExact(read, Int(start)..<Int(end ?? 60), oracle, "frames \(start)..<\(end ?? 60)")
        }
    }

    /// The H.264 file with its second key frame's slice (the IDR NAL unit after its header byte) overwritten with
    /// random bytes.
    static func damaged() throws -> String {
        let whole = Self.file("h264")
        let keyframes = try Probe.packets(whole, "v:0").filter(\.keyframe)
        try #require(keyframes.count == 2, "keyframes: \(keyframes.count)")
        var bytes = try #require(FileManager.default.contents(atPath: whole))
        let position = Int(try #require(keyframes[1].position))  // the chunk's data, after its 8-byte header
        let end = position + keyframes[1].size
        let idr = try #require((position..<end - 4).first { i in
            bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 && bytes[i + 3] & 0x1F == 5
        }, "no IDR slice in the second key frame")
        var random = SplitMix64(seed: 11)
        for i in idr + 4..<end { bytes[i] = UInt8.random(in: 0...255, using: &random) }
        let damaged = Media.dir + "/lost-bframes-damaged.avi"
        try bytes.write(to: URL(fileURLWithPath: damaged))
        return damaged
    }

    /// The damaged AVI with B-frames: a whole read delivers as many frames as ffmpeg — the 29 before the damaged key
    /// frame byte for byte (the pictures libav conceals after it depend on the decoder's threads: ffmpeg's own
    /// differ between `-threads 1` and its default) — and counts the rest lost; a range that starts at the damaged
    /// key frame counts what it could not deliver (delivered + lost = its 15 frames).
    @Test func aDamagedAVICountsWhatItLost() throws {
        let file = try Self.damaged()
        let daemon = try Daemon(allowedWarnings: ["avdec_h264", "libav"])
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count < 60, "ffmpeg decodes every picture of the damaged file: nothing is tested")
        let whole = try LostSamplesTests.read(daemon, file, .video, Self.y420)
        #expect(whole.samples.count == oracle.count, "\(whole.samples.count) frames, ffmpeg \(oracle.count)")
        #expect(whole.samples.prefix(29).map { md5Hex($0.packedBytes()) } == oracle.prefix(29).map(\.md5),
                "the frames before the damage differ from ffmpeg's")
        #expect(whole.lost == UInt64(60 - oracle.count) && whole.status.samplesLost == whole.lost,
                "lost \(whole.lost), Status \(whole.status.samplesLost), ffmpeg decoded \(oracle.count) of 60")
        let part = try LostSamplesTests.read(daemon, file, .video, Self.y420, range: Self.range(30, 45))
        #expect(part.lost > 0 && part.samples.count + Int(part.lost) == 15 && part.status.samplesLost == part.lost,
                "frames 30..<45: \(part.samples.count) delivered, lost \(part.lost), Status \(part.status.samplesLost)")
        print("damaged AVI: ffmpeg \(oracle.count) frames, trackd \(whole.samples.count), lost \(whole.lost); "
              + "frames 30..<45: \(part.samples.count), lost \(part.lost)")
    }
}
