import CSystemd
import CTrackSys
import Foundation
import Synchronization
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A graceful stop (SIGTERM or SIGINT): no new connections, every connected client told, reads in flight given
/// `--stop-timeout` seconds, and every worker reaped before the supervisor exits with status 0.
extension Supervisor {
    static let stoppingMessage = "trackd is stopping"
    /// What a worker gets beyond `--stop-timeout` to end its reads, say so and exit, before it is killed.
    static let stopMarginMs: UInt64 = 2000
    /// How long killed workers get to be reaped (a SIGKILL always ends a process; this only bounds a stuck kernel).
    static let killedReapMs: UInt64 = 10_000

    /// 1. The accept gate closes: no connection is taken from the listening socket's queue any more. A socket
    ///    systemd passed keeps its queue for the next trackd; one trackd bound is unlinked, and the connections
    ///    already queued on it are each told "trackd is stopping".
    /// 2. Every worker gets SIGTERM (Session+Stop.swift: it refuses new requests with −11904, lets its reads run
    ///    for `--stop-timeout` s, ends the rest with −11904, sends Error −11904 with request id 0, and exits); a
    ///    warm worker without a connection is killed.
    /// 3. Workers still running `stopMarginMs` after the grace are killed; their clients are told (Error −11904,
    ///    when the connection is between frames).
    /// 4. Every worker reaped, the supervisor exits 0.
    func stop(signal sig: Int32) -> Never {
        let started = trackd_monotonic_ms()
        let grace = configuration.stopTimeout
        acceptGate.withLock { $0 = true }
        Log.notice("received signal \(sig) (\(signalDescription(sig))); stopping: no new connections; reads in flight get \(grace) s (--stop-timeout)")
        Event.stopping(signal: sig).emit()
        Systemd.notify("STOPPING=1\nSTATUS=stopping: reads in flight get \(grace) s")
        if let path = listener.ownedPath {
            removeFile(atPath: path)
            refuseQueuedConnections()
        }
        let signalled = counters.withLock { c -> Int in
            c.stopping = true
            for waiting in c.pending { tell(waiting.connection, TrackError(.daemonStopping, Self.stoppingMessage)) }
            c.pending.removeAll()
            if let warm = c.warm {
                kill(warm.pid, SIGKILL)
                c.ending.insert(warm.pid)
                c.warm = nil
            }
            for pid in c.workers.keys { kill(pid, SIGTERM) }
            return c.workers.count
        }
        waitForWorkers(untilMs: started + grace * 1000 + Self.stopMarginMs)
        let late = counters.withLock { c -> Int in
            let late = c.workers.filter { !$0.value.killed }
            for (pid, record) in late {
                Log.warning("stopping: killing worker \(pid) (client uid \(record.uid) pid \(record.clientPID)): still running \(grace) s after the stop (--stop-timeout)")
                c.workers[pid]!.killed = true
                c.workers[pid]!.farewell = TrackError(.daemonStopping,
                                                      "\(Self.stoppingMessage); the worker serving this connection did not end within the grace of \(grace) s (--stop-timeout)")
                kill(pid, SIGKILL)
            }
            return late.count
        }
        waitForWorkers(untilMs: trackd_monotonic_ms() + Self.killedReapMs)
        let left = counters.withLock { $0.workers.count + $0.ending.count }
        let took = trackd_monotonic_ms() - started
        if left > 0 {
            Log.error("stopped after \(took) ms with \(left) workers not reaped")
        } else {
            Log.notice("stopped after \(took) ms: \(signalled) workers told, \(signalled - late) ended by themselves, \(late) killed after the grace; every worker reaped")
        }
        Event.stopped(told: signalled, killed: late, unreaped: left).emit()
        exit(left > 0 ? 1 : 0)
    }

    /// Takes each connection already queued on a socket trackd bound itself (nobody else will serve it once trackd
    /// exits) and tells it "trackd is stopping".
    private func refuseQueuedConnections() {
        while let conn = try? listener.descriptor.accept() {
            tell(SharedDescriptor(conn), TrackError(.daemonStopping, Self.stoppingMessage))
        }
    }

    /// Reaps (on SIGCHLD, and every 100 ms) until every worker is gone or `deadline` (CLOCK_MONOTONIC ms) passes.
    private func waitForWorkers(untilMs deadline: UInt64) {
        let childEnded = SignalSet([SIGCHLD])
        while counters.withLock({ !$0.workers.isEmpty || !$0.ending.isEmpty }) {
            let now = trackd_monotonic_ms()
            guard now < deadline else { return }
            _ = childEnded.wait(milliseconds: Int(min(deadline - now, 100)))
            reap()
        }
    }
}
