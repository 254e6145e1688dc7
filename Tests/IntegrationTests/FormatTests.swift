import Foundation
import TestSupport
import Testing
import TrackClient

/// The extra CoreVideo pixel formats end to end (real trackd, real GStreamer), each checked against ffmpeg: byte for
/// byte where ffmpeg writes the same layout, otherwise against the exact relation to ffmpeg's decoded samples.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FormatTests {
    static let (w, h) = (160, 90)

    /// Every decoded sample of the file's video track in `code`.
    func decode(_ file: String, _ code: FourCC) throws -> [SampleBuffer] {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [
            SettingsKey.pixelFormatType: .int(Int64(code.rawValue)),
        ])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let sample = try output.copyNextSampleBuffer() {
            #expect(sample.format == code)
            #expect(Int(sample.width) == Self.w && Int(sample.height) == Self.h)
            samples.append(sample)
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(samples.count == 10 || file == Media.red)
        return samples
    }

    /// The tight rows of each plane (what `packedBytes` gives) equal ffmpeg's framemd5 frames.
    func expectSameAsFFmpeg(_ samples: [SampleBuffer], _ oracle: [(size: Int, md5: String)], _ what: String) {
        #expect(samples.count == oracle.count, "\(what): frame count")
        for (i, (s, o)) in zip(samples, oracle).enumerated() {
            let packed = s.packedBytes()
            #expect(packed.count == o.size, "\(what) frame \(i): size")
            #expect(md5Hex(packed) == o.md5, "\(what) frame \(i): bytes differ from ffmpeg's")
        }
    }

    static func plane(_ offset: Int, _ stride: Int, _ rowBytes: Int, _ height: Int) -> PlaneLayout {
        PlaneLayout(offset: UInt64(offset), bytesPerRow: UInt32(stride), rowBytes: UInt32(rowBytes), height: UInt32(height))
    }

    /// 16-bit little-endian words.
    static func le16(_ bytes: [UInt8]) -> [UInt16] {
        stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
    }

    /// GStreamer widens n-bit samples to 16 bits by replicating the top bits (v << (16-n) | v >> (2n-16)).
    static func widen10(_ v: UInt16) -> UInt16 { v << 6 | v >> 4 }

    @Test func x420IsP010AndMatchesFFmpeg() throws {
        let samples = try decode(Media.hevc10, "x420")
        expectSameAsFFmpeg(samples, try Oracle.frameMD5(Media.hevc10, pixFmt: "p010le"), "x420")
        let first = try #require(samples.first)
        #expect(first.planes == [Self.plane(0, 320, 320, 90), Self.plane(320 * 90, 320, 320, 45)])
        #expect(first.colorimetry.range == 1)
    }

    /// The 10-bit values of P010 frames (the high 10 bits of each 16-bit LE word), one array per frame, checking
    /// that the low 6 bits are zero.
    static func p010Values(_ samples: [SampleBuffer]) -> [[UInt16]] {
        samples.map { sample in
            let words = le16(sample.packedBytes())
            #expect(words.allSatisfy { $0 & 0x3F == 0 }, "P010: the low 6 bits are zero")
            return words.map { $0 >> 6 }
        }
    }

    /// ITU-T H.273's 10-bit range conversion, the one trackd applies: video range (Y 64–940, CbCr 64–960) ↔ full.
    static func rangeConverted(_ v: UInt16, chroma: Bool, toFull: Bool) -> UInt16 {
        let x = Double(v)
        let y = switch (chroma, toFull) {
        case (false, true): (x - 64) * 1023 / 876
        case (true, true): (x - 512) * 1023 / 896 + 512
        case (false, false): 64 + x * 876 / 1023
        case (true, false): 512 + (x - 512) * 896 / 1023
        }
        return UInt16(min(1023, max(0, (y + 0.5).rounded(.down))))
    }

    /// xf20 is really full range (GStreamer 1.22's videoconvert leaves the range alone between YCbCr formats of one
    /// matrix; trackd converts the 10-bit values like the 8-bit 420f case), x420 really video range.
    /// Oracles: ffmpeg's p010le decode (x420 of a video-range source, byte for byte) with H.273's formula applied
    /// exactly; and ffmpeg's own range conversion (`scale=out_range=full|tv`) within ±3 code values — swscale scales
    /// 10-bit values by the 8-bit factors (255/219, 255/224), so full-range white is 1020 there, 1023 here: the
    /// difference grows linearly with the value and reaches 3 at the ends of the scale.
    @Test func xf20AndX420ConvertTheRange() throws {
        let lumaCount = Self.w * Self.h
        func expectConverted(_ ours: [[UInt16]], from source: [[UInt16]], toFull: Bool, _ what: String) {
            #expect(ours.count == source.count)
            for (i, (o, s)) in zip(ours, source).enumerated() {
                let expected = s.enumerated().map { j, v in Self.rangeConverted(v, chroma: j >= lumaCount, toFull: toFull) }
                #expect(o == expected, "\(what) frame \(i): H.273's 10-bit range conversion")
            }
        }
        func expectClose(_ ours: [[UInt16]], _ ffmpeg: [[UInt8]], _ what: String) {
            #expect(ours.count == ffmpeg.count)
            for (i, (o, f)) in zip(ours, ffmpeg).enumerated() {
                let theirs = Self.le16(f).map { $0 >> 6 }
                let worst = zip(o, theirs).map { abs(Int($0) - Int($1)) }.max() ?? .max
                #expect(o.count == theirs.count && worst <= 3, "\(what) frame \(i): off by \(worst) from ffmpeg's")
            }
        }
        let frameSize = Self.w * Self.h * 3

        // A video-range source.
        let video = try decode(Media.hevc10, "x420")
        let full = try decode(Media.hevc10, "xf20")
        #expect(full.allSatisfy { $0.colorimetry.range == 2 } && video.allSatisfy { $0.colorimetry.range == 1 })
        #expect(full.map { md5Hex($0.packedBytes()) } != video.map { md5Hex($0.packedBytes()) }, "xf20 is not x420")
        expectConverted(Self.p010Values(full), from: Self.p010Values(video), toFull: true, "xf20")
        expectClose(Self.p010Values(full),
                    try Oracle.rawFrames(Media.hevc10, ["-vf", "scale=out_range=full", "-pix_fmt", "p010le"], frameSize: frameSize),
                    "xf20")
        let values = Self.p010Values(full).joined()
        #expect(values.min() == 0 && values.max()! > 940, "full range uses the whole scale")

        // A full-range source: xf20 untouched (ffmpeg's p010le with the range kept), x420 narrowed.
        let fullSource = try decode(Media.hevc10Full, "xf20")
        #expect(fullSource.allSatisfy { $0.colorimetry.range == 2 })
        let kept = try Oracle.rawFrames(Media.hevc10Full, ["-vf", "scale=out_range=full", "-pix_fmt", "p010le"],
                                        frameSize: frameSize)
        #expect(fullSource.map { $0.packedBytes() } == kept, "a full-range source read as xf20 is not converted")
        let narrowed = try decode(Media.hevc10Full, "x420")
        #expect(narrowed.allSatisfy { $0.colorimetry.range == 1 })
        expectConverted(Self.p010Values(narrowed), from: Self.p010Values(fullSource), toFull: false, "x420")
        expectClose(Self.p010Values(narrowed),
                    try Oracle.rawFrames(Media.hevc10Full, ["-vf", "scale=out_range=tv", "-pix_fmt", "p010le"], frameSize: frameSize),
                    "x420")
        let narrowedValues = Self.p010Values(narrowed).joined()
        #expect(narrowedValues.min()! >= 64 && narrowedValues.max()! <= 960)
    }

    @Test func v210MatchesFFmpegsV210Encoder() throws {
        let samples = try decode(Media.prores422, "v210")
        // ffmpeg's v210 "encoder" output is the rawvideo layout: 128 bytes per 48 pixels, zero padding.
        expectSameAsFFmpeg(samples, try Oracle.frameMD5(Media.prores422, pixFmt: "yuv422p10le", extra: ["-c:v", "v210"]), "v210")
        let first = try #require(samples.first)
        #expect(first.planes == [Self.plane(0, 512, 512, 90)], "rowBytes: ((160 + 47) / 48) * 128")
        #expect(first.dataLength == 512 * 90)
    }

    @Test func v216IsWidenedCbYCrY() throws {
        let samples = try decode(Media.prores422, "v216")
        let n = Self.w * Self.h
        let planar = try Oracle.rawFrames(Media.prores422, ["-pix_fmt", "yuv422p10le"], frameSize: n * 4)
        #expect(samples.count == planar.count)
        for (i, (s, f)) in zip(samples, planar).enumerated() {
            #expect(s.planes == [Self.plane(0, Self.w * 4, Self.w * 4, Self.h)])
            let words = Self.le16(f)
            let (y, cb, cr) = (words[0..<n], words[n..<n + n / 2], words[n + n / 2..<2 * n])
            var expected: [UInt16] = []
            for row in 0..<Self.h {
                for pair in 0..<Self.w / 2 {
                    let c = row * Self.w / 2 + pair, l = row * Self.w + 2 * pair
                    expected += [cb[n + c], y[l], cr[n + n / 2 + c], y[l + 1]].map(Self.widen10)
                }
            }
            #expect(Self.le16(s.packedBytes()) == expected, "v216 frame \(i)")
        }
    }

    @Test func y416CarriesTheSourceAlpha() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let tracks = try daemon.trackctl(["tracks", "--json", Media.prores4444])
        #expect(tracks.status == 0, "\(tracks.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: tracks.stdout) as? [[String: Any]])
        #expect(list.first?["codec"] as? String == "ap4h")
        #expect(list.first?["depth"] as? Int == 32 && list.first?["hasAlpha"] as? Bool == true)

        let samples = try decode(Media.prores4444, "y416")
        for (i, s) in samples.enumerated() {
            #expect(s.planes == [Self.plane(0, Self.w * 8, Self.w * 8, Self.h)])
            let words = Self.le16(s.packedBytes())
            #expect(words.count == Self.w * Self.h * 4)
            // A Y Cb Cr: the alpha made by the fixture (3x + 2y + 20n, 10-bit), widened to 16 bits the way
            // GStreamer unpacks avdec_prores's A444_10LE.
            var wrong = 0
            for row in 0..<Self.h {
                for x in 0..<Self.w where words[(row * Self.w + x) * 4] != Self.widen10(UInt16(3 * x + 2 * row + 20 * i)) {
                    wrong += 1
                }
            }
            #expect(wrong == 0, "y416 frame \(i): \(wrong) alpha samples differ")
        }
        // The same alpha as ffmpeg's decoder gives (10-bit).
        let n = Self.w * Self.h
        let ffmpeg = try Oracle.rawFrames(Media.prores4444, ["-pix_fmt", "yuva444p10le"], frameSize: n * 8)
        #expect(ffmpeg.count == samples.count)
        for (s, f) in zip(samples, ffmpeg) {
            let alpha = Self.le16(Array(f[n * 6..<n * 8])).map(Self.widen10)
            let words = Self.le16(s.packedBytes())
            #expect(stride(from: 0, to: words.count, by: 4).map { words[$0] } == alpha)
        }
    }

    @Test func eightBitFormatsMatchFFmpeg() throws {
        let n = Self.w * Self.h
        // 444v: NV24, which ffmpeg writes too.
        let nv24 = try decode(Media.h264_444, "444v")
        expectSameAsFFmpeg(nv24, try Oracle.frameMD5(Media.h264_444, pixFmt: "nv24"), "444v")
        #expect(nv24.first?.planes == [Self.plane(0, 160, 160, 90), Self.plane(n, 320, 320, 90)])

        // y408 (A Y Cb Cr), L008 (Y) and L016 (Y widened) against ffmpeg's planar 4:4:4.
        let planar444 = try Oracle.rawFrames(Media.h264_444, ["-pix_fmt", "yuv444p"], frameSize: n * 3)
        let ayuv = try decode(Media.h264_444, "y408")
        let gray = try decode(Media.h264_444, "L008")
        let gray16 = try decode(Media.h264_444, "L016")
        #expect(ayuv.count == planar444.count && gray.count == planar444.count && gray16.count == planar444.count)
        for (i, f) in planar444.enumerated() where i < ayuv.count && i < gray.count && i < gray16.count {
            let expected = (0..<n).flatMap { p -> [UInt8] in [255, f[p], f[n + p], f[2 * n + p]] }
            #expect(ayuv[i].packedBytes() == expected, "y408 frame \(i)")
            #expect(gray[i].packedBytes() == Array(f[0..<n]), "L008 frame \(i): the decoder's luma, unchanged")
            #expect(Self.le16(gray16[i].packedBytes()) == f[0..<n].map { UInt16($0) * 257 }, "L016 frame \(i)")
        }
        #expect(ayuv.first?.planes == [Self.plane(0, 640, 640, 90)])
        #expect(gray16.first?.planes == [Self.plane(0, 320, 320, 90)])

        // 422v: NV16 (ffmpeg cannot write it): Y, then Cb Cr pairs of ffmpeg's planar 4:2:2.
        let nv16 = try decode(Media.h264_422, "422v")
        let planar422 = try Oracle.rawFrames(Media.h264_422, ["-pix_fmt", "yuv422p"], frameSize: n * 2)
        #expect(nv16.count == planar422.count)
        for (i, (s, f)) in zip(nv16, planar422).enumerated() {
            let chroma = (0..<n / 2).flatMap { c -> [UInt8] in [f[n + c], f[n + n / 2 + c]] }
            #expect(s.planes == [Self.plane(0, 160, 160, 90), Self.plane(n, 160, 160, 90)])
            #expect(s.packedBytes() == Array(f[0..<n]) + chroma, "422v frame \(i)")
        }
    }

    /// b64a is A R G B big-endian, l64r R G B A little-endian: the same 16-bit values, in those byte orders.
    @Test func sixteenBitRGBByteOrder() throws {
        let b64a = try decode(Media.red, "b64a")
        let l64r = try decode(Media.red, "l64r")
        #expect(b64a.count == 3 && l64r.count == 3)
        for (big, little) in zip(b64a, l64r) {
            #expect(big.planes == [Self.plane(0, 1280, 1280, 90)] && little.planes == big.planes)
            let be = big.packedBytes(), le = little.packedBytes()
            #expect(be.count == Self.w * Self.h * 8 && le.count == be.count)
            // Pure red: A = 0xFFFF, R near 0xFFFF, G and B near 0.
            #expect(Array(be[0..<2]) == [0xFF, 0xFF] && be[2] >= 0xF0 && be[4] <= 0x10 && be[6] <= 0x10, "\(be[0..<8])")
            #expect(Array(le[6..<8]) == [0xFF, 0xFF] && le[1] >= 0xF0 && le[3] <= 0x10 && le[5] <= 0x10, "\(le[0..<8])")
            var swapped = [UInt8](repeating: 0, count: le.count)
            for p in stride(from: 0, to: be.count, by: 8) {
                for (component, at) in [(1, 0), (2, 2), (3, 4), (0, 6)] {  // ARGB component → RGBA position
                    swapped[p + at] = be[p + component * 2 + 1]
                    swapped[p + at + 1] = be[p + component * 2]
                }
            }
            #expect(swapped == le, "l64r is b64a with components reordered and bytes swapped")
        }
    }

    @Test func trackctlRejectsUnsupportedFormatsByName() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["read", Media.hevc10, "--pixel-format", "v308", "--md5"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("-11861") && r.stderr.contains(
            "v308 (kCVPixelFormatType_444YpCbCr8) is not supported: GStreamer has no Cr-Y-Cb 8-bit layout"), "\(r.stderr)")
        let scaled = try daemon.trackctl(["read", Media.prores4444, "--pixel-format", "y416", "--width", "80", "--height", "46"])
        #expect(scaled.status == 1)
        #expect(scaled.stderr.contains("AVAssetReaderTrackOutput does not support scaling to Width/Height with pixel format y416"))
        let list = try run(Env.trackctl, ["read", "--pixel-format", "list"])
        for code in ["y416", "v216", "v210", "b64a", "x420", "xf20", "l64r", "y408", "422v", "444v", "L008", "L016",
                     "v308", "v408", "r408", "v410", "x422", "x444"] {
            #expect(list.text.contains(code), "list lacks \(code)")
        }
    }
}
