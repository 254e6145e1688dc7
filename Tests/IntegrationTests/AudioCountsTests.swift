import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded audio has ffmpeg's frame count in every container: the frames at the start (the AAC priming packet ffmpeg's
/// MPEG-TS muxer puts before the first video frame) and at the end (a last packet a container cuts short, e.g. by an
/// Ogg granule position, or a Matroska block's DiscardPadding). Where the decoder is FFmpeg's own (AAC through gst-libav), the frames are ffmpeg's, bit for
/// bit; Vorbis and Opus are decoded by libvorbis and libopus (GStreamer's vorbisdec/opusdec), ffmpeg by its own
/// decoders: the same counts, values within 2 × 10⁻⁵ of full scale.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AudioCountsTests {
    static let sine44 = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2"]
    static let sine48 = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"]
    /// (file, whether the decoder is FFmpeg's own).
    static let files: [String: (String, Bool)] = [
        "aac-ts": (Media.make("counts-aac.ts", ["-i", Media.clip, "-c", "copy"]), true),
        "vorbis-ogg": (Media.make("counts-vorbis.ogg", sine44 + ["-c:a", "libvorbis"]), false),
        "vorbis-mka": (Media.make("counts-vorbis.mka", sine44 + ["-c:a", "libvorbis"]), false),
        // The Ogg file remuxed: its last page's padding is the last block's DiscardPadding (372 frames).
        "vorbis-remux-mka": (Media.make("counts-vorbis-remux.mka",
                                        ["-i", Media.make("counts-vorbis.ogg", sine44 + ["-c:a", "libvorbis"]), "-c", "copy"]), false),
        "opus-ogg": (Media.make("counts-opus.opus", sine48 + ["-c:a", "libopus"]), false),
        "opus-webm": (Media.make("counts-opus.webm", sine48 + ["-c:a", "libopus"]), false),
        "flac": (Media.make("counts.flac", sine44 + ["-c:a", "flac"]), false),
    ]

    @Test(arguments: files.keys.sorted()) func decodedFramesAreFFmpegs(_ name: String) throws {
        let (file, sameDecoder) = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true),
                                                SettingsKey.bitDepth: .int(32)]
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var ours: [UInt8] = []
        var frames = 0
        while let s = try output.copyNextSampleBuffer() {
            ours += s.packedBytes()
            frames += s.numberOfSamples
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        let theirs = [UInt8](try run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0", "-f", "f32le", "-"]).stdout)
        let channels = Int(track.channelCount)
        #expect(frames * channels * 4 == theirs.count, "\(name): \(frames) frames, ffmpeg \(theirs.count / channels / 4)")
        #expect(ours.count == theirs.count)
        if sameDecoder {
            #expect(ours == theirs, "\(name): not ffmpeg's samples")
        } else {
            let a = ours.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let b = theirs.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 0
            #expect(worst < 2e-5, "\(name): up to \(worst) from ffmpeg's decode")
        }
    }
}
