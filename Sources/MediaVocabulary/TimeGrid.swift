/// A track's own clock: its times are whole multiples of `tick / timescale` seconds (an MP4's mdhd timescale with
/// tick 1; Matroska's 10⁹ / TimestampScale; an AVI stream's rate with tick = scale; an audio track's sample rate),
/// and every time on the wire is `value / timescale` with `value` a multiple of `tick` (docs/PROTOCOL.md §7.1).
///
/// GStreamer's clock is nanoseconds: a demuxer turns k ticks into ⌊k × tick × 10⁹ / timescale⌋ ns
/// (gst_util_uint64_scale; matroskademux's k × TimestampScale is the same number). `time(nanoseconds:)` maps such
/// a time back to the nearest tick, which is exact — the demuxer's floor (or the difference of two, for a time
/// shifted by an edit list) is less than a nanosecond away, and a tick is at least 4 ns (timescales above
/// `maxTimescale` are not used; their tracks keep nanoseconds). `nanoseconds(_:)` goes the other way for a
/// requested time (PROTOCOL.md §7.1): a time that is a tick written in the request's own timescale becomes the
/// demuxer's nanoseconds of that tick; any other time lies strictly between two ticks and becomes a nanosecond
/// strictly between theirs, so `pts ≤ start` and `pts < end` against GStreamer's timestamps come out as the exact
/// comparisons would.
///
/// A **frame grid** (`init(frameRate:_:)`: an elementary stream, whose parser times every frame by the rate it
/// states) is the rate's own: timescale its numerator, one tick its denominator, and GStreamer's time of tick k is
/// k × ⌊tick × 10⁹ / timescale⌋ ns — the parser adds one frame of that floor-rounded duration per frame, so frame 30
/// at 30 fps is 999 999 990 ns, not ⌊10⁹⌋. Both directions use that step, so they stay exact at any length.
public struct TimeGrid: Sendable, Hashable, CustomStringConvertible {
    /// Units per second: the CMTime timescale of every time of the track.
    public let timescale: Int32
    /// Units per tick (≥ 1): the track's times are multiples of it.
    public let tick: Int64
    /// Units the demuxer's media time runs ahead of the track's timeline (an MP4 edit list's media time): qtdemux
    /// timestamps tick k as ⌊(k + offset) × 10⁹ / timescale⌋ − ⌊offset × 10⁹ / timescale⌋, and a requested time
    /// is converted the same way so that it equals the frame's timestamp.
    public let offset: Int64
    /// A frame grid's GStreamer nanoseconds per tick (⌊tick × 10⁹ / timescale⌋); 0 on every other grid.
    public let frameNanoseconds: Int64
    /// A decoded audio output's grid (`init(sampleRate:)`): a requested time goes to the nearest sample instead.
    public let roundsRequests: Bool

    /// The largest timescale a grid keeps; above it a tick is 2 ns or less and nanoseconds are used instead.
    public static let maxTimescale: Int64 = 250_000_000
    /// GStreamer's clock: tracks whose container has no timescale of its own.
    public static let nanoseconds = TimeGrid(uncheckedTimescale: MediaTime.nanosecondTimescale, tick: 1, offset: 0)

    private init(uncheckedTimescale: Int32, tick: Int64, offset: Int64, frameNanoseconds: Int64 = 0, roundsRequests: Bool = false) {
        self.timescale = uncheckedTimescale
        self.tick = tick
        self.offset = offset
        self.frameNanoseconds = frameNanoseconds
        self.roundsRequests = roundsRequests
    }

    /// `tick / timescale` seconds per tick, reduced; nil when either is not positive or the timescale is above
    /// `maxTimescale` (the caller keeps nanoseconds then). `offset`: the demuxer's media time at the timeline's 0,
    /// in `timescale` units (an MP4 edit's media_time; 0 elsewhere).
    public init?(timescale: Int64, tick: Int64 = 1, offset: Int64 = 0) {
        guard timescale > 0, tick > 0, offset >= 0 else { return nil }
        let g = Self.gcd(Self.gcd(timescale, tick), offset)  // gcd(x, 0) = x
        let (t, k) = (timescale / g, tick / g)
        guard t <= Self.maxTimescale, offset / g <= Int64.max / 1_000_000_000 / 4 else { return nil }
        self.init(uncheckedTimescale: Int32(t), tick: k, offset: offset / g)
    }

    /// The frame grid of `numerator / denominator` frames per second (reduced): timescale the numerator, one frame a
    /// tick of the denominator, GStreamer's frame k at k × ⌊10⁹ × denominator / numerator⌋ ns (30000/1001: frame k is
    /// `(1001k, 30000)`, at k × 33 366 666 ns). nil when either is not positive, the timescale is above
    /// `maxTimescale` or a frame is under 1 ns.
    public init?(frameRate numerator: Int64, _ denominator: Int64) {
        guard let reduced = TimeGrid(timescale: numerator, tick: denominator) else { return nil }
        let frame = Int128(reduced.tick) * 1_000_000_000 / Int128(reduced.timescale)
        // ≥ 4 (timescale ≤ maxTimescale); a range's start and end between two frames need 2 ns between theirs.
        guard frame > 2, frame <= Int128(Int64.max) else { return nil }
        self.init(uncheckedTimescale: reduced.timescale, tick: reduced.tick, offset: 0, frameNanoseconds: Int64(frame))
    }

    /// The grid of decoded audio at `rate` samples per second (PROTOCOL.md §12.7): a requested time goes to the
    /// nearest sample (halves away from zero), a range's start and duration each — its first sample is
    /// round(start × rate), and it has round(duration × rate). nil as `init(timescale:)`.
    public init?(sampleRate rate: Int64) {
        guard let grid = TimeGrid(timescale: rate) else { return nil }
        self.init(uncheckedTimescale: grid.timescale, tick: grid.tick, offset: 0, roundsRequests: true)
    }

    public var isFrameGrid: Bool { frameNanoseconds > 0 }

    /// The grid of `timescale`, else nanoseconds (a timescale that is 0 or too fine).
    public static func orNanoseconds(timescale: Int64, tick: Int64 = 1) -> TimeGrid {
        TimeGrid(timescale: timescale, tick: tick) ?? .nanoseconds
    }

    public var isNanoseconds: Bool { timescale == MediaTime.nanosecondTimescale && tick == 1 }

    public var description: String {
        (tick == 1 ? "1/\(timescale)" : "\(tick)/\(timescale)") + (offset == 0 ? "" : " from \(offset)")
            + (isFrameGrid ? " in frames of \(frameNanoseconds) ns" : "") + (roundsRequests ? " of samples" : "")
    }

    /// The tick nearest `value / scale` seconds (halves away from zero), in ticks; saturates.
    private func ticks(value: Int64, scale: Int64) -> Int64 {
        // value / scale s = n ticks of tick/timescale s: n = value × timescale / (scale × tick).
        Self.nearestQuotient(Int128(value) * Int128(timescale), Int128(scale) * Int128(tick))
    }

    /// num / den to the nearest integer, halves away from zero (den > 0); saturates.
    private static func nearestQuotient(_ num: Int128, _ den: Int128) -> Int64 {
        let (q, r) = num.quotientAndRemainder(dividingBy: den)
        var n = q
        if 2 * r.magnitude >= den.magnitude { n += num < 0 ? -1 : 1 }
        return Int64(clamping: n)
    }

    /// The grid time nearest a GStreamer time in nanoseconds (exact for the demuxer's own timestamps; on a frame
    /// grid, the nearest whole number of its frames).
    public func time(nanoseconds ns: Int64) -> MediaTime {
        if isNanoseconds { return .nanoseconds(ns) }
        let n = isFrameGrid ? Self.nearestQuotient(Int128(ns), Int128(frameNanoseconds)) : ticks(value: ns, scale: 1_000_000_000)
        return MediaTime(value: Self.multiply(n, tick), timescale: timescale)
    }

    /// A time from GStreamer (nanoseconds, as `time(nanoseconds:)`) or one already on this grid, on this grid; times
    /// that are not numeric (invalid, infinite) unchanged. Any other time to the nearest tick, as `nearest(_:)`.
    public func rounded(_ t: MediaTime) -> MediaTime {
        guard t.isNumeric else { return t }
        if t.timescale == MediaTime.nanosecondTimescale && isFrameGrid { return time(nanoseconds: t.value) }
        return nearest(t)
    }

    /// The tick nearest `t` (halves away from zero), exactly by its value / timescale also on a frame grid; not
    /// numeric: unchanged. For times already (nearly) on the grid; a requested time goes by `nanoseconds(_:)`.
    public func nearest(_ t: MediaTime) -> MediaTime {
        guard t.isNumeric else { return t }
        if t.timescale == timescale && t.value % tick == 0 { return MediaTime(value: t.value, timescale: timescale) }
        return MediaTime(value: Self.multiply(ticks(value: t.value, scale: Int64(t.timescale)), tick), timescale: timescale)
    }

    /// The grid time nearest `seconds` (NaN: invalid, ±infinity: infinite, as `MediaTime(seconds:)`).
    public func time(seconds: Double) -> MediaTime {
        guard seconds.isFinite else { return MediaTime(seconds: seconds) }
        let n = (seconds * Double(timescale) / Double(tick)).rounded()
        guard n < 9.2e18, n > -9.2e18 else { return MediaTime(seconds: seconds) }
        return MediaTime(value: Self.multiply(Int64(n), tick), timescale: timescale)
    }

    /// A requested time in GStreamer's nanoseconds (PROTOCOL.md §7.1): a time that names tick n (`requested`) is
    /// the demuxer's time of tick n, ⌊n × tick × 10⁹ / timescale⌋ (on a frame grid n × `frameNanoseconds`); a time
    /// strictly between ticks k and k + 1 is that of tick k plus 1 ns, strictly before tick k + 1's (ticks are ≥ 4 ns
    /// apart). nil when `t` is not numeric; saturates. On the nanosecond grid: `t.nanoseconds`; on a grid of audio
    /// samples, the nearest sample's.
    public func nanoseconds(_ t: MediaTime) -> Int64? {
        guard t.isNumeric else { return nil }
        if isNanoseconds { return t.nanoseconds }
        if roundsRequests { return tickNanoseconds(Int128(ticks(value: t.value, scale: Int64(t.timescale)))) }
        return requested(Int128(t.value), Int128(t.timescale), between: 1)
    }

    /// A requested range in nanoseconds: the start as `nanoseconds(_:)` and the end = start + duration (exactly) the
    /// same way, but 2 ns after tick k when strictly between k and k + 1 — after the start's 1 ns when both are, so
    /// the frame shown there is still in the range; the duration is end − start there (0 for a duration of 0). An
    /// infinite duration stays infinite. Not numeric: unchanged. On a grid of audio samples the start and the
    /// duration each go to the nearest sample.
    public func nanoseconds(_ range: MediaTimeRange) -> MediaTimeRange {
        guard let start = nanoseconds(range.start) else { return range }
        guard range.duration.isNumeric else { return MediaTimeRange(start: .nanoseconds(start), duration: range.duration) }
        if roundsRequests {
            let first = ticks(value: range.start.value, scale: Int64(range.start.timescale))
            let length = ticks(value: range.duration.value, scale: Int64(range.duration.timescale))
            let end = tickNanoseconds(Int128(first) + Int128(length))
            return MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(max(0, end.subtractingSaturating(start))))
        }
        guard range.duration.value != 0 else { return MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(0)) }
        // The end in the lcm of the two timescales (< 2⁶²), its value < 2⁹⁵: exact in Int128.
        let (s1, s2) = (Int64(range.start.timescale), Int64(range.duration.timescale))
        let scale = s1 / Self.gcd(s1, s2) * s2
        let value = Int128(range.start.value) * Int128(scale / s1) + Int128(range.duration.value) * Int128(scale / s2)
        let end = isNanoseconds
            ? Self.nearestQuotient(value * 1_000_000_000, Int128(scale)) : requested(value, Int128(scale), between: 2)
        return MediaTimeRange(start: .nanoseconds(start), duration: .nanoseconds(max(0, end.subtractingSaturating(start))))
    }

    /// `value / scale` seconds (scale > 0) requested, in nanoseconds. It is x = value × timescale / (scale × tick)
    /// ticks, between ticks k = ⌊x⌋ and k + 1. It names the nearer of the two when it is that tick written in its own
    /// timescale: the tick's time × scale rounded to the nearest integer is `value`, either way at a half (a float's
    /// seconds rounded to nanoseconds with ties to even, as Python rounds, name the tick too). Halfway between two
    /// ticks it names neither (in a coarse timescale both can round to it: 1/2 s at 25 fps is the middle of frame
    /// 12). Otherwise it lies strictly between ticks k and k + 1: tick k's nanoseconds + `between` (1 or 2).
    private func requested(_ value: Int128, _ scale: Int128, between: Int64) -> Int64 {
        let num = value * Int128(timescale), den = scale * Int128(tick)
        var (k, r) = num.quotientAndRemainder(dividingBy: den)
        if r < 0 { (k, r) = (k - 1, r + den) }  // floor: 0 ≤ r < den
        // Tick k is r / timescale units of `scale` before the time, tick k + 1 (den − r) / timescale after it.
        if 2 * r < den && 2 * r <= Int128(timescale) { return tickNanoseconds(k) }
        if 2 * r > den && 2 * (den - r) <= Int128(timescale) { return tickNanoseconds(k + 1) }
        return tickNanoseconds(k).addingSaturating(between)
    }

    /// GStreamer's time of tick n: ⌊n × tick × 10⁹ / timescale⌋ as the demuxer computes it (with the edit offset),
    /// on a frame grid n × `frameNanoseconds`; saturates.
    private func tickNanoseconds(_ n: Int128) -> Int64 {
        let bound = Int128(1) << 90  // far beyond Int64's nanoseconds for any grid; keeps the products in Int128
        guard n.magnitude < UInt128(bound) else { return n < 0 ? .min : .max }
        if isFrameGrid { return Int64(clamping: n * Int128(frameNanoseconds)) }
        let units = n * Int128(tick)
        guard units.magnitude < UInt128(bound) else { return n < 0 ? .min : .max }
        return Int64(clamping: floorNanoseconds(units + Int128(offset)) - floorNanoseconds(Int128(offset)))
    }

    /// ⌊units × 10⁹ / timescale⌋, also below zero (gst_util_uint64_scale's rounding).
    private func floorNanoseconds(_ units: Int128) -> Int128 {
        var (q, r) = (units * 1_000_000_000).quotientAndRemainder(dividingBy: Int128(timescale))
        if r < 0 { q -= 1 }
        return q
    }

    private static func multiply(_ a: Int64, _ b: Int64) -> Int64 {
        let (p, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? (a < 0 ? .min : .max) : p
    }

    private static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }
}

extension Int64 {
    fileprivate func addingSaturating(_ other: Int64) -> Int64 {
        let (s, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : s
    }

    fileprivate func subtractingSaturating(_ other: Int64) -> Int64 {
        let (s, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : s
    }
}

extension MediaTime {
    /// The time nearest `seconds` in `preferredTimescale` (CMTimeMakeWithSeconds): `round(seconds × timescale)`.
    /// As `init(seconds:)` for NaN and ±infinity; saturates.
    public init(seconds: Double, preferredTimescale: Int32) {
        guard seconds.isFinite, preferredTimescale > 0 else { self.init(seconds: seconds); return }
        let v = (seconds * Double(preferredTimescale)).rounded()
        if v >= 9_223_372_036_854_775_808.0 { self.init(value: .max, timescale: preferredTimescale); return }
        if v < -9_223_372_036_854_775_808.0 { self.init(value: .min, timescale: preferredTimescale); return }
        self.init(value: Int64(v), timescale: preferredTimescale)
    }
}
