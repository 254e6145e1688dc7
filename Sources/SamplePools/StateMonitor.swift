import Foundation

/// State shared between threads, with waiting for a change: every `withLock` wakes the waiters, and `wait` sleeps on
/// a condition variable until its step has an answer. The output's puller waits here for the client (a released
/// slot, ResetOutput, FinishOutput, CancelOutput) without a timeout: a change wakes it at once, nothing else does.
public final class StateMonitor<State>: @unchecked Sendable {
    // @unchecked: `state` is touched only with `condition` locked.
    private let condition = NSCondition()
    private var state: State

    public init(_ state: State) { self.state = state }

    /// Reads or changes the state; wakes every waiter afterwards (it re-checks its step).
    public func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&state)
    }

    /// Runs `step` on the state until it answers (non-nil), sleeping until the next `withLock` whenever it does not.
    /// `blocked` runs once, outside the lock, before the first sleep (the caller stops counting itself busy); the
    /// step is evaluated again after it. Returns the answer and whether the caller slept.
    public func wait<T>(until step: (inout State) -> T?, blocked: () -> Void = {}) -> (T, waited: Bool) {
        condition.lock()
        var waited = false
        while true {
            if let answer = step(&state) {
                condition.unlock()
                return (answer, waited)
            }
            if !waited {
                waited = true
                condition.unlock()
                blocked()
                condition.lock()
                continue  // anything may have changed meanwhile: ask the step again before sleeping
            }
            condition.wait()
        }
    }
}
