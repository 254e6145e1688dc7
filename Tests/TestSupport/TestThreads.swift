import Foundation
import Synchronization

/// Where a test case's body runs: on a dedicated thread, never on Swift's cooperative pool, and at most
/// `TestThreads.width` test cases at once.
///
/// Swift Testing schedules every test case of the run at once onto the cooperative pool (as wide as the machine's
/// cores) and most test bodies block their thread: a synchronous socket read, a waitpid, a poll with usleep, ffmpeg
/// making media. Two blocked tests then held a 2-core machine's whole pool, the run's other work (its time-limit
/// tasks, its event reporting, every other test) waited behind them, and under load no test had finished minutes
/// into the run. The same rule as the sources' (blocking calls run on dedicated threads, as TrackClient's
/// `samples` waits on a thread of its own): here the test's jobs are run by `DedicatedThreads`, and a test case
/// waits for a turn (`AsyncSemaphore`, suspended, holding no thread) before it starts, so the machine runs a few
/// daemons at a time instead of hundreds. `HangGuard` (on every suite) runs each test case through `run`.
public enum TestThreads {
    /// Test cases running at once: twice the cores (most tests wait on a daemon, a child process or a socket about
    /// half of their time), at least 4.
    public static let width = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

    static let turns = AsyncSemaphore(width)

    /// Waits for a turn, then runs `body` with its jobs on dedicated threads; the turn is released when it ends.
    public static func run(_ body: @Sendable () async throws -> Void) async throws {
        await turns.wait()
        defer { turns.signal() }
        try await withTaskExecutorPreference(DedicatedThreads.shared) { try await body() }
    }
}

/// A task executor that runs each job on a new thread of its own. A test's body is one job up to its first
/// suspension (a synchronous test: the whole test), so a body that blocks holds only that thread; a test's child
/// tasks (`async let`, a task group) get threads of their own too, so one blocked child never starves another.
public final class DedicatedThreads: TaskExecutor {
    public static let shared = DedicatedThreads()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let thread = Thread { job.runSynchronously(on: executor) }
        thread.name = "test-case"
        thread.start()
    }
}

/// A counting semaphore for tasks: `wait()` suspends (holding no thread) until a unit is free; waiters are served
/// in arrival order.
public final class AsyncSemaphore: Sendable {
    private struct State: ~Copyable {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(_ units: Int) { state = Mutex(State(free: units)) }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.free > 0 {
                    s.free -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Frees a unit: the longest waiter gets it.
    public func signal() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.free += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
