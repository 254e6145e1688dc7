import CSystemd
import CTrackSys
import Dispatch
import Foundation
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
        usage: trackd [--socket PATH] [--worker-memory BYTES] [--worker-cpu SECONDS] [--worker-user NAME]
                      [--max-frame-pixels N] [--decode-budget PIXELS] [--audio-decode-budget SAMPLES]
          Serves AVAssetReader-style sample reading to local clients.
          --socket PATH           listen here (default: $TRACKD_SOCKET, $XDG_RUNTIME_DIR/trackd.sock,
                                  /run/trackd/trackd.sock); ignored under systemd socket activation (LISTEN_FDS).
          --worker-memory BYTES   each worker's address-space limit, RLIMIT_AS (default 4294967296 = 4 GiB)
          --worker-cpu SECONDS    each worker's CPU-time limit, RLIMIT_CPU (default 600)
          --worker-user NAME      when trackd runs as root, workers drop to this user's uid/gid (default nobody)
          --max-frame-pixels N    largest decoded frame, width × height (default 67108864 = 8192×8192)
          --decode-budget PIXELS  decoded video pixels one output may consume (default 17592186044416 = 2^44)
          --audio-decode-budget SAMPLES
                                  decoded audio samples (frames × channels) one output may consume
                                  (default 274877906944 = 2^38)
          See docs/SECURITY.md for the worker sandbox and the decode limits.
        """

    static func run(arguments: [String]) -> Int32 {
        var socketPath: String?
        var sandbox = WorkerSandbox()
        var workerUser = "nobody"
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
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
        let supervisor = Supervisor(listener: listener, executable: exe, statistics: statistics, sandbox: sandbox)
        supervisor.start()
        _ = sd_notify(0, "READY=1\nSTATUS=accepting connections")
        dispatchMain()
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
    }

    struct Counters {
        var accepted: UInt64 = 0
        var crashes: UInt64 = 0
        var workers: [pid_t: WorkerRecord] = [:]
    }

    let listener: Listener
    let executable: String
    let statistics: SharedStatistics
    let sandbox: WorkerSandbox
    private let counters = Mutex(Counters())
    private let signalQueue = DispatchQueue(label: "trackd.signals")
    nonisolated(unsafe) private var sources: [DispatchSourceSignal] = []
    nonisolated(unsafe) private var timers: [DispatchSourceTimer] = []

    init(listener: Listener, executable: String, statistics: SharedStatistics, sandbox: WorkerSandbox) {
        self.sandbox = sandbox
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
        for sig in [SIGCHLD, SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            source.setEventHandler { [self] in
                if sig == SIGCHLD { reap() } else { shutdown(signal: sig) }
            }
            source.resume()
            sources.append(source)
        }
        // SIG_IGN on SIGCHLD would make the kernel auto-reap children; restore the default so waitpid sees them.
        signal(SIGCHLD, SIG_DFL)
        // A SIGCHLD can be lost to the signal source (libdispatch on Linux; seen under load as workers left zombies
        // until the next one exited), so the supervisor also reaps once a second.
        let sweep = DispatchSource.makeTimerSource(queue: signalQueue)
        sweep.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1))
        sweep.setEventHandler { [self] in reap() }
        sweep.resume()
        timers.append(sweep)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "accept"
        thread.start()
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
            handOff(conn)
            close(conn)
        }
    }

    private func handOff(_ conn: Int32) {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        if trackd_peer_credentials(conn, &pid, &uid, &gid) != 0 {
            Log.warning("SO_PEERCRED failed: \(String(cString: strerror(errno))); dropping connection")
            return
        }
        let args = [executable, "worker", "--client-pid", "\(pid)", "--client-uid", "\(uid)"] + sandbox.arguments
        // The counters lock is held across spawn and registration so reap() cannot miss a fast-dying worker.
        counters.withLock { c in
            c.accepted += 1
            let child = spawn(args, fd: conn)
            guard child > 0 else {
                Log.error("cannot start a worker for uid \(uid) pid \(pid): \(String(cString: strerror(errno)))")
                return
            }
            c.workers[child] = WorkerRecord(uid: uid, clientPID: pid)
            statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes)
            Log.info("connection from uid \(uid) pid \(pid) → worker \(child)")
        }
    }

    /// Starts a worker with the connection as fd 3 and the read-only statistics as fd 4.
    private func spawn(_ args: [String], fd: Int32) -> pid_t {
        var cArgs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var cEnv: [UnsafeMutablePointer<CChar>?] = Self.workerEnvironment.map { strdup($0) } + [nil]
        defer { cEnv.forEach { free($0) } }
        let fds = [fd, statistics.readOnlyFD]
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
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            let record = counters.withLock { c -> WorkerRecord? in
                let r = c.workers.removeValue(forKey: pid)
                if r != nil && (status & 0x7f) != 0 { c.crashes += 1 }
                statistics.publish(accepted: c.accepted, active: UInt64(c.workers.count), crashes: c.crashes)
                return r
            }
            let who = record.map { "(client uid \($0.uid) pid \($0.clientPID))" } ?? ""
            let termSignal = status & 0x7f
            if termSignal != 0 {
                Log.warning("worker \(pid) \(who) killed by signal \(termSignal) (\(String(cString: strsignal(termSignal))))")
            } else if (status >> 8) & 0xff != 0 {
                Log.notice("worker \(pid) \(who) exited with status \((status >> 8) & 0xff)")
            } else {
                Log.info("worker \(pid) \(who) finished")
            }
        }
    }

    private func shutdown(signal sig: Int32) {
        Log.notice("received signal \(sig); stopping")
        _ = sd_notify(0, "STOPPING=1")
        if let path = listener.ownedPath { unlink(path) }
        let workers = counters.withLock { Array($0.workers.keys) }
        for pid in workers { kill(pid, SIGTERM) }
        exit(0)
    }
}
