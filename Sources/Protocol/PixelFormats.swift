/// The CoreVideo pixel formats trackd can produce, each with the GStreamer 1.22 format that has exactly the same
/// memory layout. This table is the single source of truth: the worker builds caps from it, the client describes
/// planes with it, and `trackctl read --pixel-format list` prints it.
public struct PixelFormat: Sendable, Hashable {
    public enum Range: UInt8, Sendable { case video = 1, full = 2 }

    /// CoreVideo's OSType code.
    public var code: FourCC
    /// CoreVideo's constant name, accepted wherever a code is.
    public var constantName: String
    /// GStreamer 1.22's GstVideoFormat name with the same layout.
    public var gstFormat: String
    /// The YCbCr range the output is converted to, when the format fixes one (420v video, 420f full).
    public var range: Range?
    /// One line on the layout, for people.
    public var layout: String
    /// Number of planes in memory.
    public var planeCount: Int
    /// False for the high-bit-depth formats AVAssetReaderTrackOutput will not scale (y416, v216, v210, b64a):
    /// Width/Height are rejected with them.
    public var scalable: Bool = true
    /// The other names people type for it (`PixelFormat.lookup`, case-insensitive): trackd's own spelling of a
    /// code that is a number (first: `24RGB`, `32ARGB`), then GStreamer's and ffmpeg's names of exactly this
    /// layout. A name belongs to one format only; a layout name that could mean two (NV12: `420v` or `420f`) is
    /// given to the video-range one, which is what H.264/HEVC streams almost always are (docs/SETTINGS.md).
    public var names: [String] = []

    public static let all: [PixelFormat] = [
        PixelFormat(code: "420v", constantName: "kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange", gstFormat: "NV12",
                    range: .video, layout: "Y plane, interleaved CbCr plane, 4:2:0 8-bit, video range", planeCount: 2,
                    names: ["nv12"]),
        PixelFormat(code: "420f", constantName: "kCVPixelFormatType_420YpCbCr8BiPlanarFullRange", gstFormat: "NV12",
                    range: .full, layout: "Y plane, interleaved CbCr plane, 4:2:0 8-bit, full range", planeCount: 2),
        PixelFormat(code: "y420", constantName: "kCVPixelFormatType_420YpCbCr8Planar", gstFormat: "I420",
                    range: nil, layout: "Y, Cb, Cr planes, 4:2:0 8-bit", planeCount: 3,
                    names: ["i420", "iyuv", "yuv420p"]),
        PixelFormat(code: "2vuy", constantName: "kCVPixelFormatType_422YpCbCr8", gstFormat: "UYVY",
                    range: nil, layout: "Cb Y0 Cr Y1 packed, 4:2:2 8-bit", planeCount: 1,
                    names: ["uyvy", "uyvy422"]),
        PixelFormat(code: "yuvs", constantName: "kCVPixelFormatType_422YpCbCr8_yuvs", gstFormat: "YUY2",
                    range: nil, layout: "Y0 Cb Y1 Cr packed, 4:2:2 8-bit", planeCount: 1,
                    names: ["yuy2", "yuyv", "yuyv422"]),
        PixelFormat(code: "BGRA", constantName: "kCVPixelFormatType_32BGRA", gstFormat: "BGRA",
                    range: nil, layout: "B G R A packed, 8-bit", planeCount: 1),
        PixelFormat(code: FourCC(rawValue: 0x20), constantName: "kCVPixelFormatType_32ARGB", gstFormat: "ARGB",
                    range: nil, layout: "A R G B packed, 8-bit", planeCount: 1,
                    names: ["32ARGB", "argb"]),
        PixelFormat(code: "RGBA", constantName: "kCVPixelFormatType_32RGBA", gstFormat: "RGBA",
                    range: nil, layout: "R G B A packed, 8-bit", planeCount: 1),
        PixelFormat(code: FourCC(rawValue: 0x18), constantName: "kCVPixelFormatType_24RGB", gstFormat: "RGB",
                    range: nil, layout: "R G B packed, 8-bit", planeCount: 1,
                    names: ["24RGB", "rgb24", "rgb"]),
        PixelFormat(code: "24BG", constantName: "kCVPixelFormatType_24BGR", gstFormat: "BGR",
                    range: nil, layout: "B G R packed, 8-bit", planeCount: 1,
                    names: ["bgr24", "bgr"]),
        // trackd's extension, not a CoreVideo format: see `planarRGB`.
        PixelFormat(code: planarRGB, constantName: "kTrackdPixelFormatType_24RGBPlanar", gstFormat: "RGBP",
                    range: nil, layout: "R, G, B planes, 8-bit (trackd extension, channels first)", planeCount: 3,
                    names: ["rgbp"]),
        PixelFormat(code: planarGBR, constantName: "kTrackdPixelFormatType_24GBRPlanar", gstFormat: "GBR",
                    range: nil, layout: "G, B, R planes, 8-bit (trackd extension, ffmpeg's gbrp)", planeCount: 3,
                    names: ["gbrp", "gbr"]),
        PixelFormat(code: "y408", constantName: "kCVPixelFormatType_4444AYpCbCr8", gstFormat: "AYUV",
                    range: nil, layout: "A Y Cb Cr packed, 4:4:4 8-bit", planeCount: 1,
                    names: ["ayuv"]),
        PixelFormat(code: "422v", constantName: "kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange", gstFormat: "NV16",
                    range: nil, layout: "Y plane, interleaved CbCr plane, 4:2:2 8-bit", planeCount: 2,
                    names: ["nv16"]),
        PixelFormat(code: "444v", constantName: "kCVPixelFormatType_444YpCbCr8BiPlanarVideoRange", gstFormat: "NV24",
                    range: nil, layout: "Y plane, interleaved CbCr plane, 4:4:4 8-bit", planeCount: 2,
                    names: ["nv24"]),
        PixelFormat(code: "L008", constantName: "kCVPixelFormatType_OneComponent8", gstFormat: "GRAY8",
                    range: nil, layout: "one component (luma), 8-bit", planeCount: 1,
                    names: ["gray", "gray8"]),
        PixelFormat(code: "L016", constantName: "kCVPixelFormatType_OneComponent16", gstFormat: "GRAY16_LE",
                    range: nil, layout: "one component (luma), 16-bit little-endian", planeCount: 1,
                    names: ["gray16le", "gray16_le"]),
        PixelFormat(code: "x420", constantName: "kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange",
                    gstFormat: "P010_10LE", range: .video,
                    layout: "Y plane, interleaved CbCr plane, 4:2:0 10-bit in the high bits of 16-bit LE words, video range",
                    planeCount: 2,
                    names: ["p010le", "p010", "p010_10le"]),
        PixelFormat(code: "xf20", constantName: "kCVPixelFormatType_420YpCbCr10BiPlanarFullRange",
                    gstFormat: "P010_10LE", range: .full,
                    layout: "Y plane, interleaved CbCr plane, 4:2:0 10-bit in the high bits of 16-bit LE words, full range",
                    planeCount: 2),
        PixelFormat(code: "v210", constantName: "kCVPixelFormatType_422YpCbCr10", gstFormat: "v210",
                    range: nil, layout: "Cb Y Cr Y 10-bit packed in 32-bit LE words, 4:2:2, 128 bytes per 48 pixels",
                    planeCount: 1, scalable: false),
        PixelFormat(code: "v216", constantName: "kCVPixelFormatType_422YpCbCr16", gstFormat: "v216",
                    range: nil, layout: "Cb Y0 Cr Y1 packed, 4:2:2 16-bit LE", planeCount: 1, scalable: false),
        PixelFormat(code: "y416", constantName: "kCVPixelFormatType_4444AYpCbCr16", gstFormat: "AYUV64",
                    range: nil, layout: "A Y Cb Cr packed, 4:4:4 16-bit LE", planeCount: 1, scalable: false,
                    names: ["ayuv64", "ayuv64le"]),
        PixelFormat(code: "b64a", constantName: "kCVPixelFormatType_64ARGB", gstFormat: "ARGB64_BE",
                    range: nil, layout: "A R G B packed, 16-bit big-endian", planeCount: 1, scalable: false,
                    names: ["argb64_be", "argb64be"]),
        PixelFormat(code: "l64r", constantName: "kCVPixelFormatType_64RGBALE", gstFormat: "RGBA64_LE",
                    range: nil, layout: "R G B A packed, 16-bit little-endian", planeCount: 1,
                    names: ["rgba64le", "rgba64_le"]),
    ]

    /// `_RGP`: trackd's planar 8-bit RGB (three W × H planes R, G, B — channels first, as PyTorch takes them).
    /// CoreVideo has no planar RGB. Apple's codes (CVPixelBuffer.h) are small integers or four letters, digits, `&`
    /// or `-`, never `_`, so the underscore marks trackd's extensions and keeps them apart from Apple's.
    public static let planarRGB: FourCC = "_RGP"
    /// `_GBP`: the same planes in the order G, B, R — ffmpeg's `gbrp` and GStreamer's `GBR`, byte for byte.
    public static let planarGBR: FourCC = "_GBP"

    public static func named(_ code: FourCC) -> PixelFormat? { all.first { $0.code == code } }

    /// Parses what a person types: a four-char code (`420v`), CoreVideo's constant name, the aliases `32ARGB` and
    /// `24RGB` (the two codes that are numbers), or a number (decimal or 0x-hex).
    public static func parse(_ text: String) -> PixelFormat? {
        if let f = all.first(where: { $0.constantName == text || $0.code.description == text }) { return f }
        if text == "32ARGB" { return named(FourCC(rawValue: 0x20)) }
        if text == "24RGB" { return named(FourCC(rawValue: 0x18)) }
        if let code = FourCC(text), let f = named(code) { return f }
        let number = text.hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
        return number.flatMap { named(FourCC(rawValue: $0)) }
    }
}

/// CoreVideo formats GStreamer 1.22 cannot produce with exactly Apple's layout. They are rejected by name (Error
/// −11861 with `message`) rather than as unknown, and never emulated by converting pixels outside GStreamer.
public struct UnsupportedPixelFormat: Sendable, Hashable {
    public var code: FourCC
    public var constantName: String
    public var reason: String

    /// "v308 (kCVPixelFormatType_444YpCbCr8) is not supported: GStreamer has no Cr-Y-Cb 8-bit layout"
    public var message: String { "\(code) (\(constantName)) is not supported: \(reason)" }

    public static let all: [UnsupportedPixelFormat] = [
        UnsupportedPixelFormat(code: "v308", constantName: "kCVPixelFormatType_444YpCbCr8",
                               reason: "GStreamer has no Cr-Y-Cb 8-bit layout (its v308 is Y-Cb-Cr)"),
        UnsupportedPixelFormat(code: "v408", constantName: "kCVPixelFormatType_4444YpCbCrA8",
                               reason: "GStreamer has no Cb-Y-Cr-A 8-bit layout"),
        UnsupportedPixelFormat(code: "r408", constantName: "kCVPixelFormatType_4444YpCbCrA8R",
                               reason: "GStreamer has no zero-biased (rendering) Y'CbCr layout"),
        UnsupportedPixelFormat(code: "v410", constantName: "kCVPixelFormatType_444YpCbCr10",
                               reason: "GStreamer 1.22 has no 10-bit 4:4:4 Cr-Y-Cb layout packed in 32-bit words with the padding bits low"),
        UnsupportedPixelFormat(code: "x422", constantName: "kCVPixelFormatType_422YpCbCr10BiPlanarVideoRange",
                               reason: "GStreamer 1.22 has no 10-bit 4:2:2 biplanar layout (P210)"),
        UnsupportedPixelFormat(code: "x444", constantName: "kCVPixelFormatType_444YpCbCr10BiPlanarVideoRange",
                               reason: "GStreamer 1.22 has no 10-bit 4:4:4 biplanar layout (P410)"),
    ]

    public static func named(_ code: FourCC) -> UnsupportedPixelFormat? { all.first { $0.code == code } }

    /// As `PixelFormat.parse`: a four-char code, the constant name, or a number.
    public static func parse(_ text: String) -> UnsupportedPixelFormat? {
        if let f = all.first(where: { $0.constantName == text || $0.code.description == text }) { return f }
        let number = text.hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
        return number.flatMap { named(FourCC(rawValue: $0)) }
    }
}

/// Names of other libraries' layouts that no trackd format has (ffmpeg's and GStreamer's spellings): `PixelFormat.lookup`
/// refuses them with the reason and the formats that come closest, instead of calling them unknown or taking the
/// nearest one silently (a different plane order or packing would be read wrongly, not fail).
public struct RefusedPixelFormatName: Sendable, Hashable {
    public var names: [String]
    public var reason: String
    /// The codes (`PixelFormat.name`) of the formats to use instead.
    public var instead: [String]

    public static let all: [RefusedPixelFormatName] = [
        RefusedPixelFormatName(names: ["gbrp10le", "gbr_10le", "gbrp12le", "gbr_12le", "gbrp16le", "gbr_16le"],
                               reason: "no CoreVideo layout for planar RGB deeper than 8 bits", instead: ["l64r", "b64a"]),
        RefusedPixelFormatName(names: ["rgb48le", "rgb48be", "bgr48le", "bgr48be"],
                               reason: "no CoreVideo layout for packed 16-bit RGB without alpha", instead: ["l64r", "b64a"]),
        RefusedPixelFormatName(names: ["nv21"], reason: "Cr before Cb in the chroma plane", instead: ["420v"]),
        RefusedPixelFormatName(names: ["yv12"], reason: "the Cr plane before the Cb plane", instead: ["y420"]),
        RefusedPixelFormatName(names: ["gray10le", "gray12le", "gray14le"],
                               reason: "luma in the low bits of 16-bit words; L016 uses all 16", instead: ["L016"]),
        RefusedPixelFormatName(names: ["yuv422p", "y42b"], reason: "no CoreVideo layout for planar 8-bit 4:2:2",
                               instead: ["422v", "2vuy", "yuvs"]),
        RefusedPixelFormatName(names: ["yuv444p", "y444"], reason: "no CoreVideo layout for planar 8-bit 4:4:4",
                               instead: ["444v", "y408"]),
        RefusedPixelFormatName(names: ["yuv420p10le", "i420_10le"],
                               reason: "no CoreVideo layout for planar 10-bit 4:2:0", instead: ["x420"]),
        RefusedPixelFormatName(names: ["yuv422p10le", "i422_10le"],
                               reason: "no CoreVideo layout for planar 10-bit 4:2:2 (ProRes 422's decoder output)",
                               instead: ["v210", "v216"]),
    ]
}

/// The pixel format `trackctl tracks` recommends for a video track: the CoreVideo format whose layout holds what
/// the track's GStreamer decoder produces natively (same depth, same subsampling, alpha kept), so videoconvert only
/// repacks (or passes through) and never converts — cheaper than the `420v` default, and lossless. Derived from
/// the track record: codec, bits per component, chroma subsampling and depth (32: alpha).
///
/// | bits \ chroma | 4:2:0 | 4:2:2 | 4:4:4 | 4:0:0 |
/// |---|---|---|---|---|
/// | 8 | y420 | 422v | 444v | L008 |
/// | 9–10 | x420 | v210 | y416 | L016 |
/// | 11–16 | y416 | v216 | y416 | L016 |
///
/// With alpha: y408 (8-bit), y416 (deeper). Unknown bits or chroma: the codec's usual ones (ProRes 422: 10-bit 4:2:2,
/// ProRes 4444: 12-bit 4:4:4, the other codecs of `assumed420`: 8-bit 4:2:0); nil for any other codec. CoreVideo has
/// no 4:2:0 format deeper than 10 bits: 12-bit 4:2:0 is advised y416, which keeps every bit (chroma upsampled).
public enum RecommendedPixelFormat {
    /// Codecs whose streams are 8-bit 4:2:0 unless the parser says otherwise.
    static let assumed420: Set<FourCC> = ["avc1", "avc3", "hvc1", "hev1", "vp09", "vp08", "av01", "mp4v", "mp2v", "mp1v"]
    static let prores422: Set<FourCC> = ["apco", "apcs", "apcn", "apch"]
    static let prores4444: Set<FourCC> = ["ap4h", "ap4x"]

    /// The bits and chroma of a codec when the track record does not carry them (nil: no assumption).
    static func assumed(_ codec: FourCC) -> (bits: UInt8, chroma: ChromaSubsampling)? {
        if prores422.contains(codec) { return (10, .yuv422) }
        if prores4444.contains(codec) { return (12, .yuv444) }
        if assumed420.contains(codec) { return (8, .yuv420) }
        return nil
    }

    /// The recommended format for a video track, or nil when neither the record nor the codec says enough.
    public static func forTrack(codec: FourCC, depth: UInt32, bitsPerComponent: UInt8 = 0,
                                chromaSubsampling: ChromaSubsampling = .unknown) -> PixelFormat? {
        let fallback = assumed(codec)
        guard let bits = bitsPerComponent > 0 ? bitsPerComponent : fallback?.bits,
              let chroma = chromaSubsampling != .unknown ? chromaSubsampling : fallback?.chroma else { return nil }
        let code: FourCC
        if depth == 32 && chroma != .yuv400 {
            code = bits <= 8 ? "y408" : "y416"
        } else {
            switch (chroma, bits) {
            case (.yuv420, ...8): code = "y420"
            case (.yuv420, ...10): code = "x420"
            case (.yuv422, ...8): code = "422v"
            case (.yuv422, ...10): code = "v210"
            case (.yuv422, _): code = "v216"
            case (.yuv444, ...8): code = "444v"
            case (.yuv400, ...8): code = "L008"
            case (.yuv400, _): code = "L016"
            default: code = "y416"  // 4:4:4 deeper than 8 bits, 4:2:0 deeper than 10
            }
        }
        return PixelFormat.named(code)
    }

    public static func forTrack(_ track: TrackDescription) -> PixelFormat? {
        guard track.mediaType == .video else { return nil }
        return forTrack(codec: track.codec, depth: track.depth, bitsPerComponent: track.bitsPerComponent,
                        chromaSubsampling: track.chromaSubsampling)
    }
}
