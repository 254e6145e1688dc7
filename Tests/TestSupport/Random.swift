import Foundation

/// SplitMix64: the one seeded, reproducible RNG of the tests (the fuzzers, damaged-media variants and the leak test
/// print their seeds, so a failing run can be replayed).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed of a randomized test. `make test` is a gate and must give the same answer on every run, so a test
/// there walks the fixed sequence of its `gate` seed: an input that a fresh seed would find one run in N is a
/// failure of whichever submission happens to draw it, not of the change under test. Exploring runs (`make fuzz-…`
/// sets FUZZ_SECONDS) take a fresh seed each time; `variable` (FUZZ_SEED, LEAK_SEED) replays a printed one.
public enum TestSeed {
    public static func value(_ variable: String, gate: UInt64, exploring: Bool = false) -> UInt64 {
        let env = ProcessInfo.processInfo.environment
        if let seed = env[variable].flatMap({ UInt64($0) }) { return seed }
        return exploring ? UInt64(Date().timeIntervalSince1970 * 1000) : gate
    }

    /// Whether this is an exploring fuzz run (`make fuzz-media`, `make fuzz-protocol`: FUZZ_SECONDS is set).
    public static var exploringFuzz: Bool { ProcessInfo.processInfo.environment["FUZZ_SECONDS"] != nil }
}
