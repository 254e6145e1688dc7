import Foundation
import TestSupport
import Testing
import TrackClient

/// Convert only what is delivered (issue #14): frames decoded only as references or preroll are dropped between the
/// decoder and videoconvert. The session's Status counts both (framesDecoded, framesConverted): one conversion per
/// delivered frame exactly, while more frames than that were decoded.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ConversionCountTests {
    /// 30 fps, 120 frames, B-frames, GOP 30: a frame mid-GOP needs many frames before it decoded.
    static let clip: String = Media.make("conversions.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "120",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "30", "-pix_fmt", "yuv420p",
    ])
    static let bgra: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("BGRA")]

    /// What the session decoded and converted while `body` ran, and what it delivered (`body`'s count).
    func counted(_ asset: Asset, _ body: () throws -> Int) throws -> (decoded: UInt64, converted: UInt64, delivered: Int) {
        let before = try asset.serverStatus()
        let delivered = try body()
        let after = try asset.serverStatus()
        return (after.framesDecoded - before.framesDecoded, after.framesConverted - before.framesConverted, delivered)
    }

    func drain(_ output: AssetReaderTrackOutput) throws -> Int {
        var n = 0
        while try output.copyNextSampleBuffer() != nil { n += 1 }
        return n
    }

    func time(_ frame: Int) -> MediaTime { MediaTime(value: Int64(frame) * 512, timescale: 15360) }

    @Test func readFramesConvertsOnlyTheFramesAskedFor() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        var rng = SplitMix64(seed: 14)
        let wanted = Array((0..<UInt64(120)).shuffled(using: &rng).prefix(10))  // ten different frames
        let n = try counted(asset) {
            try asset.frames(atIndices: wanted, track: track, outputSettings: Self.bgra).count
        }
        #expect(n.delivered == 10)
        #expect(n.converted == 10, "conversions \(n.converted) for frames \(wanted)")
        #expect(n.decoded > n.converted, "decoded \(n.decoded)")
    }

    @Test func aRangeStartingMidGOPConvertsOnlyItsFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let n = try counted(asset) {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.bgra)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            try reader.setTimeRange(MediaTimeRange(start: time(47), duration: time(6)))  // frames 47 … 52
            #expect(try reader.startReading())
            return try drain(output)
        }
        #expect(n.delivered == 6)
        #expect(n.converted == 6)
        #expect(n.decoded > 6, "decoded \(n.decoded): 30 … 52 at least")
    }

    @Test func aResetConvertsOnlyItsFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.bgra)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(MediaTimeRange(start: .zero, duration: time(2)))
        #expect(try reader.startReading())
        #expect(try drain(output) == 2)
        let n = try counted(asset) {
            try output.reset(forReadingTimeRanges: [MediaTimeRange(start: time(75), duration: time(3)),
                                                    MediaTimeRange(start: MediaTime(value: 100 * 512 + 1, timescale: 15360),
                                                                   duration: MediaTime(value: 511, timescale: 15360))])
            return try drain(output)
        }
        #expect(n.delivered == 4)  // 75, 76, 77; 100
        #expect(n.converted == 4)
        #expect(n.decoded > 4, "decoded \(n.decoded)")
        output.markConfigurationAsFinal()
    }

    @Test func anImageConvertsOneFrame() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let n = try counted(asset) {
            let image = try asset.generateImage(track: track, at: time(44))
            // Frame 44's own time (qtdemux rounds 44·512/15360 s up to the nanosecond).
            #expect(abs(image.actualTime.nanoseconds! - time(44).nanoseconds!) <= 1, "\(image.actualTime)")
            return 1
        }
        #expect(n.converted == 1)
        #expect(n.decoded > 1, "decoded \(n.decoded)")
    }

    /// An H.264 picture no other picture refers to is not decoded unless it is delivered (DecodeStop with
    /// H264Pictures): frames 27 and 50 of 30-frame GOPs with B-pyramids (x264: of each three B-frames, two are
    /// referenced by none) need about 49 samples from their key frames, and fewer are decoded, in MP4 and Matroska
    /// (avc: NAL unit lengths, the SPS in the avcC) and MPEG-TS (byte-stream: start codes, the SPS in band); the
    /// frames are ffmpeg's.
    @Test func unreferencedPicturesAreNotDecoded() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]
        for ext in ["mp4", "mkv", "ts"] {
            let file = Media.make("pyramid.\(ext)", [
                "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "60", "-c:v", "libx264",
                "-preset", "veryfast", "-bf", "3", "-b_strategy", "0", "-g", "30", "-pix_fmt", "yuv420p",
            ])
            let md5 = try Oracle.frameMD5(file, pixFmt: "yuv420p")
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let track = try #require(asset.tracks(withMediaType: .video).first)
            let n = try counted(asset) {
                let frames = try asset.frames(atIndices: [27, 50], track: track, outputSettings: y420)
                for (frame, index) in zip(frames, [27, 50]) {
                    #expect(md5Hex(frame.sample.packedBytes()) == md5[index].md5, "\(ext): frame \(index)")
                }
                return frames.count
            }
            #expect(n.delivered == 2)
            #expect(n.decoded < 36, "\(ext): decoded \(n.decoded) frames for frames 27 and 50")
        }
    }
}
