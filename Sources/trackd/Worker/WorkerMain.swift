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

    static func run(arguments: [String]) -> Int32 {
        var context = WorkerContext()
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
        do {
            try Gst.initialize()
        } catch {
            Log.error("GStreamer failed to initialise: \(error.message)")
            return 1
        }
        // Before the first byte from the client: everything that needs to open a file is done by now.
        Gst.preloadPlugins()
        do {
            try context.sandbox.enter()
        } catch {
            Log.error("cannot enter the worker sandbox: \(error.message)")
            return 1
        }
        let session = Session(socket: MessageSocket(fd: connectionFD), context: context)
        session.run()
        return 0
    }
}

import CSandbox
import CTrackSys
