import Foundation
@testable import GstBridge
import TrackdProtocol
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DiscoveryTests {
    @Test func mp4WithVideoAndAudio() throws {
        try Gst.initialize()
        let source = try Fixtures.source(try Fixtures.clip())
        let (duration, tracks) = try source.discover()
        #expect(abs(duration.seconds - 2.0) < 0.1)
        #expect(tracks.count == 2)
        let video = try #require(tracks.first { $0.mediaType == .video })
        let audio = try #require(tracks.first { $0.mediaType == .audio })
        #expect(video.id == 1)
        #expect(audio.id == 2)
        #expect(video.codec == "avc1")
        #expect(audio.codec == "mp4a")
        #expect(video.width == 320 && video.height == 240)
        #expect(abs(video.nominalFrameRate - 30) < 0.01)
        #expect(video.depth == 24 && !video.hasAlpha)
        #expect(video.bitsPerComponent == 8 && video.chromaSubsampling == .yuv420)  // h264parse's caps
        #expect(audio.bitsPerComponent == 0 && audio.chromaSubsampling == .unknown)
        #expect(abs(video.duration.seconds - 2.0) < 0.1)
        #expect(audio.sampleRate == 48000)
        #expect(audio.channels == 1)
        #expect(audio.language == "fra")
        #expect(Gst.versionString.hasPrefix("GStreamer 1."))
    }

    @Test(arguments: [(0, "apco"), (1, "apcs"), (2, "apcn"), (3, "apch"), (4, "ap4h"), (5, "ap4x")])
    func prores(_ profile: Int, _ code: String) throws {
        let (_, tracks) = try Fixtures.source(try Fixtures.prores(profile)).discover()
        let video = try #require(tracks.first)
        #expect(video.codec == FourCC(code)!)
        #expect(video.depth == (profile >= 4 ? 32 : 24))
        #expect(video.hasAlpha == (profile >= 4))
        // From the variant (qtdemux's caps carry no depth): 422 is 10-bit 4:2:2, 4444 12-bit 4:4:4.
        #expect(video.bitsPerComponent == (profile >= 4 ? 12 : 10))
        #expect(video.chromaSubsampling == (profile >= 4 ? .yuv444 : .yuv422))
        #expect(video.width == 64 && abs(video.nominalFrameRate - 25) < 0.01)
    }

    /// ProRes 4444 with alpha decodes (avdec_prores) to BGRA.
    @Test func proresDecodes() throws {
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("BGRA")!)
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.prores(4)), trackID: 1,
                                         mode: .decode(request), timeRange: .everything)
        #expect(try pullAll(pipeline).count == 5)
    }

    /// A 90° tkhd matrix becomes rotation 90.
    @Test func rotation() throws {
        let path = try Fixtures.patched(try Fixtures.clip(), as: "rotated.mp4") { bytes in
            // The first tkhd is the video track's; its matrix starts 40 bytes after the version/flags.
            guard let tkhd = Fixtures.find("tkhd", in: bytes) else { throw FixtureError(message: "no tkhd") }
            let matrix = tkhd + 4 + 40
            let values: [UInt32] = [0, 0x0001_0000, 0, 0xFFFF_0000, 0, 0, 0, 0, 0x4000_0000]
            for (i, v) in values.enumerated() {
                for b in 0..<4 { bytes[matrix + i * 4 + b] = UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(b))) }
            }
        }
        let (_, tracks) = try Fixtures.source(path).discover()
        #expect(tracks.first { $0.mediaType == .video }?.rotation == 90)
    }

    /// A sparse (subtitle) track does not hold discovery until the stuck-demuxer bound. A discovery that waits that
    /// bound out lasts at least as long by construction, so the assertion compares with the bound itself, not with
    /// a guess at how fast a loaded machine discovers (2 s here failed 2 runs of 2 at load 26, once ffmpeg made the
    /// file inside the timed span); the file is made before the clock starts.
    @Test func subtitleTrack() throws {
        let source = try Fixtures.source(try Fixtures.withSubtitles())
        let start = monotonicMs()
        let (_, tracks) = try source.discover()
        let elapsed = monotonicMs() - start
        #expect(elapsed < Double(MediaSource.discoveryTimeoutNs) / 1e6, "\(elapsed) ms: discovery waited for its bound")
        print("subtitleTrack: discovery took \(Int(elapsed)) ms")
        #expect(tracks.map(\.mediaType) == [.video, .audio, .subtitle])
        #expect(tracks.map(\.id) == [1, 2, 3])
        let subtitle = try #require(tracks.last)
        // Not its language: GStreamer's language tag reaches a subtitle pad when qtdemux gets to it, sometimes after
        // discovery ended ("" once in about 9 runs); the worker takes the language from the container
        // (Session.containerLanguage), which DescriptionDeterminismTests checks on every open.
        #expect(subtitle.codec == "tx3g", "\(subtitle.codec)")
    }

    /// A codec GStreamer has no decoder for: discovered by its fourcc; decoding it is decoderNotFound.
    @Test func unknownCodec() throws {
        let path = try Fixtures.patched(try Fixtures.clip(), as: "unknown-codec.mp4") { bytes in
            guard let stsd = Fixtures.find("stsd", in: bytes), let entry = Fixtures.find("avc1", in: bytes, from: stsd)
            else { throw FixtureError(message: "no avc1 sample entry") }
            bytes.replaceSubrange(entry..<entry + 4, with: Array("zzzz".utf8))
        }
        let (_, tracks) = try Fixtures.source(path).discover()
        #expect(tracks.first?.codec == "zzzz")
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!)
        do {
            _ = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(request), timeRange: .everything)
            Issue.record("decoded an unknown codec")
        } catch let error as TrackError {
            #expect(error.knownCode == .decoderNotFound, "\(error)")
        }
        // Passthrough needs no decoder.
        let passthrough = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .passthrough,
                                            timeRange: .everything)
        #expect(passthrough.outputFormat.format == "zzzz")
        #expect(try pullAll(passthrough).count == 60)
    }

    /// Matroska/WebM: track ids are the TrackNumbers; VP9 + Opus.
    @Test func webm() throws {
        let path = try Fixtures.make("clip.webm", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi",
                                                   "-i", "sine", "-t", "0.5", "-c:v", "libvpx-vp9", "-c:a", "libopus"])
        let (duration, tracks) = try Fixtures.source(path).discover()
        #expect(abs(duration.seconds - 0.5) < 0.05, "\(duration)")
        #expect(tracks.map(\.id) == [1, 2])
        #expect(tracks.map(\.codec) == ["vp09", "Opus"])
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!)
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(request),
                                         timeRange: .everything)
        #expect(try pullAll(pipeline).count == 13)
    }
}
