import GstBridge
import Protocol

#if canImport(Glibc)
import Glibc
#endif

/// What the supervisor tells a worker when it starts it: the client's credentials on the command line, and its
/// live counters in a read-only shared mapping on fd 4.
struct WorkerContext: Sendable {
    var clientPID: Int32 = 0
    var clientUID: UInt32 = 0
    var statistics: SharedMapping?
    /// The sandbox the worker enters before the first receive (docs/SECURITY.md).
    var sandbox = WorkerSandbox()
    /// This worker's slot in the supervisor's worker table (fd 5): pool bytes and what the watchdog watches.
    var slot = WorkerSlot(table: nil, index: -1, poolBytesPerClient: .max, poolBytesTotal: .max)
    /// Seconds the client has to complete Hello, once the worker starts reading (`--handshake-timeout`).
    var handshakeTimeout: UInt64 = Limits.defaults.handshakeTimeout
    /// Seconds without a complete message while nothing is in progress before the session ends (`--idle-timeout`).
    var idleTimeout: UInt64 = Limits.defaults.idleTimeout
    /// The CPUs this worker may run on (counted before the sandbox, which refuses /sys).
    var cpus = 1
}

/// Limits and identity of a sandboxed worker; the supervisor passes them on the worker's command line.
struct WorkerSandbox: Sendable {
    static let defaultMemory: UInt64 = 4 << 30
    static let defaultCPUSeconds: UInt64 = 600
    static let openFiles: UInt64 = 256

    var memoryBytes: UInt64 = defaultMemory
    var cpuSeconds: UInt64 = defaultCPUSeconds
    /// The uid/gid to drop to; nil = keep the current identity (the supervisor runs unprivileged).
    var uid: UInt32?
    var gid: UInt32?
    /// What one output may make a decoder produce (GstBridge's DecodeGuard; docs/SECURITY.md "Decode limits").
    var decode = DecodeLimits()

    var arguments: [String] {
        var args = ["--memory", "\(memoryBytes)", "--cpu", "\(cpuSeconds)"]
        if let uid, let gid { args += ["--uid", "\(uid)", "--gid", "\(gid)"] }
        args += ["--max-frame-pixels", "\(decode.maxFramePixels)", "--decode-budget", "\(decode.videoBudgetPixels)",
                 "--audio-decode-budget", "\(decode.audioBudgetSamples)"]
        return args
    }

    /// rlimits, privilege drop, no_new_privs, seccomp (CSandbox). Irreversible.
    func enter() throws(TrackError) {
        var config = trackd_sandbox_config(
            address_space_bytes: memoryBytes, cpu_seconds: cpuSeconds, open_files: Self.openFiles,
            drop_privileges: uid != nil && gid != nil ? 1 : 0, uid: uid ?? 0, gid: gid ?? 0)
        var message = [CChar](repeating: 0, count: 256)
        guard trackd_sandbox_enter(&config, &message, message.count) == 0 else {
            throw TrackError(.unknown, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}

enum WorkerMain {
    /// The connection arrives as fd 3 (the supervisor dup2()s it there in posix_spawn).
    static let connectionFD: Int32 = 3
    /// The supervisor's statistics, read-only.
    static let statisticsFD: Int32 = 4
    /// The supervisor's worker table, read-write.
    static let tableFD: Int32 = 5
    /// The frame-index cache's channel to the supervisor (IndexCacheClient.fd), kept open.
    static let indexFD: Int32 = IndexCacheClient.fd

    static func run(arguments: [String]) -> Int32 {
        var context = WorkerContext()
        var limits = Limits.defaults
        var slotIndex = -1
        var warm = false
        var i = 0
        while i + 1 < arguments.count {
            let value = arguments[i + 1]
            switch arguments[i] {
            case "--client-pid": context.clientPID = Int32(value) ?? 0
            case "--client-uid": context.clientUID = UInt32(value) ?? 0
            case "--memory": context.sandbox.memoryBytes = UInt64(value) ?? WorkerSandbox.defaultMemory
            case "--cpu": context.sandbox.cpuSeconds = UInt64(value) ?? WorkerSandbox.defaultCPUSeconds
            case "--uid": context.sandbox.uid = UInt32(value)
            case "--gid": context.sandbox.gid = UInt32(value)
            case "--max-frame-pixels": context.sandbox.decode.maxFramePixels = UInt64(value) ?? DecodeLimits.defaultMaxFramePixels
            case "--decode-budget": context.sandbox.decode.videoBudgetPixels = UInt64(value) ?? DecodeLimits.defaultVideoBudget
            case "--audio-decode-budget": context.sandbox.decode.audioBudgetSamples = UInt64(value) ?? DecodeLimits.defaultAudioBudget
            case "--slot": slotIndex = Int(value) ?? -1
            case "--warm": warm = value == "1"
            case let name where Limits.workerOptions.contains(name):
                guard let v = UInt64(value), limits.set(name, v) else {
                    Log.error("bad worker argument \(name) \(value)")
                    return 2
                }
            default:
                Log.error("unknown worker argument \(arguments[i])")
                return 2
            }
            i += 2
        }
        signal(SIGPIPE, SIG_IGN)
        var regular: Int32 = 0
        var size: UInt64 = 0
        guard trackd_fd_is_regular(connectionFD, &regular, &size) == 0, regular == 0 else {
            Log.error("worker started without a connection on fd 3; workers are started by the trackd supervisor")
            return 2
        }
        context.statistics = SharedStatistics.attach(fd: statisticsFD)
        close(statisticsFD)
        let table = WorkerTable.attach(fd: tableFD)
        close(tableFD)
        context.cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        context.handshakeTimeout = limits.handshakeTimeout
        context.idleTimeout = limits.idleTimeout
        do {
            try Gst.initialize()
        } catch {
            Log.error("GStreamer failed to initialise: \(error.message)")
            return 1
        }
        // Before the first byte from the client: everything that needs to open a file is done by now.
        Gst.preloadPlugins()
        if warm { Rehearsal.loadPlugins() }
        do {
            try context.sandbox.enter()
        } catch {
            Log.error("cannot enter the worker sandbox: \(error.message)")
            return 1
        }
        if warm {
            // A warm worker: fd 3 is the supervisor's control socket until the connection arrives on it.
            // The rehearsal runs sandboxed already, like every decode. (Before the filter it let GLib's thread pool
            // take scheduler settings it may read then and cannot set after: a GLib-CRITICAL for each later thread.)
            // A client already waiting would wait for it longer than it saves: then it is skipped.
            var pending = pollfd(fd: connectionFD, events: Int16(POLLIN), revents: 0)
            if poll(&pending, 1, 0) == 0 {
                do {
                    let report = try Rehearsal.run()
                    Log.write(.debug, "warm worker: rehearsed an H.264 read (\(report.frames) frames) in \(Int(report.milliseconds)) ms")
                } catch {
                    Log.notice("warm worker: no rehearsal (\(error.message)); this worker's first read starts slower")
                }
            } else {
                Log.write(.debug, "warm worker: no rehearsal, a connection is waiting")
            }
            // Ready (one byte): from here on it reads its connection, so the supervisor may no longer give the
            // connection to another worker should this one die. While it waits, ps and /proc/<pid>/comm call it
            // trackd-warm.
            var ready = Supervisor.warmReady
            guard send(connectionFD, &ready, 1, 0) == 1 else { return 0 }  // the supervisor is gone (SIGPIPE is ignored)
            _ = trackd_set_thread_name("trackd-warm")
            guard let handoff = receiveConnection() else { return 0 }  // the supervisor stopped, or gave up on it
            (context.clientPID, context.clientUID, slotIndex) = (handoff.clientPID, handoff.clientUID, handoff.slot)
        }
        _ = trackd_set_thread_name("trackd-worker")
        context.slot = WorkerSlot(table: table, index: slotIndex,
                                  poolBytesPerClient: limits.poolBytesPerClient, poolBytesTotal: limits.poolBytesTotal)
        let session = Session(socket: MessageSocket(fd: connectionFD), context: context)
        session.run()
        return 0
    }

    /// A warm worker's wait for its client: one message on the control socket (fd 3) — the client's pid, uid and
    /// the worker-table slot, three u32 LE — with the connection's descriptor, which then replaces the control
    /// socket as fd 3. nil when the supervisor closes the control socket or sends anything else.
    static func receiveConnection() -> (clientPID: Int32, clientUID: UInt32, slot: Int)? {
        var payload = [UInt8](repeating: 0, count: 16)
        var fds: [Int32] = [-1, -1]
        var nfds: Int32 = 0
        var truncated: Int32 = 0
        let n = payload.withUnsafeMutableBytes {
            trackd_recv_with_fds(connectionFD, $0.baseAddress, $0.count, &fds, Int32(fds.count), &nfds, &truncated)
        }
        guard n == 12, nfds == 1, truncated == 0 else {
            for fd in fds.prefix(Int(max(nfds, 0))) where fd >= 0 { close(fd) }
            if n != 0 { Log.error("warm worker: unexpected message on the control socket (\(n) bytes, \(nfds) descriptors)") }
            return nil
        }
        guard trackd_move_fd(fds[0], connectionFD) == connectionFD else {
            Log.error("warm worker: cannot move the connection to fd 3: \(String(cString: strerror(errno)))")
            return nil
        }
        close(fds[0])
        func u32(_ at: Int) -> UInt32 { payload[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        return (Int32(bitPattern: u32(0)), u32(4), Int(u32(8)))
    }
}

import CSandbox
import CTrackSys
