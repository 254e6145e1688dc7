import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Media for the audio tests, made with ffmpeg at test time.
enum AudioMedia {
    /// Two different sines (440 Hz left, 660 Hz right), 44.1 kHz, 2 s.
    static let stereoSource = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2",
                               "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100:duration=2",
                               "-filter_complex", "amerge=inputs=2"]
    static let wav16 = Media.make("s16.wav", stereoSource + ["-c:a", "pcm_s16le"])
    static let wav24 = Media.make("s24.wav", stereoSource + ["-c:a", "pcm_s24le"])
    static let flac = Media.make("s16.flac", stereoSource + ["-c:a", "flac"])
    static let flacMKA = Media.make("s16-flac.mka", stereoSource + ["-c:a", "flac"])
}

/// Decoded linear PCM through a real trackd, checked against ffmpeg.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AudioTests {
    func ffmpegRaw(_ file: String, _ format: String, extra: [String] = []) throws -> Data {
        let r = try run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0"] + extra + ["-f", format, "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        return r.stdout
    }

    /// trackctl read … --output FILE: the bytes, plus the --json lines of a second identical read.
    func read(_ daemon: Daemon, _ file: String, _ args: [String]) throws -> (bytes: Data, buffers: [[String: Any]]) {
        let dir = Env.tempDir("pcm")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try daemon.trackctl(["read", file] + args + ["--output", dir + "/out.pcm"])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try daemon.trackctl(["read", file] + args + ["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let buffers = json.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return (FileManager.default.contents(atPath: dir + "/out.pcm") ?? Data(), buffers)
    }

    static func frames(_ buffers: [[String: Any]]) -> Int { buffers.reduce(0) { $0 + (($1["frames"] as? Int) ?? 0) } }

    @Test(arguments: [("wav16", [String]()), ("flac", []), ("flacMKA", []), ("wav16", ["--bit-depth", "16"])])
    func sixteenBitSourcesAreBitExact(_ name: String, _ args: [String]) throws {
        let file = ["wav16": AudioMedia.wav16, "flac": AudioMedia.flac, "flacMKA": AudioMedia.flacMKA][name]!
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, buffers) = try read(daemon, file, args)
        let theirs = try ffmpegRaw(file, "s16le")
        #expect(theirs.count == 88200 * 4)
        #expect(ours == theirs, "\(name): \(ours.count) bytes vs ffmpeg's \(theirs.count)")
        #expect(Self.frames(buffers) == 88200)
        #expect(buffers.allSatisfy { ($0["size"] as? Int) == ($0["frames"] as? Int).map { $0 * 4 } })
    }

    /// A reader timeRange [S, S+D) delivers exactly round(D × rate) frames from frame round(S × rate), the slice of
    /// a full decode (AVAssetReader trims partial buffers): ranges starting and ending mid-buffer, one running past
    /// the end; interleaved and non-interleaved. The first sample's PTS is its first frame's time.
    @Test(arguments: ["wav16", "flac"])
    func timeRangesAreSampleExact(_ name: String) throws {
        let file = ["wav16": AudioMedia.wav16, "flac": AudioMedia.flac][name]!
        let daemon = try Daemon()
        defer { daemon.stop() }
        let full = try ffmpegRaw(file, "s16le")
        try #require(full.count == 88200 * 4)
        for (start, duration) in [(0.10001, 0.0501), (0.5012345, 0.3), (0.0, 0.1234567), (1.0, 0.02), (1.9, 1.0)] {
            let args = ["--bit-depth", "16", "--start", String(start), "--duration", String(duration)]
            let first = Int((start * 44100).rounded())
            let count = min(Int((duration * 44100).rounded()), 88200 - first)
            let want = full[first * 4 ..< (first + count) * 4]
            let (ours, buffers) = try read(daemon, file, args)
            #expect(Self.frames(buffers) == count, "\(name) \(start)+\(duration): \(Self.frames(buffers)) frames, want \(count)")
            #expect(ours == want, "\(name) \(start)+\(duration): \(ours.count) bytes differ from ffmpeg's slice (\(want.count))")
            let pts = try #require(buffers.first?["pts"] as? Double)
            #expect(abs(pts - Double(first) / 44100) < 0.000001, "\(name) \(start): first PTS \(pts)")
            let total = buffers.reduce(0.0) { $0 + (($1["duration"] as? Double) ?? 0) }
            #expect(abs(total - Double(count) / 44100) < 0.00002 * Double(buffers.count))
            // Non-interleaved: each buffer's planes are the same frames, deinterleaved.
            let (planar, planarBuffers) = try read(daemon, file, args + ["--non-interleaved"])
            #expect(planarBuffers.map { $0["frames"] as? Int } == buffers.map { $0["frames"] as? Int })
            var expected = Data(capacity: want.count)
            var at = want.startIndex
            for b in buffers {
                let frames = try #require(b["frames"] as? Int)
                for channel in 0..<2 {
                    for f in 0..<frames {
                        let s = at + (f * 2 + channel) * 2
                        expected.append(full[s..<s + 2])
                    }
                }
                at += frames * 4
            }
            #expect(planar == expected, "\(name) \(start)+\(duration): non-interleaved")
        }
    }

    /// The same trimming after random-access resets (the path is shared).
    @Test func resetRangesAreSampleExact() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let full = [UInt8](try ffmpegRaw(AudioMedia.flac, "s16le"))
        let asset = try Asset(path: AudioMedia.flac, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [
            SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.bitDepth: .int(16), SettingsKey.isFloat: .bool(false)])
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        func range(_ s: Double, _ d: Double) -> MediaTimeRange {
            MediaTimeRange(start: MediaTime(seconds: s), duration: MediaTime(seconds: d))
        }
        func slice(_ s: Double, _ d: Double) -> [UInt8] {
            let first = Int((s * 44100).rounded()), count = Int((d * 44100).rounded())
            return Array(full[first * 4 ..< (first + count) * 4])
        }
        func drain() throws -> [UInt8] {
            var bytes: [UInt8] = []
            while let s = try output.copyNextSampleBuffer() { bytes += s.packedBytes() }
            return bytes
        }
        try reader.setTimeRange(range(0.30001, 0.0123))
        #expect(try reader.startReading())
        #expect(try drain() == slice(0.30001, 0.0123))
        try output.reset(forReadingTimeRanges: [range(0.10001, 0.0501), range(1.23456, 0.1)])
        #expect(try drain() == slice(0.10001, 0.0501) + slice(1.23456, 0.1))
        try output.reset(forReadingTimeRanges: [range(0.0, 0.0333)])  // backwards, ending mid-buffer
        #expect(try drain() == slice(0.0, 0.0333))
        output.markConfigurationAsFinal()
        #expect(reader.status == .completed)
    }

    @Test func twentyFourBitWAVIsBitExactAsPacked24() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, buffers) = try read(daemon, AudioMedia.wav24, ["--bit-depth", "24"])
        let theirs = try ffmpegRaw(AudioMedia.wav24, "s24le")
        #expect(theirs.count == 88200 * 6)
        #expect(ours == theirs)
        #expect(Self.frames(buffers) == 88200)
        // 32-bit integer output of the same file is ffmpeg's s32le (the 24 bits shifted up, exactly).
        let (ours32, _) = try read(daemon, AudioMedia.wav24, ["--bit-depth", "32"])
        #expect(ours32 == (try ffmpegRaw(AudioMedia.wav24, "s32le")))
    }

    /// AAC decodes differ by decoder; compare the frame count with ffprobe's and the signal with ffmpeg's decode.
    @Test func aacToSixteenBit() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, buffers) = try read(daemon, Media.clip, ["--bit-depth", "16"])
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=duration_ts",
                                        "-of", "csv=p=0", Media.clip])
        let expected = try #require(Int(probe.text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(expected == 96000)
        let frames = Self.frames(buffers)
        #expect(ours.count == frames * 4)
        // The last, partial AAC packet (768 of its 1024 frames inside the edit list), which qtdemux 1.22 does not
        // push, comes from the sample tables (SETTINGS.md, "AAC in MP4"): exactly the edit's frames.
        #expect(frames == expected, "\(frames) frames, ffprobe says \(expected)")
        // SNR against ffmpeg's decode over the common part, aligned at 0 (both trim the encoder priming):
        // at least 60 dB (float decoders rounded to 16 bits agree to within a few LSB).
        let theirs = try ffmpegRaw(Media.clip, "s16le")
        let n = min(ours.count, theirs.count) / 2
        var signal = 0.0, noise = 0.0
        ours.withUnsafeBytes { a in
            theirs.withUnsafeBytes { b in
                let x = a.bindMemory(to: Int16.self), y = b.bindMemory(to: Int16.self)
                for i in 0..<n {
                    let s = Double(Int16(littleEndian: x[i])), t = Double(Int16(littleEndian: y[i]))
                    signal += s * s
                    noise += (s - t) * (s - t)
                }
            }
        }
        let snr = 10 * log10(signal / max(noise, 1e-9))
        #expect(snr >= 60, "SNR \(snr) dB")
    }

    /// AAC in MP4, whose buffer timestamps run 1024 frames (the encoder priming the edit list skips) ahead of the
    /// timeline: a range is sample-exact at both ends — the decoder's clipping of the first packet and qtdemux's
    /// early stop are both corrected — and, past the decoder's warm-up, holds the same samples as reading the whole
    /// track, at the same frame positions (a one-frame shift of a 440 Hz sine is far above the decoders' ±1 LSB).
    @Test func aacRangesAreSampleExact() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let whole = [UInt8](try read(daemon, Media.clip, ["--bit-depth", "16"]).bytes)
        func samples(_ bytes: [UInt8]) -> [Int16] {
            stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        }
        let all = samples(whole)
        for (start, duration) in [(0.5, 0.5), (1.0, 0.5), (0.3, 1.2)] {
            let (bytes, buffers) = try read(daemon, Media.clip, ["--bit-depth", "16", "--start", "\(start)",
                                                                 "--duration", "\(duration)"])
            let expected = Int((duration * 48000).rounded())
            #expect(Self.frames(buffers) == expected, "[\(start), +\(duration))")
            #expect(bytes.count == expected * 4)
            #expect((buffers.first?["pts"] as? Double).map { abs($0 - start) < 1e-6 } == true)
            let range = samples([UInt8](bytes))
            let first = Int((start * 48000).rounded()), warmUp = 2048
            func worst(shift: Int) -> Int {
                var worst = 0
                for i in (warmUp * 2)..<range.count where (first + shift) * 2 + i < all.count {
                    worst = max(worst, abs(Int(range[i]) - Int(all[(first + shift) * 2 + i])))
                }
                return worst
            }
            #expect(worst(shift: 0) <= 4, "[\(start), +\(duration)): the samples of the whole read")
            #expect(worst(shift: 1) > 16 && worst(shift: -1) > 16, "the comparison sees a one-frame shift")
        }
    }

    @Test func nonInterleavedPlanesAreTheDeinterleavedOutput() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        for (file, depth) in [(AudioMedia.wav16, 16), (Media.clip, 16), (AudioMedia.wav24, 24)] {
            let args = ["--bit-depth", String(depth)]
            let (interleaved, buffers) = try read(daemon, file, args)
            let (planar, planarBuffers) = try read(daemon, file, args + ["--non-interleaved"])
            #expect(planar.count == interleaved.count)
            #expect(buffers.map { $0["frames"] as? Int } == planarBuffers.map { $0["frames"] as? Int })
            let bps = depth / 8
            var expected = Data(capacity: interleaved.count)
            var at = 0
            for b in buffers {
                let frames = try #require(b["frames"] as? Int)
                for channel in 0..<2 {
                    for f in 0..<frames {
                        let start = at + (f * 2 + channel) * bps
                        expected.append(interleaved[start..<start + bps])
                    }
                }
                at += frames * 2 * bps
            }
            #expect(planar == expected, "\(file)")
        }
    }

    @Test func resampledMonoHasTheRequestedRateAndChannels() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, buffers) = try read(daemon, AudioMedia.wav16, ["--sample-rate", "22050", "--channels", "1"])
        let frames = Self.frames(buffers)
        #expect(ours.count == frames * 2)
        #expect(abs(frames - 44100) <= 64, "\(frames) frames for 2 s at 22050 Hz")
        // Durations add up to the file's 2 s.
        let total = buffers.reduce(0.0) { $0 + (($1["duration"] as? Double) ?? 0) }
        #expect(abs(total - 2.0) < 0.01)
        // Float, mono, 8 kHz from AAC: 4 bytes per frame.
        let (f32, fb) = try read(daemon, Media.clip, ["--sample-rate", "8000", "--channels", "1", "--float"])
        #expect(f32.count == Self.frames(fb) * 4)
        #expect(abs(Self.frames(fb) - 16000) <= 200)
    }

    @Test func twoReadsAreIdentical() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let args = ["read", Media.clip, "--sample-rate", "44100", "--channels", "1", "--bit-depth", "24", "--md5"]
        let first = try daemon.trackctl(args), second = try daemon.trackctl(args)
        #expect(first.status == 0 && second.status == 0, "\(first.stderr) \(second.stderr)")
        #expect(first.text.split(separator: "\n").count > 80)
        #expect(first.text == second.text)
        let line = try #require(first.text.split(separator: "\n").first?.split(separator: " "))
        #expect(line.count == 5)
    }

    @Test func trackClientSampleBuffers() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [
            SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isNonInterleaved: .bool(true),
            SettingsKey.bitDepth: .int(32), SettingsKey.isFloat: .bool(true)])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        #expect(output.outputFormat?.format == "lpcm")
        var count = 0
        while let sample = try output.copyNextSampleBuffer() {
            #expect(sample.format == "lpcm" && sample.mediaType == .audio)
            #expect(sample.planes.count == 2)
            #expect(sample.numberOfSamples > 0)
            #expect(sample.planes.allSatisfy { Int($0.rowBytes) == sample.numberOfSamples * 4 && $0.height == 1 })
            #expect(sample.colorimetry == Colorimetry())
            count += 1
        }
        #expect(reader.status == .completed)
        #expect(count > 80)
    }

    @Test func settingsAreRejectedWithApplesMessages() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func message(_ args: [String]) throws -> String {
            let r = try daemon.trackctl(["read", Media.clip] + args)
            #expect(r.status == 1, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("-11861"), "\(r.stderr)")
            return r.stderr
        }
        #expect(try message(["--audio-format", "aac "]).contains("AVAssetReaderOutput does not currently support compressed output"))
        #expect(try message(["--sample-rate", "7999"]).contains("AVSampleRateKey must be a whole number of Hz between 8000 and 192000, not 7999"))
        #expect(try message(["--channels", "0"]).contains("AVNumberOfChannelsKey must be greater than 0, not 0"))
        #expect(try message(["--bit-depth", "12"]).contains("AVLinearPCMBitDepthKey must be 8, 16, 24 or 32, not 12"))
        #expect(try message(["--bit-depth", "16", "--float"]).contains("AVLinearPCMBitDepthKey must be 32 when AVLinearPCMIsFloatKey is YES, not 16"))
        // Audio options on the video track, video settings on the audio track.
        #expect(try message(["--track", "1", "--channels", "1"]).contains("Output settings are not compatible with media type vide"))
        #expect(try message(["--track", "2", "--pixel-format", "BGRA"]).contains("Output settings are not compatible with media type soun"))
    }

    /// The worker validates audio settings again (a raw client skips TrackClient's checks).
    @Test func workerValidatesRawAudioRequests() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip)
        func reply(_ track: UInt32, _ settings: [String: SettingValue]) throws -> Message {
            try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: track, timeRange: .everything,
                                                       settings: settings)))
        }
        let cases: [(UInt32, [String: SettingValue], String)] = [
            (2, ["AVFormatIDKey": .string("aac ")], "AVAssetReaderOutput does not currently support compressed output"),
            (2, ["AVSampleRateConverterAudioQualityKey": .int(127)], "AVAssetReaderOutput does not support AVSampleRateConverterAudioQualityKey"),
            (2, ["AVLinearPCMBitDepthKey": .int(16)], "AVLinearPCMIsFloatKey and AVLinearPCMBitDepthKey must be specified together"),
            (2, ["Width": .int(2)], "Output settings are not compatible with media type soun"),
            (2, ["AVFormatIDKey": .string("lpcm"), "Bogus": .int(1)], "Output settings dictionary contains one or more invalid keys: Bogus"),
            (2, ["AVNumberOfChannelsKey": .int(1), "AVChannelLayoutKey": .dictionary(["mChannelLayoutTag": .int((101 << 16) | 2)])],
             "The number of channels in AVChannelLayoutKey (2) does not match AVNumberOfChannelsKey (1)"),
            (1, ["AVFormatIDKey": .string("lpcm")], "Output settings are not compatible with media type vide"),
        ]
        for (track, settings, text) in cases {
            #expect(try reply(track, settings) == .error(TrackError(.unsupportedOutputSettings, text)), "\(settings)")
        }
        guard case .outputCreated(let created) = try reply(2, [:]) else { Issue.record("audio output not created"); return }
        #expect(created.format == "lpcm" && created.mediaType == .audio)
        try raw.socket.send(.cancelOutput(outputID: created.outputID), requestID: 0)
    }
}
