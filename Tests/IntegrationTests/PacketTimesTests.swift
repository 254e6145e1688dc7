import Foundation
import TestSupport
import Testing
import TrackClient

/// Passthrough samples carry ffprobe's packet times: every packet `ffprobe -show_packets` lists, with its PTS, DTS
/// and duration equal as rationals to ffprobe's integers in the stream's time_base, and its size — on files ffmpeg
/// makes at test time. Matroska states neither decode times nor (ffmpeg's muxer) audio durations: those are
/// libavformat's rules (MatroskaPacketTimes).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct PacketTimesTests {
    static let sine44 = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2"]
    /// (file, ffprobe's stream, the track's type).
    static let files: [String: (file: String, stream: String, type: MediaType)] = [
        // 2 s at 44.1 kHz in 4608-frame blocks: the last frame holds 648 (flacparse says 4608).
        "flac": (Media.make("times.flac", sine44 + ["-c:a", "flac"]), "a:0", .audio),
        // Matroska as ffmpeg muxes it: no BlockDuration, a DefaultDuration for video only (33⅓ ms: 33 ticks).
        "h264-mkv": (mkv, "v:0", .video),  // B-frames: the first two packets have no DTS in ffprobe either
        "aac-mkv": (mkv, "a:0", .audio),  // 1024 frames at 48 kHz: 21 ms each (⌊21.33⌋)
        "flac-mka": (Media.make("times-flac.mka", sine44 + ["-c:a", "flac"]), "a:0", .audio),  // the last: 14 ms
        // Opus in MP4: an edit from the pre-skip (312) to the end, inside the last packet (OpusTrimsTests: trims).
        "opus-mp4": (OpusTrimsTests.mp4Files["ffmpeg-mp4"]!, "a:0", .audio),
        // GStreamer's mp4mux: no edit; the first stts entry 648 (960 − pre-skip), the last 312.
        "opus-mp4-gst": (OpusTrimsTests.mp4Files["gst-mp4"]!, "a:0", .audio),
    ]
    static let mkv = Media.make("times-h264-aac.mkv", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000:duration=2", "-c:v", "libx264", "-preset", "veryfast", "-bf", "2",
        "-g", "15", "-pix_fmt", "yuv420p", "-c:a", "aac"])

    /// `time` is `value` ticks of `base` exactly (nil: `time` is invalid).
    static func same(_ time: MediaTime, _ value: Int64?, _ base: (num: Int64, den: Int64)) -> Bool {
        guard let value else { return !time.isValid }
        return time.isNumeric && time.value * base.den == value * base.num * Int64(time.timescale)
    }

    @Test(arguments: files.keys.sorted()) func passthroughTimesAreFFprobes(_ name: String) throws {
        let (file, stream, type) = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, stream)
        let base = try Probe.timeBase(file, stream)
        let stored = try LostSamplesTests.read(daemon, file, type, nil).samples
        try #require(stored.count == packets.count, "\(name): \(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            #expect(Self.same(s.presentationTimeStamp, p.pts, base), "\(name) \(i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1)")
            #expect(Self.same(s.decodeTimeStamp, p.dts, base), "\(name) \(i): DTS \(s.decodeTimeStamp), ffprobe \(p.dts ?? -1)")
            #expect(Self.same(s.duration, p.duration, base), "\(name) \(i): duration \(s.duration), ffprobe \(p.duration ?? -1)")
            #expect(s.packedBytes().count == p.size, "\(name) \(i): \(s.packedBytes().count) bytes, ffprobe \(p.size)")
        }
    }
}

extension PacketTimesTests {
    /// Opus in WebM as ffmpeg muxes it: every packet's duration is ffprobe's (20 ms from the TOC, the last one its
    /// BlockDuration), and its PTS: the block's time less the CodecDelay in whole ticks (OpusTrimsTests: the trims).
    @Test func opusTimesAreFFprobes() throws {
        let file = Media.make("times-opus.webm", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
                                                  "-c:a", "libopus"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count, "\(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            #expect(Self.same(s.duration, p.duration, base), "\(i): duration \(s.duration), ffprobe \(p.duration ?? -1)")
            #expect(Self.same(s.presentationTimeStamp, p.pts, base), "\(i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1)")
            #expect(Self.same(s.decodeTimeStamp, s.presentationTimeStamp.value, (1, Int64(s.presentationTimeStamp.timescale))))
        }
    }
}
