import Foundation
import TestSupport
import Testing
import TrackClient

/// A video track's colour description (range, matrix, primaries, transfer) is ffprobe's color_range, color_space,
/// color_primaries and color_transfer for x264 and x265 streams whose SPS states them, in MP4, Matroska and
/// MPEG-TS — as libavcodec decides: H.264's colour over the container's, field by field; HEVC's in its place — and
/// frames decode with that range.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ColourDescriptionTests {
    static let (w, h) = (FormatTests.w, FormatTests.h)

    /// x264 encodings: full range with a BT.709 colour description; full range alone; and a clash — the muxer's
    /// colour (MP4 colr, Matroska Colour) says BT.601 video range, the SPS BT.709 full range.
    static let variants: [String: [String]] = [
        "full709": ["-color_range", "pc", "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
                    "-x264-params", "fullrange=on"],
        "fullonly": ["-color_range", "pc", "-x264-params", "fullrange=on"],
        "clash": ["-color_range", "tv", "-colorspace", "bt470bg", "-color_primaries", "bt470bg", "-color_trc", "smpte170m",
                  "-x264-params", "fullrange=on:colorprim=bt709:transfer=bt709:colormatrix=bt709"],
    ]

    static func make(_ variant: String, _ container: String, pixFmt: String = "yuv420p") -> String {
        Media.make("colour-\(variant)-\(pixFmt).\(container)", [
            "-f", "lavfi", "-i", "testsrc2=size=\(w)x\(h):rate=25:duration=0.4", "-c:v", "libx264", "-preset", "veryfast",
            "-pix_fmt", pixFmt,
        ] + variants[variant]!)
    }

    /// x265 encodings: the x264 ones (ffmpeg's libx265 writes the colour options into the VUI as well), BT.601 video
    /// range, and a stream that states nothing in a container that says BT.709 full range (a stream copy with the
    /// container's colour set) — libavcodec reads it as video range, colour unspecified.
    static let hevcVariants: [String: [String]] = [
        "full709": Array(variants["full709"]!.dropLast(2)) + ["-x265-params", "log-level=error:range=full"],
        "fullonly": ["-color_range", "pc", "-x265-params", "log-level=error:range=full"],
        "bt601": ["-color_range", "tv", "-colorspace", "smpte170m", "-color_primaries", "smpte170m", "-color_trc", "smpte170m",
                  "-x265-params", "log-level=error"],
        "clash": Array(variants["clash"]!.dropLast(2)) + ["-x265-params", "log-level=error:range=full:colorprim=bt709:transfer=bt709:colormatrix=bt709"],
    ]

    static func makeHEVC(_ variant: String, _ container: String) -> String {
        let source = ["-f", "lavfi", "-i", "testsrc2=size=\(w)x\(h):rate=25:duration=0.4", "-c:v", "libx265", "-preset", "veryfast",
                      "-pix_fmt", "yuv420p"]
        guard variant == "silent" else { return Media.make("colour-hevc-\(variant).\(container)", source + hevcVariants[variant]!) }
        let plain = Media.make("colour-hevc-plain.mkv", source + ["-x265-params", "log-level=error"])
        return Media.make("colour-hevc-silent.\(container)", ["-i", plain, "-c", "copy", "-color_range", "pc", "-colorspace", "bt709",
                                                             "-color_primaries", "bt709", "-color_trc", "bt709"])
    }

    /// ffmpeg's names as H.273 code points (trackctl prints the code, null for 2, unspecified).
    static let codes: [String: Int] = ["bt709": 1, "bt470bg": 5, "smpte170m": 6]

    @Test(arguments: ["full709", "fullonly", "clash"], ["mp4", "mkv", "ts"])
    func colourIsFfprobes(_ variant: String, _ container: String) throws {
        try Self.expectFfprobesColour(Self.make(variant, container), range: "pc", "\(variant).\(container)")
    }

    @Test(arguments: ["full709", "fullonly", "bt601", "clash", "silent"], ["mp4", "mkv", "ts"])
    func hevcColourIsFfprobes(_ variant: String, _ container: String) throws {
        let range = ["bt601": "tv", "silent": "tv"][variant] ?? "pc"
        try Self.expectFfprobesColour(Self.makeHEVC(variant, container), range: range, "hevc \(variant).\(container)")
    }

    /// `trackctl tracks` names ffprobe's colour for `file`, whose range ffprobe names `range`.
    static func expectFfprobesColour(_ file: String, range: String, _ name: String) throws {
        let v = try ffprobeColour(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["tracks", file, "--json"])
        let t = try #require((try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])?.first)
        let what = "\(name): ffprobe \(v), trackd \(t.filter { $0.key.hasPrefix("color") })"
        #expect(v["color_range"] as? String == range, "\(what)")
        #expect(t["colorRange"] as? String == v["color_range"] as? String, "\(what)")
        #expect(t["colorMatrix"] as? Int == (v["color_space"] as? String).flatMap { Self.codes[$0] }, "\(what)")
        #expect(t["colorPrimaries"] as? Int == (v["color_primaries"] as? String).flatMap { Self.codes[$0] }, "\(what)")
        #expect(t["colorTransfer"] as? Int == (v["color_transfer"] as? String).flatMap { Self.codes[$0] }, "\(what)")
    }

    /// x264 streams that state their colour — BT.709; BT.601 full range — and ones that state none: no signal type
    /// (x264's default); a colour description of 2s (unspecified); code points ffmpeg reads as unspecified or names
    /// `reserved` (primaries 13 and 0, transfer 3 and 0, matrix 15 and 3: h264_metadata writes them into the SPS);
    /// unspecified in the SPS over a container that says BT.709 (libavcodec's H.264 rule: the SPS wins).
    static let statedOrNot: [String: [String]] = [
        "bt709": ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709"],
        "bt601full": ["-color_range", "pc", "-colorspace", "smpte170m", "-color_primaries", "smpte170m",
                      "-color_trc", "smpte170m", "-x264-params", "fullrange=on"],
        "none": [],
        "vui2": ["-bsf:v", "h264_metadata=colour_primaries=2:transfer_characteristics=2:matrix_coefficients=2"],
        "unassigned": ["-bsf:v", "h264_metadata=colour_primaries=13:transfer_characteristics=3:matrix_coefficients=15"],
        "reserved": ["-bsf:v", "h264_metadata=colour_primaries=0:transfer_characteristics=0:matrix_coefficients=3"],
        "vui2over709": ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709",
                        "-bsf:v", "h264_metadata=colour_primaries=2:transfer_characteristics=2:matrix_coefficients=2"],
    ]

    /// What trackd states is ffprobe's colour, and what ffprobe calls `unknown` or `reserved` (or leaves out) trackd
    /// leaves out — null in `trackctl tracks --json`, nil in TrackClient's stated fields, 2 (unspecified) or range
    /// 0 on the wire (PROTOCOL.md §7.3).
    @Test(arguments: ["bt709", "bt601full", "none", "vui2", "unassigned", "reserved", "vui2over709"], ["mp4", "mkv", "ts"])
    func unspecifiedColourIsAbsent(_ variant: String, _ container: String) throws {
        let file = Media.make("colour-stated-\(variant).\(container)", [
            "-f", "lavfi", "-i", "testsrc2=size=\(Self.w)x\(Self.h):rate=25:duration=0.4", "-c:v", "libx264",
            "-preset", "veryfast", "-pix_fmt", "yuv420p"] + Self.statedOrNot[variant]!)
        let v = try Self.ffprobeColour(file)
        func code(_ key: String) -> String? {
            guard let name = v[key] as? String, !["unknown", "reserved"].contains(name) else { return nil }
            guard let code = Self.codes[name] else {
                Issue.record("\(variant).\(container): ffprobe's \(key) \(name) is not in the table")
                return name
            }
            return String(code)
        }
        let expected = [v["color_range"] as? String == "unknown" ? nil : v["color_range"] as? String,
                        code("color_space"), code("color_primaries"), code("color_transfer")]
        let daemon = try Daemon()
        defer { daemon.stop() }
        let c = try #require(try Asset(path: file, socketPath: daemon.socketPath).tracks(withMediaType: .video).first).colorimetry
        let client = [c.statedRange.map { $0 == 2 ? "pc" : "tv" }, c.statedMatrix.map { "\($0)" },
                      c.statedPrimaries.map { "\($0)" }, c.statedTransfer.map { "\($0)" }]
        let r = try daemon.trackctl(["tracks", file, "--json"])
        let t = try #require((try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])?.first)
        let json = [t["colorRange"] as? String] + ["colorMatrix", "colorPrimaries", "colorTransfer"].map { (t[$0] as? Int).map(String.init) }
        let what = "\(variant).\(container): ffprobe \(v), TrackClient \(c)"
        #expect(client == expected, "\(what)")
        #expect(json == expected, "\(what), trackctl \(t.filter { $0.key.hasPrefix("color") })")
        if variant == "bt709" || variant == "bt601full" { #expect(expected.allSatisfy { $0 != nil }, "\(what)") }
    }

    /// ffprobe's color_range, color_space, color_primaries and color_transfer of the first video stream.
    static func ffprobeColour(_ file: String) throws -> [String: Any] {
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                        "stream=color_range,color_space,color_primaries,color_transfer", "-of", "json", file])
        let streams = (try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])?["streams"] as? [[String: Any]]
        return try #require(streams?.first)
    }

    /// Frames decode as full range: read as 420f they are the decoder's own planes (ffmpeg's, kept at full range,
    /// byte for byte; a source taken for video range would be stretched), and each sample says full range.
    @Test(arguments: ["full709", "clash"], ["mp4", "mkv", "ts"])
    func fullRangeFramesAreNotStretched(_ variant: String, _ container: String) throws {
        try expectUnconvertedFrames(Self.make(variant, container), range: 2, "\(variant).\(container)")
    }

    /// HEVC the same way (avdec_h265 against ffmpeg's hevc decoder); and the silent stream is video range whatever
    /// its container says: read as 420v, its planes are ffmpeg's unchanged (taken for full range they would be
    /// narrowed).
    @Test(arguments: ["full709", "clash", "silent"], ["mp4", "mkv", "ts"])
    func hevcFramesDecodeWithTheStatedRange(_ variant: String, _ container: String) throws {
        try expectUnconvertedFrames(Self.makeHEVC(variant, container), range: variant == "silent" ? 1 : 2,
                                    "hevc \(variant).\(container)")
    }

    /// Read as 420f (`range` 2) or 420v (1), `file`'s frames are ffmpeg's nv12 in that range (for a source of that
    /// range, its decoded planes), byte for byte, and each sample says that range.
    func expectUnconvertedFrames(_ file: String, range: UInt8, _ what: String) throws {
        let samples = try decode(file, range == 2 ? "420f" : "420v")
        #expect(samples.allSatisfy { $0.colorimetry.range == range }, "\(what): \(samples.map(\.colorimetry))")
        let kept = try Oracle.rawFrames(file, ["-vf", "scale=out_range=\(range == 2 ? "full" : "tv")", "-pix_fmt", "nv12"],
                                        frameSize: Self.w * Self.h * 3 / 2)
        #expect(samples.count == kept.count)
        for (i, (ours, theirs)) in zip(samples.map { $0.packedBytes() }, kept).enumerated() {
            let differing = zip(ours, theirs).filter { $0.0 != $0.1 }.count
            #expect(ours.count == theirs.count && differing == 0, "\(what) frame \(i): \(differing) bytes differ")
        }
    }

    /// To RGB the full range is used: 24RGB of a 4:4:4 full-range BT.709 stream is ffmpeg's rgb24 from the same
    /// range and matrix within RGBFormatTests' tolerance (its fixed-point conversion); the video-range reading of
    /// the same planes is far outside it.
    @Test(arguments: ["mp4", "mkv", "ts"])
    func rgbUsesTheFullRange(_ container: String) throws {
        let file = Self.make("full709", container, pixFmt: "yuv444p")
        let ours = try decode(file, FourCC(rawValue: 0x18)).map { $0.packedBytes() }
        func ffmpeg(_ range: String) throws -> [[UInt8]] {
            try Oracle.rawFrames(file, ["-vf", "scale=in_range=\(range):in_color_matrix=bt709,format=rgb24"], frameSize: Self.w * Self.h * 3)
        }
        let full = try ffmpeg("full"), limited = try ffmpeg("tv")
        #expect(ours.count == full.count && ours.count == 10)
        for (i, (a, b)) in zip(ours, full).enumerated() {
            let differences = zip(a, b).map { abs(Int($0.0) - Int($0.1)) }
            let mean = Double(differences.reduce(0, +)) / Double(max(1, differences.count))
            #expect((differences.max() ?? 0) <= RGBFormatTests.tolerance && mean <= RGBFormatTests.meanTolerance,
                    "\(container) frame \(i): max \(differences.max() ?? 0), mean \(mean)")
            let wrong = zip(a, limited[i]).map { abs(Int($0.0) - Int($0.1)) }.max() ?? 0
            #expect(wrong > 3 * RGBFormatTests.tolerance, "\(container) frame \(i): the video-range reading differs by \(wrong)")
        }
    }

    /// FormatTests' reader: every decoded sample, 160×90, ten frames.
    func decode(_ file: String, _ code: FourCC) throws -> [SampleBuffer] { try FormatTests().decode(file, code) }
}
