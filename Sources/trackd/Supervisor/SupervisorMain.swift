import CSystemd
import IndexCache
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor never touches media: it accepts connections, reads each peer's credentials, starts a fresh
/// worker process for it (this executable in worker mode, the connection as fd 3), and reaps workers. A
/// worker's crash is logged and counted; nothing else is affected.
enum SupervisorMain {
    static func run(arguments: [String]) -> Int32 {
        var configuration: Configuration
        switch Options.parse(arguments, as: .supervisor) {
        case .run(let parsed): configuration = parsed
        case .help:
            print(Options.usage)
            return 0
        case .version:
            print(VersionLine.text)
            return 0
        case .refused(let message, let unknown):
            Log.error(unknown ? "\(message)\n\(Options.usage)" : message)
            return 2
        }
        signal(SIGPIPE, SIG_IGN)
        // SIGCHLD, SIGTERM and SIGINT are blocked before any thread exists, so every thread inherits the mask
        // and the main thread takes them with sigwait (Supervisor.waitForSignals). (libdispatch signal sources
        // missed signals here: the kernel delivered them to a thread that did not block them.)
        Supervisor.handledSignals.blockInThisThread()
        guard dropWorkerPrivileges(&configuration) else { return 1 }
        guard let supervisor = makeSupervisor(configuration) else { return 1 }
        supervisor.start()
        Systemd.notify("READY=1\nSTATUS=accepting connections")
        supervisor.waitForSignals()
    }

    /// When trackd runs as root: the uid and gid of `--worker-user`, which must exist and not be root.
    static func dropWorkerPrivileges(_ configuration: inout Configuration) -> Bool {
        guard geteuid() == 0 else { return true }
        let user = configuration.workerUser
        guard let ids = userIDs(named: user) else {
            Log.error("--worker-user \(user): no such user; workers must not run as root")
            return false
        }
        guard ids.uid != 0 else {
            Log.error("--worker-user \(user) is root; workers must not run as root")
            return false
        }
        configuration.sandbox.uid = ids.uid
        configuration.sandbox.gid = ids.gid
        Log.notice("workers drop to \(user) (uid \(ids.uid), gid \(ids.gid))")
        return true
    }

    /// The listening socket, the shared statistics and worker table, the frame-index cache; nil (logged) when one
    /// cannot be made.
    static func makeSupervisor(_ configuration: Configuration) -> Supervisor? {
        let listener: Listener
        do {
            if let activated = try Listener.fromSystemd() {
                listener = activated
                Log.notice("using the socket passed by systemd (socket activation)")
                Event.listening(socket: "systemd").emit()
            } else {
                listener = try Listener.bind(path: configuration.socketPath ?? SocketPath.resolveDefault())
                Log.notice("listening on \(listener.ownedPath!)")
                Event.listening(socket: "path").emit()
            }
        } catch {
            Log.error("cannot listen: \(error)")
            return nil
        }
        guard let exe = selfExecutable() else {
            Log.error("cannot resolve /proc/self/exe to start workers")
            return nil
        }
        let statistics: SharedStatistics
        let table: WorkerTable
        do {
            statistics = try SharedStatistics()
        } catch {
            Log.error("cannot create the shared statistics: \(error)")
            return nil
        }
        do {
            table = try WorkerTable.create(slots: 2 * Int(configuration.limits.maxConnections))
        } catch {
            Log.error("cannot create the worker table: \(error)")
            return nil
        }
        do {
            return try Supervisor(listener: listener, executable: exe, statistics: statistics, table: table,
                                  configuration: configuration,
                                  index: IndexService(store: indexStore(configuration), warn: { Log.warning($0) }))
        } catch {
            Log.error("cannot create the hang-up thread's wake socket: \(error)")
            return nil
        }
    }

    /// The frame-index cache, in memory and (when it can be) in the cache directory.
    static func indexStore(_ configuration: Configuration) -> IndexStore {
        let bytes = configuration.indexCacheBytes
        let store = IndexStore(budget: bytes, directory: bytes > 0 ? IndexStore.defaultDirectory() : nil)
        if let problem = store.directoryProblem {
            Log.warning("frame-index cache: \(problem); keeping frame indexes in memory only")
            Event.indexCacheInMemoryOnly.emit()
        } else if let directory = store.directory {
            Log.notice("frame-index cache: \(directory), up to \(bytes) bytes (and as many in memory)")
        } else if bytes > 0 {
            Log.warning("frame-index cache: no cache directory ($CACHE_DIRECTORY, $XDG_CACHE_HOME and $HOME unset); keeping frame indexes in memory only")
            Event.indexCacheInMemoryOnly.emit()
        }
        return store
    }

    static func selfExecutable() -> String? { currentExecutablePath() }
}
