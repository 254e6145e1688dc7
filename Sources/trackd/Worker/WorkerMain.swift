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
        let session = Session(socket: MessageSocket(fd: connectionFD), context: context)
        session.run()
        return 0
    }
}

import CTrackSys
