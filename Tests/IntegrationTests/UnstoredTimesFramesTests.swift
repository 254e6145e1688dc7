import Foundation
import TestSupport
import Testing
import TrackClient

/// ReadFrames and CountFrames on tracks whose stored samples carry no presentation times (PROTOCOL.md §7.2): AVI video
/// with B-pictures (ffmpeg's MPEG-4 Part 2 with `-bf 2`, x264 with B-frames and open GOPs whose key frames have
/// leading B-pictures), where frame k is shown at the k-th stored decode time (ffprobe's packets' `dts`), and raw
/// elementary streams (`-f h264`, `-f m4v`), where frame k is shown at k frames of their rate, `(k × den, num)`.
/// Frames asked by index — the first, the last, a B-picture, a key frame's leading B-pictures, frames of GOPs far
/// apart, repeated, unsorted — and by time (on a frame's time, inside it) come in request order with ffmpeg's bytes
/// (framemd5) at those times; the count is ffmpeg's; past the end is the same −11901 as on an indexed track.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct UnstoredTimesFramesTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=6", "-pix_fmt", "yuv420p"]
    /// 180 frames at 30 fps (time base 1/30), 320×240, a key frame every 24; the raw streams are ElementaryStreamRangeTests'
    /// (60 frames, GOP 12, two B-frames).
    static func file(_ kind: String) -> String {
        switch kind {
        case "avi-mpeg4":
            return Media.make("unstored-mpeg4.avi", source + ["-c:v", "mpeg4", "-bf", "2", "-g", "24", "-q:v", "4", "-f", "avi"])
        case "avi-h264":
            return Media.make("unstored-h264.avi", source + [
                "-c:v", "libx264", "-preset", "veryfast", "-bf", "2",
                "-x264-params", "open-gop=1:keyint=24:min-keyint=24:scenecut=0:b-adapt=0", "-f", "avi"])
        default:
            return ElementaryStreamRangeTests.files[kind]!
        }
    }

    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    /// ffmpeg's frames (md5s, display order) and each one's time: an AVI's n-th packet decode time in its time base
    /// (ffprobe gives B-picture AVI frames no pts of their own), a raw stream's n frames of its rate (§7.1).
    static func oracle(_ kind: String) throws -> (md5s: [String], times: [MediaTime], bPicture: Int) {
        let file = file(kind)
        let frames = try Probe.frames(file, "v:0")
        let b = try #require(frames.indices.first { frames[$0].pictureType == "B" }, "\(kind): no B-picture")
        if kind.hasPrefix("avi") {
            let md5s = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"]).map(\.md5)
            let packets = try Probe.packets(file, "v:0")
            let timeBase = try Probe.timeBase(file, "v:0")
            try #require(timeBase == (1, 30) && md5s.count == 180 && packets.count == 180,
                         "\(kind): time base \(timeBase), \(md5s.count) frames, \(packets.count) packets")
            try #require(packets.contains { $0.pts == nil }, "\(kind): its reordered pictures have no pts")
            let times = try packets.map { MediaTime(value: try #require($0.dts), timescale: 30) }
            return (md5s, times, b)
        }
        let (md5s, rate) = try ElementaryStreamRangeTests.oracle(file)
        return (md5s, md5s.indices.map { MediaTime(value: Int64($0) * rate.den, timescale: Int32(rate.num)) }, b)
    }

    @Test(arguments: ["avi-mpeg4", "avi-h264", "h264", "m4v"]) func framesAreExact(_ kind: String) throws {
        let (md5s, times, b) = try Self.oracle(kind)
        let n = md5s.count
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.file(kind), socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(try asset.frameCount(track: track) == UInt64(n), "\(kind): CountFrames")
        // By index: unsorted, repeated, the last and the first, a B-picture, the leading B-pictures of the key frame
        // decoded at 22 (x264: shown at 24), the middle of the track (another GOP: a range of its own in a 180-frame AVI).
        let wanted = [n - 1, 0, b, n / 2 + 1, 23, b, 22, n / 2, 2, n - 1]
        for round in 0..<2 {  // the second on the pipeline the first one kept
            let frames = try asset.frames(atIndices: wanted.map(UInt64.init), track: track, outputSettings: Self.y420)
            Self.expectExact(frames, wanted, md5s, times, "\(kind) round \(round)")
        }
        // By time: on a frame's time, and inside it (a third of a frame later: on the AVI's grid of 1/30 that is the
        // frame's tick again, §7.1), last to first.
        let shown = [n - 1, b, 22, n / 2, 0]
        let frame = times[1].value - times[0].value
        let inside = { (k: Int) in
            times[k].timescale == 30 ? MediaTime(value: times[k].value * 3 + frame, timescale: 90)
                : MediaTime(value: times[k].value + frame / 3, timescale: times[k].timescale)
        }
        let frames = try asset.frames(at: shown.map { times[$0] } + shown.map(inside), track: track, outputSettings: Self.y420)
        Self.expectExact(frames, shown + shown, md5s, times, "\(kind) by time")
        Self.expectErrors(asset, track, count: n, kind)
    }

    /// An `-f m4v` stream whose VOPs are not evenly spaced (a frame dropped) has no rate to time its frames by:
    /// ReadFrames and CountFrames fail with −11829 saying so, the same every time, and the connection goes on.
    @Test func aStreamWithoutARateIsRefused() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.file("m4v-gap"), socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let why = "the MPEG-4 Part 2 stream of track \(track.trackID) states no frame rate its decoder times it by: its VOL has no fixed_vop_rate and its VOPs are not evenly spaced"
        for _ in 0..<2 {
            for read in [{ _ = try asset.frames(atIndices: [3], track: track, outputSettings: Self.y420) },
                         { _ = try asset.frameCount(track: track) }] {
                do {
                    try read()
                    Issue.record("the m4v without a rate was read")
                } catch let error as TrackError {
                    #expect(error.knownCode == .fileFailedToParse && error.message == why, "\(error)")
                }
            }
        }
        // The connection goes on: the first frame's image, found by a seek (PROTOCOL.md §8, GenerateImage).
        #expect(try asset.generateImage(track: track, at: .zero).png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    /// `frames` delivered ffmpeg's frames `wanted`, in that order, at their times.
    static func expectExact(_ frames: [IndexedFrame], _ wanted: [Int], _ md5s: [String], _ times: [MediaTime],
                            _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(frames.map { Int($0.index) } == wanted, "\(what): indices", sourceLocation: sourceLocation)
        #expect(frames.map { md5Hex($0.sample.packedBytes()) } == wanted.map { md5s[$0] }, "\(what): frames differ from ffmpeg's",
                sourceLocation: sourceLocation)
        #expect(frames.map(\.sample.presentationTimeStamp) == wanted.map { times[$0] },
                "\(what): times \(frames.map(\.sample.presentationTimeStamp))", sourceLocation: sourceLocation)
    }

    /// Past the end, by index and by time: −11901 naming the request, as on an indexed track; the same twice.
    static func expectErrors(_ asset: Asset, _ track: AssetTrack, count: Int, _ kind: String) {
        func error(_ body: () throws -> Void) -> TrackError? {
            do { try body() } catch { return error as? TrackError }
            return nil
        }
        for _ in 0..<2 {
            let index = error { _ = try asset.frames(atIndices: [0, UInt64(count)], track: track, outputSettings: y420) }
            #expect(index?.knownCode == .invalidArgument && index?.message
                == "ReadFrames request 1: frame index \(count) is out of range: the track has \(count) frames (0–\(count - 1))",
                "\(kind): \(String(describing: index))")
            let time = error { _ = try asset.frames(at: [MediaTime(value: 60, timescale: 1)], track: track, outputSettings: y420) }
            #expect(time?.knownCode == .invalidArgument
                && time?.message.hasPrefix("ReadFrames request 0: frame time 60.0 s is after the last frame") == true,
                "\(kind): \(String(describing: time))")
        }
    }
}
