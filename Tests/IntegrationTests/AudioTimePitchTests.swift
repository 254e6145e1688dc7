import Foundation
import TestSupport
import Testing
import TrackClient

/// `audioTimePitchAlgorithm` on decoded audio outputs (TrackdAudioTimePitchAlgorithm, docs/SETTINGS.md) through a
/// real trackd: trackd reads at rate 1, so each of Apple's four algorithms delivers the bytes of a read without one;
/// any other value fails with -11861 naming the four, the same every time — from TrackClient and trackctl.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AudioTimePitchTests {
    static let lpcm: [String: SettingValue] = [SettingsKey.formatID: .string("lpcm")]
    static let algorithms: [AudioTimePitchAlgorithm] = [.spectral, .timeDomain, .varispeed, .lowQualityZeroLatency]
    static let names = "LowQualityZeroLatency, Spectral, TimeDomain or Varispeed"

    /// The output's reader started (or not) with `algorithm` set (nil: left at its default), and its bytes.
    static func read(_ daemon: Daemon, _ algorithm: AudioTimePitchAlgorithm?) throws -> (bytes: [UInt8], error: TrackError?) {
        let asset = try Asset(path: AudioMedia.flac, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: lpcm)
        #expect(output.audioTimePitchAlgorithm == .spectral, "Apple's default")
        if let algorithm { try output.setAudioTimePitchAlgorithm(algorithm) }
        #expect(output.audioTimePitchAlgorithm == algorithm ?? .spectral)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        guard try reader.startReading() else { return ([], reader.error) }
        #expect(throws: AssetReaderUsageError.self, "settable only before reading starts") {
            try output.setAudioTimePitchAlgorithm(.varispeed)
        }
        var bytes: [UInt8] = []
        while let s = try output.copyNextSampleBuffer() { bytes += s.packedBytes() }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return (bytes, reader.error)
    }

    @Test func eachAlgorithmReadsTheDefaultBytes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let plain = try Self.read(daemon, nil)
        #expect(plain.bytes.count == 88200 * 4)
        for algorithm in Self.algorithms {
            let read = try Self.read(daemon, algorithm)
            #expect(read.error == nil && read.bytes == plain.bytes, "\(algorithm.rawValue): \(read.bytes.count) bytes")
        }
    }

    @Test func otherValuesFailNamingTheFour() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        for name in ["spectral", "Bogus", ""] {
            let want = TrackError(.unsupportedOutputSettings, "TrackdAudioTimePitchAlgorithm must be \(Self.names), not \"\(name)\"")
            for _ in 0..<2 {  // the same answer every time
                #expect(try Self.read(daemon, AudioTimePitchAlgorithm(rawValue: name)).error == want, "\(name)")
            }
        }
    }

    /// trackctl read --audio-time-pitch-algorithm: the default read's bytes (per-buffer MD5s); another name is
    /// refused with the same message.
    @Test func trackctlReadTakesTheAlgorithm() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let plain = try daemon.trackctl(["read", AudioMedia.flac, "--channels", "2", "--md5"])
        #expect(plain.status == 0 && !plain.text.isEmpty, "\(plain.stderr)")
        for algorithm in Self.algorithms {
            let r = try daemon.trackctl(["read", AudioMedia.flac, "--channels", "2", "--audio-time-pitch-algorithm",
                                         algorithm.rawValue, "--md5"])
            #expect(r.status == 0 && r.text == plain.text, "\(algorithm.rawValue): \(r.stderr)")
        }
        for _ in 0..<2 {
            let r = try daemon.trackctl(["read", AudioMedia.flac, "--audio-time-pitch-algorithm", "Bogus", "--md5"])
            #expect(r.status == 1 && r.stderr.contains("-11861")
                    && r.stderr.contains("TrackdAudioTimePitchAlgorithm must be \(Self.names), not \"Bogus\""), "\(r.stderr)")
        }
    }
}
