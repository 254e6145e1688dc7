import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waiting for something another process does: the one place the tests sleep. A test waits for a condition (a
/// child is gone, a counter moved, a file appeared) with a deadline, never for a fixed time; the deadline is
/// generous because the machine may be loaded, and the poll is short so a met condition costs little.

/// Milliseconds on CLOCK_MONOTONIC.
public func monotonicMs() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1_000_000
}

/// Evaluates `condition` until it is true or `timeout` has passed; true if it held. The condition is evaluated
/// once more at the deadline, so a slow poll cannot miss it.
@discardableResult
public func waitUntil(timeout: Duration = .seconds(10), poll: Duration = .milliseconds(10),
                      _ condition: () throws -> Bool) rethrows -> Bool {
    try waitFor(timeout: timeout, poll: poll) { try condition() ? true : nil } ?? false
}

/// Evaluates `body` until it returns a value or `timeout` has passed; the value, or nil at the deadline.
public func waitFor<T>(timeout: Duration = .seconds(10), poll: Duration = .milliseconds(10),
                       _ body: () throws -> T?) rethrows -> T? {
    let deadline = monotonicMs() + timeout.milliseconds
    while true {
        if let value = try body() { return value }
        if monotonicMs() >= deadline { return nil }
        usleep(useconds_t(max(1, poll.milliseconds * 1000)))
    }
}

/// Holds for at least `duration`, checking `invariant` every `poll`: false at the first check that fails (for
/// "nothing happens while…" assertions, which need a span of time by their nature).
public func holds(for duration: Duration, poll: Duration = .milliseconds(20), _ invariant: () throws -> Bool) rethrows -> Bool {
    let end = monotonicMs() + duration.milliseconds
    repeat {
        if try !invariant() { return false }
        usleep(useconds_t(max(1, poll.milliseconds * 1000)))
    } while monotonicMs() < end
    return try invariant()
}

extension Duration {
    /// The duration in milliseconds (fractional).
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}

/// Time limits of the suites (Swift Testing's `.timeLimit`, per test; a minute is its unit). A test over its limit
/// is reported by name as it happens; `HangGuard` ends the run a minute later if it is still running. The limits are far
/// above what a test needs alone (seconds) because Swift Testing starts a test's clock when it schedules the test, not
/// when a thread runs it: every test of the run is scheduled at once onto a pool as wide as the machine's cores, and
/// most tests block their thread (ffmpeg, trackd, sockets). On a 2-core machine with both cores kept busy
/// (`make test-under-load`) no test of the run had finished 305 s after the start in one run and 631 s in another,
/// so a 10-minute limit failed tests that were merely waiting for a thread; the longest test then reported 858 s.
public enum TestLimits {
    /// Any integration test, and a unit test that runs GStreamer or a socket in-process (a pipeline that never
    /// ends, a receive never woken).
    public static let minutes = 25
    /// A fuzzer runs for FUZZ_SECONDS (seconds, default 5; `make fuzz-…` passes 300) plus its set-up and checks.
    public static let fuzzMinutes: Int = {
        let seconds = ProcessInfo.processInfo.environment["FUZZ_SECONDS"].flatMap(Double.init) ?? 5
        return minutes + Int((seconds / 60).rounded(.up))
    }()
}
