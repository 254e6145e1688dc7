import Foundation
import TestSupport
import Testing
import TrackClient

/// MP4 samples GStreamer 1.22's qtdemux does not push are read from the sample tables (StoredTrack,
/// StoredSampleFeeder): an AAC track's last packet, which its edit ends inside, and the samples a file cut short
/// still holds whole. Checked against ffmpeg/ffprobe on files ffmpeg and GStreamer make at test time.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct StoredSamplesTests {
    static let sine = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=5"]
    /// AAC in MP4: ffmpeg's (an edit that skips 1024 frames of priming and ends inside the last packet), and
    /// GStreamer's mp4mux with two encoders (an edit in a movie timescale of 1800; no priming).
    static let aac: [String: String] = [
        "ffmpeg 2 s": Media.clip,
        "ffmpeg 5 s": Media.make("stored-aac-5s.m4a", sine + ["-c:a", "aac"]),
        "voaacenc": Media.makeWithGStreamer("stored-voaacenc.m4a", [
            "audiotestsrc", "num-buffers=100", "samplesperbuffer=960", "!", "audio/x-raw,rate=48000,channels=2", "!",
            "voaacenc", "!", "aacparse", "!", "mp4mux"]),
        "avenc_aac": Media.makeWithGStreamer("stored-avenc-aac.m4a", [
            "audiotestsrc", "num-buffers=100", "samplesperbuffer=960", "!", "audio/x-raw,rate=48000,channels=2", "!",
            "avenc_aac", "!", "aacparse", "!", "mp4mux"]),
    ]
    /// 4 s of H.264 (B-frames) and AAC, faststart: cut short by the truncation tests.
    static let fourSeconds = Media.make("stored-4s-faststart.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=4", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000:duration=4", "-c:v", "libx264", "-preset", "veryfast", "-bf", "2",
        "-g", "15", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-movflags", "+faststart"])
    static let float: [String: SettingValue] = [
        SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true), SettingsKey.bitDepth: .int(32),
    ]

    static func samples(_ daemon: Daemon, _ file: String, _ type: MediaType,
                        _ settings: [String: SettingValue]?) throws -> [SampleBuffer] {
        try LostSamplesTests.read(daemon, file, type, settings).samples
    }

    /// Decoded AAC from MP4 ends where the track's edit does: as many frames as ffprobe's `duration_ts` (96 000 for
    /// ffmpeg's 2 s track, 240 000 for its 5 s one, where the last packet was missing: 95 232 and 239 616), and
    /// every one of them is ffmpeg's decode, bit for bit (32-bit float, the decoder's own format). ffmpeg itself
    /// decodes the last packet whole (96 256 frames): it does not apply the edit's end.
    @Test(arguments: aac.keys.sorted()) func decodedAACEndsWithTheEdit(_ name: String) throws {
        let file = try #require(Self.aac[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=duration_ts,channels",
                                        "-of", "csv=p=0", file])
        let fields = probe.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        try #require(fields.count == 2, "ffprobe: \(probe.text)")
        let (channels, duration) = (fields[0], fields[1])
        let decoded = try Self.samples(daemon, file, .audio, Self.float)
        let frames = decoded.reduce(0) { $0 + $1.numberOfSamples }
        #expect(frames == duration, "\(name): \(frames) frames, the edit (ffprobe's duration_ts) has \(duration)")
        let ours = decoded.flatMap { $0.packedBytes() }
        let theirs = try run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0", "-f", "f32le", "-"])
        #expect(theirs.stdout.count >= duration * channels * 4, "\(name): ffmpeg decoded \(theirs.stdout.count) bytes")
        #expect(ours == [UInt8](theirs.stdout.prefix(ours.count)), "\(name): the samples are not ffmpeg's")
        for (a, b) in zip(decoded, decoded.dropFirst()) {
            #expect(a.presentationTimeStamp.value + a.duration.value == b.presentationTimeStamp.value, "\(name): a gap")
        }
    }

    /// Passthrough of the same tracks: every packet ffprobe lists, with its PTS, DTS and duration as integers in the
    /// time base (the last one lasting until the edit's end, as ffprobe has it) and its bytes; the last packet's
    /// TrimDurationAtEnd is what lies after the edit's end.
    @Test(arguments: aac.keys.sorted()) func passthroughAACHasEveryPacket(_ name: String) throws {
        let file = try #require(Self.aac[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        try #require(base.num == 1)
        let stored = try Self.samples(daemon, file, .audio, nil)
        try #require(stored.count == packets.count, "\(name): \(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            let time = { (v: Int64?) in v.map { MediaTime(value: $0, timescale: Int32(base.den)) } }
            #expect(s.presentationTimeStamp == time(p.pts) && s.decodeTimeStamp == time(p.dts), "\(name) packet \(i)")
            #expect(s.duration == time(p.duration), "\(name) packet \(i): duration \(s.duration), ffprobe \(p.duration ?? -1)")
            #expect(s.packedBytes().count == p.size, "\(name) packet \(i) size")
        }
        let last = try #require(stored.last)
        let end = try #require(last.attachment(forKey: SampleBuffer.trimDurationAtEndKey))
        #expect(end.value > 0 && last.duration.value + end.value == 1024, "\(name): the last packet's trim \(end)")
    }

    /// A faststart MP4 cut short: decoded, every frame ffmpeg decodes (its framemd5, the same bytes); passthrough,
    /// every sample ffprobe lists that the file holds whole — ffmpeg also lists the one the file ends inside, cut,
    /// which trackd does not deliver (it counts it lost). qtdemux alone stopped one or two samples earlier.
    @Test(arguments: [30, 50, 75]) func truncatedMP4GivesWhatTheFileHolds(_ percent: Int) throws {
        let whole = Self.fourSeconds
        let bytes = try #require(FileManager.default.contents(atPath: whole))
        let file = Media.dir + "/stored-cut-\(percent).mp4"
        try bytes.prefix(bytes.count * percent / 100).write(to: URL(fileURLWithPath: file))
        let daemon = try Daemon()
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        let decoded = try Self.samples(daemon, file, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.count == oracle.count, "\(percent)%: \(decoded.count) frames, ffmpeg \(oracle.count)")
        #expect(decoded.map { md5Hex($0.packedBytes()) } == oracle.map(\.md5), "\(percent)%: frames differ from ffmpeg's")
        for type in [MediaType.video, .audio] {
            // The packet the file ends inside is listed with the bytes it has, ending at the end of the file.
            let packets = try Probe.packets(file, type == .video ? "v:0" : "a:0").filter {
                ($0.position ?? 0) + Int64($0.size) < Int64(bytes.count * percent / 100)
            }
            let stored = try Self.samples(daemon, file, type, nil)
            #expect(stored.count == packets.count, "\(percent)% \(type): \(stored.count) samples, ffprobe \(packets.count) whole")
            for (i, (s, p)) in zip(stored, packets).enumerated() {
                #expect(s.packedBytes().count == p.size, "\(percent)% \(type) sample \(i)")
            }
        }
    }
}
