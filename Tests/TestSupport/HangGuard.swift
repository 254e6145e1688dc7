import Dispatch
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Ends the test run when a test is still running a minute past its time limit. Swift Testing's `.timeLimit`
/// records an issue when a test runs over, but cannot stop a synchronous test blocked in a system call (a receive
/// nobody answers, a child never reaped): the run would hang until something outside kills it. This trait then
/// names the test on stderr and SIGKILLs the test process's group — the runner, its daemons and their workers.
/// A suite gets it with `.endsTheRunIfItHangs` next to its `.timeLimit`. It also runs each test case off Swift's
/// cooperative pool, at most a few at once (`TestThreads`): the guard's countdown starts when the test's turn does.
public struct HangGuard: SuiteTrait, TestTrait, TestScoping {
    /// How long past the time limit before the run ends.
    public static let grace: Duration = .seconds(60)

    public var isRecursive: Bool { true }

    /// Each test case (one run of a test function) is guarded; a suite as a whole is not.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await TestThreads.run {
            guard let limit = test.timeLimit else { return try await function() }
            let name = test.id.description
            let minutes = Int(limit.components.seconds / 60)
            let timer = Countdown(after: limit + Self.grace) {
                let message = "HangGuard: \(name) is still running a minute past its \(minutes)-minute time limit; "
                    + "ending the test run (SIGKILL to its process group)\n"
                message.withCString { _ = write(2, $0, strlen($0)) }
                kill(0, SIGKILL)
            }
            defer { timer.cancel() }
            try await function()
        }
    }
}

extension Trait where Self == HangGuard {
    /// See `HangGuard`.
    public static var endsTheRunIfItHangs: Self { HangGuard() }
}

/// Runs `action` once on a global queue after `delay`, unless cancelled first.
public final class Countdown {
    private let timer: any DispatchSourceTimer

    public init(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(Int(delay.milliseconds)))
        timer.setEventHandler(handler: action)
        timer.resume()
    }

    public func cancel() { timer.cancel() }
}
