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
    static let vfr = vfr(frames: 50)
    static func vfr(frames: Int) -> [String] {
        ["-vf", "setpts='if(lt(N,30),N/30,1+(N-30)*0.1)/TB'", "-frames:v", "\(frames)", "-fps_mode", "vfr"]
    }
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

    /// MPEG-PS (ffmpeg's `-f mpeg`, MPEG-2 video) at the same variable rate, three ways: intra-only pictures of over
    /// 6 KB each start a PES of their own (ffmpeg's packs hold 2 KB), so every PES states its picture's PTS
    /// (`intra`); ffmpeg's small I- and P-pictures share PESs, so every other picture of the 0.1 s part has no PTS
    /// (`packed`), its last one too when it has 49 frames (`packed-end`). trackd times those as ffmpeg does: each
    /// shown at the next picture's DTS, the last one frame after its own (PROTOCOL.md §7.2, "MPEG-1/2 video in an
    /// MPEG-PS"). On trackd's timeline (ffprobe's less the first pack's SCR): every decoded frame is ffmpeg's
    /// (framemd5 on the stream's clock: bytes and PTS, which are ffprobe's best_effort_timestamp wherever it states
    /// one) and lasts until the next one (the last its packet's duration); every stored sample is at its frame's PTS
    /// and ffprobe's packet DTS; ReadFrames gives the same frames; minFrameDuration 3000/90000, nominalFrameRate the
    /// frames over their span.
    @Test(arguments: ["intra", "packed", "packed-end"]) func programStreamVFRIsFFmpegs(kind: String) throws {
        let file = Self.programStream(kind)
        let packets = try Probe.packets(file, "v:0")
        let probed = try Probe.frames(file, "v:0")
        let ffmpeg = try Oracle.timedFrameMD5(file, pixFmt: "yuv420p", timeBase: "1:90000")
        let untimed = packets.filter { $0.pts == nil }.count
        try #require(packets.count == ffmpeg.count && probed.count == ffmpeg.count && (kind == "intra") == (untimed == 0),
                     "ffprobe: \(packets.count) packets, \(untimed) without a PTS, \(probed.count) frames; ffmpeg: \(ffmpeg.count)")
        let shown = ffmpeg.map(\.pts)
        #expect(zip(probed, shown).allSatisfy { $0.pts == nil || $0.pts == $1 }, "ffprobe \(probed.map(\.pts)), ffmpeg \(shown)")
        let frame = try #require(packets.last?.duration)
        let end = try #require(shown.last) + frame
        let time = try MPEGStreamDurationTests.timeline(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.naturalTimeScale == 90000 && frame == 3000)
        #expect(track.minFrameDuration == MediaTime(value: 3000, timescale: 90000), "\(track.minFrameDuration)")
        let rate = Double(shown.count * 90000) / Double(end - shown[0])
        #expect(track.nominalFrameRate == rate, "nominalFrameRate \(track.nominalFrameRate), ffmpeg \(rate)")
        #expect(track.timeRangeStart == time(shown[0]) && track.duration == MediaTime(value: end - shown[0], timescale: 90000))
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        #expect(decoded.map { md5Hex($0.packedBytes()) } == ffmpeg.map(\.md5))
        #expect(decoded.map(\.presentationTimeStamp) == shown.map(time))
        let ends = Array(shown.dropFirst()) + [end]
        #expect(decoded.map(\.duration) == zip(shown, ends).map { MediaTime(value: $1 - $0, timescale: 90000) })
        // Stored in decode order, which is display order here (no B-pictures).
        let stored = try TimescaleTests.read(asset, track, nil)
        #expect(stored.map(\.presentationTimeStamp) == shown.map(time))
        #expect(stored.map(\.decodeTimeStamp) == packets.map { $0.dts.map(time) ?? .invalid })
        let indices = [0, 30, 31, 32, 33, 47, shown.count - 2, shown.count - 1]
        let frames = try asset.frames(atIndices: indices.map(UInt64.init), track: track, outputSettings: TimescaleTests.y420)
        #expect(frames.map(\.sample.presentationTimeStamp) == indices.map { time(shown[$0]) })
        #expect(frames.map { md5Hex($0.sample.packedBytes()) } == indices.map { ffmpeg[$0].md5 })
    }

    /// Ranges in the 0.1 s part of the `packed` PS, each read after a seek (the worker decodes from the key frame its
    /// first frame needs), starting and ending at untimed pictures' times, a tick off them, between frames and at the
    /// end (PROTOCOL.md §12.7): decoded, the frames shown during the range, ffmpeg's bytes and PTS; passthrough,
    /// ffprobe's packets from the last key packet shown at or before the start through the last one decoded before
    /// the end, each at its frame's PTS.
    @Test func programStreamVFRRangesAreFFmpegs() throws {
        let file = Self.programStream("packed")
        let packets = try Probe.packets(file, "v:0")
        let ffmpeg = try Oracle.timedFrameMD5(file, pixFmt: "yuv420p", timeBase: "1:90000")
        let shown = ffmpeg.map(\.pts)
        // Decode order is display order: the untimed packets' frames. The first two in the 0.1 s part.
        let untimed = packets.indices.filter { packets[$0].pts == nil && $0 > 30 }
        try #require(untimed.count >= 2 && packets.count == shown.count, "ffprobe: untimed \(untimed)")
        let (a, b) = (untimed[0], untimed[1])
        let end = try #require(shown.last) + 3000
        let cases: [(start: Int64, end: Int64?)] = [
            (shown[a], shown[a + 1]), (shown[a] - 1, shown[a] + 1), (shown[a] + 1, shown[b]), (shown[a - 1] + 4500, shown[b] + 1),
            (shown[b], nil), (shown[b] + 1, shown[b + 3]), (shown[shown.count - 2] + 1, nil),
        ]
        let time = try MPEGStreamDurationTests.timeline(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        for c in cases {
            let range = MediaTimeRange(start: time(c.start), duration: c.end.map { MediaTime(value: $0 - c.start, timescale: 90000) } ?? .positiveInfinity)
            let want = shown.indices.filter { k in (k + 1 < shown.count ? shown[k + 1] : end) > c.start && c.end.map { shown[k] < $0 } ?? true }
            let got = try TimescaleTests.read(asset, track, TimescaleTests.y420, range: range)
            #expect(got.map(\.presentationTimeStamp) == want.map { time(shown[$0]) }, "[\(c.start), \(String(describing: c.end)))")
            #expect(got.map { md5Hex($0.packedBytes()) } == want.map { ffmpeg[$0].md5 }, "[\(c.start), \(String(describing: c.end)))")
            let stored = try TimescaleTests.read(asset, track, nil, range: range)
            let keyed = try zip(packets, shown).map { p, t in (pts: t, dts: try #require(p.dts), key: p.keyframe) }
            #expect(stored.map(\.presentationTimeStamp) == ProgramStreamRangeTests.stored(keyed, start: c.start, end: c.end ?? .max).map(time),
                    "passthrough [\(c.start), \(String(describing: c.end)))")
        }
    }

    /// ffmpeg's `-f mpeg` of the VFR frames: `intra`, `packed` or `packed-end` (programStreamVFRIsFFmpegs).
    static func programStream(_ kind: String) -> String {
        let codec = kind == "intra" ? ["-c:v", "mpeg2video", "-g", "1", "-q:v", "2"] : ["-c:v", "mpeg2video"]
        return Media.make("timing-vfr-\(kind).mpg", source + vfr(frames: kind == "packed-end" ? 49 : 50) + codec + ["-f", "mpeg"])
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
