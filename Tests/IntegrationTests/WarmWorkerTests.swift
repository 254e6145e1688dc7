import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The warm worker: the supervisor starts the next connection's worker ahead of time — GStreamer initialised,
/// plugins loaded, sandbox entered — and hands it the connection when a client arrives.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct WarmWorkerTests {
    /// The daemon's children that are warm workers ready and waiting for a connection (comm `trackd-warm`, set
    /// after it told the supervisor it is ready) — with `starting`, also those still starting. With `expectOne`,
    /// waits until there is one (at most 10 s).
    func warmWorkers(_ daemon: Daemon, expectOne: Bool = true, starting: Bool = false) -> [Int32] {
        func found() -> [Int32] {
            children(of: daemon.pid).filter { pid in starting ? LeakTests.Usage.isWarmWorker(pid) : isReady(pid) }
        }
        guard expectOne else { return found() }
        return waitFor { let f = found(); return f.isEmpty ? nil : f } ?? []
    }

    /// The supervisor's `warmBusyMs`: a connection that takes a warm worker younger than this starts the next one
    /// at once (connections are coming as fast as warm workers start).
    static let warmBusyMs = 500.0

    /// Waits until warm worker `pid` is well past `warmBusyMs` old (its age from /proc, which the supervisor's
    /// clock, read just after the spawn, can only trail), so a connection now is a sparse one.
    func waitUntilSparse(_ pid: Int32) {
        #expect(waitUntil { (Procfs.ageMs(pid) ?? 0) >= Self.warmBusyMs + 100 }, "warm worker \(pid) is gone")
    }

    /// A warm worker names itself `trackd-warm` once it has told the supervisor it is ready.
    func isReady(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").hasPrefix("trackd-warm")
    }

    func children(of pid: Int32) -> [Int32] { Procfs.children(of: pid) }

    func status(_ pid: Int32) -> String { Procfs.status(pid) }

    @Test func theNextConnectionGetsTheWorkerStartedAheadOfIt() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let first = try #require(warmWorkers(daemon).first, "no warm worker after start-up")
        // Ready before any client: sandboxed (seccomp filter on, no_new_privs) — every thread of it, including
        // those GStreamer started for the rehearsal before the filter (TSYNC).
        #expect(waitUntil { status(first).contains("\nSeccomp:\t2\n") }, "\(status(first))")
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(first)/task")
        #expect(!threads.isEmpty)
        for tid in threads {
            let s = (try? String(contentsOfFile: "/proc/\(first)/task/\(tid)/status", encoding: .utf8)) ?? ""
            #expect(s.contains("\nSeccomp:\t2\n") && s.contains("\nNoNewPrivs:\t1\n"), "thread \(tid): \(s)")
        }
        // It rehearsed a read of its own H.264 clip (GStreamer encodes five frames; all came back decoded). Its
        // `rehearsed` record is the rehearsal's only trace outside the worker (no reply or counter carries it).
        #expect(daemon.waitForEvents("rehearsed") { $0.pid == first }.map { $0.int("frames") } == [5], "\(daemon.log)")

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
        waitUntilSparse(first)
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        #expect(try asset.serverStatus().workerPID == UInt32(first))
        // Open, no sample yet: no new warm worker, however long (here 400 ms) — the grace is a minute.
        #expect(holds(for: .milliseconds(400)) { warmWorkers(daemon, expectOne: false, starting: true).isEmpty })
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
        waitUntilSparse(next)
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
        waitUntilSparse(first)
        let a = try Asset(path: Media.clip, socketPath: daemon.socketPath)  // sparse: the grace holds the next back
        #expect(try a.serverStatus().workerPID == UInt32(first))
        // b and c connect back to back (before either handshake: an Asset's open would wait for b's worker, started
        // cold, and on a loaded machine c would come over 500 ms after the warm worker it takes started, i.e. sparse).
        let b = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))  // no warm worker: one is started for it
        let c = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))  // takes the one started for b
        let workers = try [a.serverStatus().workerPID] + [b, c].map { try Daemon.handshakeAndStatus($0).workerPID }
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
            // Polled every millisecond: the window between a warm worker's start and its ready byte is short.
            waitUntil(timeout: .seconds(2), poll: .milliseconds(1)) {
                guard let pid = children(of: daemon.pid).first(where: { !taken.contains($0) && LeakTests.Usage.isWarmWorker($0) })
                else { return false }
                kill(pid, SIGSTOP)
                if isReady(pid) { kill(pid, SIGCONT) } else { stopped = pid }  // ready already: try the next one
                return true
            }
        }
        let pid = try #require(stopped, "no warm worker caught before it was ready")
        let client = try Child(Env.trackctl, ["--socket", daemon.socketPath, "status"], stdout: dir + "/out", stderr: dir + "/err")
        // Which worker a connection was handed to is in the supervisor's records only (the stopped worker cannot
        // answer).
        #expect(daemon.waitForEvents("connection-served") { $0.int("worker") == Int(pid) }.count == 1,
                "the connection did not go to the stopped warm worker: \(daemon.log)")
        kill(pid, SIGKILL)
        #expect(client.wait() == 0, "\(String(decoding: FileManager.default.contents(atPath: dir + "/err") ?? Data(), as: UTF8.self))\n\(daemon.log)")
        // Its death before it was ready counts as a crash, and the record that names the worker taking over its
        // connection is the behaviour under test (the restart path, not a connection lost).
        #expect(try daemon.status().workerCrashes == 1)
        let ended = daemon.waitForEvents("worker-ended") { $0.int("worker") == Int(pid) }
        #expect(ended.count == 1 && ended.allSatisfy { $0["how"] == "killed" && $0.int("signal") == Int(SIGKILL) && $0["restarted-on"] != nil },
                "\(daemon.log)")
        withExtendedLifetime(keep) {}
    }

    @Test func aWarmWorkerThatDiedIsReplaced() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let warm = try #require(warmWorkers(daemon).first)
        kill(warm, SIGKILL)
        #expect(waitUntil { !children(of: daemon.pid).contains(warm) })
        // The next client is served anyway (by a worker started for it), and a warm worker is there again after.
        let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--duration", "0.1", "--md5"])
        #expect(r.status == 0 && r.text.split(separator: "\n").count == 3, "\(r.stderr)\n\(daemon.log)")
        #expect(!warmWorkers(daemon).isEmpty)
        // The one worker killed is the warm one: a warm worker without a connection is not a client's crash, and
        // the supervisor's only `worker-ended how=killed` record is about it.
        #expect(try daemon.status().workerCrashes == 0)
        let killed = daemon.waitForEvents("worker-ended") { $0["how"] == "killed" }
        #expect(killed.map { $0.int("worker") } == [Int(warm)], "\(daemon.log)")
    }

    /// The nice value of every thread of `pid` (/proc/PID/task/TID/stat, field 19); empty when it is gone.
    func niceValues(_ pid: Int32) -> [Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { tid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // After "(comm)": state is field 3, nice field 19.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
    }

    /// A warm worker started while another worker runs starts at nice 19 (its start-up takes only CPU time the
    /// reads leave idle), gets the supervisor's priority back when no other worker is left, and reads at it. The
    /// first one, started with nothing else running, starts at normal priority. (Tests run as root: the supervisor
    /// can set the value back, so it lowers it.)
    @Test func aWarmWorkerStartedBesideAnotherWorkerStartsAtLowPriority() throws {
        let daemon = try Daemon(extraArgs: ["--warm-worker-grace", "0"])
        defer { daemon.stop() }
        let first = try #require(warmWorkers(daemon).first)
        #expect(niceValues(first).allSatisfy { $0 == 0 }, "\(niceValues(first))")
        waitUntilSparse(first)
        var next: Int32 = 0
        do {
            let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
            #expect(try asset.serverStatus().workerPID == UInt32(first))
            // Grace 0: the next warm worker starts at the hand-off, beside the worker that took the connection.
            next = try #require(waitFor { warmWorkers(daemon, expectOne: false, starting: true).first { $0 != first } })
            let lowered = niceValues(next)
            #expect(!lowered.isEmpty && lowered.allSatisfy { $0 == 19 }, "\(lowered)")
            withExtendedLifetime(asset) {}
        }
        // The connection closed and its worker was reaped: nothing left to compete with.
        #expect(waitUntil { let n = niceValues(next); return !n.isEmpty && n.allSatisfy { $0 == 0 } }, "\(niceValues(next))")
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        #expect(try asset.serverStatus().workerPID == UInt32(next))
        #expect(niceValues(next).allSatisfy { $0 == 0 }, "\(niceValues(next))")
    }

    @Test func noWarmWorkerWhenTurnedOff() throws {
        let daemon = try Daemon(extraArgs: ["--no-warm-worker"])
        defer { daemon.stop() }
        #expect(holds(for: .milliseconds(300)) { warmWorkers(daemon, expectOne: false, starting: true).isEmpty })
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let pid = try asset.serverStatus().workerPID
        #expect(children(of: daemon.pid) == [Int32(pid)])
    }
}
