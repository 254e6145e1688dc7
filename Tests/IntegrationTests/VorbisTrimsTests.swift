import Foundation
import TestSupport
import Testing
import TrackClient

/// Vorbis packets have ffmpeg's times and its trims: in Ogg and Matroska/WebM, on files ffmpeg (libvorbis) and
/// GStreamer (vorbisenc) make, every passthrough packet has ffprobe's PTS and duration (integers in the stream's
/// time_base) and its bytes, and the last Ogg packet's end padding (what the last page's granule position leaves
/// out: ffprobe's `discard_padding`) is its TrimDurationAtEnd. Decoded, the frame count is ffmpeg's. Short files put
/// all their audio on one page, the stream's last, where ffmpeg starts the first packet at 0 and trackd, as libvorbis
/// decodes it, 128 frames earlier (a deliberate difference, PROTOCOL.md: ffmpeg's decoder then drops the source's
/// last 128 frames and delivers the others 128 frames late; trackd's are the source's, at its times).
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
        "ffmpeg-ogg-one-page": Media.make("trims-vorbis-short.ogg", shortSine + ["-c:a", "libvorbis", "-ac", "2"]),
        "gst-ogg-one-page": Media.makeWithGStreamer("trims-vorbis-gst-short.ogg",
                                                    ["audiotestsrc", "num-buffers=5"] + gstSource.dropFirst(2) + ["!", "oggmux"]),
    ]
    static let shortSine = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=0.1"]

    /// The pages of an Ogg file whose granule position is not 0 (the header pages' is): its audio pages.
    static func audioPages(_ file: String) throws -> Int {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        var (at, pages) = (0, 0)
        while at + 27 <= bytes.count, at + 27 + Int(bytes[at + 26]) <= bytes.count {
            let lacing = bytes[(at + 27)..<(at + 27 + Int(bytes[at + 26]))]
            if bytes[(at + 6)..<(at + 14)].contains(where: { $0 != 0 }) { pages += 1 }
            at += 27 + lacing.count + lacing.reduce(0) { $0 + Int($1) }
        }
        return pages
    }

    /// How much later ffmpeg places a stream's packets than libvorbis's granule rule: on a stream whose only audio page
    /// is its last, ffprobe's first packet's duration (128 frames); else 0.
    static func ffmpegIsLate(_ name: String, _ packets: [Probe.Packet]) throws -> Int64 {
        name.hasSuffix("one-page") ? try #require(packets.first?.duration) : 0
    }

    /// ffprobe's packets, each `late` earlier but the last, which ends where ffprobe's does (lasting `late` more,
    /// its end padding `late` less).
    static func earlier(_ packets: [Probe.Packet], by late: Int64) -> [Probe.Packet] {
        guard late != 0, var last = packets.last, let skip = last.skip else { return packets }
        var placed = packets.map { p in
            var p = p
            p.pts = p.pts.map { $0 - late }
            p.dts = p.dts.map { $0 - late }
            return p
        }
        last = placed[placed.count - 1]
        last.duration = last.duration.map { $0 + late }
        last.skip = (skip.start, skip.end - late)
        placed[placed.count - 1] = last
        return placed
    }

    static func frames(_ time: MediaTime?, rate: Int64) -> Int64 {
        guard let time, time.isNumeric else { return 0 }
        return time.value * rate / Int64(time.timescale)
    }

    @Test(arguments: files.keys.sorted()) func passthroughTimesAndTrimsAreFFprobes(_ name: String) throws {
        let file = try #require(Self.files[name])
        if name.hasSuffix("one-page") { try #require(try Self.audioPages(file) == 1, "\(name): more than one audio page") }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let probed = try Probe.packets(file, "a:0")
        let packets = Self.earlier(probed, by: try Self.ffmpegIsLate(name, probed))
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
    /// 2 × 10⁻⁵ of full scale, as AudioCountsTests). A stream on one page: ffmpeg's frames and 128 after them, from
    /// 128 frames before ffmpeg's first PTS.
    @Test(arguments: files.keys.sorted()) func decodedIsFFmpegs(_ name: String) throws {
        let file = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let theirs = try Probe.frames(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true),
                                                SettingsKey.bitDepth: .int(32)]
        let late = try Self.ffmpegIsLate(name, try Probe.packets(file, "a:0"))
        let ours = try LostSamplesTests.read(daemon, file, .audio, settings).samples
        let count = ours.reduce(0) { $0 + $1.numberOfSamples }, theirCount = theirs.reduce(0) { $0 + ($1.samples ?? 0) }
        #expect(count == theirCount + Int(late), "\(name): \(count) frames decoded, ffmpeg \(theirCount)")
        let first = try #require(ours.first?.presentationTimeStamp), firstTheirs = try #require(theirs.first?.pts) - late
        #expect(2 * abs(first.value * base.den - firstTheirs * base.num * Int64(first.timescale)) <= Int64(first.timescale) * base.num,
                "\(name): first PTS \(first), ffmpeg \(firstTheirs) × \(base)")
        let a = ours.flatMap { $0.packedBytes() }.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let b = try [UInt8](run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:a:0", "-f", "f32le", "-"]).stdout)
            .withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 0
        #expect(a.count * theirCount == b.count * count && worst < 2e-5, "\(name): \(a.count) samples, ffmpeg \(b.count); up to \(worst) apart")
    }

    /// The source of a stream on one page (ffmpeg's 0.1 s sine), decoded: all its frames at its times — within
    /// 0.01 of full scale (libvorbis's coding; the sine's peak is 0.125), where ffmpeg's decode, 128 frames late,
    /// is more than 0.05 off its source at the same times.
    @Test func aStreamOnOnePageDecodesToItsSource() throws {
        let file = try #require(Self.files["ffmpeg-ogg-one-page"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(true),
                                                SettingsKey.bitDepth: .int(32)]
        let ours = try LostSamplesTests.read(daemon, file, .audio, settings).samples
        #expect(ours.first?.presentationTimeStamp.value == 0)
        func floats(_ args: [String]) throws -> [Float] {
            try [UInt8](run("ffmpeg", ["-v", "error"] + args + ["-ac", "2", "-f", "f32le", "-"]).stdout)
                .withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
        let source = try floats(Self.shortSine), theirs = try floats(["-i", file])
        let a = ours.flatMap { $0.packedBytes() }.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let worst = zip(a, source).map { abs($0 - $1) }.max() ?? 1
        #expect(a.count == source.count && worst < 0.01, "\(a.count) samples, the source \(source.count); up to \(worst) apart")
        let theirsLate = zip(theirs, source.dropFirst(2 * 128)).map { abs($0 - $1) }.max() ?? 0
        #expect(theirs.count == source.count - 2 * 128 && theirsLate > 0.05, "ffmpeg: \(theirs.count), \(theirsLate) off")
    }
}
