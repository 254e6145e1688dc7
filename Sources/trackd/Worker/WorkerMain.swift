import GstBridge
import Protocol

#if canImport(Glibc)
import Glibc
#endif

/// Facts the supervisor passes on the command line when it starts a worker.
struct WorkerContext: Sendable {
    var clientPID: Int32 = 0
    var clientUID: UInt32 = 0
    var supervisorPID: UInt32 = 0
    var supervisorStartedMs: UInt64 = 0
    var accepted: UInt64 = 0
    var active: UInt32 = 0
    var crashes: UInt64 = 0
}

enum WorkerMain {
    /// The connection arrives as fd 3 (the supervisor dup2()s it there in posix_spawn).
    static let connectionFD: Int32 = 3

    static func run(arguments: [String]) -> Int32 {
        var context = WorkerContext()
        var i = 0
        while i + 1 < arguments.count {
            let value = arguments[i + 1]
            switch arguments[i] {
            case "--client-pid": context.clientPID = Int32(value) ?? 0
            case "--client-uid": context.clientUID = UInt32(value) ?? 0
            case "--supervisor-pid": context.supervisorPID = UInt32(value) ?? 0
            case "--supervisor-started-ms": context.supervisorStartedMs = UInt64(value) ?? 0
            case "--accepted": context.accepted = UInt64(value) ?? 0
            case "--active": context.active = UInt32(value) ?? 0
            case "--crashes": context.crashes = UInt64(value) ?? 0
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
        do {
            try Gst.initialize()
        } catch {
            Log.error("GStreamer failed to initialise: \(error.message)")
            return 1
        }
        let session = Session(socket: MessageSocket(fd: connectionFD), context: context)
        session.run()
        return 0
    }
}

import CTrackSys
