import Foundation
import TestSupport
import Testing
import TrackClient

/// A video track's colour description (range, matrix, primaries, transfer) is ffprobe's color_range, color_space,
/// color_primaries and color_transfer for x264 streams whose SPS states them, in MP4, Matroska and MPEG-TS — the
/// stream's colour over the container's, field by field, as libavcodec decides; and frames decode with that range.
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

    /// ffmpeg's names as H.273 code points (trackctl prints the code, null for 2, unspecified).
    static let codes: [String: Int] = ["bt709": 1, "bt470bg": 5, "smpte170m": 6]

    @Test(arguments: ["full709", "fullonly", "clash"], ["mp4", "mkv", "ts"])
    func colourIsFfprobes(_ variant: String, _ container: String) throws {
        let file = Self.make(variant, container)
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                        "stream=color_range,color_space,color_primaries,color_transfer", "-of", "json", file])
        let streams = (try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])?["streams"] as? [[String: Any]]
        let v = try #require(streams?.first)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["tracks", file, "--json"])
        let t = try #require((try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])?.first)
        let what = "\(variant).\(container): ffprobe \(v), trackd \(t.filter { $0.key.hasPrefix("color") })"
        #expect(v["color_range"] as? String == "pc", "\(what)")
        #expect(t["colorRange"] as? String == v["color_range"] as? String, "\(what)")
        #expect(t["colorMatrix"] as? Int == (v["color_space"] as? String).flatMap { Self.codes[$0] }, "\(what)")
        #expect(t["colorPrimaries"] as? Int == (v["color_primaries"] as? String).flatMap { Self.codes[$0] }, "\(what)")
        #expect(t["colorTransfer"] as? Int == (v["color_transfer"] as? String).flatMap { Self.codes[$0] }, "\(what)")
    }

    /// Frames decode as full range: read as 420f they are the decoder's own planes (ffmpeg's, kept at full range,
    /// byte for byte; a source taken for video range would be stretched), and each sample says full range.
    @Test(arguments: ["full709", "clash"], ["mp4", "mkv", "ts"])
    func fullRangeFramesAreNotStretched(_ variant: String, _ container: String) throws {
        let file = Self.make(variant, container)
        let samples = try decode(file, "420f")
        #expect(samples.allSatisfy { $0.colorimetry.range == 2 }, "\(samples.map(\.colorimetry))")
        let kept = try Oracle.rawFrames(file, ["-vf", "scale=out_range=full", "-pix_fmt", "nv12"], frameSize: Self.w * Self.h * 3 / 2)
        #expect(samples.count == kept.count)
        for (i, (ours, theirs)) in zip(samples.map { $0.packedBytes() }, kept).enumerated() {
            let differing = zip(ours, theirs).filter { $0.0 != $0.1 }.count
            #expect(ours.count == theirs.count && differing == 0, "\(variant).\(container) frame \(i): \(differing) bytes differ")
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
