import Foundation
import TrackdProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real trackd supervisor on a private socket, writing event records (TRACKD_EVENTS=1; `events`, Events.swift)
/// into its log. `stop()` ends it (SIGTERM; it stops its workers) and checks its log: a GLib/GStreamer CRITICAL or
/// WARNING there fails the test that started it (see `DaemonLog`).
public final class Daemon {
    public let dir: String
    public let socketPath: String
    public let logPath: String
    public let child: Child
    /// Substrings of GLib/GStreamer warning lines this daemon may log (each with a reason at the call site).
    public let allowedWarnings: [String]
    /// Whether its workers' GLib/GStreamer lines are allowed (the media fuzzer: GStreamer's own elements complain
    /// about mutated media); the supervisor's never are.
    public let allowingWorkerWarnings: Bool
    private let sourceLocation: SourceLocation
    private var stopped = false
    /// Set once the daemon has exited by itself and been reaped (`waitForExit`).
    private var exitStatus: Int32?

    public init(extraArgs: [String] = [], env: [String: String] = [:], allowedWarnings: [String] = [],
                allowingWorkerWarnings: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws {
        dir = Env.tempDir("daemon")
        socketPath = dir + "/trackd.sock"
        logPath = dir + "/trackd.log"
        self.allowedWarnings = allowedWarnings
        self.allowingWorkerWarnings = allowingWorkerWarnings
        self.sourceLocation = sourceLocation
        // Each daemon has its own frame-index cache directory unless the test names one.
        var env = env
        if env["CACHE_DIRECTORY"] == nil { env["CACHE_DIRECTORY"] = dir + "/cache" }
        env["TRACKD_EVENTS"] = "1"
        child = try Child(Env.trackd, ["--socket", socketPath] + extraArgs, stderr: logPath, env: env)
        // Ready: trackd writes its `listening` record after bind() and listen() (the socket file alone appears at
        // bind). The signals it handles are blocked from its first instruction, so a SIGTERM is never lost before.
        let log = logPath, child = child
        let ready = waitUntil(timeout: .seconds(10), poll: .milliseconds(5)) {
            !DaemonEvents.read(log, "listening").isEmpty || !child.isRunning
        }
        guard ready, child.isRunning else {
            if child.isRunning { _ = child.terminate() } else { child.wait() }
            throw TrackError(.unknown, "trackd did not start listening on \(socketPath) within 10 s; log:\n\(self.log)")
        }
    }

    public var pid: Int32 { child.pid }
    public var isRunning: Bool { !stopped && exitStatus == nil && child.isRunning }
    public var log: String { DaemonLog.read(logPath) }

    /// Stops the daemon, then fails the test for each GLib/GStreamer CRITICAL or WARNING line in its log.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        if exitStatus == nil { _ = child.terminate() }
        DaemonLog.expectClean(log, allowing: allowedWarnings, onlyFrom: allowingWorkerWarnings ? child.pid : nil,
                              sourceLocation: sourceLocation)
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit { stop() }

    /// Waits for the daemon to exit (after a signal the test sent it) and reaps it: its exit status, or 128 + the
    /// signal that ended it. The log stays readable until `stop()`, which then only checks it and cleans up.
    public func waitForExit() -> Int32 {
        if let exitStatus { return exitStatus }
        let status = child.wait()
        exitStatus = status
        return status
    }

    /// Runs trackctl against this daemon.
    public func trackctl(_ args: [String]) throws -> Run {
        try run(Env.trackctl, ["--socket", socketPath] + args)
    }

    /// The supervisor's counters and this new connection's worker, from a GetStatus on a fresh connection.
    public func status() throws -> StatusReport {
        try Self.handshakeAndStatus(MessageSocket(fd: try UnixSocket.connect(to: socketPath)))
    }

    /// Hello, then GetStatus, on a connection that has not said Hello yet: the Status reply.
    public static func handshakeAndStatus(_ socket: MessageSocket) throws -> StatusReport {
        try socket.send(.hello(Hello(clientName: "test-status")), requestID: 1)
        guard case .helloReply = try socket.receive().message else { throw TrackError(.protocolViolation, "no HelloReply") }
        try socket.send(.getStatus, requestID: 2)
        guard case .status(let status) = try socket.receive().message else { throw TrackError(.unknown, "no Status reply") }
        return status
    }
}

/// A daemon's stderr log. GLib's default handler writes `(trackd:PID): GStreamer-CRITICAL **: …` (or
/// `** (trackd:PID): WARNING **: …` without a domain): a failed assertion inside GStreamer or GLib, or a warning it
/// thought worth printing. trackd's own warnings (`<4>trackd[PID]: …`, a hostile file, a killed worker) are the
/// behaviour of many tests and are not matched.
public enum DaemonLog {
    public static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The log's GLib/GStreamer CRITICAL and WARNING lines not matched by any of `allowing`; with `onlyFrom`, only
    /// the lines of that process (GLib names it: `(trackd:PID)`; a worker is a trackd process too).
    public static func glibWarnings(_ log: String, allowing: [String] = [], onlyFrom pid: Int32? = nil) -> [Substring] {
        log.split(separator: "\n").filter { line in
            (line.contains("CRITICAL") || line.contains("WARNING **")) && !allowing.contains { line.contains($0) }
                && (pid.map { line.contains("(trackd:\($0)):") } ?? true)
        }
    }

    /// Records an issue naming each such line.
    public static func expectClean(_ log: String, allowing: [String] = [], onlyFrom pid: Int32? = nil,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        for line in glibWarnings(log, allowing: allowing, onlyFrom: pid) {
            Issue.record("the daemon logged a GLib/GStreamer warning: \(line)", sourceLocation: sourceLocation)
        }
    }
}
