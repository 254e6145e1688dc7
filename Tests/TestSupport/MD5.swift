import CMD5

/// MD5 through libmd (the CMD5 system module), only to compare frames with `ffmpeg -f framemd5`.
public struct MD5 {
    private var context = MD5_CTX()

    public init() { MD5Init(&context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        MD5Update(&context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest as 32 lowercase hex digits (what framemd5 prints). The context is used up.
    public mutating func finish() -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        MD5Final(&digest, &context)
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xf)]] }, as: UTF8.self)
    }
}

/// The MD5 of `bytes` as 32 lowercase hex digits.
public func md5Hex(_ bytes: [UInt8]) -> String {
    var md5 = MD5()
    md5.update(bytes)
    return md5.finish()
}
