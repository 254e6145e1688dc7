import CSystemd
import CTrackSys
import Dispatch
import Foundation
import IndexCache
import Protocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor never touches media: it accepts connections, reads each peer's credentials, starts a fresh
/// worker process for it (this executable in worker mode, the connection as fd 3), and reaps workers. A
/// worker's crash is logged and counted; nothing else is affected.
enum SupervisorMain {
    static let usage = """
        usage: trackd [--socket PATH] [--worker-memory BYTES] [--worker-cpu SECONDS] [--worker-user NAME] [--no-warm-worker]
                      [--warm-worker-grace MS] [--index-cache-bytes BYTES]
                      [--max-frame-pixels N] [--decode-budget PIXELS] [--audio-decode-budget SAMPLES] [LIMITS]
          Serves AVAssetReader-style sample reading to local clients.
          --socket PATH           listen here (default: $TRACKD_SOCKET, $XDG_RUNTIME_DIR/trackd.sock,
                                  /run/trackd/trackd.sock); ignored under systemd socket activation (LISTEN_FDS).
          --worker-memory BYTES   each worker's address-space limit, RLIMIT_AS (default 4294967296 = 4 GiB)
          --worker-cpu SECONDS    each worker's CPU-time limit, RLIMIT_CPU (default 600)
          --worker-user NAME      when trackd runs as root, workers drop to this user's uid/gid (default nobody)
          --no-warm-worker        start each worker when its client connects, not one ahead (the warm worker has
                                  GStreamer initialised, plugins loaded and its sandbox entered before the client
                                  connects, and has rehearsed an H.264 read: the first frame comes about 100 ms
                                  sooner)
          --warm-worker-grace MS  when connections are sparse, the next warm worker starts once the connection
                                  that took the last one has sent its first sample or image, ended, or had MS
                                  milliseconds (default 200; 0 = at once), so that its start-up does not compete
                                  with that client's first frame; back-to-back connections start it at once
          --index-cache-bytes BYTES
                                  frame indexes kept for all clients, in memory and in the cache directory
                                  ($CACHE_DIRECTORY, $XDG_CACHE_HOME/trackd or ~/.cache/trackd; subdirectory
                                  index/), each bounded by BYTES (default 67108864 = 64 MiB; 0 = no cache)
          --max-frame-pixels N    largest decoded frame, width × height (default 67108864 = 8192×8192)
          --decode-budget PIXELS  decoded video pixels one output may consume (default 17592186044416 = 2^44)
          --audio-decode-budget SAMPLES
                                  decoded audio samples (frames × channels) one output may consume
                                  (default 274877906944 = 2^38)
        LIMITS (each hit gets the client an Error −11902 naming the limit, and a log line):
        \(Limits.usage)
          See docs/SECURITY.md for the worker sandbox, the decode limits and the limits.
        """

    static func run(arguments: [String]) -> Int32 {
        var socketPath: String?
        var sandbox = WorkerSandbox()
        var workerUser = "nobody"
        var warmWorker = true
        var warmGraceMs: UInt64 = 200
        var indexCacheBytes = 64 << 20
        var limits = Limits.defaults
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case let name where i + 1 < arguments.count && Limits.options.contains(where: { $0.name == name }):
                guard let value = UInt64(arguments[i + 1]), limits.set(name, value) else {
                    Log.error(Limits.complaint(name))
                    return 2
                }
                i += 1
            case "--socket" where i + 1 < arguments.count:
                socketPath = arguments[i + 1]
                i += 1
            case "--worker-memory" where i + 1 < arguments.count:
                guard let bytes = UInt64(arguments[i + 1]), bytes >= 256 << 20 else {
                    Log.error("--worker-memory needs a number of bytes, at least 268435456 (256 MiB)")
                    return 2
                }
                sandbox.memoryBytes = bytes
                i += 1
            case "--worker-cpu" where i + 1 < arguments.count:
                guard let seconds = UInt64(arguments[i + 1]), seconds >= 1 else {
                    Log.error("--worker-cpu needs a number of seconds, at least 1")
                    return 2
                }
                sandbox.cpuSeconds = seconds
                i += 1
            case "--max-frame-pixels", "--decode-budget", "--audio-decode-budget":
                guard i + 1 < arguments.count, let n = UInt64(arguments[i + 1]), n >= 1 else {
                    Log.error("\(arguments[i]) needs a positive whole number")
                    return 2
                }
                switch arguments[i] {
                case "--max-frame-pixels": sandbox.decode.maxFramePixels = n
                case "--decode-budget": sandbox.decode.videoBudgetPixels = n
                default: sandbox.decode.audioBudgetSamples = n
                }
                i += 1
            case "--worker-user" where i + 1 < arguments.count:
                workerUser = arguments[i + 1]
                i += 1
            case "--index-cache-bytes" where i + 1 < arguments.count:
                guard let bytes = Int(arguments[i + 1]), bytes >= 0 else {
                    Log.error("--index-cache-bytes needs a number of bytes (0 turns the frame-index cache off)")
                    return 2
                }
                indexCacheBytes = bytes
                i += 1
            case "--no-warm-worker":
                warmWorker = false
            case "--warm-worker-grace" where i + 1 < arguments.count:
                guard let ms = UInt64(arguments[i + 1]), ms <= 60_000 else {
                    Log.error("--warm-worker-grace needs a number of milliseconds from 0 to 60000")
                    return 2
                }
                warmGraceMs = ms
                i += 1
            case "-h", "--help":
                print(usage)
                return 0
            default:
                Log.error("unknown argument \(arguments[i])\n\(usage)")
                return 2
            }
            i += 1
        }
        signal(SIGPIPE, SIG_IGN)
        // SIGCHLD, SIGTERM and SIGINT are blocked before any thread exists, so every thread inherits the mask
        // and the main thread takes them with sigwait (Supervisor.waitForSignals). (libdispatch signal sources
        // missed signals here: the kernel delivered them to a thread that did not block them.)
        var signals = Supervisor.handledSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        if geteuid() == 0 {
            guard let entry = getpwnam(workerUser) else {
                Log.error("--worker-user \(workerUser): no such user; workers must not run as root")
                return 1
            }
            guard entry.pointee.pw_uid != 0 else {
                Log.error("--worker-user \(workerUser) is root; workers must not run as root")
                return 1
            }
            sandbox.uid = entry.pointee.pw_uid
            sandbox.gid = entry.pointee.pw_gid
            Log.notice("workers drop to \(workerUser) (uid \(entry.pointee.pw_uid), gid \(entry.pointee.pw_gid))")
        }

        let listener: Listener
        do {
            if let activated = try Listener.fromSystemd() {
                listener = activated
                Log.notice("using the socket passed by systemd (socket activation)")
            } else {
                listener = try Listener.bind(path: socketPath ?? SocketPath.resolveDefault())
                Log.notice("listening on \(listener.ownedPath!)")
            }
        } catch {
            Log.error("cannot listen: \(error)")
            return 1
        }
        guard let exe = selfExecutable() else {
            Log.error("cannot resolve /proc/self/exe to start workers")
            return 1
        }
        let statistics: SharedStatistics
        do {
            statistics = try SharedStatistics()
        } catch {
            Log.error("cannot create the shared statistics: \(error)")
            return 1
        }
        let table: (WorkerTable, Int32)
        do {
            table = try WorkerTable.create(slots: Int(limits.maxConnections))
        } catch {
            Log.error("cannot create the worker table: \(error)")
            return 1
        }
        let cacheDirectory = indexCacheBytes > 0 ? IndexStore.defaultDirectory() : nil
        let store = IndexStore(budget: indexCacheBytes, directory: cacheDirectory)
        if let problem = store.directoryProblem {
            Log.warning("frame-index cache: \(problem); keeping frame indexes in memory only")
        } else if let directory = store.directory {
            Log.notice("frame-index cache: \(directory), up to \(indexCacheBytes) bytes (and as many in memory)")
        } else if indexCacheBytes > 0 {
            Log.warning("frame-index cache: no cache directory ($CACHE_DIRECTORY, $XDG_CACHE_HOME and $HOME unset); keeping frame indexes in memory only")
        }
        let supervisor = Supervisor(listener: listener, executable: exe, statistics: statistics, sandbox: sandbox,
                                    limits: limits, table: table.0, tableFD: table.1, warmWorker: warmWorker, warmGraceMs: warmGraceMs,
                                    index: IndexService(store: store, warn: { Log.warning($0) }))
        supervisor.start()
        _ = sd_notify(0, "READY=1\nSTATUS=accepting connections")
        supervisor.waitForSignals()
    }

    static func selfExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

final class Supervisor: Sendable {
    struct WorkerRecord {
        var uid: UInt32
        var clientPID: Int32
        /// Index in the worker table.
        var slot: Int
        /// The supervisor's copy of the connection (for FIONREAD: does the worker still read?); closed at reap.
        var connection: Int32
        /// Watchdog: the worker's receive count when unread input was first seen, and since when (monotonic ms).
        var readsSeen: UInt64 = 0
        var unreadSince: UInt64?
        var killed = false
        /// A warm worker's control socket, kept until it is reaped: the ready byte there says whether it got as
        /// far as reading its connection (see handToWarmWorker).
        var warmControl: Int32 = -1
    }

    struct Counters {
        var accepted: UInt64 = 0
        var crashes: UInt64 = 0
        /// What reaped workers sent (their WorkerTable words 5–7), published for Status.
        var retired = SharedStatistics.Retired()
        var rejected: UInt64 = 0
        var watchdogKills: UInt64 = 0
        var workers: [pid_t: WorkerRecord] = [:]
        var freeSlots: [Int]
        /// A worker started ahead of the next connection (GStreamer initialised, plugins loaded, sandbox entered,
        /// read rehearsed — or still doing so), to be handed the connection on its end of `control`.
        var warm: (pid: pid_t, control: Int32, index: IndexService.Channel, startedMs: UInt64)?
        /// Workers of new connections that have not yet sent their first sample or image, each with the
        /// CLOCK_MONOTONIC ms after which it no longer counts as starting; the next warm worker waits for them.
        var startingUp: [pid_t: (slot: Int, untilMs: UInt64)] = [:]
        var warmCheckScheduled = false
    }

    let listener: Listener
    let executable: String
    let statistics: SharedStatistics
    let sandbox: WorkerSandbox
    let limits: Limits
    let table: WorkerTable
    let tableFD: Int32
    /// Keep a warm worker (`--no-warm-worker` turns it off).
    let warmWorker: Bool
    /// How long a new connection's start-up may hold back the next warm worker (`--warm-worker-grace`).
    let warmGraceMs: UInt64
    /// The frame-index cache every worker reaches through its fd 6.
    let index: IndexService
    private let counters: Mutex<Counters>
    private let timerQueue = DispatchQueue(label: "trackd.timers")
    nonisolated(unsafe) private var sources: [DispatchSourceTimer] = []

    init(listener: Listener, executable: String, statistics: SharedStatistics, sandbox: WorkerSandbox,
         limits: Limits, table: WorkerTable, tableFD: Int32, warmWorker: Bool, warmGraceMs: UInt64, index: IndexService) {
        self.warmWorker = warmWorker
        self.warmGraceMs = warmGraceMs
        self.index = index
        self.sandbox = sandbox
        self.limits = limits
        self.table = table
        self.tableFD = tableFD
        counters = Mutex(Counters(freeSlots: (0..<table.slots).reversed()))
        self.listener = listener
        self.executable = executable
        self.statistics = statistics
    }

    static func nowMs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    func start() {
        // Once a second: the watchdog, and a reap as a backstop, because a dead worker that is not reaped keeps
        // its client waiting for an end of file that the supervisor's copy of the connection holds back.
        startTimer(every: .seconds(1)) { [self] in
            reap()
            if limits.watchdog > 0 { watchdogTick() }
        }
        // systemd's WatchdogSec=: ping at half the interval it asks for (sd_watchdog_enabled checks WATCHDOG_PID).
        var usec: UInt64 = 0
        if sd_watchdog_enabled(0, &usec) > 0, usec > 0 {
            Log.notice("systemd watchdog enabled: WATCHDOG=1 every \(usec / 2000) ms")
            startTimer(every: .microseconds(Int(min(usec / 2, UInt64(Int.max))))) { _ = sd_notify(0, "WATCHDOG=1") }
        }
        counters.withLock { startWarmWorker(&$0) }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "accept"
        thread.start()
    }

    /// Starts the next connection's worker now, so that it initialises GStreamer, loads its plugins and enters
    /// its sandbox before the client connects (`trackd worker --warm 1`, with a control socket as fd 3 instead
    /// of a connection). Call with the counters locked.
    private func startWarmWorker(_ c: inout Counters) {
        guard warmWorker, c.warm == nil else { return }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            Log.warning("cannot start a warm worker: socketpair: \(String(cString: strerror(errno)))")
            return
        }
        defer { close(pair[1]) }
        guard let channel = index.open(uid: nil) else {
            close(pair[0])
            Log.warning("cannot start a warm worker: no frame-index channel: \(String(cString: strerror(errno)))")
            return
        }
        defer { close(channel.workerEnd) }
        let args = [executable, "worker", "--warm", "1"] + sandbox.arguments + limits.workerArguments
        let child = spawn(args, fd: pair[1], indexFD: channel.workerEnd)
        guard child > 0 else {
            close(pair[0])
            Log.warning("cannot start a warm worker: \(String(cString: strerror(errno)))")
            return
        }
        c.warm = (child, pair[0], channel.channel, trackd_monotonic_ms())
    }

    /// A connection that takes a warm worker started less than this long ago (ms) means connections are coming
    /// about as fast as warm workers start: the next one starts at once, without a grace.
    static let warmBusyMs: UInt64 = 500

    /// Starts the next warm worker once no new connection is starting up: when each has sent its first sample or
    /// image, ended, or had `warmGraceMs`. A warm worker's own start-up (process, GStreamer, every plugin, the
    /// rehearsal: about 100 ms of CPU) would otherwise run exactly while the connection that took the previous one
    /// prerolls its first frame — on 2 CPUs that made the first frame 10–15 ms later. Connections that arrive
    /// meanwhile get a worker started for them. `adding`: the worker of a connection just handed off. Call with the
    /// counters locked; checks again every 5 ms on the timer queue while some connection is starting up.
    private func startWarmWorkerAfterStartUps(_ c: inout Counters, adding new: (pid: pid_t, slot: Int)? = nil) {
        guard warmWorker else { return }
        let now = trackd_monotonic_ms()
        if let new, warmGraceMs > 0 { c.startingUp[new.pid] = (new.slot, now + warmGraceMs) }
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

    /// What a warm worker sends on its control socket, one byte, when it is ready and about to read its
    /// connection (after its rehearsal).
    static let warmReady: UInt8 = 1

    /// Gives the warm worker its connection — the client's pid, uid and the worker-table slot (12 bytes) with the
    /// connection's descriptor — even while it is still starting: it reads it when ready, and a client that came
    /// early waits for less than a new worker would take. Returns its pid and control socket (the caller keeps it
    /// in the worker's record), or nil when there is none or it is gone (then it is killed). A warm worker that
    /// dies before it is ready (a broken plugin, a sandbox that kills its rehearsal) has not read a byte of the
    /// connection, so reap() starts a worker for that connection instead: no client is lost to a failed start.
    /// Call with the counters locked.
    private func handToWarmWorker(_ c: inout Counters, conn: Int32, pid: Int32, uid: UInt32, slot: Int)
        -> (pid: pid_t, control: Int32, startedMs: UInt64)? {
        guard let warm = c.warm else { return nil }
        c.warm = nil
        var payload = [UInt8]()
        for value in [UInt32(bitPattern: pid), uid, UInt32(slot)] {
            withUnsafeBytes(of: value.littleEndian) { payload += $0 }
        }
        // Its frame-index requests are this client's from the moment it can have the connection.
        warm.index.uid.withLock { $0 = uid }
        var fd = conn
        let sent = payload.withUnsafeBytes { trackd_send_with_fds(warm.control, $0.baseAddress, $0.count, &fd, 1) }
        guard sent == 0 else {
            Log.warning("warm worker \(warm.pid) did not take its connection (\(String(cString: strerror(errno)))); starting another")
            kill(warm.pid, SIGKILL)
            close(warm.control)
            return nil
        }
        return (warm.pid, warm.control, warm.startedMs)
    }

    /// Starts a worker (not warm) for `conn`: the connection as its fd 3. Returns its pid, or -1 (errno set).
    private func spawnWorker(conn: Int32, pid: Int32, uid: UInt32, slot: Int) -> pid_t {
        let args = [executable, "worker", "--client-pid", "\(pid)", "--client-uid", "\(uid)", "--slot", "\(slot)"]
            + sandbox.arguments + limits.workerArguments
        guard let channel = index.open(uid: uid) else {
            Log.error("cannot make a frame-index channel for uid \(uid) pid \(pid): \(String(cString: strerror(errno)))")
            return -1
        }
        defer { close(channel.workerEnd) }
        return spawn(args, fd: conn, indexFD: channel.workerEnd)
    }

    /// Blocking accept on a dedicated thread.
    private func acceptLoop() {
        while true {
            let conn = trackd_accept_cloexec(listener.fd)
            if conn < 0 {
                let e = errno
                if e == EINTR || e == ECONNABORTED { continue }
                Log.warning("accept: \(String(cString: strerror(e)))")
                usleep(100_000)  // EMFILE/ENFILE/ENOMEM: back off instead of spinning
                continue
            }
            if !handOff(conn) { close(conn) }
        }
    }

    /// The signals the supervisor handles, blocked in every thread and taken by `waitForSignals`.
    static var handledSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGCHLD, SIGTERM, SIGINT] { sigaddset(&set, sig) }
        return set
    }

    /// The main thread's loop: reaps on SIGCHLD, stops on SIGTERM/SIGINT. Never returns.
    func waitForSignals() -> Never {
        var set = Self.handledSignals
        while true {
            var sig: Int32 = 0
            guard sigwait(&set, &sig) == 0 else { continue }
            if sig == SIGCHLD { reap() } else { shutdown(signal: sig) }
        }
    }

    private func startTimer(every interval: DispatchTimeInterval, _ handler: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler(handler: handler)
        timer.resume()
        sources.append(timer)
    }

    /// Starts a worker for `conn`, or refuses the connection when a connection limit is reached. Returns true
    /// when the supervisor keeps `conn` (until it reaps the worker).
    private func handOff(_ conn: Int32) -> Bool {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        if trackd_peer_credentials(conn, &pid, &uid, &gid) != 0 {
            Log.warning("SO_PEERCRED failed: \(String(cString: strerror(errno))); dropping connection")
            return false
        }
        // The counters lock is held across the limit check, spawn and registration so reap() cannot miss a
        // fast-dying worker and two connections cannot both take the last place.
        return counters.withLock { c in
            c.accepted += 1
            let open = UInt64(c.workers.count)
            let ofUID = UInt64(c.workers.values.filter { $0.uid == uid }.count)
            var refusal: String?
            if open >= limits.maxConnections {
                refusal = "trackd serves at most \(limits.maxConnections) connections at once; \(open) are open (--max-connections)"
            } else if ofUID >= limits.maxConnectionsPerUID {
                refusal = "trackd serves at most \(limits.maxConnectionsPerUID) connections per uid; uid \(uid) has \(ofUID) (--max-connections-per-uid)"
            }
            if let refusal {
                c.rejected += 1
                Log.warning("limit: refused connection from uid \(uid) pid \(pid): \(refusal)")
                refuse(conn, refusal)
                return false
            }
            guard let slot = c.freeSlots.popLast() else {
                Log.error("no free worker-table slot for uid \(uid) pid \(pid); refusing")
                refuse(conn, "trackd has no room for another connection")
                return false
            }
            table.clear(slot)
            let warm = handToWarmWorker(&c, conn: conn, pid: pid, uid: uid, slot: slot)
            let child = warm?.pid ?? spawnWorker(conn: conn, pid: pid, uid: uid, slot: slot)
            guard child > 0 else {
                c.freeSlots.append(slot)
                Log.error("cannot start a worker for uid \(uid) pid \(pid): \(String(cString: strerror(errno)))")
                startWarmWorkerAfterStartUps(&c)  // the warm worker may have been used up
                return false
            }
            c.workers[child] = WorkerRecord(uid: uid, clientPID: pid, slot: slot, connection: conn,
                                            warmControl: warm?.control ?? -1)
            // The next warm worker, for the connection after this one: at once when connections come as fast as
            // warm workers start (this one got a warm worker started less than warmBusyMs ago, or none) — a loop of
            // short reads would otherwise wait on every start-up, and the CPUs are busy starting workers anyway;
            // else once this connection has started up.
            let sporadic = warm.map { trackd_monotonic_ms() - $0.startedMs >= Self.warmBusyMs } ?? false
            if !sporadic { c.startingUp.removeAll() }
            startWarmWorkerAfterStartUps(&c, adding: sporadic ? (child, slot) : nil)
            statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes, retired: c.retired)
            Log.info("connection from uid \(uid) pid \(pid) → worker \(child)")
            return true
        }
    }

    /// Tells a refused client why, in one Error frame with request id 0, without ever blocking: the socket is
    /// new, so its send buffer is empty, and MSG_DONTWAIT drops the message rather than wait on a hostile peer.
    private func refuse(_ conn: Int32, _ message: String) {
        let frame = Codec.frame(.error(TrackError(.limitExceeded, message)), requestID: 0)
        _ = frame.withUnsafeBytes { send(conn, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }

    /// Once a second: kills a worker whose client waits on it while it makes no progress for `limits.watchdog`
    /// seconds — busy (a request in progress or an output pulling with a free slot) without producing anything,
    /// or leaving its client's bytes unread (its receive loop is stuck, or the process is stopped). A worker
    /// whose client holds every slot, or is idle, is neither.
    private func watchdogTick() {
        let limitMs = limits.watchdog * 1000
        let now = trackd_monotonic_ms()
        counters.withLock { c in
            for (pid, var record) in c.workers where !record.killed {
                guard table.load(record.slot, .armed) == 1 else { continue }  // still starting up
                var reason: String?
                let progress = table.load(record.slot, .progress)
                if table.load(record.slot, .busy) > 0, now > progress, now - progress > limitMs {
                    reason = "its client has waited \((now - progress) / 1000) s without a sample or reply"
                }
                let unread = trackd_socket_unread(record.connection)
                let reads = table.load(record.slot, .reads)
                if unread > 0 {
                    if record.unreadSince == nil || reads != record.readsSeen {
                        record.unreadSince = now
                        record.readsSeen = reads
                    } else if let since = record.unreadSince, now - since > limitMs {
                        reason = reason ?? "it has left \(unread) bytes from its client unread for \((now - since) / 1000) s"
                    }
                } else {
                    record.unreadSince = nil
                }
                if let reason {
                    record.killed = true
                    c.watchdogKills += 1
                    Log.warning("watchdog: killing worker \(pid) (client uid \(record.uid) pid \(record.clientPID)): \(reason) (--watchdog \(limits.watchdog))")
                    kill(pid, SIGKILL)
                }
                c.workers[pid] = record
            }
        }
    }

    /// Starts a worker with the connection as fd 3, the read-only statistics as fd 4, the worker table as fd 5 and
    /// its frame-index channel as fd 6.
    private func spawn(_ args: [String], fd: Int32, indexFD: Int32) -> pid_t {
        var cArgs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var cEnv: [UnsafeMutablePointer<CChar>?] = Self.workerEnvironment.map { strdup($0) } + [nil]
        defer { cEnv.forEach { free($0) } }
        let fds = [fd, statistics.readOnlyFD, tableFD, indexFD]
        return executable.withCString { path in
            trackd_spawn_with_fds(path, &cArgs, &cEnv, fds, Int32(fds.count))
        }
    }

    /// The supervisor's environment, with Swift's crash backtracer off: in the sandbox it could not start
    /// swift-backtrace anyway (exec is forbidden, and the filter would kill the worker with SIGSYS, hiding the
    /// real signal), and a crashing worker should die at once, with the signal the supervisor then logs.
    static let workerEnvironment: [String] = {
        var env: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("SWIFT_BACKTRACE=") { env.append(text) }
            p += 1
        }
        return env + ["SWIFT_BACKTRACE=enable=no"]
    }()

    private func reap() {
        while true {
            var status: Int32 = 0
            var usage = rusage()
            let pid = wait4(-1, &status, WNOHANG, &usage)
            guard pid > 0 else { return }
            // Peak resident memory (KiB): GStreamer, the pipeline and every pool page the worker touched; CPU time.
            let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            let peak = "max RSS \(usage.ru_maxrss / 1024) MiB, CPU \(String(format: "%.2f", cpu)) s"
            var restartedOn: pid_t?
            let record = counters.withLock { c -> WorkerRecord? in
                if let warm = c.warm, warm.pid == pid {  // died before it had a connection; the next handOff starts one
                    close(warm.control)
                    c.warm = nil
                }
                let r = c.workers.removeValue(forKey: pid)
                if let r, r.warmControl >= 0 {
                    // A warm worker handed a connection: did it get as far as reading it (the ready byte)?
                    var byte: UInt8 = 0
                    let ready = recv(r.warmControl, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == Self.warmReady
                    close(r.warmControl)
                    // It died starting, before reading a byte of the connection: a worker started now serves the
                    // same connection from its first byte, in the same slot.
                    let child = ready || r.killed ? -1 : spawnWorker(conn: r.connection, pid: r.clientPID, uid: r.uid, slot: r.slot)
                    if child > 0 {
                        if (status & 0x7f) != 0 { c.crashes += 1 }
                        c.workers[child] = WorkerRecord(uid: r.uid, clientPID: r.clientPID, slot: r.slot, connection: r.connection)
                        startWarmWorkerAfterStartUps(&c, adding: (child, r.slot))
                        restartedOn = child
                        statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes, retired: c.retired)
                        return r
                    }
                }
                if let r {
                    close(r.connection)
                    c.retired.samples &+= table.load(r.slot, .samplesSent)
                    c.retired.copied &+= table.load(r.slot, .bytesCopied)
                    c.retired.shared &+= table.load(r.slot, .bytesShared)
                    table.clear(r.slot)  // returns the pool bytes of a worker that died holding them
                    c.freeSlots.append(r.slot)
                    if (status & 0x7f) != 0 && !r.killed { c.crashes += 1 }
                }
                statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes, retired: c.retired)
                return r
            }
            let who = record.map { "(client uid \($0.uid) pid \($0.clientPID))" } ?? ""
            let termSignal = status & 0x7f
            if let restartedOn {
                let how = termSignal != 0 ? "killed by signal \(termSignal) (\(String(cString: strsignal(termSignal))))"
                    : "exited with status \((status >> 8) & 0xff)"
                Log.warning("warm worker \(pid) \(who) \(how) before it was ready, \(peak); its connection goes to worker \(restartedOn)")
                continue
            }
            if termSignal != 0 {
                Log.warning("worker \(pid) \(who) killed by signal \(termSignal) (\(String(cString: strsignal(termSignal)))), \(peak)")
            } else if (status >> 8) & 0xff != 0 {
                Log.notice("worker \(pid) \(who) exited with status \((status >> 8) & 0xff), \(peak)")
            } else {
                Log.info("worker \(pid) \(who) finished, \(peak)")
            }
        }
    }

    private func shutdown(signal sig: Int32) -> Never {
        Log.notice("received signal \(sig); stopping")
        _ = sd_notify(0, "STOPPING=1")
        if let path = listener.ownedPath { unlink(path) }
        let workers = counters.withLock { Array($0.workers.keys) + ($0.warm.map { [$0.pid] } ?? []) }
        for pid in workers { kill(pid, SIGTERM) }
        exit(0)
    }
}
