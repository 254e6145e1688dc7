import TrackdProtocol
import TrackClient

/// `trackctl status [--json]`: the daemon's state, as a fresh worker reports it.
struct StatusCommand: Command {
    static let json = Flag("--json", help: "one JSON object")

    static let spec = CommandSpec(
        name: "status", summary: "show the daemon's state",
        forms: [[.opt(json)]],
        notes: """
              Asks a fresh worker for the daemon's state: trackd's version and GStreamer's (the worker's
              handshake), supervisor pid and uptime, connections accepted, active and refused (by a connection
              limit; by the per-uid rate limit), worker crashes and watchdog kills, the samples every connection
              was sent and how many of their bytes the workers copied or sent zero-copy, the worker's pid.
              --json has every counter, and the versions as "version" and "gstreamer".
            """,
        examples: ["trackctl status", "trackctl --socket /tmp/trackd.sock status --json"])

    let asJSON: Bool

    init(_ p: ParsedArguments) { asJSON = p[Self.json] }

    func run(socketPath: String?) {
        let (s, version): (StatusReport, ServerVersion)
        do {
            (s, version) = try Trackd.statusAndVersion(socketPath: socketPath)
        } catch {
            Exit.failed(error)
        }
        if asJSON {
            print(JSON.encode(.object([
                ("version", .string(version.trackd)),
                ("supervisorPid", .int(Int64(s.supervisorPID))), ("uptimeSeconds", .number(Double(s.supervisorUptimeMs) / 1000, decimals: 3)),
                ("connectionsAccepted", .int(Int64(s.connectionsAccepted))), ("activeConnections", .int(Int64(s.activeConnections))),
                ("connectionsRefused", .int(Int64(clamping: s.connectionsRefused))),
                ("connectionsRateLimited", .int(Int64(clamping: s.connectionsRateLimited))),
                ("workerCrashes", .int(Int64(s.workerCrashes))), ("watchdogKills", .int(Int64(clamping: s.watchdogKills))),
                ("samplesSent", .int(Int64(clamping: s.daemonSamplesSent))), ("bytesCopied", .int(Int64(clamping: s.daemonBytesCopied))),
                ("bytesZeroCopy", .int(Int64(clamping: s.daemonBytesShared))), ("workerPid", .int(Int64(s.workerPID))),
                ("gstreamer", .string(s.gstreamerVersion)),
                ("framesDecoded", .int(Int64(clamping: s.framesDecoded))),
                ("framesConverted", .int(Int64(clamping: s.framesConverted))),
                ("samplesLost", .int(Int64(clamping: s.samplesLost))),
            ])))
            return
        }
        print("""
            trackd \(version.trackd) (\(s.gstreamerVersion))
            trackd supervisor pid \(s.supervisorPID), up \(fixed(Double(s.supervisorUptimeMs) / 1000, 1)) s
            connections accepted  \(s.connectionsAccepted) (this one included)
            active connections    \(s.activeConnections)
            refused connections   \(s.connectionsRefused) (\(s.connectionsRateLimited) by the per-uid rate limit)
            worker crashes        \(s.workerCrashes)
            watchdog kills        \(s.watchdogKills) (workers that stopped making progress)
            samples sent          \(s.daemonSamplesSent) (all connections)
            bytes copied          \(s.daemonBytesCopied) (into pools by the workers)
            bytes sent zero-copy  \(s.daemonBytesShared) (written by GStreamer into shared memory)
            this worker           pid \(s.workerPID), \(s.gstreamerVersion)
            frames decoded        \(s.framesDecoded) (this connection; \(s.framesConverted) converted)
            """)
    }
}
