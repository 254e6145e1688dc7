import Foundation
import TestSupport
import Testing
import TrackClient

/// The 8-bit RGB formats end to end (real trackd, real GStreamer): CoreVideo's 24RGB (0x18) and 24BGR (`24BG`),
/// and trackd's planar `_RGP`. The three are one conversion laid out three ways, so they agree byte for byte;
/// against ffmpeg's `rgb24` / `bgr24` / `gbrp` (planes G, B, R, reordered to R, G, B) they agree within
/// `tolerance` code values per component and `meanTolerance` on average: GStreamer 1.22's videoconvert does the
/// BT.601 YCbCr → RGB matrix in 8-bit fixed point and lands up to 6 below the exact result (measured; the same
/// bytes as its BGRA), where swscale is within 1. The wrong matrix (BT.709) would differ by 45, mean 7.4. The
/// source is 4:4:4 so that no chroma upsampling (which the two libraries do differently) enters the comparison.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct RGBFormatTests {
    static let (w, h) = (160, 90)
    static let rgb24 = FourCC(rawValue: 0x18), bgr24: FourCC = "24BG", planar = PixelFormat.planarRGB
    /// Largest difference of one component from ffmpeg's, in 8-bit code values, and the largest mean difference
    /// of a frame (measured: 6 and 1.63).
    static let tolerance = 6
    static let meanTolerance = 2.0

    /// Every decoded sample of `Media.h264_444`'s video track in `code` (FormatTests' reader: format, 160×90 and
    /// the 10 frames checked there).
    func decode(_ code: FourCC) throws -> [SampleBuffer] {
        try FormatTests().decode(Media.h264_444, code)
    }

    /// ffmpeg's frames of `Media.h264_444` in `pixFmt` (3 bytes per pixel, packed or planar).
    func ffmpeg(_ pixFmt: String) throws -> [[UInt8]] {
        try Oracle.rawFrames(Media.h264_444, ["-pix_fmt", pixFmt], frameSize: Self.w * Self.h * 3)
    }

    /// R G B pixels as B G R.
    static func swappedRB(_ rgb: [UInt8]) -> [UInt8] {
        var out = rgb
        for i in stride(from: 0, to: rgb.count - 2, by: 3) {
            out[i] = rgb[i + 2]
            out[i + 2] = rgb[i]
        }
        return out
    }

    /// R G B pixels as three planes R, G, B.
    static func deinterleaved(_ rgb: [UInt8]) -> [UInt8] {
        let n = rgb.count / 3
        var out = [UInt8](repeating: 0, count: rgb.count)
        for i in 0..<n {
            for c in 0..<3 { out[c * n + i] = rgb[3 * i + c] }
        }
        return out
    }

    func expectClose(_ ours: [[UInt8]], _ theirs: [[UInt8]], _ what: String) {
        #expect(ours.count == theirs.count, "\(what): frame count")
        for (i, (a, b)) in zip(ours, theirs).enumerated() {
            #expect(a.count == b.count, "\(what) frame \(i): size")
            let differences = zip(a, b).map { abs(Int($0.0) - Int($0.1)) }
            let worst = differences.max() ?? 0
            let mean = Double(differences.reduce(0, +)) / Double(max(1, differences.count))
            #expect(worst <= Self.tolerance, "\(what) frame \(i): differs from ffmpeg by \(worst)")
            #expect(mean <= Self.meanTolerance, "\(what) frame \(i): differs from ffmpeg by \(mean) on average")
        }
    }

    /// Packed R G B: one plane of 3W visible bytes per row (GStreamer pads rows to 4 bytes; bytesPerRow says so).
    @Test func rgb24IsPackedRGBAndMatchesFFmpeg() throws {
        let samples = try decode(Self.rgb24)
        let first = try #require(samples.first)
        #expect(first.planes.count == 1)
        #expect(first.planes.first?.rowBytes == UInt32(Self.w * 3) && first.planes.first?.height == UInt32(Self.h))
        #expect(first.planes.allSatisfy { $0.bytesPerRow >= $0.rowBytes && $0.bytesPerRow % 4 == 0 })
        expectClose(samples.map { $0.packedBytes() }, try ffmpeg("rgb24"), "24RGB")
    }

    /// `24BG` is 24RGB with R and B swapped, byte for byte, and close to ffmpeg's bgr24.
    @Test func bgr24IsSwappedRGB24AndMatchesFFmpeg() throws {
        let bgr = try decode(Self.bgr24).map { $0.packedBytes() }
        let rgb = try decode(Self.rgb24).map { $0.packedBytes() }
        #expect(bgr.count == rgb.count)
        for (i, (b, r)) in zip(bgr, rgb).enumerated() {
            let swapped = Self.swappedRB(r)
            #expect(b == swapped, "24BG frame \(i) is not 24RGB with R and B swapped")
        }
        expectClose(bgr, try ffmpeg("bgr24"), "24BG")
    }

    /// `_RGP` is three W × H planes R, G, B: 24RGB de-interleaved byte for byte, and close to ffmpeg's gbrp.
    @Test func planarRGBIsDeinterleavedRGB24AndMatchesFFmpeg() throws {
        let samples = try decode(Self.planar)
        let first = try #require(samples.first)
        #expect(first.planes.count == 3)
        #expect(first.planes.allSatisfy { $0.rowBytes == UInt32(Self.w) && $0.height == UInt32(Self.h) })
        let planar = samples.map { $0.packedBytes() }
        let rgb = try decode(Self.rgb24).map { $0.packedBytes() }
        #expect(planar.count == rgb.count)
        for (i, (p, r)) in zip(planar, rgb).enumerated() {
            let deinterleaved = Self.deinterleaved(r)
            #expect(p == deinterleaved, "_RGP frame \(i) is not 24RGB's planes")
        }
        let n = Self.w * Self.h
        let gbrp = try ffmpeg("gbrp").map { (g: [UInt8]) -> [UInt8] in
            var rgb: [UInt8] = Array(g[(2 * n)..<(3 * n)])
            rgb.append(contentsOf: g[0..<n])
            rgb.append(contentsOf: g[n..<(2 * n)])
            return rgb
        }
        expectClose(planar, gbrp, "_RGP")
    }

    /// `_GBP` is ffmpeg's gbrp layout, planes G, B, R (here through videoconvert: the 4:4:4 source is not
    /// trackdswscale's): `_RGP`'s planes reordered byte for byte, and each plane within `tolerance` of ffmpeg's
    /// `-pix_fmt gbrp` plane of the same index.
    @Test func planarGBRIsFFmpegsGBRPPlaneForPlane() throws {
        let samples = try decode(PixelFormat.planarGBR)
        #expect(samples.first?.planes.count == 3)
        let gbr = samples.map { $0.packedBytes() }
        let rgb = try decode(Self.planar).map { $0.packedBytes() }
        let n = Self.w * Self.h
        #expect(gbr.count == rgb.count)
        for (i, (g, r)) in zip(gbr, rgb).enumerated() {
            #expect(g == Array(r[n..<3 * n] + r[0..<n]), "_GBP frame \(i) is not _RGP's planes as G, B, R")
        }
        expectClose(gbr, try ffmpeg("gbrp"), "_GBP")
    }

    /// The three are parsed by name and listed by `trackctl read --pixel-format list`.
    @Test func namesAndList() throws {
        #expect(PixelFormat.parse("24RGB")?.code == Self.rgb24 && PixelFormat.parse("24BG")?.code == Self.bgr24)
        #expect(PixelFormat.parse("_RGP")?.gstFormat == "RGBP" && PixelFormat.parse("RGBP") == nil)
        let list = try run(Env.trackctl, ["read", "--pixel-format", "list"])
        #expect(list.status == 0)
        for text in ["kCVPixelFormatType_24RGB", "kCVPixelFormatType_24BGR", "24BG", "_RGP",
                     "kTrackdPixelFormatType_24RGBPlanar"] {
            #expect(list.text.contains(text), "list lacks \(text)")
        }
    }
}
