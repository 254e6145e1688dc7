import CTrackSys
import Foundation
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Bounded workers: at most `--max-connections` worker processes plus the warm one exist at any time — started,
/// starting or ending — and a client that has gone costs no worker for longer than a second.
///
/// Connection limits count what is open, so a connection stops counting the moment its client closes it. Its
/// worker did not: a burst of connections closed before their workers had started left one starting worker each
/// (200 open-and-close connections of one uid: 106 workers starting at once). Now
/// - a connection already closed when it is accepted gets no worker (`handOff`);
/// - the hang-up thread waits in poll(2) on the supervisor's copy of every served or waiting connection: when a
///   client goes (POLLHUP), a worker still starting is killed at once (it has nothing to serve), any other gets
///   `vanishedGraceMs` to end by itself — it normally does, at once, on the end of its connection — and is killed
///   after that;
/// - a connection accepted while the processes are at their bound waits (it counts against the limits as open)
///   and gets its worker when a process is reaped, or none if its client leaves first.
extension Supervisor {
    /// How long a worker whose client has gone may take to end by itself before it is killed (ms).
    static let vanishedGraceMs: UInt64 = 500

    /// The most worker processes at once: one per connection, and the warm one.
    var processBound: Int { Int(limits.maxConnections) + (configuration.warmWorker ? 1 : 0) }

    /// Worker processes now: serving or ending (killed, not yet reaped), and the warm one.
    func processes(_ c: Counters) -> Int { c.workers.count + c.ending.count + (c.warm == nil ? 0 : 1) }

    /// Starts the hang-up thread (`start`).
    func startHangUpThread() {
        let thread = Thread { [self] in watchHangUps() }
        thread.name = "hang-ups"
        thread.start()
    }

    /// Tells the hang-up thread that the connections to watch have changed (a connection served, waiting, or
    /// reaped: a reaped worker's connection must not be held open by the thread's poll, or its client would not
    /// see its end).
    func wakeHangUpThread() { hangUpWake.first.sendWithoutWaiting([1]) }

    /// The hang-up thread: waits for a watched client to go, a change of the watched set, or the next grace to
    /// run out; then ends the workers of gone clients. Never returns.
    private func watchHangUps() -> Never {
        while true {
            let (watched, timeoutMs) = counters.withLock { c in
                let now = trackd_monotonic_ms()
                let graces = c.workers.values.compactMap { r in r.killed ? nil : r.closedAtMs.map { $0 + Self.vanishedGraceMs } }
                let timeout = graces.min().map { Int32(clamping: $0 > now ? $0 - now : 0) } ?? -1
                return (c.workers.values.filter { !$0.peerClosed }.map(\.connection) + c.pending.map(\.connection), timeout)
            }
            SharedDescriptor.waitForHangUp(watched, orReadable: hangUpWake.second, timeoutMs: timeoutMs)
            while hangUpWake.second.receiveByteWithoutWaiting() != nil {}
            counters.withLock { endVanishedWorkers(&$0) }
        }
    }

    /// Kills the workers whose clients have gone: at once while still starting, else after `vanishedGraceMs`.
    /// Call with the counters locked.
    func endVanishedWorkers(_ c: inout Counters) {
        markClosedConnections(&c)
        let now = trackd_monotonic_ms()
        for (pid, record) in c.workers where record.peerClosed && !record.killed {
            let starting = table.load(record.slot, .armed) != 1
            guard starting || now >= (record.closedAtMs ?? now) + Self.vanishedGraceMs else { continue }
            c.workers[pid]!.killed = true
            Log.info("worker \(pid) (client uid \(record.uid) pid \(record.clientPID)): its client has gone; "
                     + (starting ? "killed before it started serving" : "killed, still running \(Self.vanishedGraceMs) ms later"))
            kill(pid, SIGKILL)
        }
        servePending(&c)
    }

    /// Gives waiting connections their workers while the processes are below their bound, in the order they came;
    /// a connection whose client has gone is dropped. Call with the counters locked (after a reap, a hang-up).
    func servePending(_ c: inout Counters) {
        guard !c.pending.isEmpty else { return }
        while !c.pending.isEmpty, !c.stopping, processes(c) < processBound {
            let next = c.pending.removeFirst()
            if SharedDescriptor.hungUp([next.connection])[0] { continue }
            serve(&c, next)
        }
        publish(c)
    }
}
