import CTrackSys
import Foundation
import SystemCalls
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Issue #16: SIGTERM is a graceful stop. trackd stops accepting, tells every client "trackd is stopping" (−11904),
/// gives reads in flight `--stop-timeout` seconds, and exits 0 only once every worker is reaped; a socket-activated
/// restart serves every connection that queued on the socket meanwhile.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct GracefulStopTests {
    /// A session that has said Hello and asks nothing.
    static func idleSession(_ daemon: Daemon) throws -> MessageSocket {
        let socket = try LimitsTests.connect(daemon)
        try socket.send(.hello(Hello(clientName: "idle")), requestID: 1)
        guard case .helloReply = try socket.receive().message else { throw TrackError(.protocolViolation, "no HelloReply") }
        return socket
    }

    /// A decoded read of `path`'s video that has delivered its first sample.
    static func startedRead(_ path: String, _ daemon: Daemon) throws -> (Asset, AssetReader, AssetReaderTrackOutput) {
        let asset = try Asset(path: path, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("420v")])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        #expect(try output.copyNextSampleBuffer() != nil)
        return (asset, reader, output)
    }

    /// A read that cannot finish within the grace ends with −11904, an idle session is told at once, and the
    /// supervisor exits 0 only after reaping every worker. The test process is a child subreaper meanwhile, so a
    /// worker the supervisor left behind would be re-parented here and still exist (at least as a zombie) once the
    /// supervisor is gone.
    @Test func sigtermMidReadTellsEveryClientAndReapsEveryWorkerBeforeExiting() throws {
        #expect(trackd_set_child_subreaper(1) == 0)
        defer { _ = trackd_set_child_subreaper(0) }
        let daemon = try Daemon(extraArgs: ["--stop-timeout", "1"])
        defer { daemon.stop() }
        let idle = try Self.idleSession(daemon)
        let idleAsset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        // 600 frames of 1280x720: far more than a second's decoding here.
        let (_, reader, output) = try Self.startedRead(Media.long, daemon)
        let workers = Procfs.children(of: daemon.pid)
        #expect(workers.count >= 2, "the idle session's worker, the reader's and the warm worker: \(workers)")
        // SIGHUP is answered (in the log, and its `hang-up` record), and trackd serves on.
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForEvents("hang-up").count == 1, "\(daemon.log)")
        #expect(daemon.isRunning)

        kill(daemon.pid, SIGTERM)
        var frames = 1
        while try output.copyNextSampleBuffer() != nil { frames += 1 }
        #expect(frames < 600, "the read cannot have finished within the 1 s grace")
        #expect(reader.status == .failed)
        let error = try #require(reader.error)
        #expect(error.code == AVErrorCode.daemonStopping.rawValue && error.code == -11904, "\(error)")
        #expect(error.message.contains("trackd is stopping"), "\(error.message)")
        #expect(error.message.contains("did not finish within the grace of 1 s (--stop-timeout)"), "\(error.message)")
        LimitsTests.expectErrorThenClose(idle, .daemonStopping, ["trackd is stopping"])

        #expect(daemon.waitForExit() == 0)
        // An asset whose session was idle: its next request fails with −11904 too (TrackClient reads the Error
        // waiting for it even when its send fails on the closed connection).
        do {
            _ = try idleAsset.serverStatus()
            Issue.record("a request on a stopped trackd's connection succeeded")
        } catch {
            #expect(error.code == -11904 && error.message == "trackd is stopping", "\(error)")
        }
        let left = workers.filter { Procfs.isAlive($0) }
        #expect(left.isEmpty, "workers left when the supervisor exited: \(left.map { "\($0): \(Procfs.status($0).prefix(80))" })")
        for pid in left {  // re-parented here: end and reap them
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        // (The supervisor has exited: every record it wrote is in the log.)
        let stopped = daemon.events("stopped")
        #expect(stopped.count == 1 && stopped.allSatisfy { $0.int("unreaped") == 0 }, "\(daemon.log)")
        #expect(daemon.events("worker-ended") { $0["how"] == "killed" }.isEmpty, "\(daemon.log)")
    }

    /// A read that ends within the grace completes; a new request on the same connection is refused with −11904;
    /// the supervisor exits as soon as its workers have, long before the grace is over.
    @Test func aReadThatEndsWithinTheGraceCompletesAndNewRequestsAreRefused() throws {
        let daemon = try Daemon(extraArgs: ["--stop-timeout", "60"])
        defer { daemon.stop() }
        let (asset, reader, output) = try Self.startedRead(Media.clip, daemon)
        let stopped = ContinuousClock.now
        kill(daemon.pid, SIGTERM)
        #expect(!daemon.waitForEvents("session-stopping").isEmpty, "\(daemon.log)")
        let video = try #require(asset.tracks(withMediaType: .video).first)
        let refused: TrackError? = {
            do throws(TrackError) {
                _ = try asset.generateImage(track: video, at: .zero)
                return nil
            } catch {
                return error
            }
        }()
        #expect(refused?.code == -11904, "\(String(describing: refused))")
        #expect(refused?.message == "trackd is stopping; it takes no new requests", "\(String(describing: refused))")
        var frames = 1
        while try output.copyNextSampleBuffer() != nil { frames += 1 }
        #expect(frames == 60, "\(String(describing: reader.error))")
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(daemon.waitForExit() == 0)
        #expect(ContinuousClock.now - stopped < .seconds(30), "the supervisor waited for the grace, not for its reads")
        let ending = daemon.events("stopped")
        #expect(ending.count == 1 && ending.allSatisfy { $0.int("killed") == 0 && $0.int("unreaped") == 0 }, "\(daemon.log)")
    }

    /// systemd keeps the listening socket while trackd restarts; here the test holds it, and
    /// systemd-socket-activate passes it on (LISTEN_FDS) to each trackd in turn. Connections made while the first
    /// trackd stops queue on the socket and are all served by the second.
    @Test func aSocketActivatedRestartLosesNoQueuedConnection() throws {
        let dir = Env.tempDir("activation")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/trackd.sock", logPath = dir + "/trackd.log"
        let listener = try UnixSocket.make()
        let bound = try UnixSocket.withAddress(path) { bind(listener.rawValue, $0, $1) }
        try #require(bound == 0 && listen(listener.rawValue, 128) == 0)
        func activate() throws -> Child {
            // (systemd-socket-activate passes on only the variables named with -E.)
            try Child("/bin/sh", ["-c", "LISTEN_PID=$$ LISTEN_FDS=1 exec systemd-socket-activate \"$@\"", "sh",
                                  "-E", "TRACKD_EVENTS=1", Env.trackd, "--stop-timeout", "5"],
                      stderr: logPath, env: ["CACHE_DIRECTORY": dir + "/cache"], inheriting: [listener.rawValue])
        }
        let first = try activate()
        let served = try run(Env.trackctl, ["--socket", path, "status"])
        #expect(served.status == 0, "\(served.stderr)")
        kill(first.pid, SIGTERM)
        #expect(!DaemonEvents.wait(logPath, "stopping").isEmpty, "\(DaemonLog.read(logPath))")
        // The first trackd takes no connection now: these queue on the socket.
        var queued: [MessageSocket] = []
        for _ in 0..<8 {
            let fd = try UnixSocket.connect(to: path)
            var tv = timeval(tv_sec: 30, tv_usec: 0)  // the harness's bound, never a measured time
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let socket = MessageSocket(fd: fd)
            try socket.send(.hello(Hello(clientName: "queued")), requestID: 1)
            queued.append(socket)
        }
        #expect(first.wait() == 0)
        let second = try activate()
        defer {
            kill(second.pid, SIGTERM)
            #expect(second.wait() == 0)
        }
        for socket in queued {
            let reply = try socket.receive().message
            guard case .helloReply = reply else {
                Issue.record("a queued connection got \(reply) instead of HelloReply")
                continue
            }
            try socket.send(.getStatus, requestID: 2)
            guard case .status(let status) = try socket.receive().message else {
                Issue.record("no Status on a queued connection")
                continue
            }
            #expect(status.supervisorPID == UInt32(second.pid))
        }
        // (A connection's record is written just after its worker starts: it may come after the worker's answer.)
        #expect(DaemonEvents.wait(logPath, "connection-served", count: 1 + queued.count).count == 1 + queued.count,
                "\(DaemonLog.read(logPath))")
        #expect(DaemonEvents.read(logPath, "connection-refused").isEmpty, "\(DaemonLog.read(logPath))")
    }
}
