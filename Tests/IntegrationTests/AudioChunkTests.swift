import Foundation
import TestSupport
import Testing
import TrackClient

/// Sources for the chunk-identity tests, made with ffmpeg at test time: each channel a different signal, with noise
/// (a resampler's or decoder's error shows in every sample). AAC is encoded without perceptual noise substitution:
/// see AudioChunkTests.
enum ChunkMedia {
    static let stereo = "aevalsrc=0.5*sin(440*2*PI*t)+0.1*random(1)|0.4*sin(660*2*PI*t)+0.1*random(2)"
    static let flac = Media.make("chunk-44k.flac", ["-f", "lavfi", "-i", stereo + ":s=44100:d=1.5", "-c:a", "flac"])
    static let wav51 = Media.make("chunk-48k-51.wav", [
        "-f", "lavfi", "-i", "aevalsrc=0.4*sin(440*2*PI*t)|0.4*sin(550*2*PI*t)|0.3*sin(660*2*PI*t)+0.1*random(1)|"
            + "0.3*sin(90*2*PI*t)|0.4*sin(770*2*PI*t)+0.1*random(2)|0.4*sin(880*2*PI*t):s=48000:d=1.5:c=5.1",
        "-c:a", "pcm_s16le"])
    static let aacMP4 = Media.make("chunk-44k-aac.m4a", ["-f", "lavfi", "-i", stereo + ":s=44100:d=1.5",
                                                         "-c:a", "aac", "-aac_pns", "0"])
    static let aacMP4Long = Media.make("chunk-44k-aac-3s.m4a", ["-f", "lavfi", "-i", stereo + ":s=44100:d=3",
                                                                "-c:a", "aac", "-aac_pns", "0"])
    static let aacADTS = Media.make("chunk-48k.aac", ["-f", "lavfi", "-i", stereo + ":s=48000:d=1.5",
                                                      "-c:a", "aac", "-aac_pns", "0"])
    static let all = ["flac": flac, "wav51": wav51, "aacMP4": aacMP4, "aacADTS": aacADTS]
    /// The channel change tried for each source: stereo → mono, 5.1 → stereo.
    static let changedChannels = ["flac": 1, "wav51": 2, "aacMP4": 1, "aacADTS": 1]
}

/// Audio ranges are slices of the full read: reading consecutive ranges — each with its own CreateOutput, or one
/// output reset to them in turn — and joining the samples gives the bytes of one read of the whole track, at every
/// output rate, with and without a channel change, the first sample of each range at exactly its first frame.
///
/// AAC made with ffmpeg's default perceptual noise substitution cannot be: FFmpeg's AAC decoder (avdec_aac) draws the
/// substituted noise from one generator that runs from the first packet on, so the noise in a packet depends on every
/// packet decoded before it. Measured on a 3 s stereo AAC (ffmpeg -c:a aac): reading from 1 s differs from the whole
/// read in every later sample by up to 1.2e-4 (float); the same file made with -aac_pns 0 differs only in the first,
/// clipped packet, which trackd's pre-roll drops (docs/PROTOCOL.md §10.4).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AudioChunkTests {
    /// Consecutive ranges, in output frames: [b0, b1), [b1, b2), …, [last, end of track).
    static let boundaries = [0.0, 0.2003, 0.5117, 0.9, 1.2345]

    @Test(arguments: ["flac", "wav51", "aacMP4", "aacADTS"], [22050, 44100, 48000])
    func rangesJoinToTheFullRead(_ name: String, _ rate: Int) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: ChunkMedia.all[name]!, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        for channels in [nil, ChunkMedia.changedChannels[name]!] {
            var settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.bitDepth: .int(16),
                                                    SettingsKey.isFloat: .bool(false), SettingsKey.sampleRate: .int(Int64(rate))]
            if let channels { settings[SettingsKey.numberOfChannels] = .int(Int64(channels)) }
            let label = "\(name) at \(rate) Hz, channels \(channels.map(String.init) ?? "as stored")"
            let full = try read(asset, track, settings, ranges: [[.everything]]).bytes
            let frameBytes = 2 * (channels ?? (name == "wav51" ? 6 : 2))
            // ADTS keeps the encoder priming and the last packet's padding (no edit list): up to 2048 frames more at 48 kHz.
            #expect(abs(full.count / frameBytes - Int(1.5 * Double(rate))) <= 2048, "\(label): \(full.count / frameBytes) frames")
            let frames = Self.boundaries.map { Int64(($0 * Double(rate)).rounded()) }
            let ranges = frames.indices.map { i in
                i + 1 < frames.count ? MediaTimeRange(start: MediaTime(value: frames[i], timescale: Int32(rate)),
                                                      duration: MediaTime(value: frames[i + 1] - frames[i], timescale: Int32(rate)))
                    : MediaTimeRange(start: MediaTime(value: frames[i], timescale: Int32(rate)), duration: .positiveInfinity)
            }
            // One output per range.
            var joined: [UInt8] = []
            for (i, range) in ranges.enumerated() {
                let (bytes, times) = try read(asset, track, settings, ranges: [[range]])
                #expect(Self.isFrame(times.first, frames[i], rate: rate), "\(label): range \(i) starts at \(String(describing: times.first))")
                if i + 1 < frames.count { #expect(bytes.count == Int(frames[i + 1] - frames[i]) * frameBytes, "\(label): range \(i)") }
                joined += bytes
            }
            #expect(joined.count == full.count, "\(label): \(joined.count) bytes in ranges, \(full.count) in one read")
            #expect(Bool(joined == full), "\(label): ranges differ from the full read at byte \(Self.firstDifference(joined, full))")
            // One output: the first range, then a reset to the next two, then one to the rest.
            let (reset, times) = try read(asset, track, settings, ranges: [[ranges[0]], Array(ranges[1...2]), Array(ranges[3...])])
            #expect(Bool(reset == full), "\(label): reset ranges differ from the full read at byte \(Self.firstDifference(reset, full))")
            for frame in frames {
                #expect(times.contains { Self.isFrame($0, frame, rate: rate) }, "\(label): no sample starts at frame \(frame)")
            }
        }
    }

    /// The bytes of every sample of `resets` (the first one range, the reader's time range; each next a
    /// ResetOutput with its ranges), and every sample's PTS.
    func read(_ asset: Asset, _ track: AssetTrack, _ settings: [String: SettingValue], ranges resets: [[MediaTimeRange]])
        throws -> (bytes: [UInt8], times: [MediaTime]) {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        if resets.count > 1 { try output.setSupportsRandomAccess(true) }
        let reader = AssetReader(asset: asset)
        try reader.setTimeRange(resets[0][0])
        try reader.add(output)
        #expect(try reader.startReading())
        var bytes: [UInt8] = [], times: [MediaTime] = []
        func drain() throws {
            while let sample = try output.copyNextSampleBuffer() {
                times.append(sample.presentationTimeStamp)
                bytes += sample.packedBytes()
            }
        }
        try drain()
        for ranges in resets.dropFirst() {
            try output.reset(forReadingTimeRanges: ranges)
            try drain()
        }
        if resets.count > 1 { output.markConfigurationAsFinal() }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return (bytes, times)
    }

    /// Whether `time` is output frame `frame` at `rate`, to within half a frame, in integers (times may come in
    /// another timescale than the output rate).
    static func isFrame(_ time: MediaTime?, _ frame: Int64, rate: Int) -> Bool {
        guard let time, time.isNumeric else { return false }
        let scale = Int64(time.timescale)
        return 2 * abs(time.value * Int64(rate) - frame * scale) < scale
    }

    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }
}
