import Foundation
import Protocol
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The warm worker: the supervisor starts the next connection's worker ahead of time — GStreamer initialised,
/// plugins loaded, sandbox entered — and hands it the connection when a client arrives.
@Suite struct WarmWorkerTests {
    /// The daemon's children that are warm workers ready and waiting for a connection (comm `trackd-warm`, set
    /// after it told the supervisor it is ready) — with `starting`, also those still starting — polled until there
    /// is one or 5 s pass.
    func warmWorkers(_ daemon: Daemon, expectOne: Bool = true, starting: Bool = false) -> [Int32] {
        for _ in 0..<250 {
            let found = children(of: daemon.pid).filter { pid in
                starting ? LeakTests.Usage.isWarmWorker(pid) : isReady(pid)
            }
            if !found.isEmpty || !expectOne { return found }
            usleep(20_000)
        }
        return []
    }

    /// A warm worker names itself `trackd-warm` once it has told the supervisor it is ready.
    func isReady(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").hasPrefix("trackd-warm")
    }

    func children(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { Int32($0) }
        }
    }

    func status(_ pid: Int32) -> String { (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "" }

    @Test func theNextConnectionGetsTheWorkerStartedAheadOfIt() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let first = try #require(warmWorkers(daemon).first, "no warm worker after start-up")
        // Ready before any client: sandboxed (seccomp filter on, no_new_privs) — every thread of it, including
        // those GStreamer started for the rehearsal before the filter (TSYNC).
        for _ in 0..<250 where !status(first).contains("\nSeccomp:\t2\n") { usleep(20_000) }
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(first)/task")
        #expect(!threads.isEmpty)
        for tid in threads {
            let s = (try? String(contentsOfFile: "/proc/\(first)/task/\(tid)/status", encoding: .utf8)) ?? ""
            #expect(s.contains("\nSeccomp:\t2\n") && s.contains("\nNoNewPrivs:\t1\n"), "thread \(tid): \(s)")
        }
        // It rehearsed a read of its own H.264 clip (GStreamer encodes five frames; all came back decoded).
        for _ in 0..<250 where !daemon.log.contains("warm worker: rehearsed") { usleep(20_000) }
        #expect(daemon.log.contains("warm worker: rehearsed an H.264 read (5 frames)"), "\(daemon.log)")

        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        #expect(try asset.serverStatus().workerPID == UInt32(first))
        // It reads like any worker (bytes checked against ffmpeg elsewhere; here: every frame arrives).
        let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--md5"])
        #expect(r.status == 0 && r.text.split(separator: "\n").count == 60, "\(r.stderr)")
        // A new warm worker waits for the next connection.
        let next = try #require(warmWorkers(daemon).first)
        #expect(next != first)
    }

    /// The next warm worker waits while the connection that took the last one is starting up (its start-up
    /// would compete with that client's first frame): until its first sample, or its end, or the grace.
    @Test func theNextWarmWorkerWaitsForTheFirstSample() throws {
        let daemon = try Daemon(extraArgs: ["--warm-worker-grace", "60000"])
        defer { daemon.stop() }
        let first = try #require(warmWorkers(daemon).first)
        // Sparse connections only: one that takes a warm worker started less than 500 ms before means connections
        // come as fast as warm workers start, and the next one starts at once.
        usleep(600_000)
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        #expect(try asset.serverStatus().workerPID == UInt32(first))
        // Open, no sample yet: no new warm worker, however long (here 400 ms) — the grace is a minute.
        for _ in 0..<20 {
            #expect(warmWorkers(daemon, expectOne: false, starting: true).isEmpty)
            usleep(20_000)
        }
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [SettingsKey.pixelFormatType: .int(Int64(FourCC("y420").rawValue))])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        #expect(try output.copyNextSampleBuffer() != nil)
        // The first sample was sent: now one starts.
        let next = try #require(warmWorkers(daemon).first, "\(daemon.log)")
        #expect(next != first)

        // A connection that ends before any sample lets the next one start too.
        usleep(600_000)
        do {
            let second = try Asset(path: Media.clip, socketPath: daemon.socketPath)
            #expect(try second.serverStatus().workerPID == UInt32(next))
            withExtendedLifetime(second) { #expect(warmWorkers(daemon, expectOne: false, starting: true).isEmpty) }
        }
        #expect(!warmWorkers(daemon).isEmpty, "\(daemon.log)")
    }

    /// Connections that come as fast as warm workers start (a loop of short reads) do not wait for each other's
    /// first sample: the next warm worker starts at once, whatever the grace.
    @Test func backToBackConnectionsStartTheNextWarmWorkerAtOnce() throws {
        let daemon = try Daemon(extraArgs: ["--warm-worker-grace", "60000"])
        defer { daemon.stop() }
        let first = try #require(warmWorkers(daemon).first)
        usleep(600_000)
        let a = try Asset(path: Media.clip, socketPath: daemon.socketPath)  // sparse: the grace holds the next back
        #expect(try a.serverStatus().workerPID == UInt32(first))
        let b = try Asset(path: Media.clip, socketPath: daemon.socketPath)  // no warm worker: one is started for it
        let c = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let workers = try [a, b, c].map { try $0.serverStatus().workerPID }
        #expect(Set(workers).count == 3)
        // a and b are still starting up (no sample) and the grace is a minute, yet a warm worker appears: b and c
        // came back to back, without a warm worker for b.
        #expect(!warmWorkers(daemon).isEmpty, "\(daemon.log)")
        withExtendedLifetime((a, b, c)) {}
    }

    /// A warm worker that dies before it is ready (here: stopped while starting, then killed) has not read its
    /// connection; the supervisor starts a worker for that connection, and the client is served as if nothing
    /// happened.
    @Test func aConnectionHandedToAWarmWorkerThatDiesStartingIsServedByAnother() throws {
        let daemon = try Daemon(extraArgs: ["--warm-worker-grace", "0"])
        defer { daemon.stop() }
        let dir = Env.tempDir("warm-dies")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var keep: [Asset] = []
        var stopped: Int32?
        // Each connection starts the next warm worker at once (no grace); catch one before it says it is ready.
        for _ in 0..<5 where stopped == nil {
            let taken = Set(children(of: daemon.pid))
            keep.append(try Asset(path: Media.clip, socketPath: daemon.socketPath))
            for _ in 0..<2000 where stopped == nil {
                if let pid = children(of: daemon.pid).first(where: { !taken.contains($0) && LeakTests.Usage.isWarmWorker($0) }) {
                    kill(pid, SIGSTOP)
                    if isReady(pid) { kill(pid, SIGCONT); break }  // ready already: try the next one
                    stopped = pid
                }
                usleep(1_000)
            }
        }
        let pid = try #require(stopped, "no warm worker caught before it was ready")
        let client = try Child(Env.trackctl, ["--socket", daemon.socketPath, "status"], stdout: dir + "/out", stderr: dir + "/err")
        for _ in 0..<250 where !daemon.log.contains("→ worker \(pid)") { usleep(20_000) }
        #expect(daemon.log.contains("→ worker \(pid)"), "the connection did not go to the stopped warm worker: \(daemon.log)")
        kill(pid, SIGKILL)
        #expect(client.wait() == 0, "\(String(decoding: FileManager.default.contents(atPath: dir + "/err") ?? Data(), as: UTF8.self))\n\(daemon.log)")
        #expect(daemon.log.contains("warm worker \(pid)") && daemon.log.contains("its connection goes to worker"), "\(daemon.log)")
        withExtendedLifetime(keep) {}
    }

    @Test func aWarmWorkerThatDiedIsReplaced() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let warm = try #require(warmWorkers(daemon).first)
        kill(warm, SIGKILL)
        for _ in 0..<250 where children(of: daemon.pid).contains(warm) { usleep(20_000) }
        // The next client is served anyway (by a worker started for it), and a warm worker is there again after.
        let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--duration", "0.1", "--md5"])
        #expect(r.status == 0 && r.text.split(separator: "\n").count == 3, "\(r.stderr)\n\(daemon.log)")
        #expect(!warmWorkers(daemon).isEmpty)
        #expect(!daemon.log.contains("killed by signal") || daemon.log.contains("worker \(warm)"), "\(daemon.log)")
    }

    @Test func noWarmWorkerWhenTurnedOff() throws {
        let daemon = try Daemon(extraArgs: ["--no-warm-worker"])
        defer { daemon.stop() }
        usleep(300_000)
        #expect(warmWorkers(daemon, expectOne: false, starting: true).isEmpty)
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let pid = try asset.serverStatus().workerPID
        #expect(children(of: daemon.pid) == [Int32(pid)])
    }
}
