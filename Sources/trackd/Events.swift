#if canImport(Glibc)
import Glibc
#endif

/// Event records: what trackd did, as data. With `TRACKD_EVENTS=1` in its environment (the tests set it; workers
/// inherit it) each event below is written to stderr as one more line beside the log line that tells a person
/// the same thing: `<7>trackd[PID]: event=NAME key=value …`. A name and its keys are stable; a value is an integer
/// or a token without spaces. Tests read these records instead of the log's wording (Tests/TestSupport
/// Events.swift); docs/ARCHITECTURE.md "Event records" lists them. This is the one place that names them.
enum Event {
    // The supervisor's.
    /// It serves a socket: the one it bound (`path`) or the one systemd passed (`systemd`).
    case listening(socket: String)
    case systemdWatchdog(intervalMs: UInt64)
    case hangUp
    /// `limit`: the option that refused it (`max-connections`, `max-connections-per-uid`, `connection-rate-per-uid`).
    case connectionRefused(uid: UInt32, pid: Int32, limit: String)
    case connectionServed(uid: UInt32, pid: Int32, worker: pid_t)
    /// `how`: `finished` (exit 0), `exited` (another status), `killed` (a signal); `warm-unused` for a warm worker
    /// ended without a connection. `restartedOn`: the worker that took a never-ready warm worker's connection.
    case workerEnded(worker: pid_t, how: String, status: Int32, signal: Int32, maxRSSMiB: Int, restartedOn: pid_t?)
    case watchdogKill(worker: pid_t)
    case stopping(signal: Int32)
    case stopped(told: Int, killed: Int, unreaped: Int)
    case indexCacheInMemoryOnly

    // A worker's.
    /// `after`: `plugins` or `rehearsal`.
    case libraryPagesReleased(after: String, mib: Int)
    case rehearsed(frames: Int)
    case decoderThreads(threads: Int, others: Int, cpus: Int)
    /// `source`: `cache`, `sample-tables` or `parse-pass`.
    case frameIndex(track: UInt32, source: String, frames: Int)
    case assetFromCache(tracks: Int)
    /// A ReadFrames planned: `pipeline` is `kept` (the last ReadFrames' pipeline, seeked) or `new`.
    case readFrames(track: UInt32, frames: Int, ranges: Int, pipeline: String)
    /// A ReadFrames answered, with the counts of the frame path it took.
    case readFramesDone(output: UInt32, frames: Int, samplesDecoded: UInt64, framesDecoded: UInt64,
                        framesConverted: UInt64, memoriesReused: UInt64)
    case rangeDecodedAgain(output: UInt32)
    case frameIndexMismatch(output: UInt32)
    /// `kind`: `handshake-timeout`, `idle-timeout` or `output` (an output refused by a pool limit).
    case limit(kind: String)
    case sessionStopping(reads: Int)

    static let enabled = getenv("TRACKD_EVENTS").map { String(cString: $0) == "1" } ?? false

    func emit() {
        guard Self.enabled else { return }
        let (name, fields) = record
        Log.write(.debug, (["event=\(name)"] + fields.map { "\($0.0)=\($0.1)" }).joined(separator: " "))
    }

    /// The record's name and fields, in the order written.
    private var record: (String, [(String, Any)]) {
        switch self {
        case .listening(let socket): ("listening", [("socket", socket)])
        case .systemdWatchdog(let ms): ("systemd-watchdog", [("interval-ms", ms)])
        case .hangUp: ("hang-up", [])
        case .connectionRefused(let uid, let pid, let limit): ("connection-refused", [("uid", uid), ("pid", pid), ("limit", limit)])
        case .connectionServed(let uid, let pid, let worker): ("connection-served", [("uid", uid), ("pid", pid), ("worker", worker)])
        case .workerEnded(let worker, let how, let status, let signal, let rss, let restartedOn):
            ("worker-ended", [("worker", worker), ("how", how), ("status", status), ("signal", signal), ("max-rss-mib", rss)]
                + (restartedOn.map { [("restarted-on", $0)] } ?? []))
        case .watchdogKill(let worker): ("watchdog-kill", [("worker", worker)])
        case .stopping(let signal): ("stopping", [("signal", signal)])
        case .stopped(let told, let killed, let unreaped): ("stopped", [("told", told), ("killed", killed), ("unreaped", unreaped)])
        case .indexCacheInMemoryOnly: ("index-cache-in-memory-only", [])
        case .libraryPagesReleased(let after, let mib): ("library-pages-released", [("after", after), ("mib", mib)])
        case .rehearsed(let frames): ("rehearsed", [("frames", frames)])
        case .decoderThreads(let threads, let others, let cpus): ("decoder-threads", [("threads", threads), ("others", others), ("cpus", cpus)])
        case .frameIndex(let track, let source, let frames): ("frame-index", [("track", track), ("source", source), ("frames", frames)])
        case .assetFromCache(let tracks): ("asset-from-cache", [("tracks", tracks)])
        case .readFrames(let track, let frames, let ranges, let pipeline):
            ("read-frames", [("track", track), ("frames", frames), ("ranges", ranges), ("pipeline", pipeline)])
        case .readFramesDone(let output, let frames, let samples, let decoded, let converted, let reused):
            ("read-frames-done", [("output", output), ("frames", frames), ("samples-decoded", samples),
                                  ("frames-decoded", decoded), ("frames-converted", converted), ("memories-reused", reused)])
        case .rangeDecodedAgain(let output): ("range-decoded-again", [("output", output)])
        case .frameIndexMismatch(let output): ("frame-index-mismatch", [("output", output)])
        case .limit(let kind): ("limit", [("kind", kind)])
        case .sessionStopping(let reads): ("session-stopping", [("reads", reads)])
        }
    }
}
