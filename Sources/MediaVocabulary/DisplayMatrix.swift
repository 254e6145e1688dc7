/// A track's display matrix as MP4's tkhd stores it (ISO 14496-12 8.3.2): { a b u / c d v / tx ty w }, a b c d tx
/// ty as 16.16 fixed point, u v w as 2.30. A point (x, y) is displayed at (a·x + c·y + tx, b·x + d·y + ty), as
/// CGAffineTransform maps it; ffmpeg's display matrix side data is the same nine numbers.
public struct DisplayMatrix: Sendable, Hashable {
    /// The nine values in file order: a, b, u, c, d, v, tx, ty, w.
    public var values: [Int32]

    public static let identity = DisplayMatrix(values: [0x1_0000, 0, 0, 0, 0x1_0000, 0, 0, 0, 0x4000_0000])

    /// `values` must hold nine numbers; anything else is the identity.
    public init(values: [Int32]) {
        self.values = values.count == 9 ? values : Self.identity.values
    }

    /// The matrix that turns a picture `degrees` clockwise (0, 90, 180, 270) about its origin with no translation,
    /// the matrix ffmpeg derives from a rotation tag (`av_display_rotation_set(m, -degrees)`).
    public init(clockwise degrees: Int32) {
        let (cos, sin): (Int32, Int32) = switch ((degrees % 360) + 360) % 360 {
        case 90: (0, 1)
        case 180: (-1, 0)
        case 270: (0, -1)
        default: (1, 0)
        }
        self.init(values: [cos << 16, sin << 16, 0, -sin << 16, cos << 16, 0, 0, 0, 0x4000_0000])
    }

    /// CGAffineTransform's six numbers (a, b, c, d, tx, ty), the 16.16 values divided by 65,536.
    public var affine: (a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double) {
        let f = values.map { Double($0) / 65_536 }
        return (f[0], f[1], f[3], f[4], f[6], f[7])
    }

    public var isIdentity: Bool { self == .identity }
}
