/// RFC 1321 MD5, only to compare frames with `ffmpeg -f framemd5` (the test target has no crypto library).
struct MD5 {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    private static let s: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                      5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                      4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                      6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    private static let k: [UInt32] = (0..<64).map { i in
        UInt32(truncatingIfNeeded: Int64((abs(sin(Double(i + 1))) * 4_294_967_296).rounded(.down)))
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length += UInt64(bytes.count)
        var input = bytes[...]
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, input.count)
            buffer.append(contentsOf: input.prefix(take))
            input = input.dropFirst(take)
            if buffer.count == 64 {
                buffer.withUnsafeBytes { block($0) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        while input.count >= 64 {
            UnsafeRawBufferPointer(rebasing: input.prefix(64)).withMemoryRebound(to: UInt8.self) {
                block(UnsafeRawBufferPointer($0))
            }
            input = input.dropFirst(64)
        }
        buffer.append(contentsOf: input)
    }

    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    mutating func finish() -> String {
        let bits = length &* 8
        var pad: [UInt8] = [0x80]
        while (buffer.count + pad.count) % 64 != 56 { pad.append(0) }
        for i in 0..<8 { pad.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        let saved = length
        update(pad)
        length = saved
        let words = [state.0, state.1, state.2, state.3]
        return words.flatMap { w in (0..<4).map { UInt8(truncatingIfNeeded: w >> (8 * UInt32($0))) } }
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    private mutating func block(_ p: UnsafeRawBufferPointer) {
        var m = [UInt32](repeating: 0, count: 16)
        for i in 0..<16 {
            m[i] = UInt32(p[i * 4]) | UInt32(p[i * 4 + 1]) << 8 | UInt32(p[i * 4 + 2]) << 16 | UInt32(p[i * 4 + 3]) << 24
        }
        var (a, b, c, d) = state
        for i in 0..<64 {
            var f: UInt32
            let g: Int
            switch i {
            case 0..<16: f = (b & c) | (~b & d); g = i
            case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) % 16
            case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) % 16
            default: f = c ^ (b | ~d); g = (7 * i) % 16
            }
            f = f &+ a &+ MD5.k[i] &+ m[g]
            a = d
            d = c
            c = b
            b = b &+ (f << MD5.s[i] | f >> (32 - MD5.s[i]))
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}

#if canImport(Glibc)
import Glibc
#endif
