import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded video of an elementary stream (ffmpeg's `-f h264`, `-f hevc`, `-f m4v`, `-f mpeg2video`, two B-frames; no stored
/// sample carries a time) is read whole or not at all (PROTOCOL.md §12.7, "Untimed samples"): the whole track is
/// every frame ffmpeg decodes (framemd5), frame n at n frame durations of ⌊10⁹ × den / num⌋ ns for the rate ffprobe
/// states (ffprobe's frames, where it times them, are one frame apart in its time_base), each lasting one frame; every
/// other range — from inside a frame, from a frame's start, to the end, past the end, from 0 for a finite duration —
/// fails with −11838 naming the track, the same on every attempt, before any frame, in CreateOutput and as a
/// ResetOutput range, where a reset to the whole track reads every frame again.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ElementaryStreamRangeTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2"]
    static let files: [String: String] = [
        "h264": Media.make("range.h264", source + ["-c:v", "libx264", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p", "-f", "h264"]),
        "hevc": Media.make("range.hevc", source + ["-c:v", "libx265", "-x265-params", "log-level=error:bframes=2:keyint=12",
                                                   "-pix_fmt", "yuv420p", "-f", "hevc"]),
        "m4v": Media.make("range.m4v", source + ["-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"]),
        "m2v": Media.make("range.m2v", source + ["-c:v", "mpeg2video", "-bf", "2", "-g", "12", "-f", "mpeg2video"]),
    ]
    static func s(_ value: Int64, _ timescale: Int32) -> MediaTime { MediaTime(value: value, timescale: timescale) }
    /// From 0.51 s (inside frame 15) for 0.05 s; from 0.5 s (frame 15's start) for 0.5 s; from 0.5 s to the end;
    /// from 1.9 s for 1 s (past the end); from 0 for 0.5 s.
    static let ranges = [MediaTimeRange(start: s(51, 100), duration: s(5, 100)),
                         MediaTimeRange(start: s(1, 2), duration: s(1, 2)),
                         MediaTimeRange(start: s(1, 2), duration: .positiveInfinity),
                         MediaTimeRange(start: s(19, 10), duration: s(1, 1)),
                         MediaTimeRange(start: .zero, duration: s(1, 2))]

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

    /// The whole track decoded by `output`, already started, checked against `oracle`.
    static func readWhole(_ output: AssetReaderTrackOutput, _ oracle: (md5s: [String], frame: Int64), _ what: String) throws {
        var frames: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { frames.append(s) }
        let ns = { (value: Int64) in MediaTime(value: value, timescale: 1_000_000_000) }
        #expect(frames.map { md5Hex($0.packedBytes()) } == oracle.md5s, "\(what): \(frames.count) frames")
        #expect(frames.map(\.presentationTimeStamp) == (0..<Int64(frames.count)).map { ns($0 * oracle.frame) }, "\(what) times")
        #expect(frames.allSatisfy { $0.duration == ns(oracle.frame) }, "\(what) durations")
    }

    @Test(arguments: files.keys.sorted()) func decodedRangesAreTheWholeTrackOrRefused(kind: String) throws {
        let file = try #require(Self.files[kind])
        let packets = try Probe.packets(file, "v:0")
        try #require(packets.count == 60, "\(kind): ffprobe: \(packets.count) packets")
        let oracle = try Self.oracle(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        for range in Self.ranges {
            let first = try #require(try ProgramStreamRefusalTests.refused(asset, track, range: range), "\(kind) \(range)")
            #expect(first.code == -11838 && first.message == Self.message(track), "\(kind) \(range): \(first)")
            let second = try ProgramStreamRefusalTests.refused(asset, track, range: range)
            #expect(second == first, "\(kind) \(range), the second attempt: \(String(describing: second))")
        }
        // A random-access output: the whole track, again after a ResetOutput to the whole track, then a ResetOutput
        // range, which fails the output with the refusal's error instead of delivering frames at guessed times.
        let output = try AssetReaderTrackOutput(track: track, outputSettings: TimescaleTests.y420)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        try Self.readWhole(output, oracle, "\(kind) whole")
        try output.reset(forReadingTimeRanges: [.everything])
        try Self.readWhole(output, oracle, "\(kind) whole again")
        #expect(reader.status == .reading, "\(kind): \(String(describing: reader.error))")
        try output.reset(forReadingTimeRanges: [Self.ranges[0]])
        var after = 0
        while try output.copyNextSampleBuffer() != nil { after += 1 }
        #expect(after == 0 && reader.status == .failed, "\(kind): \(after) frames, \(reader.status)")
        #expect(reader.error?.code == -11838 && reader.error?.message == Self.message(track), "\(kind): \(String(describing: reader.error))")
    }
}
