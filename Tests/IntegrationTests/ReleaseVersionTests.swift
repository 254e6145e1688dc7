import Foundation
@testable import TrackClient
import SystemCalls
import TrackdProtocol
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// trackd's version (`trackdVersion`, its one source) as a user asks for it: `trackd --version`, `trackctl --version`
/// and `trackctl status` print it with the GStreamer version of this machine (gst-inspect-1.0's, the oracle), and
/// the Python client's `__version__` is the same. And a TrackClient connection never waits without end for the
/// handshake.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ReleaseVersionTests {
    /// "GStreamer 1.22.0", as gst-inspect-1.0 --version says it.
    static func gstreamer() throws -> String {
        let r = try run("gst-inspect-1.0", ["--version"])
        return try #require(r.text.split(separator: "\n").first { $0.hasPrefix("GStreamer ") }.map(String.init))
    }

    @Test func trackdAndTrackctlPrintTheVersionAndGStreamers() throws {
        let gstreamer = try Self.gstreamer()
        let line = "trackd \(trackdVersion) (\(gstreamer))"
        let trackd = try run(Env.trackd, ["--version"])
        #expect(trackd.status == 0 && trackd.text == line + "\n", "\(trackd.text) \(trackd.stderr)")

        let daemon = try Daemon()
        defer { daemon.stop() }
        let trackctl = try run(Env.trackctl, ["--socket", daemon.socketPath, "--version"])
        #expect(trackctl.status == 0 && trackctl.text == "trackctl \(trackdVersion)\n\(line)\n", "\(trackctl.text)")
        let status = try run(Env.trackctl, ["--socket", daemon.socketPath, "status"])
        #expect(status.status == 0 && status.text.hasPrefix(line + "\n"), "\(status.text)")
        let json = try run(Env.trackctl, ["--socket", daemon.socketPath, "status", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["version"] as? String == trackdVersion && object["gstreamer"] as? String == gstreamer, "\(json.text)")

        // Without a daemon, trackctl still says its own version, then why it could not ask trackd.
        let alone = try run(Env.trackctl, ["--socket", daemon.dir + "/nobody.sock", "--version"])
        #expect(alone.status == 0 && alone.text.hasPrefix("trackctl \(trackdVersion)\ntrackd: cannot reach trackd at "), "\(alone.text)")
    }

    /// The Python client's version is trackd's (the .deb installs both under one version).
    @Test func thePythonClientHasTheSameVersion() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appending(path: "clients/python/trackd/__init__.py"), encoding: .utf8)
        #expect(source.split(separator: "\n").contains("__version__ = '\(trackdVersion)'"))
    }

    /// A socket that accepts (the kernel's backlog) and never answers — a stopped or stuck trackd, a trackd.service
    /// failing behind trackd.socket — ends the handshake with -11903 naming it, after the bound (30 s by default,
    /// as the Python client's; 0.3 s here), not never.
    @Test func aSilentSocketEndsTheHandshakeAfterItsBound() throws {
        #expect(Connection.handshakeTimeout == .seconds(30))
        let dir = Env.tempDir("silent")
        let path = dir + "/silent.sock"
        let listener = try UnixSocket.bound(to: path)
        #expect(listen(listener.rawValue, 4) == 0)
        let started = ContinuousClock.now
        #expect {
            _ = try Connection(socketPath: path, clientName: "silent", handshakeTimeout: .milliseconds(300))
        } throws: { error in
            guard let error = error as? TrackError else { return false }
            return error.knownCode == .daemonUnreachable
                && error.message.contains("connected, but no answer to Hello within 0.3 seconds")
        }
        #expect(ContinuousClock.now - started >= .milliseconds(300))
    }
}
