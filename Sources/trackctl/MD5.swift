import CMD5

/// MD5 over a stream of byte runs, through libmd.
struct MD5Digest {
    private var context = MD5_CTX()

    init() { MD5Init(&context) }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        MD5Update(&context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    mutating func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        MD5Final(&digest, &context)
        let hex: [Character] = Array("0123456789abcdef")
        return String(digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] })
    }
}
