import Foundation
import TestSupport
import Testing
import TrackClient

/// AVAssetTrack's frame timing in every container (PROTOCOL.md §7.2): `minFrameDuration` is the smallest difference
/// between consecutive presentation times, `nominalFrameRate` the frame count over the track's span — against
/// ffprobe's packets (integer PTS in the time_base) on ffmpeg-made files whose first 30 frames are 1/30 s apart
/// and their last 20 0.1 s apart, and on constant-rate ones; through TrackClient and `trackctl tracks`.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FrameTimingTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=3"]
    /// Frames 0–29 at N/30 s, then 30–49 at 1 + (N − 30)/10 s.
    static let vfr = ["-vf", "setpts='if(lt(N,30),N/30,1+(N-30)*0.1)/TB'", "-frames:v", "50", "-fps_mode", "vfr"]
    static let cfr = ["-frames:v", "60"]
    static let x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p"]
    /// AVI stores decode times only: no B-frames, so that they are the presentation times.
    static let x264NoB = ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "15", "-pix_fmt", "yuv420p"]
    static let vp9 = ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "15"]
    static let containers: [(name: String, codec: [String])] = [
        ("mp4", x264), ("mov", x264), ("mkv", x264), ("webm", vp9), ("ts", x264), ("avi", x264NoB),
    ]
    /// vfr-avi: ffmpeg writes an empty chunk for each skipped tick, which is no sample (ffprobe's 50 packets); its
    /// frames are indexed at their decode times, the only times AVI stores — PROTOCOL.md §7.2.
    static let kinds = containers.flatMap { ["vfr-" + $0.name, "cfr-" + $0.name] }

    static func file(_ kind: String) throws -> String {
        let rate = String(kind.prefix(3)), container = String(kind.dropFirst(4))
        let codec = try #require(containers.first { $0.name == container }?.codec)
        return Media.make("timing-\(rate).\(container)", source + (rate == "vfr" ? vfr : cfr) + codec)
    }

    /// ffprobe's view: frames, the smallest PTS difference and the span (first PTS to the end of the last frame in
    /// presentation order, its PTS + duration), in time_base units.
    struct Expected {
        var frames: Int
        var minDelta: Int64
        var end: Int64
        var first: Int64
        var base: (num: Int64, den: Int64)
    }

    static func expected(_ file: String) throws -> Expected {
        let base = try Probe.timeBase(file, "v:0")
        // AVI: ffprobe lists decode times only (pts N/A); without B-frames they are the presentation times.
        let packets = try Probe.packets(file, "v:0").map { (pts: $0.pts ?? $0.dts ?? -1, duration: $0.duration ?? 0) }
        let sorted = packets.sorted { $0.pts < $1.pts }
        let times = sorted.map(\.pts)
        let minDelta = try #require(zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 0 }.min())
        let last = try #require(sorted.last)
        return Expected(frames: packets.count, minDelta: minDelta, end: last.pts + last.duration,
                        first: times[0], base: base)
    }

    @Test(arguments: kinds) func frameTimingIsFFprobes(kind: String) throws {
        let file = try Self.file(kind)
        let want = try Self.expected(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let scale = Int64(track.naturalTimeScale)
        #expect(want.base.num * scale == want.base.den, "\(kind): timescale \(scale), time_base \(want.base)")
        #expect(PacketTimesTests.same(track.minFrameDuration, want.minDelta, want.base),
                "\(kind): minFrameDuration \(track.minFrameDuration), ffprobe \(want.minDelta)/\(want.base.den)")
        let span = want.end - want.first
        let rate = Double(Int128(want.frames) * Int128(want.base.den)) / Double(Int128(span) * Int128(want.base.num))
        #expect(track.nominalFrameRate == rate, "\(kind): nominalFrameRate \(track.nominalFrameRate), ffprobe \(want.frames) frames over \(span)/\(want.base.den)")
        if kind.hasPrefix("vfr") {
            #expect(abs(want.minDelta * 30 * want.base.num - want.base.den) < 30 * want.base.num, "\(kind): about 1/30 s")
            #expect(abs(track.nominalFrameRate - 50 / 2.933) < 0.05, "\(kind): \(track.nominalFrameRate)")
        } else {
            #expect(abs(track.nominalFrameRate - 30) < 0.05, "\(kind): \(track.nominalFrameRate)")
        }
    }

    /// The VFR AVI's stored samples and decoded frames are ffprobe's 50 packets (not its 88 chunks): passthrough
    /// DTS and decoded PTS are the packets' `dts` in the time_base, each decoded frame lasts until the next one (the
    /// last until the track's end, the last packet's end); ReadFrames gives the same frames.
    @Test func vfrAVISamplesAreFFprobesPackets() throws {
        let file = try Self.file("vfr-avi")
        let packets = try Probe.packets(file, "v:0")
        let ticks = packets.compactMap(\.dts)
        try #require(ticks.count == 50 && ticks.last == 87, "ffprobe: \(ticks)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let stored = try LostSamplesTests.read(daemon, file, .video, nil)
        #expect(stored.samples.map(\.decodeTimeStamp) == ticks.map { MediaTime(value: $0, timescale: 30) })
        let decoded = try LostSamplesTests.read(daemon, file, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.samples.map(\.presentationTimeStamp) == ticks.map { MediaTime(value: $0, timescale: 30) })
        let ends = Array(ticks.dropFirst()) + [88]
        #expect(decoded.samples.map(\.duration) == zip(ticks, ends).map { MediaTime(value: $1 - $0, timescale: 30) })
        #expect(stored.lost == 0 && decoded.lost == 0)
        // ReadFrames names the same frames: indices across GOPs, within one, and the last (each a frame after a
        // seek, which the decoder would otherwise time by guess).
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let indices: [UInt64] = [0, 31, 35, 44, 46, 47, 49]
        let frames = try asset.frames(atIndices: indices, track: track, outputSettings: [SettingsKey.pixelFormatType: .string("y420")])
        #expect(frames.map(\.sample.presentationTimeStamp) == indices.map { MediaTime(value: ticks[Int($0)], timescale: 30) })
        #expect(frames.map { md5Hex($0.sample.packedBytes()) } == indices.map { md5Hex(decoded.samples[Int($0)].packedBytes()) })
    }

    /// MPEG-PS (ffmpeg's `-f mpeg`, MPEG-2 video) at the same variable rate. Intra-only pictures of over 6 KB each
    /// start a PES of their own (ffmpeg's packs hold 2 KB), so every picture's PES states its PTS: the times are the
    /// muxer's, none placed (PROTOCOL.md §7.2, "MPEG-1/2 video in an MPEG-PS"). On trackd's timeline (ffprobe's less
    /// the first pack's SCR): minFrameDuration 3000/90000, nominalFrameRate 50 over the span, every decoded frame
    /// ffmpeg's at its packet's PTS lasting until the next one (the last its packet's duration), every stored sample
    /// at its packet's PTS.
    @Test func programStreamVFRIsFFprobes() throws {
        let file = Media.make("timing-vfr.mpg", Self.source + Self.vfr + ["-c:v", "mpeg2video", "-g", "1", "-q:v", "2", "-f", "mpeg"])
        let packets = try Probe.packets(file, "v:0")
        let pts = packets.compactMap(\.pts)
        try #require(packets.count == 50 && pts.count == 50, "ffprobe: \(packets.count) packets, \(pts.count) with a PTS")
        let want = try Self.expected(file)
        #expect(want.base == (1, 90000) && want.minDelta == 3000, "\(want.base), \(want.minDelta)")
        let time = try MPEGStreamDurationTests.timeline(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.naturalTimeScale == 90000)
        #expect(track.minFrameDuration == MediaTime(value: 3000, timescale: 90000), "\(track.minFrameDuration)")
        let rate = Double(Int64(want.frames) * want.base.den) / Double((want.end - want.first) * want.base.num)
        #expect(track.nominalFrameRate == rate, "nominalFrameRate \(track.nominalFrameRate), ffprobe \(rate)")
        #expect(abs(track.nominalFrameRate - 50 / 2.933) < 0.05, "\(track.nominalFrameRate)")
        #expect(track.timeRangeStart == time(want.first) && track.duration == MediaTime(value: want.end - want.first, timescale: 90000))
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        #expect(decoded.map { md5Hex($0.packedBytes()) } == (try Oracle.frameMD5(file, pixFmt: "yuv420p")).map(\.md5))
        let shown = pts.sorted()
        #expect(decoded.map(\.presentationTimeStamp) == shown.map(time))
        let ends = Array(shown.dropFirst()) + [want.end]
        #expect(decoded.map(\.duration) == zip(shown, ends).map { MediaTime(value: $1 - $0, timescale: 90000) })
        let stored = try TimescaleTests.read(asset, track, nil)
        #expect(stored.map(\.presentationTimeStamp) == pts.map(time))
    }

    /// An MP4 whose edit ends inside its last sample (TimescaleTests' VFR file: the last frame stored as 0.1 s, the
    /// edit ending 34 ms after its PTS): the track lasts the edit (read from the elst here), its last frame is shown
    /// until then — the span of `nominalFrameRate`, so rate × duration = frames — and its last decoded frame lasts
    /// that long. Frames and the smallest PTS difference are ffprobe's.
    @Test func anEditEndingInsideTheLastFrameEndsTheSpan() throws {
        let file = try #require(TimescaleTests.files["vfr-mp4"])
        let times = try Probe.packets(file, "v:0").compactMap(\.pts).sorted()
        let (movieScale, raw) = try SegmentTests.rawEdits(file)
        let edit = try #require(raw.first?.edits.first)
        let scale = try #require(raw.first?.mediaTimescale)
        let end = (edit.duration * scale + movieScale / 2) / movieScale  // the edit's end on the media timescale
        let last = try #require(times.last)
        // The last sample's stored duration (its stts delta): the edit ends inside it.
        let stored = try Self.storedDuration(file, presentedAt: last + (edit.mediaTime))
        try #require(end > last && end < last + stored, "the edit ends at \(end), the last frame at \(last) for \(stored)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.duration == MediaTime(value: end, timescale: Int32(scale)) && track.timeRangeStart.value == 0)
        #expect(track.nominalFrameRate == Double(Int64(times.count) * scale) / Double(end), "\(track.nominalFrameRate)")
        let deltas = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(track.minFrameDuration == MediaTime(value: try #require(deltas.min()), timescale: Int32(scale)))
        let decoded = try LostSamplesTests.read(daemon, file, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.samples.count == times.count)
        #expect(decoded.samples.last?.duration == MediaTime(value: end - last, timescale: Int32(scale)))
    }

    /// The stts delta of the first video track's sample presented at media time `pts` (stts + ctts read here).
    static func storedDuration(_ file: String, presentedAt pts: Int64) throws -> Int64 {
        let bytes = try #require(FileManager.default.contents(atPath: file)).map { $0 }
        var level = bytes[...]
        for name in ["moov", "trak", "mdia", "minf", "stbl"] {
            level = try #require(SegmentTests.boxes(level).first { $0.0 == name }?.1, "no \(name)")
        }
        let runs = { (name: String) -> [Int64] in
            guard let b = SegmentTests.boxes(level).first(where: { $0.0 == name })?.1 else { return [] }
            return (0..<Int(SegmentTests.be(b, 4, 4))).flatMap { i in
                [Int64](repeating: SegmentTests.be(b, 12 + 8 * i, 4), count: Int(SegmentTests.be(b, 8 + 8 * i, 4)))
            }
        }
        let deltas = runs("stts"), offsets = runs("ctts")
        var dts: Int64 = 0
        for (i, delta) in deltas.enumerated() {
            if dts + (i < offsets.count ? offsets[i] : 0) == pts { return delta }
            dts += delta
        }
        throw ProbeError.noStream(file, "no sample at \(pts)")
    }

    /// `trackctl tracks` prints both: the FPS column and "min frame duration" in the table, the JSON's fields.
    @Test func trackctlTracksPrintsThem() throws {
        let file = try Self.file("vfr-mkv")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let table = try daemon.trackctl(["tracks", file])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.text.contains("min frame duration 33/1000"), "\(table.text)")
        #expect(table.text.contains(String(format: "%.3f", track.nominalFrameRate)), "\(table.text)")
        let json = try FormatDescriptionTests.tracksJSON(daemon, file).first { $0["mediaType"] as? String == "video" }
        #expect(json?["minFrameDuration"] as? String == "33/1000")
        #expect((json?["nominalFrameRate"] as? Double).map { abs($0 - track.nominalFrameRate) < 0.0005 } == true)
    }
}
