import CSandbox
import CTrackSys
import GstBridge
import TrackdProtocol
import SystemCalls

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
    var handshakeTimeout: UInt64 = ConnectionLimits.defaults.handshakeTimeout
    /// Seconds without a complete message while nothing is in progress before the session ends (`--idle-timeout`).
    var idleTimeout: UInt64 = ConnectionLimits.defaults.idleTimeout
    /// The CPUs this worker may run on (counted before the sandbox, which refuses /sys).
    var cpus = 1
    /// Seconds reads in flight get once trackd is stopping (`--stop-timeout`, Session+Stop.swift).
    var stopTimeout: UInt64 = Configuration().stopTimeout
}

/// Limits and identity of a sandboxed worker; the supervisor passes them on the worker's command line.
struct WorkerSandbox: Sendable {
    static let defaultMemory: UInt64 = 4 << 30
    static let minimumMemory: UInt64 = 256 << 20
    static let defaultCPUSeconds: UInt64 = 600
    static let openFiles: UInt64 = 256

    var memoryBytes: UInt64 = defaultMemory
    var cpuSeconds: UInt64 = defaultCPUSeconds
    /// The uid/gid to drop to; nil = keep the current identity (the supervisor runs unprivileged).
    var uid: UInt32?
    var gid: UInt32?
    /// What one output may make a decoder produce (GstBridge's DecodeGuard; docs/SECURITY.md "Decode limits").
    var decode = DecodeLimits()

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
        trackd_worker_malloc_settings()  // before the first thread
        StopRequest.install()  // a SIGTERM from now on stops the session gracefully instead of killing the worker
        let configuration: Configuration
        switch Options.parse(arguments, as: .worker) {
        case .run(let parsed): configuration = parsed
        case .help, .version: return 2
        case .refused(let message, _):
            Log.error("\(message) (workers are started by the trackd supervisor)")
            return 2
        }
        signal(SIGPIPE, SIG_IGN)
        let connection = FileDescriptor(taking: connectionFD)
        do throws(SystemError) {
            guard try connection.regularFileSize() == nil else { throw SystemError("fstat", errno: EINVAL) }
        } catch {
            Log.error("worker started without a connection on fd 3; workers are started by the trackd supervisor")
            return 2
        }
        var context = WorkerContext(clientPID: configuration.clientPID, clientUID: configuration.clientUID,
                                    sandbox: configuration.sandbox,
                                    handshakeTimeout: configuration.limits.handshakeTimeout,
                                    idleTimeout: configuration.limits.idleTimeout,
                                    cpus: max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))),
                                    stopTimeout: configuration.stopTimeout)
        let statistics = FileDescriptor(taking: statisticsFD)
        context.statistics = SharedStatistics.attach(fd: statistics.rawValue)
        let tableDescriptor = FileDescriptor(taking: tableFD)
        let table = WorkerTable.attach(fd: tableDescriptor.rawValue)
        do {  // both are mapped now
            try statistics.close()
            try tableDescriptor.close()
        } catch {
            Log.warning("\(error)")
        }
        guard prepare(context, warm: configuration.warm) else { return 1 }
        var slotIndex = configuration.slot
        if configuration.warm {
            guard let handoff = waitAsWarmWorker(connection) else { return 0 }
            (context.clientPID, context.clientUID, slotIndex) = (handoff.clientPID, handoff.clientUID, handoff.slot)
        }
        setThreadName("trackd-worker")
        context.slot = WorkerSlot(table: table, index: slotIndex, poolBytesPerClient: configuration.limits.poolBytesPerClient,
                                  poolBytesTotal: configuration.limits.poolBytesTotal)
        let slot = context.slot
        let session = Session(socket: MessageSocket(fd: connection, sending: { slot.sending($0) }), context: context)
        session.run()
        return 0
    }

    /// GStreamer initialised, its plugins loaded (and a warm worker's rehearsal's), the sandbox entered: everything
    /// that needs to open a file is done before the first byte from the client. False (logged) when it fails.
    static func prepare(_ context: WorkerContext, warm: Bool) -> Bool {
        do {
            try Gst.initialize()
        } catch {
            Log.error("GStreamer failed to initialise: \(error.message)")
            return false
        }
        Gst.preloadPlugins()
        if warm { Rehearsal.loadPlugins() }
        // ORC's programs compiled while it may map code; entering the sandbox seals them (docs/SECURITY.md "W^X").
        if trackd_orc_code_memory_available() != 0 {
            let warmed = Rehearsal.compileConversions()
            Log.write(.debug, "compiled the conversions' ORC code (\(warmed.conversions) conversions) in \(Int(warmed.milliseconds)) ms (CPU \(Int(warmed.cpuMilliseconds)) ms)")
        } else {
            Log.notice("ORC cannot map code here (no directory allows an executable file mapping); conversions run ORC's C code")
        }
        // The libraries and plugins are loaded: most of their pages (relocation and symbol tables, the code of
        // plugins this read will not use) are not needed again. Opened before the sandbox, used again after the
        // rehearsal (docs/BENCHMARKS.md "A worker's memory").
        if trackd_library_pages_open() == 0 {
            releaseLibraryPages(after: "loading the plugins", event: "plugins")
        } else {
            Log.notice("cannot open /proc/self/smaps (errno \(errno)); the worker keeps its library pages resident")
        }
        do {
            try context.sandbox.enter()
        } catch {
            Log.error("cannot enter the worker sandbox: \(error.message)")
            return false
        }
        return true
    }

    /// Drops the library pages nothing needs now from the resident set (trackd_release_library_pages) and logs
    /// how much that was (`event`: the event record's `after`).
    static func releaseLibraryPages(after what: String, event: String) {
        let released = trackd_release_library_pages()
        guard released >= 0 else { return }
        Log.write(.debug, "released \(released >> 20) MiB of library pages after \(what)")
        Event.libraryPagesReleased(after: event, mib: Int(released >> 20)).emit()
    }

    /// A warm worker: fd 3 is the supervisor's control socket until the connection arrives on it. Rehearses a read
    /// (sandboxed already, like every decode; before the filter it let GLib's thread pool take scheduler settings it
    /// may read then and cannot set after: a GLib-CRITICAL for each later thread) unless a client is already waiting
    /// (it would wait for it longer than it saves), says it is ready, and waits. nil when the supervisor is gone.
    static func waitAsWarmWorker(_ control: borrowing FileDescriptor) -> (clientPID: Int32, clientUID: UInt32, slot: Int)? {
        if control.poll(Int16(POLLIN), timeoutMs: 0) == 0 {
            do {
                let report = try Rehearsal.run()
                Log.write(.debug, "warm worker: rehearsed an H.264 read (\(report.frames) frames) in \(Int(report.milliseconds)) ms")
                Event.rehearsed(frames: report.frames).emit()
            } catch {
                Log.notice("warm worker: no rehearsal (\(error.message)); this worker's first read starts slower")
            }
            // What the rehearsal freed (its pipeline, x264's encoder) back to the kernel, and the pages of the
            // code only it ran (x264, mp4mux); the client's read maps again the code it needs.
            trackd_worker_trim_heap()
            releaseLibraryPages(after: "the rehearsal", event: "rehearsal")
        } else {
            Log.write(.debug, "warm worker: no rehearsal, a connection is waiting")
        }
        // Ready (one byte): from here on it reads its connection, so the supervisor may no longer give the
        // connection to another worker should this one die. While it waits, ps and /proc/<pid>/comm call it
        // trackd-warm.
        guard (try? control.send([Supervisor.warmReady])) != nil else { return nil }  // the supervisor is gone
        setThreadName("trackd-warm")
        return receiveConnection(control)  // nil: the supervisor stopped, or gave up on it
    }

    /// A warm worker's wait for its client: one message on the control socket (fd 3) — the client's pid, uid and
    /// the worker-table slot, three u32 LE — with the connection's descriptor, which then replaces the control
    /// socket as fd 3. nil when the supervisor closes the control socket or sends anything else.
    static func receiveConnection(_ control: borrowing FileDescriptor) -> (clientPID: Int32, clientUID: UInt32, slot: Int)? {
        var payload = [UInt8](repeating: 0, count: 16)
        var message: ReceivedMessage
        do {
            message = try control.receive(into: &payload, maxDescriptors: 2)
        } catch {
            Log.error("warm worker: the control socket failed: \(error)")
            return nil
        }
        let n = message.count
        guard n == 12, message.descriptors.count == 1, !message.truncated, let connection = message.descriptors.takeFirst() else {
            if n != 0 { Log.error("warm worker: unexpected message on the control socket (\(n) bytes, \(message.descriptors.count) descriptors)") }
            return nil
        }
        do {
            try connection.move(onto: control)
        } catch {
            Log.error("\(error.context("warm worker: cannot move the connection to fd 3"))")
            return nil
        }
        func u32(_ at: Int) -> UInt32 { payload[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        return (Int32(bitPattern: u32(0)), u32(4), Int(u32(8)))
    }
}
