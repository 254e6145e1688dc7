import Foundation
import TestSupport
import Testing
import TrackClient

/// MPEG-TS times (PROTOCOL.md §7.1): 90 kHz ticks on GStreamer's timeline, which is the stream's own PTS/DTS less
/// the program's first PCR (tsdemux starts the stream at its first PCR). ffprobe prints the stored PTS/DTS itself —
/// ffmpeg's muxer starts the PCR at 0.7 s and the first DTS at 1.4 s (muxdelay) — so every time trackd gives is
/// ffprobe's integer minus the first PCR's 33-bit base, read here from the file's bytes. An ffmpeg-made TS with
/// H.264 (B-frames) and AAC: decoded frame PTS, passthrough PTS and DTS of both tracks.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TransportStreamTimesTests {
    static let file = Media.make("ts-x264-aac.ts", TimescaleTests.source + [
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
    ] + TimescaleTests.x264 + ["-c:a", "aac", "-ac", "2"])

    /// The PCR base (90 kHz) of the first packet that carries a PCR.
    static func firstPCR(_ bytes: [UInt8]) -> Int64? { TransportStream.firstPCR(bytes) }

    /// ffprobe's packets of `stream` (v:0, a:0): pts and dts as integers in the time_base (1/90000).
    static func packets(_ stream: String) throws -> [(pts: Int64, dts: Int64)] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pts,dts",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        return r.text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",").compactMap { Int64($0) }
            return f.count == 2 ? (f[0], f[1]) : nil
        }
    }

    @Test func timesAreFfprobesLessTheFirstPCR() throws {
        let bytes = try #require(FileManager.default.contents(atPath: Self.file))
        let pcr = try #require(Self.firstPCR([UInt8](bytes)))
        #expect(pcr == 63000, "ffmpeg's muxer starts the PCR at 0.7 s")  // the file is what this test is about
        let time = { (ticks: Int64) in MediaTime(value: ticks - pcr, timescale: 90000) }
        let video = try TimescaleTests.probe(Self.file)
        #expect(video.timeBase == (1, 90000) && video.startPTS.map { $0 > pcr } == true)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Self.file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.naturalTimeScale == 90000)
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        #expect(decoded.map(\.presentationTimeStamp) == video.frames.map(time), "decoded PTS")
        // Passthrough: every stored sample, with the PTS and DTS of ffprobe's packets, in order (also
        // PassthroughCompletenessTests.h264InMPEGTS).
        let stored = try TimescaleTests.read(asset, track, nil)
        let expected = try Self.packets("v:0").map { [time($0.pts), time($0.dts)] }
        #expect(!stored.isEmpty && stored.map { [$0.presentationTimeStamp, $0.decodeTimeStamp] } == expected,
                "passthrough PTS/DTS \(stored.prefix(3).map { ($0.presentationTimeStamp, $0.decodeTimeStamp) }) vs \(expected.prefix(3))")
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(audio.naturalTimeScale == 90000)
        let storedAudio = try TimescaleTests.read(asset, audio, nil)
        let expectedAudio = try Self.packets("a:0").map { [time($0.pts)] }
        // Every AAC packet, the first (PTS 130080, which ends where tsdemux's segment starts) included (also
        // PassthroughCompletenessTests.aacInMPEGTS).
        #expect(storedAudio.count == 48 && storedAudio.map { [$0.presentationTimeStamp] } == expectedAudio,
                "audio passthrough PTS \(storedAudio.prefix(3).map(\.presentationTimeStamp)) vs \(expectedAudio.prefix(3))")
    }
}
