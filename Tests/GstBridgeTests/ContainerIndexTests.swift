import Foundation
import GstBridge
import MediaIndex
import TrackdProtocol
import TestSupport
import Testing

/// The frame index read from an MP4/MOV's sample tables must be exactly the one the parse-only pass gets from
/// qtdemux (the times decoded samples carry), or not be used at all. (The table reader's own tests — synthetic
/// tables, cut and mutated files — are in MediaIndexTests.)
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ContainerIndexTests {
    /// Files that must take the fast path, made the ways ffmpeg makes MP4/MOV: B-frames with an edit list, moov
    /// first or last, three B-frames with a pyramid, variable frame rate, video as the second track, ProRes in MOV.
    static let fast: [(String, [String])] = [
        ("ci-bframes.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "2", "-c:v", "libx264", "-bf", "2", "-g", "15"]),
        ("ci-faststart.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "2", "-c:v", "libx264", "-bf", "2",
                              "-g", "12", "-movflags", "+faststart"]),
        ("ci-pyramid.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=24000/1001", "-t", "2", "-c:v", "libx264",
                            "-bf", "3", "-x264-params", "b-pyramid=normal", "-g", "30"]),
        ("ci-vfr.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "2", "-vf",
                        "setpts='if(lt(N,20),N/30,if(lt(N,40),20/30+(N-20)/10,20/30+20/10+(N-40)/60))/TB'",
                        "-fps_mode", "vfr", "-c:v", "libx264", "-bf", "2", "-video_track_timescale", "90000"]),
        ("ci-second.mp4", ["-f", "lavfi", "-i", "sine=duration=2", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25",
                           "-t", "2", "-map", "0", "-map", "1", "-c:a", "aac", "-c:v", "libx264"]),
        ("ci-intra.mov", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "1", "-c:v", "prores_ks"]),
    ]

    /// Files the reader must leave to the parse-only pass: not MP4, fragmented.
    static let slow: [(String, [String])] = [
        ("ci-matroska.mkv", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "1", "-c:v", "libx264", "-bf", "2"]),
        ("ci-fragmented.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "2", "-c:v", "libx264", "-bf", "2",
                               "-g", "15", "-movflags", "+frag_keyframe+empty_moov"]),
    ]

    static func videoTrack(_ path: String) throws -> UInt32 {
        let tracks = try Fixtures.source(path).discover().tracks
        return try #require(tracks.first { $0.mediaType == .video }).id
    }

    @Test(arguments: fast.map(\.0))
    func sampleTablesGiveTheParsedIndex(_ name: String) throws {
        let path = try Fixtures.make(name, Self.fast.first { $0.0 == name }!.1)
        let track = try Self.videoTrack(path)
        let parsed = try FrameIndex.build(source: try Fixtures.source(path), trackID: track)
        let read = try #require(FrameIndex.fromContainer(source: try Fixtures.source(path), trackID: track),
                                "\(name): the sample tables were not used")
        #expect(read.frames.count == parsed.frames.count)
        for (i, (a, b)) in zip(read.frames, parsed.frames).enumerated() {
            #expect(a == b, "\(name) frame \(i): tables \(a), parse-only pass \(b)")
            if a != b { break }
        }
    }

    /// GStreamer's own muxers (mp4mux, qtmux) write their tables differently from ffmpeg (edit lists, ctts).
    @Test(arguments: ["mp4mux", "qtmux"])
    func gstreamerMuxedFilesToo(_ muxer: String) throws {
        let path = Fixtures.directory.appendingPathComponent("ci-\(muxer).\(muxer == "qtmux" ? "mov" : "mp4")").path
        if !FileManager.default.fileExists(atPath: path) {
            let temporary = path + ".\(getpid()).tmp"
            _ = try Fixtures.run("gst-launch-1.0", ["-q", "-e", "videotestsrc", "num-buffers=60", "!",
                                                    "video/x-raw,width=64,height=48,framerate=30/1", "!", "x264enc",
                                                    "bframes=2", "key-int-max=15", "!", "h264parse", "!", muxer, "!",
                                                    "filesink", "location=\(temporary)"])
            guard rename(temporary, path) == 0 else { throw FixtureError(message: "rename \(temporary)") }
        }
        let parsed = try FrameIndex.build(source: try Fixtures.source(path), trackID: 1)
        let read = try #require(FrameIndex.fromContainer(source: try Fixtures.source(path), trackID: 1),
                                "\(muxer): the sample tables were not used")
        #expect(parsed.frames.count == 60)
        #expect(read.frames == parsed.frames)
    }

    @Test(arguments: slow.map(\.0))
    func otherFilesAreLeftToTheParsePass(_ name: String) throws {
        let path = try Fixtures.make(name, Self.slow.first { $0.0 == name }!.1)
        let track = try Self.videoTrack(path)
        #expect(FrameIndex.fromContainer(source: try Fixtures.source(path), trackID: track) == nil)
        #expect(try FrameIndex.build(source: try Fixtures.source(path), trackID: track).frames.count > 0)
    }
}
