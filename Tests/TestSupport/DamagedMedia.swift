import Foundation

/// Damaged copies of ffmpeg-made media, made the same way every run: seeded bit flips (SplitMix64) in a chosen part
/// of a file. Shared by the integration tests' damaged corpus (DamagedDeterminismTests) and GstBridge's discovery
/// tests, so both damage the same bytes.
public enum DamagedMedia {
    /// 8 bits flipped at offsets in `range` drawn by SplitMix64(seed).
    public static func flipped(_ bytes: [UInt8], seed: UInt64, in range: Range<Int>) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out = bytes
        for _ in 0..<8 {
            let at = range.lowerBound + Int(rng.next() % UInt64(range.count))
            out[at] ^= UInt8(1) << (rng.next() % 8)
        }
        return out
    }

    /// The byte range of the first top-level ISO BMFF box of `type` (32-bit sizes only), header included.
    public static func topLevelBox(_ type: String, in bytes: [UInt8]) -> Range<Int>? {
        var at = 0
        while at + 8 <= bytes.count {
            let size = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[at + 4..<at + 8], as: UTF8.self) == type, at + size <= bytes.count {
                return at..<at + size
            }
            guard size >= 8 else { return nil }
            at += size
        }
        return nil
    }

    /// `Media.clip` with its moov first (`-movflags +faststart`), the source of the damaged MP4s.
    public static let faststartClip: String = Media.make("determinism-faststart.mp4",
                                                         ["-i", Media.clip, "-c", "copy", "-movflags", "+faststart"])

    /// `faststartClip` with 8 bits of its moov's payload flipped by `seed`, written to the media directory.
    public static func sampleTableFlipped(seed: UInt64) throws -> String {
        let fast = [UInt8](try Data(contentsOf: URL(fileURLWithPath: faststartClip)))
        guard let moov = topLevelBox("moov", in: fast) else { throw DamagedMediaError.noMoov }
        let path = Media.dir + "/sample-table-flipped-\(seed).mp4"
        try Data(flipped(fast, seed: seed, in: moov.lowerBound + 8..<moov.upperBound)).write(to: URL(fileURLWithPath: path))
        return path
    }
}

public enum DamagedMediaError: Error { case noMoov }
