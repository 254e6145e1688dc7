import Foundation
import Testing

/// `trackd worker` takes its options from the same table as `trackd` and refuses what it cannot use, naming the
/// argument, instead of falling back to a default. (No daemon needed: the worker checks its arguments first.)
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct WorkerArgumentsTests {
    @Test func badWorkerArgumentsAreRefusedByName() throws {
        for (args, named) in [(["--slot", "x"], "--slot"), (["--worker-memory", "1000"], "--worker-memory"),
                              (["--client-uid"], "--client-uid"), (["--warm", "2"], "--warm"),
                              (["--frobnicate", "1"], "--frobnicate"), (["--max-connections", "4"], "--max-connections")] {
            let r = try run(Env.trackd, ["worker"] + args)
            #expect(r.status == 2, "\(args)")
            #expect(r.stderr.contains(named), "\(args): \(r.stderr)")
        }
    }
}
