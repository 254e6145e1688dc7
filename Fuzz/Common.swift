// Shared by every libFuzzer target (scripts/fuzz.sh compiles it into each one; see Fuzz/README.md).
#if canImport(Glibc)
import Glibc
#endif

/// The input libFuzzer hands `LLVMFuzzerTestOneInput`, as bytes.
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// A broken invariant: print what broke and abort, so libFuzzer saves the input as a crash.
func check(_ condition: @autoclosure () -> Bool, _ what: @autoclosure () -> String,
           file: StaticString = #fileID, line: UInt = #line) {
    guard !condition() else { return }
    printError("fuzz invariant broken at \(file):\(line): \(what())\n")
    abort()
}

/// `LLVMFuzzerInitialize`'s seed mode: with TRACKD_FUZZ_SEEDS=<dir> in the environment, the target writes its
/// built-in seeds into <dir> (one file each, named by index) and exits; scripts/fuzz.sh runs it once per campaign.
func writeSeedsIfAsked(_ seeds: () -> [[UInt8]]) {
    guard let dir = getenv("TRACKD_FUZZ_SEEDS").map({ String(cString: $0) }) else { return }
    let all = seeds()
    for (i, seed) in all.enumerated() {
        let path = "\(dir)/seed-\(i)"
        guard let file = fopen(path, "wb") else {
            printError("cannot write \(path)\n")
            _exit(1)
        }
        _ = seed.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
    printError("wrote \(all.count) seeds to \(dir)\n")
    _exit(0)  // not exit: the leak checker would count the seeds' globals
}

/// Reads fuzz bytes as numbers, little-endian; past the end every read is 0.
struct FuzzBytes {
    let bytes: [UInt8]
    var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { at >= bytes.count }

    /// The next `n` bytes (fewer at the end).
    mutating func take(_ n: Int) -> [UInt8] {
        let end = min(bytes.count, at + n)
        defer { at = max(at, end) }
        return at < end ? Array(bytes[at..<end]) : []
    }

    mutating func u8() -> UInt8 {
        defer { at += 1 }
        return at < bytes.count ? bytes[at] : 0
    }

    mutating func u16() -> UInt16 { UInt16(u8()) | UInt16(u8()) << 8 }
    mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }
    mutating func u64() -> UInt64 { UInt64(u32()) | UInt64(u32()) << 32 }
}

/// A line on standard error (write(2): stderr, the C global, is not concurrency-safe to Swift 6).
func printError(_ line: String) {
    var line = line
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
