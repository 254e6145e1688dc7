import GstBridge

/// Every option of `trackd` and `trackd worker`, once: `trackd --help`, both parsers and the worker's command line
/// come from these rows (docs/SECURITY.md explains the sandbox and the limits).
extension Options {
    static let table: [TrackdOption] = general + decode + limits + worker
    /// The lines of `trackd --help`'s synopsis (before [LIMITS]).
    static let synopsisGroups = [general, decode]

    private static let general: [TrackdOption] = [
        TrackdOption(name: "--socket", placeholder: "PATH", role: .supervisor,
               help: """
                   listen here (default: $TRACKD_SOCKET, $XDG_RUNTIME_DIR/trackd.sock,
                   /run/trackd/trackd.sock); ignored under systemd socket activation (LISTEN_FDS).
                   """,
               needs: "needs a path", set: { $0.socketPath = $1; return true }, value: { _ in nil }),
        number("--worker-memory", "BYTES", .both, \.sandbox.memoryBytes, WorkerSandbox.minimumMemory...UInt64.max,
               help: "each worker's address-space limit, RLIMIT_AS (default \(WorkerSandbox.defaultMemory) = 4 GiB)",
               needs: "needs a number of bytes, at least \(WorkerSandbox.minimumMemory) (256 MiB)"),
        number("--worker-cpu", "SECONDS", .both, \.sandbox.cpuSeconds, 1...UInt64.max,
               help: "each worker's CPU-time limit, RLIMIT_CPU (default \(WorkerSandbox.defaultCPUSeconds))",
               needs: "needs a number of seconds, at least 1"),
        TrackdOption(name: "--worker-user", placeholder: "NAME", role: .supervisor,
               help: "when trackd runs as root, workers drop to this user's uid/gid (default \(Configuration().workerUser))",
               needs: "needs a user name", set: { $0.workerUser = $1; return true }, value: { _ in nil }),
        TrackdOption(name: "--no-warm-worker", placeholder: nil, role: .supervisor,
               help: """
                   start each worker when its client connects, not one ahead (the warm worker has
                   GStreamer initialised, plugins loaded and its sandbox entered before the client
                   connects, and has rehearsed an H.264 read: the first frame comes about 100 ms
                   sooner)
                   """,
               needs: "takes no value", set: { c, _ in c.warmWorker = false; return true }, value: { _ in nil }),
        number("--warm-worker-grace", "MS", .supervisor, \.warmGraceMs, 0...60_000,
               help: """
                   when connections are sparse, the next warm worker starts once the connection
                   that took the last one has sent its first sample or image, ended, or had MS
                   milliseconds (default \(Configuration().warmGraceMs); 0 = at once), so that its start-up does not compete
                   with that client's first frame; back-to-back connections start it at once
                   """,
               needs: "needs a number of milliseconds from 0 to 60000"),
        number("--warm-worker-nice", "N", .supervisor, \.warmNice, 0...19,
               help: """
                   a warm worker started while other workers are running starts at nice N (default
                   \(Configuration().warmNice); 0 = as the supervisor), so that its start-up takes only CPU time
                   their reads leave idle; it gets the supervisor's priority back when it takes a connection
                   or no other worker is busy (only where setpriority is allowed and RLIMIT_NICE or
                   CAP_SYS_NICE lets it go back)
                   """,
               needs: "needs a nice value from 0 to 19"),
        number("--index-cache-bytes", "BYTES", .supervisor, \.indexCacheBytes, 0...Int.max,
               help: """
                   frame indexes kept for all clients, in memory and in the cache directory
                   ($CACHE_DIRECTORY, $XDG_CACHE_HOME/trackd or ~/.cache/trackd; subdirectory
                   index/), each bounded by BYTES (default \(Configuration().indexCacheBytes) = 64 MiB; 0 = no cache)
                   """,
               needs: "needs a number of bytes (0 turns the frame-index cache off)"),
        number("--stop-timeout", "SECONDS", .both, \.stopTimeout, 0...600,
               help: """
                   on SIGTERM, trackd stops accepting, refuses new requests with −11904 "trackd is
                   stopping", and gives reads in flight SECONDS to finish (default \(Configuration().stopTimeout)) before it
                   ends them and its workers; keep it below systemd's TimeoutStopSec minus 3
                   """,
               needs: "needs a number of seconds from 0 to 600"),
    ]

    private static let decode: [TrackdOption] = [
        number("--max-frame-pixels", "N", .both, \.sandbox.decode.maxFramePixels, 1...UInt64.max,
               help: "largest decoded frame, width × height (default \(DecodeLimits.defaultMaxFramePixels) = 8192×8192)",
               needs: "needs a positive whole number"),
        number("--decode-budget", "PIXELS", .both, \.sandbox.decode.videoBudgetPixels, 1...UInt64.max,
               help: "decoded video pixels one output may consume (default \(DecodeLimits.defaultVideoBudget) = 2^44)",
               needs: "needs a positive whole number"),
        number("--audio-decode-budget", "SAMPLES", .both, \.sandbox.decode.audioBudgetSamples, 1...UInt64.max,
               help: """
                   decoded audio samples (frames × channels) one output may consume
                   (default \(DecodeLimits.defaultAudioBudget) = 2^38)
                   """,
               needs: "needs a positive whole number"),
    ]

    /// ConnectionLimits.options, each a whole number in its range.
    private static var limits: [TrackdOption] {
        ConnectionLimits.options.map { limit in
            number(limit.name, "N", limit.worker ? .both : .supervisor, limit.range,
                   get: { $0.limits[keyPath: limit.keyPath] }, put: { $0.limits[keyPath: limit.keyPath] = $1 },
                   help: "\(limit.help); \(limit.range.lowerBound) to \(limit.range.upperBound)"
                       + " (default \(ConnectionLimits.defaults[keyPath: limit.keyPath]))",
                   needs: "needs a whole number from \(limit.range.lowerBound) to \(limit.range.upperBound)")
        }
    }

    /// Set by the supervisor for each worker: a connection's client and slot, or --warm 1; the dropped identity.
    private static let worker: [TrackdOption] = [
        number("--client-pid", "PID", .worker, \.clientPID, 0...Int32.max, when: { !$0.warm }, help: "", needs: "needs a pid"),
        number("--client-uid", "UID", .worker, \.clientUID, 0...UInt32.max, when: { !$0.warm }, help: "", needs: "needs a uid"),
        number("--slot", "N", .worker, \.slot, 0...Int(Int32.max), when: { !$0.warm }, help: "",
               needs: "needs a worker-table slot number"),
        TrackdOption(name: "--warm", placeholder: "1", role: .worker, help: "", needs: "needs 0 or 1",
               set: { c, v in
                   guard v == "0" || v == "1" else { return false }
                   c.warm = v == "1"
                   return true
               },
               value: { $0.warm ? "1" : nil }),
        TrackdOption(name: "--uid", placeholder: "UID", role: .worker, help: "", needs: "needs a uid",
               set: { c, v in UInt32(v).map { c.sandbox.uid = $0 } != nil }, value: { $0.sandbox.uid.map { "\($0)" } }),
        TrackdOption(name: "--gid", placeholder: "GID", role: .worker, help: "", needs: "needs a gid",
               set: { c, v in UInt32(v).map { c.sandbox.gid = $0 } != nil }, value: { $0.sandbox.gid.map { "\($0)" } }),
    ]

    /// A whole-number option in `range`, kept at `keyPath`; passed to workers (for `.both`/`.worker`) when `when` holds.
    private static func number<T: FixedWidthInteger & Sendable>(
        _ name: String, _ placeholder: String, _ role: TrackdOption.Role,
        _ keyPath: any WritableKeyPath<Configuration, T> & Sendable, _ range: ClosedRange<T>,
        when passed: @escaping @Sendable (Configuration) -> Bool = { _ in true }, help: String, needs: String
    ) -> TrackdOption {
        number(name, placeholder, role, range, get: { $0[keyPath: keyPath] }, put: { $0[keyPath: keyPath] = $1 },
               when: passed, help: help, needs: needs)
    }

    private static func number<T: FixedWidthInteger & Sendable>(
        _ name: String, _ placeholder: String, _ role: TrackdOption.Role, _ range: ClosedRange<T>,
        get: @escaping @Sendable (Configuration) -> T, put: @escaping @Sendable (inout Configuration, T) -> Void,
        when passed: @escaping @Sendable (Configuration) -> Bool = { _ in true }, help: String, needs: String
    ) -> TrackdOption {
        TrackdOption(name: name, placeholder: placeholder, role: role, help: help, needs: needs,
               set: { c, v in
                   guard let n = T(v), range.contains(n) else { return false }
                   put(&c, n)
                   return true
               },
               value: { c in role != .supervisor && passed(c) ? "\(get(c))" : nil })
    }
}
