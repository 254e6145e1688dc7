import CMD5

/// MD5 over a stream of byte runs, through libmd.
struct MD5Digest {
    private var context = MD5_CTX()

    init() { unsafe MD5Init(&context) }

    mutating func update(_ bytes: RawSpan) {
        guard bytes.byteCount > 0 else { return }
        unsafe bytes.withUnsafeBytes { raw in
            unsafe MD5Update(&context, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count)
        }
    }

    mutating func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        unsafe MD5Final(&digest, &context)
        return hexDigits(digest)
    }
}

/// Lowercase hex, two digits a byte.
func hexDigits(_ bytes: [UInt8]) -> String {
    let hex: [Character] = Array("0123456789abcdef")
    return String(bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] })
}
