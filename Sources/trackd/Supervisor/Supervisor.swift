import CSystemd
import CTrackSys
import Dispatch
import Foundation
import IndexCache
import Synchronization
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor process (SupervisorMain starts it). Its work is in six files: this one (state, timers,
/// signals), +Connections (accept, credentials, connection limits, hand-off), +Workers (starting workers, the
/// warm worker), +HangUps (the bound on worker processes, clients that have gone), +Reaping (reaping, the
/// watchdog) and +Stopping (SIGTERM: the graceful stop).
final class Supervisor: Sendable {
    struct WorkerRecord {
        var uid: UInt32
        var clientPID: Int32
        /// Index in the worker table.
        var slot: Int
        /// The supervisor's copy of the connection (for FIONREAD: does the worker still read?); closed when the
        /// record goes, at reap.
        var connection: SharedDescriptor
        /// Watchdog: the worker's receive count when unread input was first seen, and since when (monotonic ms).
        var readsSeen: UInt64 = 0
        var unreadSince: UInt64?
        var killed = false
        /// Why the supervisor killed it (the watchdog; a stop past --stop-timeout): sent to its client as an Error
        /// with request id 0 once the worker is reaped, if the connection is then between frames (WorkerTable word 8).
        var farewell: TrackError?
        /// Its client has closed the connection (the supervisor's copy reports POLLHUP): it no longer counts
        /// against the connection limits, though its worker may still be finishing.
        var peerClosed = false
        /// CLOCK_MONOTONIC ms when the supervisor saw the client gone (`peerClosed`): the worker gets
        /// `Supervisor.vanishedGraceMs` to end by itself before it is killed (Supervisor+HangUps.swift).
        var closedAtMs: UInt64?
        /// A warm worker's control socket, kept until it is reaped: the ready byte there says whether it got as
        /// far as reading its connection (see handToWarmWorker).
        var warmControl: SharedDescriptor?
    }

    /// A worker started ahead of the next connection (GStreamer initialised, plugins loaded, sandbox entered,
    /// read rehearsed — or still doing so), to be handed the connection on its end of `control`.
    struct WarmWorker {
        var pid: pid_t
        var control: SharedDescriptor
        var index: IndexService.Channel
        var startedMs: UInt64
        /// Started at `--warm-worker-nice` (other workers were running); set back by `restorePriority`.
        var niced = false
    }

    /// A connection that waits for a worker process (the processes are at their bound).
    struct PendingConnection {
        var connection: SharedDescriptor
        var uid: UInt32
        var clientPID: Int32
    }

    struct Counters {
        var accepted: UInt64 = 0
        var crashes: UInt64 = 0
        /// What reaped workers sent (their WorkerTable words 5–7), published for Status.
        var retired = SharedStatistics.Retired()
        var rejected: UInt64 = 0
        /// Connections refused by the per-uid rate limit (also counted in `rejected`), and its buckets.
        var rateLimited: UInt64 = 0
        var connectionRate = ConnectionRate()
        var watchdogKills: UInt64 = 0
        var workers: [pid_t: WorkerRecord] = [:]
        var freeSlots: [Int]
        var warm: WarmWorker?
        /// Workers of new connections that have not yet sent their first sample or image, each with the
        /// CLOCK_MONOTONIC ms after which it no longer counts as starting; the next warm worker waits for them.
        var startingUp: [pid_t: (slot: Int, untilMs: UInt64)] = [:]
        var warmCheckScheduled = false
        /// SIGTERM arrived: no new workers; every worker is being stopped (Supervisor+Stopping.swift).
        var stopping = false
        /// Workers outside `workers` that were killed and are not yet reaped (warm workers without a connection).
        var ending: Set<pid_t> = []
        /// Connections accepted while the worker processes were at their bound (Supervisor+HangUps.swift), in the
        /// order they came; each gets a worker when a process is reaped, or none if its client leaves first.
        var pending: [PendingConnection] = []
    }

    let listener: Listener
    let executable: String
    let statistics: SharedStatistics
    /// What trackd was started with: the limits, the warm-worker settings and what each worker is passed.
    let configuration: Configuration
    let table: WorkerTable
    /// The frame-index cache every worker reaches through its fd 6.
    let index: IndexService
    let counters: Mutex<Counters>
    let timerQueue = DispatchQueue(label: "trackd.timers")
    /// True once trackd is stopping. The accept thread holds it across accept and hand-off, so once the stop has
    /// set it no connection is taken from the listening socket's queue (a socket-activated restart's next trackd
    /// serves those) and every connection taken before is registered, and told.
    let acceptGate = Mutex(false)
    /// Pokes the hang-up thread (Supervisor+HangUps.swift): `first` is written, `second` is polled.
    let hangUpWake: SocketPair
    /// The timers (kept alive here; only `start` adds to it).
    private let sources = Mutex<[any DispatchSourceTimer]>([])

    var limits: ConnectionLimits { configuration.limits }

    init(listener: consuming Listener, executable: String, statistics: SharedStatistics, table: WorkerTable,
         configuration: Configuration, index: IndexService) throws(SystemError) {
        self.listener = listener
        self.executable = executable
        self.statistics = statistics
        self.configuration = configuration
        self.table = table
        self.index = index
        counters = Mutex(Counters(freeSlots: (0..<table.slots).reversed()))
        hangUpWake = try SocketPair(.sequencedPackets)
    }

    /// Milliseconds since the epoch.
    static func nowMs() -> UInt64 { wallClockMilliseconds() }

    func start() {
        // Once a second: the watchdog, and a reap as a backstop, because a dead worker that is not reaped keeps
        // its client waiting for an end of file that the supervisor's copy of the connection holds back.
        startTimer(every: .seconds(1)) { [self] in
            reap()
            if limits.watchdog > 0 { watchdogTick() }
            restoreWarmPriorityWhenIdle()
        }
        // systemd's WatchdogSec=: ping at half the interval it asks for (sd_watchdog_enabled checks WATCHDOG_PID).
        if let usec = Systemd.watchdogMicroseconds() {
            Log.notice("systemd watchdog enabled: WATCHDOG=1 every \(usec / 2000) ms")
            Event.systemdWatchdog(intervalMs: usec / 2000).emit()
            startTimer(every: .microseconds(Int(min(usec / 2, UInt64(Int.max))))) { Systemd.notify("WATCHDOG=1") }
        }
        counters.withLock { startWarmWorker(&$0) }
        // Non-blocking: the accept thread accepts only after poll says a connection is queued, and a stop takes the
        // connections queued on a socket trackd bound without waiting.
        let fd = listener.descriptor.rawValue
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        startHangUpThread()
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "accept"
        thread.start()
    }

    /// The signals the supervisor handles, blocked in every thread and taken by `waitForSignals`.
    static let handledSignals = SignalSet([SIGCHLD, SIGTERM, SIGINT, SIGHUP])

    /// The main thread's loop: reaps on SIGCHLD, answers SIGHUP, stops on SIGTERM/SIGINT. Never returns.
    func waitForSignals() -> Never {
        while true {
            guard let sig = Self.handledSignals.wait() else { continue }
            switch sig {
            case SIGCHLD: reap()
            case SIGHUP:
                // systemd's ExecReload would send this (trackd.service has none, and says why).
                Log.notice("SIGHUP: trackd has nothing to re-read (its settings are its command line; the frame-index cache checks every file it serves); restart it to change a setting: under socket activation a restart loses no queued connection")
                Event.hangUp.emit()
            default: stop(signal: sig)
            }
        }
    }

    private func startTimer(every interval: DispatchTimeInterval, _ handler: @escaping @Sendable () -> Void) {
        sources.withLock { sources in
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.schedule(deadline: .now() + interval, repeating: interval)
            timer.setEventHandler(handler: handler)
            timer.resume()
            sources.append(timer)
        }
    }

    /// Publishes the counters for Status (every worker maps them). Call with the counters locked.
    func publish(_ c: Counters) {
        statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes, retired: c.retired,
                           interventions: .init(watchdogKills: c.watchdogKills, refused: c.rejected, rateLimited: c.rateLimited))
    }
}
