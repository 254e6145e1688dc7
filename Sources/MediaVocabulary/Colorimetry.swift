/// Colorimetry as ITU-T H.273 (CICP) code points, the numbering both ffmpeg and CoreVideo map to.
/// 0 in `range` means unknown; 2 in the others means unspecified.
public struct Colorimetry: Sendable, Hashable {
    /// 1 video (limited) range, 2 full range, 0 unknown.
    public var range: UInt8
    public var matrix: UInt8
    public var primaries: UInt8
    public var transfer: UInt8

    public init(range: UInt8 = 0, matrix: UInt8 = 2, primaries: UInt8 = 2, transfer: UInt8 = 2) {
        self.range = range
        self.matrix = matrix
        self.primaries = primaries
        self.transfer = transfer
    }
}

extension Colorimetry {
    /// These code points with every one that states no colour made unspecified (2): the reserved and unassigned
    /// values, which libavcodec reads as unspecified (a value libavutil 57, ffmpeg 5.1, has no name for: primaries
    /// 13–21, 23–255, transfer 19–255, matrix 15–255) or ffprobe names `reserved` (primaries and transfer 0 and 3,
    /// matrix 3). A range other than 1 (video) and 2 (full) becomes 0, unknown.
    public var normalized: Colorimetry {
        Colorimetry(range: range <= 2 ? range : 0, matrix: Self.stated(matrix, Self.namedMatrices),
                    primaries: Self.stated(primaries, Self.namedPrimaries), transfer: Self.stated(transfer, Self.namedTransfers))
    }

    /// H.273 code points that name a colour, by ffmpeg 5.1's names (its "reserved" and "unknown" excluded).
    static let namedPrimaries: Set<UInt8> = Set([1, 22]).union(4...12)
    static let namedTransfers: Set<UInt8> = Set([1]).union(4...18)
    static let namedMatrices: Set<UInt8> = Set([0, 1]).union(4...14)

    private static func stated(_ code: UInt8, _ named: Set<UInt8>) -> UInt8 { named.contains(code) ? code : 2 }

    /// The range when known — 1 video, 2 full — else nil (AVFoundation: no `kCMFormatDescriptionExtension_FullRangeVideo`).
    public var statedRange: UInt8? { range == 0 ? nil : range }
    /// The matrix's H.273 code point, nil when unspecified (AVFoundation: no `kCVImageBufferYCbCrMatrixKey`).
    public var statedMatrix: UInt8? { matrix == 2 ? nil : matrix }
    /// The primaries' code point, nil when unspecified (AVFoundation: no `kCVImageBufferColorPrimariesKey`).
    public var statedPrimaries: UInt8? { primaries == 2 ? nil : primaries }
    /// The transfer function's code point, nil when unspecified (AVFoundation: no `kCVImageBufferTransferFunctionKey`).
    public var statedTransfer: UInt8? { transfer == 2 ? nil : transfer }
}
