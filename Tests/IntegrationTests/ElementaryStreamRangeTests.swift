import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded video of an elementary stream (ffmpeg's `-f h264`, `-f hevc`, `-f m4v`, `-f mpeg2video`, two B-frames; no
/// stored sample carries a time) is read from the stream's beginning and timed on the timescale of the rate ffprobe
/// states, `r_frame_rate` num/den (PROTOCOL.md §7.1, §7.2: the parser's, or for MPEG-4 Part 2 its VOL's and VOPs', at
/// 30, 30000/1001 and 25 fps; ffprobe's frames, where it times them, are one frame apart in its time_base): frame n
/// at `(n × den, num)`, each lasting `(den, num)`. A range's start and end (start + duration) are compared with the
/// frames' times exactly unless they are a frame's time written in their own timescale (§7.1), and the range is cut
/// by §12.7's rule: each range — from inside a frame, from just before a frame's start, [0.5 s, 1 s), to the end,
/// past the end, from 0, after the end — is the frames ffmpeg decodes (framemd5) whose display interval meets it (at
/// 30 fps [0.5 s, 1 s) is frames 15 to 29, ending before frame 30 at 1 s, where ffmpeg shows it), the same as a
/// ResetOutput range; the track lasts its frames at that rate.
/// An `-f m4v` stream whose VOL fixes no rate and whose VOPs are not evenly spaced (a frame dropped) has no rate to
/// time its frames by, so no index: it is read whole or not at all: every other range fails with −11838 naming the
/// track, the same on every attempt, before any frame, in CreateOutput and as a ResetOutput range, where a reset to
/// the whole track reads every frame again.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ElementaryStreamRangeTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2"]
    static let files: [String: String] = [
        "h264": Media.make("range.h264", source + ["-c:v", "libx264", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p", "-f", "h264"]),
        "hevc": Media.make("range.hevc", source + ["-c:v", "libx265", "-x265-params", "log-level=error:bframes=2:keyint=12",
                                                   "-pix_fmt", "yuv420p", "-f", "hevc"]),
        "m4v": Media.make("range.m4v", source + ["-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"]),
        "m2v": Media.make("range.m2v", source + ["-c:v", "mpeg2video", "-bf", "2", "-g", "12", "-f", "mpeg2video"]),
        // Frame 5 dropped, the others keep their times (VOPs not evenly spaced).
        "m4v-gap": Media.make("range-gap.m4v", source + ["-vf", "select='not(eq(n\\,5))'", "-fps_mode", "vfr", "-c:v", "mpeg4",
                                                         "-bf", "2", "-g", "12", "-f", "m4v"]),
        // 30000/1001 fps: VOPs 1001 ticks of 30000 apart, no fixed_vop_rate (the decoder is told the rate).
        "m4v-ntsc": Media.make("range-ntsc.m4v", ntsc + ["-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"]),
        "h264-ntsc": Media.make("range-ntsc.h264", ntsc + ["-c:v", "libx264", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p",
                                                           "-f", "h264"]),
        // 25 fps: 50 frames.
        "m2v-25": Media.make("range-25.m2v", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2", "-c:v", "mpeg2video",
                                              "-bf", "2", "-g", "12", "-f", "mpeg2video"]),
    ]
    static let ntsc = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30000/1001:duration=2"]
    static let kinds = ["h264", "hevc", "m4v", "m4v-ntsc", "h264-ntsc", "m2v", "m2v-25"]
    static func s(_ value: Int64, _ timescale: Int32) -> MediaTime { MediaTime(value: value, timescale: timescale) }
    /// From 0.51 s (inside frame 15) for 0.05 s; from 0.52 s (inside frame 15 at 30 fps, where the nearest frame
    /// start is 16's) for 0.05 s; from 499 999 995 ns (GStreamer's time of frame 15 of a 30 fps stream, 15 of the
    /// parser's 33 333 333 ns frames: 5 ns before 0.5 s, so inside frame 14) for 0.5 s; [0.5 s, 1 s); from 0.5 s to
    /// the end; from 1.9 s for 1 s (past the end); from 0 for 0.5 s; from 2.5 s (after the end) for 0.1 s.
    static let ranges = [MediaTimeRange(start: s(51, 100), duration: s(5, 100)),
                         MediaTimeRange(start: .nanoseconds(520_000_000), duration: s(5, 100)),
                         MediaTimeRange(start: MediaTime(value: 15 * 33_333_333, timescale: 1_000_000_000), duration: s(1, 2)),
                         MediaTimeRange(start: s(1, 2), duration: s(1, 2)),
                         MediaTimeRange(start: s(1, 2), duration: .positiveInfinity),
                         MediaTimeRange(start: s(19, 10), duration: s(1, 1)),
                         MediaTimeRange(start: .zero, duration: s(1, 2)),
                         MediaTimeRange(start: s(5, 2), duration: s(1, 10))]

    static func message(_ track: AssetTrack) -> String {
        "the stored samples of track \(track.trackID) carry no presentation times, so a decoded time range cannot be placed in them; read the track whole, from 0 to its end"
    }

    /// ffmpeg's frames of `file` and its rate.
    typealias Frames = (md5s: [String], rate: (num: Int64, den: Int64))

    /// ffmpeg's frames of `file`: their md5s (framemd5, yuv420p), and ffprobe's r_frame_rate num/den, by which the
    /// track times them, checked against ffprobe's frame times.
    static func oracle(_ file: String) throws -> Frames {
        let md5s = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate,time_base",
                                    "-of", "csv=p=0", file])
        let f = r.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
            .map { $0.split(separator: "/").compactMap { Int64($0) } }
        try #require(f.count == 2 && f.allSatisfy { $0.count == 2 && $0[0] > 0 && $0[1] > 0 }, "ffprobe: \(r.text)")
        let (rate, timeBase) = ((f[0][0], f[0][1]), (f[1][0], f[1][1]))  // ffprobe prints r_frame_rate first
        let frames = try Probe.frames(file, "v:0")
        try #require(frames.count == md5s.count && md5s.count >= 50, "ffprobe: \(frames.count) frames, ffmpeg: \(md5s.count)")
        // Where ffprobe times the frames, frame n is n frames (n × den / num s) after the first in its time_base (m4v
        // from 0; mpeg2video from one frame, its demuxer's delay — trackd's frames start at 0, §7.2).
        for (n, frame) in frames.enumerated() {
            guard let pts = frame.pts, let first = frames[0].pts else { continue }
            #expect((pts - first) * timeBase.0 * rate.0 == Int64(n) * rate.1 * timeBase.1, "\(file): ffprobe frame \(n) at \(pts)")
        }
        return (md5s, rate)
    }

    /// `t` (≥ 0) in frames of `rate`, a fraction num / den (§7.1): frame n's start when `t` is that written in its own
    /// timescale (n × den / num s × t.timescale, rounded, either way at a half, is t.value; n the nearer of the two
    /// frames around t, neither halfway between them), else t's exact position.
    static func frames(_ t: MediaTime, _ rate: (num: Int64, den: Int64)) -> (num: Int64, den: Int64) {
        let (num, den) = (t.value * rate.num, Int64(t.timescale) * rate.den)
        let (k, r) = (num / den, num % den)
        guard 2 * r != den else { return (num, den) }
        let n = 2 * r < den ? k : k + 1
        return 2 * abs(n * den - num) <= rate.num ? (n, 1) : (num, den)
    }

    /// The frames `range` shows (§12.7) of a track of `count` frames at `rate`: frame n displayed from n to n + 1
    /// frames (the last one until the track's end), the range from its start to start + duration (added exactly, in
    /// the least common multiple of their timescales), each placed by `frames`.
    static func shown(_ range: MediaTimeRange, count: Int, rate: (num: Int64, den: Int64)) -> [Int] {
        let start = frames(range.start, rate)
        guard !range.duration.isPositiveInfinity else { return (0..<count).filter { n in Int64(n + 1) * start.den > start.num } }
        let (a, b) = (Int64(range.start.timescale), Int64(range.duration.timescale))
        var g = (a, b)
        while g.1 != 0 { g = (g.1, g.0 % g.1) }
        let scale = a / g.0 * b
        let endTime = MediaTime(value: range.start.value * (scale / a) + range.duration.value * (scale / b), timescale: Int32(scale))
        let end = frames(endTime, rate)
        return (0..<count).filter { n in Int64(n) * end.den < end.num && Int64(n + 1) * start.den > start.num }
    }

    /// Frame n of `rate`'s timescale: `(n × den, num)`.
    static func at(_ n: Int64, _ rate: (num: Int64, den: Int64)) -> MediaTime {
        MediaTime(value: n * rate.den, timescale: Int32(rate.num))
    }

    /// What `output`, started or reset to `range`, delivers, checked against ffmpeg's frames `oracle` that it shows.
    static func readRange(_ output: AssetReaderTrackOutput, _ range: MediaTimeRange, _ oracle: Frames, _ what: String) throws {
        var frames: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { frames.append(s) }
        let expected = shown(range, count: oracle.md5s.count, rate: oracle.rate)
        #expect(frames.map { md5Hex($0.packedBytes()) } == expected.map { oracle.md5s[$0] }, "\(what): \(frames.count) frames")
        #expect(frames.map(\.presentationTimeStamp) == expected.map { at(Int64($0), oracle.rate) }, "\(what) times")
        #expect(frames.allSatisfy { $0.duration == at(1, oracle.rate) }, "\(what) durations")
    }

    /// A random-access output of `track` decoded: the whole track, then each of `ranges` by ResetOutput.
    static func randomAccess(_ asset: Asset, _ track: AssetTrack) throws -> (AssetReader, AssetReaderTrackOutput) {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: TimescaleTests.y420)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        return (reader, output)
    }

    /// ffmpeg's frames of the `kind` file (oracle), and its video track opened through a new daemon.
    static func open(_ kind: String) throws -> (oracle: Frames, daemon: Daemon, asset: Asset, track: AssetTrack) {
        let file = try #require(Self.files[kind])
        let oracle = try Self.oracle(file)
        let daemon = try Daemon()
        do {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            return (oracle, daemon, asset, try #require(asset.tracks(withMediaType: .video).first))
        } catch {
            daemon.stop()
            throw error
        }
    }

    @Test(arguments: kinds) func decodedRangesAreFfmpegsFrames(kind: String) throws {
        let (oracle, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let count = Int64(oracle.md5s.count)
        #expect(track.naturalTimeScale == Int32(oracle.rate.num), "\(kind) timescale \(track.naturalTimeScale)")
        #expect(track.timeRangeStart == Self.at(0, oracle.rate) && track.duration == Self.at(count, oracle.rate),
                "\(kind) time range \(track.timeRangeStart) \(track.duration)")
        #expect(asset.duration == .nanoseconds(count * oracle.rate.den * 1_000_000_000 / oracle.rate.num), "\(kind) asset duration")
        #expect(track.minFrameDuration == Self.at(1, oracle.rate), "\(kind) minFrameDuration \(track.minFrameDuration)")
        if oracle.rate == (30, 1) {  // 0.52 s is inside frame 15; 5 ns before 0.5 s inside 14; [0.5 s, 1 s) ends before 30
            #expect(Self.shown(Self.ranges[1], count: 60, rate: oracle.rate) == [15, 16, 17])
            #expect(Self.shown(Self.ranges[2], count: 60, rate: oracle.rate) == Array(14..<30))
            #expect(Self.shown(Self.ranges[3], count: 60, rate: oracle.rate) == Array(15..<30))
        }
        for range in Self.ranges {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: TimescaleTests.y420)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            try reader.setTimeRange(range)
            #expect(try reader.startReading(), "\(kind) \(range): \(String(describing: reader.error))")
            try Self.readRange(output, range, oracle, "\(kind) \(range)")
            #expect(reader.status == .completed, "\(kind) \(range): \(String(describing: reader.error))")
        }
        let (reader, output) = try Self.randomAccess(asset, track)
        try Self.readRange(output, .everything, oracle, "\(kind) whole")
        for range in Self.ranges.reversed() + [.everything] {
            try output.reset(forReadingTimeRanges: [range])
            try Self.readRange(output, range, oracle, "\(kind) reset to \(range)")
        }
        #expect(reader.status == .reading, "\(kind): \(String(describing: reader.error))")
    }

    /// GenerateImage reads the stream from its beginning and picks the frame by the same index (§8), the frame shown
    /// at the time (§7.1): at 0.4 and 0.6 of a frame, before and after the middle of frame 15, on a frame's start, in
    /// the last frame and past the end, the PNG is nearest ffmpeg's frame (rgb24, mean abs difference < 3,
    /// AVIOpenGOPTests.expectNearest) and actualTime is that frame's `(k × den, num)`.
    @Test(arguments: kinds) func imagesAreFfmpegsFrames(kind: String) throws {
        let (oracle, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let file = try #require(Self.files[kind])
        let rgb = try Oracle.rawFrames(file, ["-vsync", "passthrough", "-pix_fmt", "rgb24"], frameSize: 160 * 90 * 3)
        try #require(rgb.count == oracle.md5s.count, "ffmpeg decodes \(rgb.count) frames")
        let dir = Env.tempDir("elementary-image")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (count, rate) = (Int64(rgb.count), oracle.rate)
        // (time, the frame shown then): 0.4 and 0.6 of a frame, before and after the middle of frame 15, frame 16's
        // start in nanoseconds (rounded), GStreamer's time of frame 16 (16 × ⌊10⁹ × den / num⌋: inside frame 15 unless
        // that is exact, as at 25 fps), 0.52 s, the last frame, its end, past the end.
        let t = { (n: Int64, d: Int64) in MediaTime(value: n * rate.den, timescale: Int32(d * rate.num)) }  // n/d frames
        let gstreamer16 = MediaTime.nanoseconds(16 * (1_000_000_000 * rate.den / rate.num))
        let times: [(MediaTime, Int64)] = [(.zero, 0), (t(2, 5), 0), (t(3, 5), 0), (t(77, 5), 15), (t(78, 5), 15),
                                           (.nanoseconds((16_000_000_000 * rate.den + rate.num / 2) / rate.num), 16),
                                           (gstreamer16, rate == (25, 1) ? 16 : 15),
                                           (.nanoseconds(520_000_000), rate == (25, 1) ? 13 : 15), (t(31, 1), 31),
                                           (t(count - 1, 1), count - 1), (t(count, 1), count - 1),
                                           (.nanoseconds(2_500_000_000), count - 1)]
        for (time, k) in times {
            try AVIOpenGOPTests.expectImage(asset, track, at: time, frame: Int(k), shownAt: Self.at(k, rate), rgb,
                                            dir: dir, width: 160, height: 90, "\(kind) image at \(time)")
        }
    }

    /// MPEG-4 Part 2 (`-f m4v`) with a frame dropped: no fixed_vop_rate, VOPs not evenly spaced, so no rate, no index.
    @Test func decodedRangesOfAStreamWithoutAnIndexAreRefused() throws {
        let (kind, count) = ("m4v-gap", 59)
        let file = try #require(Self.files[kind])
        let md5s = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        try #require(md5s.count == count, "ffmpeg: \(md5s.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(!track.duration.isNumeric, "\(kind): duration \(track.duration)")
        for range in Self.ranges {
            let first = try #require(try ProgramStreamRefusalTests.refused(asset, track, range: range), "\(kind) \(range)")
            #expect(first.code == -11838 && first.message == Self.message(track), "\(kind) \(range): \(first)")
            let second = try ProgramStreamRefusalTests.refused(asset, track, range: range)
            #expect(second == first, "\(kind) \(range), the second attempt: \(String(describing: second))")
        }
        // A random-access output: the whole track, again after a ResetOutput to the whole track, then a ResetOutput
        // range, which fails the output with the refusal's error instead of delivering frames at guessed times.
        let (reader, output) = try Self.randomAccess(asset, track)
        for pass in ["whole", "whole again"] {
            if pass != "whole" { try output.reset(forReadingTimeRanges: [.everything]) }
            var frames: [String] = []
            while let s = try output.copyNextSampleBuffer() { frames.append(md5Hex(s.packedBytes())) }
            #expect(frames == md5s, "\(kind) \(pass): \(frames.count) frames")
        }
        #expect(reader.status == .reading, "\(kind): \(String(describing: reader.error))")
        try output.reset(forReadingTimeRanges: [Self.ranges[0]])
        var after = 0
        while try output.copyNextSampleBuffer() != nil { after += 1 }
        #expect(after == 0 && reader.status == .failed, "\(kind): \(after) frames, \(reader.status)")
        #expect(reader.error?.code == -11838 && reader.error?.message == Self.message(track), "\(kind): \(String(describing: reader.error))")
    }
}
