/// The per-uid rate limit on new connections (`--connection-rate-per-uid`, `--connection-burst-per-uid`): a token
/// bucket per client uid that holds up to `burst` tokens, refills at `rate` tokens a second and starts full; each
/// connection handed to a worker takes one, and a connection that finds the bucket empty is refused (−11905). Every
/// connection costs a worker process start (about 100 ms of CPU), so this bounds the CPU one uid can make trackd
/// spend on start-ups; the default (100 a second, bursts of 200) is several times what a uid can use on this
/// class of machine, so normal use — 16 loops of sequential clients — never meets it. Kept in the supervisor's
/// counters, under their lock.
struct ConnectionRate {
    struct Bucket {
        var tokens: Double
        var lastMs: UInt64
    }

    private var buckets: [UInt32: Bucket] = [:]
    /// More uids than this: buckets that have refilled completely are dropped (a full bucket is a new uid's).
    static let pruneAbove = 1024

    /// Takes a token of `uid`'s bucket at `nowMs` (CLOCK_MONOTONIC): nil when it did (or `rate` is 0, no limit),
    /// else the milliseconds until the bucket holds a token again.
    mutating func take(uid: UInt32, nowMs: UInt64, rate: UInt64, burst: UInt64) -> UInt64? {
        guard rate > 0 else { return nil }
        var bucket = refilled(buckets[uid] ?? Bucket(tokens: Double(burst), lastMs: nowMs), nowMs: nowMs, rate: rate, burst: burst)
        defer {
            buckets[uid] = bucket
            if buckets.count > Self.pruneAbove {
                buckets = buckets.filter { refilled($0.value, nowMs: nowMs, rate: rate, burst: burst).tokens < Double(burst) }
            }
        }
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            return nil
        }
        return max(1, UInt64(((1 - bucket.tokens) * 1000 / Double(rate)).rounded(.up)))
    }

    private func refilled(_ bucket: Bucket, nowMs: UInt64, rate: UInt64, burst: UInt64) -> Bucket {
        let elapsedMs = nowMs > bucket.lastMs ? nowMs - bucket.lastMs : 0
        return Bucket(tokens: min(Double(burst), bucket.tokens + Double(elapsedMs) * Double(rate) / 1000), lastMs: nowMs)
    }
}
