import Foundation
import GstBridge
import TrackdProtocol
import TestSupport
import Testing

/// trackdswscale (CGstShim/SwscaleConvert.c) in the decode chain: the 8-bit RGB family from 8-bit 4:2:0 and 4:2:2
/// is libswscale's conversion, byte for byte the one ffmpeg makes with the same matrix and range (`-vf
/// scale=in_color_matrix=…:in_range=…`, and `:flags=bilinear` at another size) — the bound is 0: every frame's md5
/// is ffmpeg's. The matrix and range are those of the decoder's caps. Planar RGB (`_RGP`) is the same conversion as
/// 24RGB laid out in planes; against ffmpeg's own gbrp it is within `planarBound`; `_GBP` is the same planes G, B, R.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SwscaleTests {
    /// 330 pixels wide: not a whole number of libswscale's 8-pixel groups, so the output's rows are padded (a row
    /// without the room gets its last pixels unwritten by libswscale's fast path).
    static func clip(_ tags: [String] = [], _ name: String = "swscale-330x186.mp4", pixFmt: String = "yuv420p") throws -> String {
        try Fixtures.make(name, ["-f", "lavfi", "-i", "testsrc2=size=330x186:rate=30", "-frames:v", "6", "-c:v", "libx264",
                                 "-preset", "veryfast", "-bf", "2", "-pix_fmt", pixFmt] + tags)
    }

    /// Largest difference of a component from ffmpeg's gbrp, in 8-bit code values, and the largest mean difference
    /// of a frame. ffmpeg makes gbrp on libswscale's generic path, which rounds differently from its YCbCr → packed
    /// RGB path; with `flags=neighbor` it repeats chroma as that path does (measured on this clip: 3 and 0.68; with
    /// its default interpolated chroma, ffmpeg's own gbrp and rgb24 differ by up to 135 at testsrc2's colour edges).
    static let planarBound = 3
    static let planarMeanBound = 1.0

    /// Every frame of `path` decoded to `name` (PixelFormat.parse).
    func decode(_ path: String, _ name: String, width: Int? = nil, height: Int? = nil) throws -> [PulledSample] {
        let format = try #require(PixelFormat.parse(name))
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1,
                                         mode: .decode(VideoOutputRequest(pixelFormat: format, width: width, height: height)),
                                         timeRange: .everything)
        defer { pipeline.stop() }
        return try pullAll(pipeline)
    }

    /// ffmpeg's frames of `path` through `filter`, in `pixFmt`: their md5s (framemd5).
    func ffmpegMD5(_ path: String, _ filter: String, _ pixFmt: String) throws -> [String] {
        let text = String(decoding: try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v:0",
                                                                "-vf", filter, "-f", "framemd5", "-pix_fmt", pixFmt, "-"]),
                          as: UTF8.self)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            String($0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces))
        }
    }

    func md5s(_ samples: [PulledSample]) -> [String] {
        samples.map { sample in
            var md5 = MD5()
            md5.update(sample.tightBytes)
            return md5.finish()
        }
    }

    /// Every packed format, from the untagged 4:2:0 clip (BT.601 by its size, video range).
    @Test(arguments: [("BGRA", "bgra"), ("RGBA", "rgba"), ("32ARGB", "argb"), ("24RGB", "rgb24"), ("24BG", "bgr24")]
          as [(String, String)])
    func packedFormatsAreFFmpegsConversion(_ name: String, _ pixFmt: String) throws {
        let file = try Self.clip()
        let ours = try decode(file, name)
        #expect(ours.count == 6)
        #expect(ours.first?.width == 330 && ours.first?.height == 186)
        #expect(md5s(ours) == (try ffmpegMD5(file, "scale=in_color_matrix=bt601:in_range=tv", pixFmt)), "\(pixFmt)")
    }

    /// The matrix and range come from the decoder's caps: each H.273 matrix libswscale has, video and full range
    /// (a full-range stream tagged in Matroska: qtdemux drops a colr box's range bit).
    @Test(arguments: [("bt709", "tv", "mp4", "bt709"), ("fcc", "tv", "mp4", "fcc"), ("smpte240m", "tv", "mp4", "smpte240m"),
                      ("bt2020nc", "tv", "mp4", "bt2020"), ("bt709", "pc", "mkv", "bt709"), ("bt470bg", "pc", "mkv", "bt601")]
          as [(String, String, String, String)])
    func matrixAndRangeAreTheCaps(_ colorspace: String, _ range: String, _ container: String, _ matrix: String) throws {
        let file = try Self.clip(["-colorspace", colorspace, "-color_range", range],
                                 "swscale-\(colorspace)-\(range).\(container)")
        let ours = try decode(file, "24BG")
        #expect(md5s(ours) == (try ffmpegMD5(file, "scale=in_color_matrix=\(matrix):in_range=\(range)", "bgr24")),
                "\(colorspace) \(range)")
    }

    /// A stream that flags only its range (caps "1:0:0:0"): the range is kept, the matrix is the size's default.
    @Test func aStatedRangeWithoutMatrixIsKept() throws {
        let file = try Fixtures.fullRange()  // 160x120: BT.601
        #expect(md5s(try decode(file, "BGRA")) == (try ffmpegMD5(file, "scale=in_color_matrix=bt601:in_range=pc", "bgra")))
    }

    @Test func fourTwoTwoIsFFmpegsConversion() throws {
        let file = try Self.clip([], "swscale-422.mp4", pixFmt: "yuv422p")
        #expect(md5s(try decode(file, "BGRA")) == (try ffmpegMD5(file, "scale=in_color_matrix=bt601:in_range=tv", "bgra")))
    }

    /// Width and height both given: libswscale scales (bilinear) as it converts, down and up, to sizes that are not
    /// whole 8-pixel groups, as ffmpeg's scale filter with flags=bilinear does.
    @Test(arguments: [(171, 95), (250, 301)] as [(Int, Int)])
    func scalingIsFFmpegsBilinear(_ width: Int, _ height: Int) throws {
        let file = try Self.clip()
        let ours = try decode(file, "BGRA", width: width, height: height)
        #expect(ours.first?.width == UInt32(width) && ours.first?.height == UInt32(height))
        #expect(md5s(ours) == (try ffmpegMD5(
            file, "scale=\(width):\(height):flags=bilinear:in_color_matrix=bt601:in_range=tv", "bgra")))
    }

    /// `_RGP` is 24RGB in planes R, G, B byte for byte (ffmpeg's rgb24 de-interleaved), and within `planarBound`
    /// of ffmpeg's gbrp.
    @Test func planarRGBIsRGB24InPlanes() throws {
        let file = try Self.clip()
        let ours = try decode(file, "_RGP")
        let n = 330 * 186
        func frames(_ pixFmt: String, flags: String = "") throws -> [[UInt8]] {
            let data = [UInt8](try ffmpegRawFrames(file, pixFmt: pixFmt,
                                                   extra: ["-vf", "scale=in_color_matrix=bt601:in_range=tv" + flags]))
            return stride(from: 0, to: data.count, by: 3 * n).map { Array(data[$0..<$0 + 3 * n]) }
        }
        let rgb = try frames("rgb24"), gbrp = try frames("gbrp", flags: ":flags=neighbor")
        #expect(ours.count == rgb.count && ours.count == gbrp.count)
        for (i, (sample, (packed, planes))) in zip(ours, zip(rgb, gbrp)).enumerated() {
            let bytes = sample.tightBytes
            let planar = (0..<3).flatMap { c in (0..<n).map { packed[3 * $0 + c] } }
            #expect(bytes == planar, "frame \(i): not 24RGB's planes")
            let theirs = Array(planes[2 * n..<3 * n] + planes[0..<n] + planes[n..<2 * n])  // G, B, R → R, G, B
            let differences = zip(bytes, theirs).map { abs(Int($0) - Int($1)) }
            let mean = Double(differences.reduce(0, +)) / Double(differences.count)
            #expect((differences.max() ?? 0) <= Self.planarBound && mean <= Self.planarMeanBound,
                    "frame \(i): \(differences.max() ?? 0), mean \(mean) from ffmpeg's gbrp")
        }
    }

    /// `_GBP` (GStreamer's GBR) is ffmpeg's `-pix_fmt gbrp` layout: plane 0 G, 1 B, 2 R. Compared plane by plane:
    /// byte for byte (bound 0) with ffmpeg's rgb24 conversion written as gbrp (`format=rgb24`, then gbrp: the same
    /// conversion, repacked), and within `planarBound` / `planarMeanBound` of ffmpeg's direct gbrp.
    @Test func planarGBRIsFFmpegsGBRP() throws {
        let file = try Self.clip()
        let ours = try decode(file, "_GBP")
        let n = 330 * 186
        func frames(_ filter: String) throws -> [[UInt8]] {
            let data = [UInt8](try ffmpegRawFrames(file, pixFmt: "gbrp", extra: ["-vf", filter]))
            return stride(from: 0, to: data.count, by: 3 * n).map { Array(data[$0..<$0 + 3 * n]) }
        }
        let viaRGB24 = try frames("scale=in_color_matrix=bt601:in_range=tv,format=rgb24")
        let direct = try frames("scale=in_color_matrix=bt601:in_range=tv:flags=neighbor")
        #expect(ours.count == 6 && viaRGB24.count == 6 && direct.count == 6)
        for (i, (sample, (exact, near))) in zip(ours, zip(viaRGB24, direct)).enumerated() {
            #expect(sample.planes.count == 3)
            let bytes = sample.tightBytes
            for (p, name) in ["G", "B", "R"].enumerated() {
                let plane = bytes[p * n..<(p + 1) * n]
                #expect(plane.elementsEqual(exact[p * n..<(p + 1) * n]), "frame \(i) plane \(p) (\(name)) differs")
                let differences = zip(plane, near[p * n..<(p + 1) * n]).map { abs(Int($0) - Int($1)) }
                let mean = Double(differences.reduce(0, +)) / Double(n)
                #expect((differences.max() ?? 0) <= Self.planarBound && mean <= Self.planarMeanBound,
                        "frame \(i) plane \(name): \(differences.max() ?? 0), mean \(mean) from ffmpeg's gbrp")
            }
        }
    }
}
