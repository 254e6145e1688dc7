import TrackdProtocol

/// `CGAffineTransform`'s shape: a point (x, y) is displayed at (a·x + c·y + tx, b·x + d·y + ty). A track's
/// ``AssetTrack/preferredTransform`` is its display matrix (MP4 tkhd; PROTOCOL.md §7.2) in these six numbers.
public struct AffineTransform: Sendable, Hashable {
    public var a: Double
    public var b: Double
    public var c: Double
    public var d: Double
    public var tx: Double
    public var ty: Double

    /// `CGAffineTransformIdentity`.
    public static let identity = AffineTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)

    public init(a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }

    /// The matrix's six 16.16 numbers as doubles (its projective column u, v, w is not part of a CGAffineTransform).
    public init(_ matrix: DisplayMatrix) {
        let m = matrix.affine
        self.init(a: m.a, b: m.b, c: m.c, d: m.d, tx: m.tx, ty: m.ty)
    }
}
