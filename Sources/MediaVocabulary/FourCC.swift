/// A four-character code as CoreVideo and QuickTime use it: the first character in the most significant byte
/// ('420v' == 0x3432_3076). Codes that are not four printable characters print as hex (32ARGB is 0x00000020).
public struct FourCC: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Four ASCII characters, or nil.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4 else { return nil }
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public init(stringLiteral value: String) {
        guard let code = FourCC(value) else { preconditionFailure("not a four-char code: \(value)") }
        self = code
    }

    public var isPrintable: Bool {
        (0..<4).allSatisfy { (0x20...0x7e).contains((rawValue >> (24 - 8 * $0)) & 0xff) }
    }

    public var description: String {
        guard isPrintable else {
            let hex = String(rawValue, radix: 16)
            return "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        }
        return String(decoding: (0..<4).map { UInt8((rawValue >> (24 - 8 * $0)) & 0xff) }, as: UTF8.self)
    }

    public static let none = FourCC(rawValue: 0)
}
