import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waiting for something another process does: the one place the tests sleep. A test waits for a condition (a
/// child is gone, a counter moved, a file appeared) with a deadline, never for a fixed time; the deadline is
/// generous because the machine may be loaded, and the poll is short so a met condition costs little.
///
/// The default deadline, 60 s, is what a condition that involves starting a process may take on a loaded 2-core
/// machine: a warm worker starts at low priority (nice), and at a load average of 35 one was not named
/// `trackd-warm` within the former 10 s. A met condition returns at once, so only a failing wait pays it.
public let defaultWaitTimeout: Duration = .seconds(60)

/// Milliseconds on CLOCK_MONOTONIC.
public func monotonicMs() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1_000_000
}

/// Evaluates `condition` until it is true or `timeout` has passed; true if it held. The condition is evaluated
/// once more at the deadline, so a slow poll cannot miss it.
@discardableResult
public func waitUntil(timeout: Duration = defaultWaitTimeout, poll: Duration = .milliseconds(10),
                      _ condition: () throws -> Bool) rethrows -> Bool {
    try waitFor(timeout: timeout, poll: poll) { try condition() ? true : nil } ?? false
}

/// Evaluates `body` until it returns a value or `timeout` has passed; the value, or nil at the deadline.
public func waitFor<T>(timeout: Duration = defaultWaitTimeout, poll: Duration = .milliseconds(10),
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
/// is reported by name as it happens; `HangGuard` ends the run a minute later if it is still running. Swift Testing
/// starts a test's clock when it schedules the test, and it schedules every test of the run at once; `HangGuard`
/// then makes each test case wait for a turn (`TestThreads`: a few at once, each on a dedicated thread, so a
/// blocking test no longer holds the cooperative pool). The clock therefore counts the wait for a turn: the test
/// that runs last reports about the whole run's wall time (on a 2-core machine at load average 15–24, tests that
/// take seconds reported 574 s with 318 of the suites' tests done), so the limit must stay above the whole Swift
/// run under load, not above one test's own time (seconds): 25 minutes.
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
