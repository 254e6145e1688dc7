import Foundation
import TestSupport
import Testing
import TrackClient

/// Vorbis packets have ffmpeg's times and its trims: in Ogg and Matroska/WebM, on files ffmpeg (libvorbis) and
/// GStreamer (vorbisenc) make, every passthrough packet has ffprobe's PTS and duration (integers in the stream's
/// time_base) and its bytes, and the last Ogg packet's end padding (what the last page's granule position leaves
/// out: ffprobe's `discard_padding`) is its TrimDurationAtEnd. Decoded, the frame count is ffmpeg's.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct VorbisTrimsTests {
    static let gstSource = ["audiotestsrc", "num-buffers=50", "samplesperbuffer=1764", "!",
                            "audio/x-raw,rate=44100,channels=2", "!", "vorbisenc"]
    static let files: [String: String] = [
        "ffmpeg-ogg": AudioCountsTests.files["vorbis-ogg"]!.0,
        "ffmpeg-mka": AudioCountsTests.files["vorbis-mka"]!.0,
        "ffmpeg-webm": Media.make("trims-vorbis.webm", AudioCountsTests.sine48 + ["-c:a", "libvorbis", "-ac", "2"]),
        "gst-ogg": Media.makeWithGStreamer("trims-vorbis-gst.ogg", gstSource + ["!", "oggmux"]),
        "gst-webm": Media.makeWithGStreamer("trims-vorbis-gst.webm", gstSource + ["!", "webmmux"]),
    ]

    static func frames(_ time: MediaTime?, rate: Int64) -> Int64 {
        guard let time, time.isNumeric else { return 0 }
        return time.value * rate / Int64(time.timescale)
    }

    @Test(arguments: files.keys.sorted()) func passthroughTimesAndTrimsAreFFprobes(_ name: String) throws {
        let file = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count && stored.count > 2, "\(name): \(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            #expect(PacketTimesTests.same(s.presentationTimeStamp, p.pts, base),
                    "\(name) \(i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1) × \(base)")
            #expect(PacketTimesTests.same(s.duration, p.duration, base),
                    "\(name) \(i): duration \(s.duration), ffprobe \(p.duration ?? -1) × \(base)")
            #expect(s.packedBytes().count == p.size, "\(name) \(i): \(s.packedBytes().count) bytes, ffprobe \(p.size)")
        }
        let rate = try Int64(#require(run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
            "stream=sample_rate", "-of", "csv=p=0", file]).text.split(separator: "\n").first.flatMap { Int64($0) }))
        let starts = stored.map { Self.frames($0.trimDurationAtStart, rate: rate) }
        let ends = stored.map { Self.frames($0.trimDurationAtEnd, rate: rate) }
        #expect(starts == packets.map { $0.skip?.start ?? 0 }, "\(name): start trims \(starts.filter { $0 != 0 })")
        #expect(ends == packets.map { $0.skip?.end ?? 0 }, "\(name): end trims \(ends.filter { $0 != 0 })")
    }

    /// Decoded: ffmpeg's frame count, its first frame's PTS (within half a tick of its time base: a Matroska block
    /// time is whole milliseconds), and its samples (libvorbis's floats against ffmpeg's own decoder: within
    /// 2 × 10⁻⁵ of full scale, as AudioCountsTests).
    @Test(arguments: files.keys.sorted()) func decodedIsFFmpegs(_ name: String) throws {
        let file = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let theirs = try Probe.frames(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true),
                                                SettingsKey.bitDepth: .int(32)]
        let ours = try LostSamplesTests.read(daemon, file, .audio, settings).samples
        let count = ours.reduce(0) { $0 + $1.numberOfSamples }
        #expect(count == theirs.reduce(0) { $0 + ($1.samples ?? 0) }, "\(name): \(count) frames decoded")
        let first = try #require(ours.first?.presentationTimeStamp), firstTheirs = try #require(theirs.first?.pts)
        #expect(2 * abs(first.value * base.den - firstTheirs * base.num * Int64(first.timescale)) <= Int64(first.timescale) * base.num,
                "\(name): first PTS \(first), ffmpeg \(firstTheirs) × \(base)")
        let a = ours.flatMap { $0.packedBytes() }.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let b = try [UInt8](run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0", "-f", "f32le", "-"]).stdout)
            .withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 0
        #expect(a.count == b.count && worst < 2e-5, "\(name): \(a.count) samples, ffmpeg \(b.count); up to \(worst) apart")
    }
}
