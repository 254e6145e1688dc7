import CTrackSys
import Dispatch
import IndexCache
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Starting workers: one for a connection, or the warm worker started ahead of the next connection.
extension Supervisor {
    /// A connection that takes a warm worker started less than this long ago (ms) means connections are coming
    /// about as fast as warm workers start: the next one starts at once, without a grace.
    static let warmBusyMs: UInt64 = 500

    /// What a warm worker sends on its control socket, one byte, when it is ready and about to read its
    /// connection (after its rehearsal).
    static let warmReady: UInt8 = 1

    /// Starts the next connection's worker now, so that it initialises GStreamer, loads its plugins and enters
    /// its sandbox before the client connects (`trackd worker --warm 1`, with a control socket as fd 3 instead
    /// of a connection). Call with the counters locked.
    func startWarmWorker(_ c: inout Counters) {
        guard configuration.warmWorker, c.warm == nil, !c.stopping, c.pending.isEmpty, processes(c) < processBound else { return }
        do throws(SystemError) {
            let pair = try SocketPair(.sequencedPackets)
            let channel = try index.openChannel(uid: nil)
            var warm = configuration
            warm.warm = true
            let child = try spawn(Options.workerArguments(warm), fd: pair.second, indexFD: channel.workerEnd)
            c.warm = WarmWorker(pid: child, control: SharedDescriptor(pair.first), index: channel.channel,
                                startedMs: trackd_monotonic_ms(), niced: lowerPriority(child, beside: c.workers.count))
        } catch {
            Log.warning("\(error.context("cannot start a warm worker"))")
        }
    }

    /// Starts the next warm worker once no new connection is starting up: when each has sent its first sample or
    /// image, ended, or had `--warm-worker-grace`. A warm worker's own start-up (process, GStreamer, every plugin,
    /// the rehearsal: about 100 ms of CPU) would otherwise run exactly while the connection that took the previous
    /// one prerolls its first frame — on 2 CPUs that made the first frame 10–15 ms later. Connections that arrive
    /// meanwhile get a worker started for them. `adding`: the worker of a connection just handed off. Call with the
    /// counters locked; checks again every 5 ms on the timer queue while some connection is starting up.
    func startWarmWorkerAfterStartUps(_ c: inout Counters, adding new: (pid: pid_t, slot: Int)? = nil) {
        guard configuration.warmWorker else { return }
        let now = trackd_monotonic_ms()
        let graceMs = configuration.warmGraceMs
        if let new, graceMs > 0 { c.startingUp[new.pid] = (new.slot, now + graceMs) }
        c.startingUp = c.startingUp.filter { pid, starting in
            c.workers[pid]?.slot == starting.slot && now < starting.untilMs
                && table.load(starting.slot, .samplesSent) == 0 && table.load(starting.slot, .bytesCopied) == 0
        }
        guard c.startingUp.isEmpty else {
            if !c.warmCheckScheduled {
                c.warmCheckScheduled = true
                timerQueue.asyncAfter(deadline: .now() + .milliseconds(5)) { [self] in
                    counters.withLock { c in
                        c.warmCheckScheduled = false
                        startWarmWorkerAfterStartUps(&c)
                    }
                }
            }
            return
        }
        startWarmWorker(&c)
    }

    /// Gives the warm worker its connection — the client's pid, uid and the worker-table slot (12 bytes) with the
    /// connection's descriptor — even while it is still starting: it reads it when ready, and a client that came
    /// early waits for less than a new worker would take. Returns it (the caller keeps its control socket in the
    /// worker's record), or nil when there is none or it is gone (then it is killed). A warm worker that dies
    /// before it is ready (a broken plugin, a sandbox that kills its rehearsal) has not read a byte of the
    /// connection, so reap() starts a worker for that connection instead: no client is lost to a failed start.
    /// Call with the counters locked.
    func handToWarmWorker(_ c: inout Counters, conn: SharedDescriptor, pid: Int32, uid: UInt32, slot: Int) -> WarmWorker? {
        guard var warm = c.warm else { return nil }
        c.warm = nil
        restorePriority(&warm)  // before the connection: its client's read runs at the supervisor's priority
        var payload = [UInt8]()
        for value in [UInt32(bitPattern: pid), uid, UInt32(slot)] {
            payload += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }  // little-endian
        }
        // Its frame-index requests are this client's from the moment it can have the connection.
        warm.index.uid.withLock { $0 = uid }
        do {
            try warm.control.descriptor.send(payload, passing: conn.descriptor)
        } catch {
            Log.warning("warm worker \(warm.pid) did not take its connection (\(error.reason)); starting another")
            kill(warm.pid, SIGKILL)
            c.ending.insert(warm.pid)
            return nil  // (its control socket is closed with `warm`)
        }
        return warm
    }

    /// Whether a warm worker may start at a lower priority: `--warm-worker-nice` above 0, and the supervisor can set
    /// it back (setpriority not refused by a syscall filter; RLIMIT_NICE or CAP_SYS_NICE allows the way back — as
    /// root, or with the unit's LimitNICE). Without the way back a worker would read at nice 19: never lower it then.
    static let canRestorePriority = trackd_can_restore_nice() == 1
    static let ownNice = trackd_own_nice()

    /// Starts the warm worker `pid` (just spawned: one thread, so every thread it starts inherits the value) at
    /// `--warm-worker-nice` when `running` other workers are running. Its start-up — exec and linking, GStreamer
    /// and every plugin, ORC, the rehearsal: about 0.3 s of CPU — then takes only the CPU time their reads leave
    /// idle, instead of a share of it on a machine with few CPUs. Returns whether it did.
    func lowerPriority(_ pid: pid_t, beside running: Int) -> Bool {
        let nice = Int32(configuration.warmNice)
        guard nice > Self.ownNice, running > 0, Self.canRestorePriority else { return false }
        return trackd_renice_process(pid, nice) > 0
    }

    /// Sets every thread of a lowered warm worker back to the supervisor's nice value: when it takes a connection,
    /// or when no other worker is left to compete with (then it gets ready sooner for the next client).
    func restorePriority(_ warm: inout WarmWorker) {
        guard warm.niced else { return }
        warm.niced = false
        if trackd_renice_process(warm.pid, Self.ownNice) < 0 {
            let error = SystemError("setpriority", errno: trackd_errno())
            Log.warning("cannot set warm worker \(warm.pid)'s priority back: \(error)")
        }
    }

    func restoreWarmPriority(_ c: inout Counters) {
        guard var warm = c.warm, warm.niced else { return }
        restorePriority(&warm)
        c.warm = warm
    }

    /// Once a second: a lowered warm worker started at least 2 s ago gets its priority back when no running worker
    /// is busy (a client that holds its slots, or waits on nothing, leaves the CPUs to it), so it is not starved for
    /// long beside idle connections on a loaded machine.
    func restoreWarmPriorityWhenIdle() {
        counters.withLock { c in
            guard let warm = c.warm, warm.niced, trackd_monotonic_ms() >= warm.startedMs + 2000 else { return }
            let busy = c.workers.values.contains { table.load($0.slot, .armed) == 1 && table.load($0.slot, .busy) > 0 }
            if !busy { restoreWarmPriority(&c) }
        }
    }

    /// Starts a worker (not warm) for `conn`: the connection as its fd 3. Returns its pid.
    func spawnWorker(conn: SharedDescriptor, pid: Int32, uid: UInt32, slot: Int) throws(SystemError) -> pid_t {
        var worker = configuration
        (worker.clientPID, worker.clientUID, worker.slot) = (pid, uid, slot)
        let channel = try index.openChannel(uid: uid)
        return try spawn(Options.workerArguments(worker), fd: conn.descriptor, indexFD: channel.workerEnd)
    }

    /// Starts `trackd worker` with `arguments`, the connection (or a warm worker's control socket) as fd 3, the
    /// read-only statistics as fd 4, the worker table as fd 5 and its frame-index channel as fd 6.
    private func spawn(_ arguments: [String], fd: borrowing FileDescriptor, indexFD: borrowing FileDescriptor)
        throws(SystemError) -> pid_t {
        let fds = [fd.rawValue, statistics.readOnly.rawValue, table.descriptor!.rawValue, indexFD.rawValue]
        return try spawnProcess(executable, arguments: [executable, "worker"] + arguments,
                                environment: Self.workerEnvironment, descriptors: fds)
    }

    /// The supervisor's environment, with Swift's crash backtracer off: in the sandbox it could not start
    /// swift-backtrace anyway (exec is forbidden, and the filter would kill the worker with SIGSYS, hiding the
    /// real signal), and a crashing worker should die at once, with the signal the supervisor then logs. And
    /// without `ORC_CODE` (the unit's `backup`, an operator's `debug`): the worker compiles its conversions' ORC
    /// code before its filter and the sandbox seals it (W^X, CSandbox's OrcSeal.c; docs/SECURITY.md).
    static let workerEnvironment: [String] = {
        var env: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("SWIFT_BACKTRACE=") && !text.hasPrefix("ORC_CODE=") { env.append(text) }
            p += 1
        }
        return env + ["SWIFT_BACKTRACE=enable=no"]
    }()
}
