import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded video of an elementary stream (ffmpeg's `-f h264`, `-f hevc`, `-f m4v`, `-f mpeg2video`, two B-frames; no
/// stored sample carries a time) is read from the stream's beginning, where the decoder times frame n at n frame
/// durations of ⌊10⁹ × den / num⌋ ns for the rate ffprobe states (PROTOCOL.md §7.2: the parser's, or for MPEG-4 Part
/// 2 its VOL's and VOPs', at 30 and at 30000/1001 fps; ffprobe's frames, where it times them, are one frame apart in
/// its time_base), and cut by the frame index those durations make (§12.7): each range — from inside a frame, from a frame's start, to the end, past
/// the end, from 0, after the end — is the frames ffmpeg decodes (framemd5) whose display interval on that timeline
/// meets the range, each lasting one frame, the same as a ResetOutput range; the track lasts its frames at that rate.
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
        "m4v-ntsc": Media.make("range-ntsc.m4v", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30000/1001:duration=2",
                                                  "-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"]),
    ]
    static func s(_ value: Int64, _ timescale: Int32) -> MediaTime { MediaTime(value: value, timescale: timescale) }
    /// From 0.51 s (inside frame 15) for 0.05 s; from frame 15's start (15 frames of 33333333 ns) for 0.5 s; from
    /// 0.5 s to the end; from 1.9 s for 1 s (past the end); from 0 for 0.5 s; from 2.5 s (after the end) for 0.1 s.
    static let ranges = [MediaTimeRange(start: s(51, 100), duration: s(5, 100)),
                         MediaTimeRange(start: MediaTime(value: 15 * 33_333_333, timescale: 1_000_000_000), duration: s(1, 2)),
                         MediaTimeRange(start: s(1, 2), duration: .positiveInfinity),
                         MediaTimeRange(start: s(19, 10), duration: s(1, 1)),
                         MediaTimeRange(start: .zero, duration: s(1, 2)),
                         MediaTimeRange(start: s(5, 2), duration: s(1, 10))]

    static func message(_ track: AssetTrack) -> String {
        "the stored samples of track \(track.trackID) carry no presentation times, so a decoded time range cannot be placed in them; read the track whole, from 0 to its end"
    }

    /// ffmpeg's frames of `file`: their md5s (framemd5, yuv420p), and the duration of one in nanoseconds as the track
    /// times it (⌊10⁹ × den / num⌋ for ffprobe's r_frame_rate num/den), checked against ffprobe's frame times.
    static func oracle(_ file: String) throws -> (md5s: [String], frame: Int64) {
        let md5s = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate,time_base",
                                    "-of", "csv=p=0", file])
        let f = r.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
            .map { $0.split(separator: "/").compactMap { Int64($0) } }
        try #require(f.count == 2 && f.allSatisfy { $0.count == 2 && $0[0] > 0 && $0[1] > 0 }, "ffprobe: \(r.text)")
        let (rate, timeBase) = ((f[0][0], f[0][1]), (f[1][0], f[1][1]))  // ffprobe prints r_frame_rate first
        let frames = try Probe.frames(file, "v:0")
        try #require(frames.count == 60 && md5s.count == 60, "ffprobe: \(frames.count) frames, ffmpeg: \(md5s.count)")
        // Where ffprobe times the frames, frame n is n frames (n × den / num s) after the first in its time_base (m4v
        // from 0; mpeg2video from one frame, its demuxer's delay — trackd's frames start at 0, §7.2).
        for (n, frame) in frames.enumerated() {
            guard let pts = frame.pts, let first = frames[0].pts else { continue }
            #expect((pts - first) * timeBase.0 * rate.0 == Int64(n) * rate.1 * timeBase.1, "\(file): ffprobe frame \(n) at \(pts)")
        }
        return (md5s, 1_000_000_000 * rate.1 / rate.0)
    }

    /// The frames `range` shows (§12.7) of a track of `count` frames, frame n displayed from n to n + 1 frames
    /// (`frame` ns; the last one until the track's end).
    static func shown(_ range: MediaTimeRange, count: Int, frame: Int64) throws -> [Int] {
        let start = try #require(range.start.nanoseconds)
        let end = range.duration.isPositiveInfinity ? Int64.max : start + (try #require(range.duration.nanoseconds))
        return (0..<count).filter { n in Int64(n) * frame < end && Int64(n + 1) * frame > start }
    }

    /// What `output`, started or reset to `range`, delivers, checked against ffmpeg's frames `oracle` that it shows.
    static func readRange(_ output: AssetReaderTrackOutput, _ range: MediaTimeRange, _ oracle: (md5s: [String], frame: Int64),
                          _ what: String) throws {
        var frames: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { frames.append(s) }
        let ns = { (value: Int64) in MediaTime(value: value, timescale: 1_000_000_000) }
        let expected = try shown(range, count: oracle.md5s.count, frame: oracle.frame)
        #expect(frames.map { md5Hex($0.packedBytes()) } == expected.map { oracle.md5s[$0] }, "\(what): \(frames.count) frames")
        #expect(frames.map(\.presentationTimeStamp) == expected.map { ns(Int64($0) * oracle.frame) }, "\(what) times")
        #expect(frames.allSatisfy { $0.duration == ns(oracle.frame) }, "\(what) durations")
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
    static func open(_ kind: String) throws -> (oracle: (md5s: [String], frame: Int64), daemon: Daemon, asset: Asset,
                                                track: AssetTrack) {
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

    @Test(arguments: ["h264", "hevc", "m4v", "m4v-ntsc", "m2v"]) func decodedRangesAreFfmpegsFrames(kind: String) throws {
        let (oracle, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let ns = { (value: Int64) in MediaTime(value: value, timescale: 1_000_000_000) }
        #expect(track.duration == ns(Int64(oracle.md5s.count) * oracle.frame), "\(kind) duration \(track.duration)")
        #expect(track.minFrameDuration == ns(oracle.frame), "\(kind) minFrameDuration \(track.minFrameDuration)")
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

    /// GenerateImage reads the stream from its beginning and picks the frame by the same index (§8): in the middle
    /// of frame k, on its start, in the last frame and past the end, the PNG is nearest ffmpeg's frame k (rgb24, mean
    /// abs difference < 3, AVIOpenGOPTests.expectNearest) and actualTime is k frames exactly.
    @Test(arguments: ["h264", "hevc", "m4v", "m4v-ntsc", "m2v"]) func imagesAreFfmpegsFrames(kind: String) throws {
        let (oracle, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let file = try #require(Self.files[kind])
        let rgb = try Oracle.rawFrames(file, ["-vsync", "passthrough", "-pix_fmt", "rgb24"], frameSize: 160 * 90 * 3)
        try #require(rgb.count == 60, "ffmpeg decodes \(rgb.count) frames")
        let dir = Env.tempDir("elementary-image")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let frame = oracle.frame
        // (time in ns, the frame shown then): mid-frame, on a frame's start, the last frame, past the end.
        let times: [(Int64, Int)] = [(0, 0), (frame / 2, 0), (frame + frame / 2, 1), (15 * frame + frame / 2, 15),
                                     (16 * frame, 16), (31 * frame + 1, 31), (45 * frame, 45), (59 * frame + frame / 2, 59),
                                     (60 * frame - 1, 59), (2_500_000_000, 59)]
        let ns = { (value: Int64) in MediaTime(value: value, timescale: 1_000_000_000) }
        for (time, k) in times {
            try AVIOpenGOPTests.expectImage(asset, track, at: ns(time), frame: k, shownAt: ns(Int64(k) * frame), rgb,
                                            dir: dir, width: 160, height: 90, "\(kind) image at \(time) ns")
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
