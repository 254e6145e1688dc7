import Foundation
import TestSupport
import Testing
import TrackClient

/// Vorbis read from a time range starting mid-file (a seek into the track), against ffmpeg's whole-file reading of the
/// same ffmpeg-made files. Passthrough: ffprobe's packets from the last whose PTS is at or before the range's start
/// through the last whose PTS is before its end — PTS, duration (integers in the stream's time
/// base), size and trims — though the demuxer starts at its own unit, an Ogg page or a Matroska cluster, up to a
/// second before. Decoded: round(start × rate) as the first frame, round(duration × rate) frames, and the same slice
/// of ffmpeg's whole decode (its frame k at its first frame's PTS + k), within 2 × 10⁻⁵ of full scale (libvorbis
/// against ffmpeg's own decoder, as AudioCountsTests). A gated sine makes libvorbis switch between short and long
/// blocks; in Ogg ffprobe then lists some short blocks after long ones as 128 frames, not the 576 they decode to
/// (PROTOCOL.md, Vorbis), so that file is compared decoded only.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct VorbisRangesTests {
    static let gated = ["-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*440*t)*lt(mod(t\\,0.1)\\,0.05):s=44100:d=2", "-c:a", "libvorbis"]
    static let passthroughFiles: [String: String] = [
        "ogg": AudioCountsTests.files["vorbis-ogg"]!.0,
        "mka-gated": Media.make("ranges-vorbis-gated.mka", gated),
        "webm-gated": Media.make("ranges-vorbis-gated.webm", gated),
    ]
    static let decodedFiles: [String: String] = [
        "ogg": AudioCountsTests.files["vorbis-ogg"]!.0,
        "ogg-gated": Media.make("ranges-vorbis-gated.ogg", gated),
    ]
    /// (start, duration) in hundredths of a second: inside an Ogg page, a Matroska cluster, a libvorbis block.
    static let ranges: [(Int64, Int64)] = [(52, 20), (123, 20), (170, 20)]

    static func read(_ daemon: Daemon, _ file: String, _ range: (Int64, Int64), _ settings: [String: SettingValue]?)
        throws -> [SampleBuffer] {
        try AudioRangesTests.read(daemon, file, range, rate: 100, settings)
    }

    @Test(arguments: passthroughFiles.keys.sorted()) func passthroughIsFFprobesPackets(_ name: String) throws {
        let file = try #require(Self.passthroughFiles[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        for (start, length) in Self.ranges {
            // In the time base: t × num / den s against c / 100 s.
            let first = try #require(packets.lastIndex { ($0.pts ?? 0) * base.num * 100 <= start * base.den })
            let wanted = packets[first...].prefix { ($0.pts ?? 0) * base.num * 100 < (start + length) * base.den }
            let stored = try Self.read(daemon, file, (start, length), nil)
            #expect(stored.count == wanted.count, "\(name) \(start): \(stored.count) samples, ffprobe's range \(wanted.count)")
            for (i, (s, p)) in zip(stored, wanted).enumerated() {
                let same = PacketTimesTests.same(s.presentationTimeStamp, p.pts, base)
                    && PacketTimesTests.same(s.duration, p.duration, base) && s.packedBytes().count == p.size
                #expect(same, "\(name) \(start) \(i): \(s.presentationTimeStamp) lasting \(s.duration), \(s.packedBytes().count) bytes; ffprobe \(p.pts ?? -1) lasting \(p.duration ?? -1), \(p.size) × \(base)")
                #expect(s.trimDurationAtStart == nil && s.trimDurationAtEnd == nil && p.skip == nil, "\(name) \(start) \(i): trims")
            }
        }
    }

    @Test(arguments: decodedFiles.keys.sorted()) func decodedIsFFmpegsSlice(_ name: String) throws {
        let file = try #require(Self.decodedFiles[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let frames = try Probe.frames(file, "a:0")
        let firstPTS = try #require(frames.first?.pts)  // 1/44100: Ogg's time base
        try #require(try Probe.timeBase(file, "a:0") == (1, 44100))
        let whole = try [UInt8](run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0", "-f", "f32le", "-"]).stdout)
            .withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let channels = whole.count / frames.reduce(0) { $0 + ($1.samples ?? 0) }
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true),
                                                SettingsKey.bitDepth: .int(32)]
        for (start, length) in Self.ranges {
            let ours = try Self.read(daemon, file, (start, length), settings)
            let first = start * 441, count = length * 441  // round(c / 100 × 44100)
            let pts = try #require(ours.first?.presentationTimeStamp)
            #expect(pts.value * 44100 == first * Int64(pts.timescale), "\(name) \(start): first PTS \(pts), want \(first)/44100")
            #expect(ours.reduce(0) { $0 + $1.numberOfSamples } == Int(count), "\(name) \(start): frames")
            let a = ours.flatMap { $0.packedBytes() }.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let from = Int(first - firstPTS) * channels
            try #require(from >= 0 && from <= whole.count, "\(name) \(start): ffmpeg's decode starts at \(firstPTS)")
            let b = whole[from..<min(whole.count, from + Int(count) * channels)]
            let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 1
            #expect(a.count == b.count && worst < 2e-5, "\(name) \(start): \(a.count) samples, ffmpeg's slice \(b.count); up to \(worst) apart")
        }
    }
}
