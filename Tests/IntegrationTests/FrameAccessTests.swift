import Foundation
import TestSupport
import Testing
import TrackClient

/// Exact random access (ReadFrames): each frame asked for, by index or time, in request order, with the same bytes
/// and presentation time as a full sequential decode (ffmpeg's framemd5 and ffprobe as the oracles).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FrameAccessTests {
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .int(Int64(FourCC("y420").rawValue))]

    /// 320x240, variable frame rate: 20 frames 1/30 s apart, then 20 frames about 0.1 s apart; B-frames, GOP 12.
    static let vfr: String = Media.make("vfr.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
        "-vf", "setpts='if(lt(N,20),N/30,20/30+(N-20)*0.1)/TB'", "-frames:v", "40", "-fps_mode", "vfr",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p",
    ])

    /// Checks every delivered frame against the full decode: index, bytes, presentation time.
    func expectExact(_ frames: [IndexedFrame], indices expected: [Int], file: String) throws {
        let md5 = try Oracle.frameMD5(file, pixFmt: "yuv420p")
        let pts = try Oracle.framePTS(file)
        #expect(frames.map { Int($0.index) } == expected)
        for (frame, index) in zip(frames, expected) {
            #expect(md5Hex(frame.sample.packedBytes()) == md5[index].md5, "frame \(index) bytes")
            #expect(abs(frame.sample.presentationTimeStamp.seconds - pts[index]) < 0.0005, "frame \(index) pts")
        }
    }

    @Test func framesByIndexInRequestOrder() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        // Out of order, across GOPs, B-frames, a repeat, the first and the last frame.
        let wanted = [59, 0, 30, 31, 0, 14, 15, 46]
        let frames = try asset.frames(atIndices: wanted.map(UInt64.init), track: track, outputSettings: Self.y420)
        try expectExact(frames, indices: wanted, file: Media.clip)
        // Frames kept across the flush-seeks between ranges: appsink 1.22 logged a GStreamer-CRITICAL when the
        // worker held appsink's own GstSample over a flush (TrackPipeline.ownSample).
        for _ in 0..<3 {
            _ = try asset.frames(atIndices: wanted.map(UInt64.init), track: track, outputSettings: Self.y420)
        }
        #expect(DaemonLog.glibWarnings(daemon.log).isEmpty, "\(daemon.log)")
    }

    @Test func framesByTimeOnVariableFrameRate() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let pts = try Oracle.framePTS(Self.vfr)
        #expect(pts.count == 40)
        let asset = try Asset(path: Self.vfr, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        // A frame's time (ffprobe rounds to the µs: 1 µs later), just before the next one, inside the slow part,
        // and before the first frame.
        let times = [pts[25] + 0.000001, pts[26] - 0.001, (pts[33] + pts[34]) / 2, pts[5] + 0.000001, 0]
        let expected = [25, 25, 33, 5, 0]
        let frames = try asset.frames(at: times.map { MediaTime(value: Int64(($0 * 1_000_000).rounded()), timescale: 1_000_000) },
                                      track: track, outputSettings: Self.y420)
        try expectExact(frames, indices: expected, file: Self.vfr)
    }

    @Test func badRequestsGetClearErrors() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let video = try #require(asset.tracks(withMediaType: .video).first)
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        func error(_ body: () throws -> Void) -> TrackError? {
            do { try body() } catch { return error as? TrackError }
            return nil
        }
        let index = error { _ = try asset.frames(atIndices: [3, 60], track: video, outputSettings: Self.y420) }
        #expect(index?.knownCode == .invalidArgument)
        #expect(index?.message == "ReadFrames request 1: frame index 60 is out of range: the track has 60 frames (0–59)")
        let time = error { _ = try asset.frames(at: [MediaTime(value: 3, timescale: 1)], track: video, outputSettings: Self.y420) }
        #expect(time?.knownCode == .invalidArgument)
        #expect(time?.message.hasPrefix("ReadFrames request 0: frame time 3.0 s is after the last frame") == true)
        let sound = error { _ = try asset.frames(atIndices: [0], track: audio, outputSettings: Self.y420) }
        #expect(sound?.knownCode == .operationNotSupportedForAsset)
        // The connection is still good.
        let frames = try asset.frames(atIndices: [1], track: video, outputSettings: Self.y420)
        try expectExact(frames, indices: [1], file: Media.clip)
    }

    /// CountFrames: ffprobe's count of decoded frames, from MP4 sample tables and from a Matroska file's demuxing pass;
    /// the last index it allows reads, the next does not; an audio track and an unknown track get clear errors.
    @Test func frameCountIsFFprobesCount() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let mkv = Media.make("count.mkv", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1.48",
                                           "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "10"])
        for file in [Media.clip, Self.vfr, mkv] {
            let expected = try Oracle.framePTS(file).count
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let track = try #require(asset.tracks(withMediaType: .video).first)
            let count = try asset.frameCount(track: track)
            #expect(count == UInt64(expected), "\(file)")
            #expect(try asset.frames(atIndices: [count - 1], track: track, outputSettings: Self.y420).count == 1)
            #expect(throws: TrackError.self) { try asset.frames(atIndices: [count], track: track, outputSettings: Self.y420) }
        }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        var error: TrackError?
        do { _ = try asset.frameCount(track: audio) } catch let e { error = e }
        #expect(error?.knownCode == .operationNotSupportedForAsset)
        #expect(error?.message == "CountFrames counts video frames; track \(audio.trackID) is audio")
    }

    /// `trackctl frames`: read's md5 line format with INDEX the frame's number; NV12 (420v) against ffmpeg's nv12.
    @Test func trackctlFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let nv12 = try Oracle.frameMD5(Media.clip, pixFmt: "nv12")
        let pts = try Oracle.framePTS(Media.clip)
        let r = try daemon.trackctl(["frames", Media.clip, "--index", "45,3,44", "--pixel-format", "420v", "--md5"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.map { $0[0] } == ["45", "3", "44"])
        for line in lines where line.count == 5 {
            let i = Int(line[0])!
            #expect(line[4] == nv12[i].md5, "frame \(i)")
            #expect(abs(Double(line[1])! - pts[i]) < 0.000_001, "frame \(i) pts")
        }
        let byTime = try daemon.trackctl(["frames", Media.clip, "--at", "\(pts[10]),0", "--pixel-format", "420v", "--md5"])
        #expect(byTime.text.split(separator: "\n").map { $0.split(separator: " ")[0] } == ["10", "0"])
        let bad = try daemon.trackctl(["frames", Media.clip, "--index", "60"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("frame index 60 is out of range: the track has 60 frames (0–59)"))
        let usage = try daemon.trackctl(["frames", Media.clip, "--index", "1", "--at", "0"])
        #expect(usage.status == 2 && usage.stderr.contains("exactly one of --at"))
    }
}
