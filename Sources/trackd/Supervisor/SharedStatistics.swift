import TrackdProtocol
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's counters, published in a small memfd that every worker maps read-only (fd 4), so a worker
/// answers GetStatus with live numbers without a channel back to the supervisor. Layout (little-endian u64s):
/// supervisor pid, start time (Unix ms), connections accepted, active workers, worker crashes, the samples
/// sent, bytes copied and bytes sent zero-copy by workers that have ended (WorkerTable words 5–7 of reaped workers),
/// watchdog kills, connections refused (by a connection limit or the rate limit) and refused by the rate limit.
final class SharedStatistics: @unchecked Sendable {
    // @unchecked: the mapping is written only by the supervisor under its counters lock; aligned 64-bit stores are
    // single-copy atomic on the platforms trackd runs on, so a reader sees each counter whole.
    static let size = 11 * 8
    let mapping: SharedMapping
    /// A read-only open file description of the memfd, kept at fd ≥ 100 (see trackd_spawn_with_fds).
    let readOnly: FileDescriptor

    init() throws(SystemError) {
        let memfd = try FileDescriptor.sealedMemfd(name: "trackd-statistics", size: Self.size)
        let mapping = try SharedMapping(fd: memfd.rawValue, size: Self.size, writable: true)
        // Reopening through /proc gives a descriptor whose file description is O_RDONLY: a worker cannot map it
        // writable, whatever it does.
        let path = "/proc/self/fd/\(memfd.rawValue)"
        let readOnly = try FileDescriptor("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
        self.readOnly = try readOnly.duplicate(atLeast: 100)
        self.mapping = mapping
        mapping[word: 0] = UInt64(getpid())
        mapping[word: 1] = wallClockMilliseconds()
    }

    /// What ended workers sent: samples, bytes copied, bytes zero-copy.
    struct Retired: Sendable {
        var samples: UInt64 = 0, copied: UInt64 = 0, shared: UInt64 = 0
    }

    /// What the supervisor did to connections and workers (words 8–10).
    struct Interventions: Sendable {
        var watchdogKills: UInt64 = 0, refused: UInt64 = 0, rateLimited: UInt64 = 0
    }

    func publish(accepted: UInt64, active: UInt64, crashes: UInt64, retired: Retired, interventions: Interventions) {
        let words: [UInt64] = [accepted, active, crashes, retired.samples, retired.copied, retired.shared,
                               interventions.watchdogKills, interventions.refused, interventions.rateLimited]
        for (i, value) in words.enumerated() { mapping[word: 2 + i] = value }
    }

    /// A worker's view (fd 4), or nil when it was started without one.
    static func attach(fd: Int32) -> SharedMapping? {
        guard SharedMapping.verifySealed(fd: fd, size: size) else { return nil }
        return try? SharedMapping(fd: fd, size: size, writable: false)
    }

    /// (supervisor pid, started ms, accepted, active, crashes) from a mapping.
    static func read(_ mapping: SharedMapping) -> (UInt64, UInt64, UInt64, UInt64, UInt64) {
        (mapping[word: 0], mapping[word: 1], mapping[word: 2], mapping[word: 3], mapping[word: 4])
    }

    /// Watchdog kills and refused connections from a mapping.
    static func interventions(_ mapping: SharedMapping) -> Interventions {
        Interventions(watchdogKills: mapping[word: 8], refused: mapping[word: 9], rateLimited: mapping[word: 10])
    }

    /// The ended workers' totals from a mapping.
    static func retired(_ mapping: SharedMapping) -> Retired {
        Retired(samples: mapping[word: 5], copied: mapping[word: 6], shared: mapping[word: 7])
    }
}
