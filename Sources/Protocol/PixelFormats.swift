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

    public static let all: [PixelFormat] = [
        PixelFormat(code: "420v", constantName: "kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange", gstFormat: "NV12",
                    range: .video, layout: "Y plane, interleaved CbCr plane, 4:2:0 8-bit, video range", planeCount: 2),
        PixelFormat(code: "420f", constantName: "kCVPixelFormatType_420YpCbCr8BiPlanarFullRange", gstFormat: "NV12",
                    range: .full, layout: "Y plane, interleaved CbCr plane, 4:2:0 8-bit, full range", planeCount: 2),
        PixelFormat(code: "y420", constantName: "kCVPixelFormatType_420YpCbCr8Planar", gstFormat: "I420",
                    range: nil, layout: "Y, Cb, Cr planes, 4:2:0 8-bit", planeCount: 3),
        PixelFormat(code: "2vuy", constantName: "kCVPixelFormatType_422YpCbCr8", gstFormat: "UYVY",
                    range: nil, layout: "Cb Y0 Cr Y1 packed, 4:2:2 8-bit", planeCount: 1),
        PixelFormat(code: "yuvs", constantName: "kCVPixelFormatType_422YpCbCr8_yuvs", gstFormat: "YUY2",
                    range: nil, layout: "Y0 Cb Y1 Cr packed, 4:2:2 8-bit", planeCount: 1),
        PixelFormat(code: "BGRA", constantName: "kCVPixelFormatType_32BGRA", gstFormat: "BGRA",
                    range: nil, layout: "B G R A packed, 8-bit", planeCount: 1),
        PixelFormat(code: FourCC(rawValue: 0x20), constantName: "kCVPixelFormatType_32ARGB", gstFormat: "ARGB",
                    range: nil, layout: "A R G B packed, 8-bit", planeCount: 1),
        PixelFormat(code: "RGBA", constantName: "kCVPixelFormatType_32RGBA", gstFormat: "RGBA",
                    range: nil, layout: "R G B A packed, 8-bit", planeCount: 1),
    ]

    public static func named(_ code: FourCC) -> PixelFormat? { all.first { $0.code == code } }

    /// Parses what a person types: a four-char code (`420v`), CoreVideo's constant name, the ARGB alias `32ARGB`,
    /// or a number (decimal or 0x-hex).
    public static func parse(_ text: String) -> PixelFormat? {
        if let f = all.first(where: { $0.constantName == text || $0.code.description == text }) { return f }
        if text == "32ARGB" { return named(FourCC(rawValue: 0x20)) }
        if let code = FourCC(text), let f = named(code) { return f }
        let number = text.hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
        return number.flatMap { named(FourCC(rawValue: $0)) }
    }
}
