/// Rational time, shaped like CMTime: `value / timescale` seconds, with CMTime's flag bits.
public struct MediaTime: Sendable, Hashable, CustomStringConvertible {
    public var value: Int64
    public var timescale: Int32
    public var flags: UInt32

    public static let flagValid: UInt32 = 1
    public static let flagHasBeenRounded: UInt32 = 2
    public static let flagPositiveInfinity: UInt32 = 4
    public static let flagNegativeInfinity: UInt32 = 8
    public static let flagIndefinite: UInt32 = 16

    /// Nanosecond timescale: GStreamer's clock unit, so times from the pipeline are carried exactly.
    public static let nanosecondTimescale: Int32 = 1_000_000_000

    public init(value: Int64, timescale: Int32, flags: UInt32 = MediaTime.flagValid) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
    }

    public static let invalid = MediaTime(value: 0, timescale: 0, flags: 0)
    public static let zero = MediaTime(value: 0, timescale: 1)
    public static let positiveInfinity = MediaTime(
        value: 0, timescale: 0, flags: flagValid | flagPositiveInfinity)

    public static func nanoseconds(_ ns: Int64) -> MediaTime { MediaTime(value: ns, timescale: nanosecondTimescale) }

    /// Nanoseconds nearest to `seconds`. NaN gives `.invalid`, ±infinity the matching infinite time, and values
    /// beyond ±9.2e9 s saturate (never traps).
    public init(seconds: Double) {
        if seconds.isNaN { self = .invalid; return }
        if seconds == .infinity { self = .positiveInfinity; return }
        if seconds == -.infinity {
            self = MediaTime(value: 0, timescale: 0, flags: MediaTime.flagValid | MediaTime.flagNegativeInfinity)
            return
        }
        let ns = (seconds * 1e9).rounded()
        // 2^63 is exactly representable; Int64(ns) traps at or beyond it.
        if ns >= 9_223_372_036_854_775_808.0 { self = .nanoseconds(.max); return }
        if ns < -9_223_372_036_854_775_808.0 { self = .nanoseconds(.min); return }
        self = .nanoseconds(Int64(ns))
    }

    public var isValid: Bool { flags & MediaTime.flagValid != 0 }
    public var isNumeric: Bool { isValid && flags & (MediaTime.flagPositiveInfinity | MediaTime.flagNegativeInfinity | MediaTime.flagIndefinite) == 0 && timescale > 0 }
    public var isPositiveInfinity: Bool { isValid && flags & MediaTime.flagPositiveInfinity != 0 }

    public var seconds: Double {
        if isPositiveInfinity { return .infinity }
        guard isNumeric else { return .nan }
        return Double(value) / Double(timescale)
    }

    /// Nanoseconds, or nil when not numeric. Saturates rather than overflowing.
    public var nanoseconds: Int64? {
        guard isNumeric else { return nil }
        if timescale == MediaTime.nanosecondTimescale { return value }
        let (q, r) = value.quotientAndRemainder(dividingBy: Int64(timescale))
        let (whole, o1) = q.multipliedReportingOverflow(by: 1_000_000_000)
        if o1 { return value < 0 ? .min : .max }
        let (sum, o2) = whole.addingReportingOverflow(r * 1_000_000_000 / Int64(timescale))
        if o2 { return value < 0 ? .min : .max }
        return sum
    }

    public var description: String {
        if !isValid { return "invalid" }
        if isPositiveInfinity { return "+inf" }
        return "\(value)/\(timescale)"
    }
}

/// A range of time, shaped like CMTimeRange. A duration of +infinity means "to the end".
public struct MediaTimeRange: Sendable, Hashable {
    public var start: MediaTime
    public var duration: MediaTime

    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    /// AVAssetReader's default: from zero to positive infinity.
    public static let everything = MediaTimeRange(start: .zero, duration: .positiveInfinity)
}

extension MediaTimeRange {
    /// Numeric start ≥ 0 and a duration that is numeric ≥ 0 or +infinity: a range CreateOutput and ResetOutput accept.
    public var isValidReadingRange: Bool {
        start.isNumeric && start.value >= 0
            && (duration.isPositiveInfinity || (duration.isNumeric && duration.value >= 0))
    }

    /// Whether this range ends at or before `time` (exactly, in rational arithmetic). False when the range is
    /// infinite or either is not numeric.
    public func ends(atOrBefore time: MediaTime) -> Bool {
        guard start.isNumeric, duration.isNumeric, time.isNumeric else { return false }
        let (ts, td, tt) = (Int128(start.timescale), Int128(duration.timescale), Int128(time.timescale))
        // start.v/ts + duration.v/td <= time.v/tt, all timescales > 0
        return Int128(start.value) * td * tt + Int128(duration.value) * ts * tt <= Int128(time.value) * ts * td
    }

    /// ResetOutput's list (and reset(forReadingTimeRanges:)'s): valid ranges, each starting at or after the end
    /// of the one before (touching is allowed).
    public static func areAscendingAndDisjoint(_ ranges: [MediaTimeRange]) -> Bool {
        guard ranges.allSatisfy(\.isValidReadingRange) else { return false }
        return zip(ranges, ranges.dropFirst()).allSatisfy { $0.ends(atOrBefore: $1.start) }
    }
}
