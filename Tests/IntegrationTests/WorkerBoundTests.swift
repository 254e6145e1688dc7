import Foundation
import Synchronization
import TestSupport
import Testing
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Issue #25, bounded workers: the supervisor never has more worker processes (started, starting, ending or warm)
/// than `--max-connections` plus the warm one, and a worker whose client has gone is ended within a second
/// (Supervisor+HangUps.swift). SoakTests runs the same burst beside its workload.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct WorkerBoundTests {
    /// How long a worker may outlive its client: the supervisor's promise (one second) plus what a loaded machine
    /// may add before the supervisor's timer thread and the reap run (half a second).
    static let vanishedBound = Duration.milliseconds(1500)

    /// Counts the supervisor's children every 2 ms on a thread of its own, until `finish()`.
    final class ChildSampler: Sendable {
        private let most = Atomic<Int>(0)
        private let done = Atomic<Bool>(false)
        private let ended = DispatchSemaphore(value: 0)

        init(supervisor pid: pid_t) {
            Thread { [self] in
                while !done.load(ordering: .relaxed) {
                    let count = Procfs.children(of: pid).count
                    if count > most.load(ordering: .relaxed) { most.store(count, ordering: .relaxed) }
                    usleep(2000)
                }
                ended.signal()
            }.start()
        }

        /// Stops sampling; the most children seen at once.
        func finish() -> Int {
            done.store(true, ordering: .relaxed)
            ended.wait()
            return most.load(ordering: .relaxed)
        }
    }

    /// `count` connections from `threads` threads, each closed at once or after a Hello and a pause of up to 20 ms
    /// (so some are accepted after their client has gone, some while their worker is still starting, some once it
    /// serves); no reply is read. Returns when every one is closed.
    static func burst(_ socketPath: String, count: Int, threads: Int = 4) {
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread {
                var rng = SplitMix64(seed: UInt64(thread + 1))
                for _ in 0..<(count / threads) {
                    guard let fd = try? UnixSocket.connect(to: socketPath) else { continue }
                    let socket = MessageSocket(fd: fd)
                    if rng.next() % 2 == 0 {
                        try? socket.send(.hello(Hello(clientName: "burst")), requestID: 1)
                        usleep(UInt32(rng.next() % 20_000))
                    }
                    socket.shutdown()  // the end of the connection even if another test's spawn holds a copy
                }
                group.leave()
            }.start()
        }
        group.wait()
    }

    /// Waits until only the warm worker (or none, while the next one starts) is left; whether it came within
    /// `vanishedBound`.
    static func workersEnd(_ supervisor: pid_t) -> Bool {
        waitUntil(timeout: vanishedBound, poll: .milliseconds(5)) { Procfs.children(of: supervisor).count <= 1 }
    }

    @Test func aBurstOfVanishingConnectionsNeverExceedsTheBound() throws {
        let limit = 4
        let daemon = try Daemon(extraArgs: ["--max-connections", "\(limit)", "--connection-burst-per-uid", "1000"])
        defer { daemon.stop() }
        _ = try daemon.status()  // the warm worker has served once: the daemon is up
        let sampler = ChildSampler(supervisor: daemon.pid)
        Self.burst(daemon.socketPath, count: 200)
        let ended = Self.workersEnd(daemon.pid)
        let most = sampler.finish()
        #expect(most <= limit + 1, "\(most) worker processes at once; the bound is \(limit) connections + the warm worker")
        #expect(ended, "workers still running \(Self.vanishedBound) after their clients had gone: \(Procfs.children(of: daemon.pid))")
        // Nothing was lost: a client served now is served as ever, and the connections that came were counted.
        let status = try daemon.status()
        #expect(status.connectionsAccepted >= 200, "\(status)")
        #expect(status.workerCrashes == 0, "a killed worker of a gone client is not a crash: \(status)")
    }

    @Test func aConnectionBeyondTheProcessBoundWaitsAndIsServed() throws {
        // Both connections the limit allows are served, then their clients leave: their workers are ending, and with
        // the warm worker the processes are at their bound. A new client is within the limits (what has gone does not
        // count), so it waits for a worker process to end and is then served — not refused, not given a fourth.
        let limit = 2
        let daemon = try Daemon(extraArgs: ["--max-connections", "\(limit)", "--connection-burst-per-uid", "1000"])
        defer { daemon.stop() }
        let held = try (0..<limit).map { _ in try MessageSocket(fd: UnixSocket.connect(to: daemon.socketPath)) }
        for socket in held { try socket.send(.hello(Hello(clientName: "held")), requestID: 1) }
        for socket in held {
            guard case .helloReply = try socket.receive().message else { throw TrackError(.unknown, "no HelloReply") }
        }
        let sampler = ChildSampler(supervisor: daemon.pid)
        for socket in held { socket.shutdown() }
        let status = try daemon.status()
        let most = sampler.finish()
        #expect(most <= limit + 1, "\(most) worker processes at once; the bound is \(limit) connections + the warm worker")
        #expect(status.connectionsRefused == 0 && status.workerCrashes == 0, "\(status)")
        #expect(Self.workersEnd(daemon.pid), "\(Procfs.children(of: daemon.pid))")
    }
}
