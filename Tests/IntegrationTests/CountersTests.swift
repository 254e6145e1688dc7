import Foundation
import TrackdProtocol
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue #16: the counters Status reports are honest. A session's samples count as its worker sends them (the
/// worker table), so a client killed mid-read still counts; `trackctl status --json` shows every counter.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct CountersTests {
    @Test func aKilledClientsSamplesStillCount() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let before = try daemon.status().daemonSamplesSent
        // A read of 600 frames of 1280x720 by a trackctl that is killed once samples are flowing.
        let reader = try Child(Env.trackctl, ["--socket", daemon.socketPath, "read", Media.long, "--md5"])
        let seen = waitFor(timeout: .seconds(60)) { () -> UInt64? in
            guard let s = try? daemon.status(), s.daemonSamplesSent > before + 5 else { return nil }
            return s.daemonSamplesSent
        }
        kill(reader.pid, SIGKILL)
        #expect(reader.wait() == 128 + SIGKILL)
        let counted = try #require(seen, "no samples were counted while the read ran")
        // Its worker ends (its client is gone) and is reaped: what it sent stays counted, in the retired totals.
        #expect(waitUntil(timeout: .seconds(30)) { (try? daemon.status())?.activeConnections == 1 })
        let after = try daemon.status()
        #expect(after.daemonSamplesSent >= counted, "\(after.daemonSamplesSent) < \(counted) seen before the kill")
        #expect(after.daemonBytesCopied + after.daemonBytesShared >= (after.daemonSamplesSent - before) * 1280 * 720,
                "each 1280x720 sample is at least 1280×720 bytes: \(after)")
        #expect(after.workerCrashes == 0 && after.watchdogKills == 0, "\(after)")
    }

    @Test func statusJSONHasEveryCounter() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["status", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text)")
        for key in ["supervisorPid", "uptimeSeconds", "connectionsAccepted", "activeConnections", "connectionsRefused",
                    "connectionsRateLimited", "workerCrashes", "watchdogKills", "samplesSent", "bytesCopied",
                    "bytesZeroCopy", "workerPid", "gstreamer"] {
            #expect(object[key] != nil, "--json lacks \(key): \(r.text)")
        }
        #expect(object["watchdogKills"] as? Int == 0 && object["connectionsRefused"] as? Int == 0, "\(r.text)")
        let text = try daemon.trackctl(["status"])
        #expect(text.text.contains("watchdog kills        0"), "\(text.text)")
        #expect(text.text.contains("refused connections   0 (0 by the per-uid rate limit)"), "\(text.text)")
    }
}
