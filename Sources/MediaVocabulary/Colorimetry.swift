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
