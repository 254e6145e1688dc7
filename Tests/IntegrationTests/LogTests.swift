import Foundation
import TrackClient
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// trackd's stderr is for journald: every line starts with an sd-daemon priority prefix (`<3>` error … `<7>` debug,
/// sd-daemon(3)), so journald files it at that level, then the process ("trackd" or "trackd-worker") and its pid.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct LogTests {
    @Test func everyLineCarriesItsPriority() throws {
        // Its own trackd (not Daemon, which deletes its log when it stops), so the log outlives the SIGTERM.
        let dir = Env.tempDir("log")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/trackd.sock", logPath = dir + "/trackd.log"
        let trackd = try Child(Env.trackd, ["--socket", socket], stderr: logPath)
        // The log lines are the behaviour under test here.
        var log: String { DaemonLog.read(logPath) }
        #expect(waitUntil { log.contains("listening on") }, "\(log)")
        // Supervisor and worker lines: a read, a failed open, a worker killed mid-connection, then SIGTERM.
        let r = try run(Env.trackctl, ["--socket", socket, "read", Media.clip, "--pixel-format", "y420", "--md5"])
        #expect(r.status == 0, "\(r.stderr)")
        let bad = try run(Env.trackctl, ["--socket", socket, "tracks", Media.text])
        #expect(bad.status == 1)
        do {
            let asset = try Asset(path: Media.clip, socketPath: socket)
            kill(pid_t(try asset.serverStatus().workerPID), SIGKILL)
            #expect(waitUntil { log.contains("killed by signal 9") }, "\(log)")
        }
        let supervisor = trackd.pid
        #expect(trackd.terminate() == 0)  // SIGTERM: "received signal 15; stopping", exit 0

        let lines = log.split(separator: "\n", omittingEmptySubsequences: false).dropLast()  // ends with \n
        #expect(lines.count >= 5, "\(log)")
        let pattern = try Regex(#"^<[0-7]>trackd(-worker)?\[[0-9]+\]: \S"#)
        for line in lines { #expect(line.firstMatch(of: pattern) != nil, "no priority prefix: \(line)") }
        // The levels are the ones the messages deserve: a killed worker is a warning, stopping is a notice.
        #expect(lines.contains { $0.hasPrefix("<4>trackd[\(supervisor)]: worker ") && $0.contains("killed by signal 9") },
                "\(log)")
        #expect(lines.contains { $0.hasPrefix("<5>trackd[\(supervisor)]: received signal 15") }, "\(log)")
        #expect(lines.contains { $0.hasPrefix("<6>trackd-worker[") }, "\(log)")
        DaemonLog.expectClean(log)
    }
}
