import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// How long the soak runs: SOAK_SECONDS of mixed workload (default 8) after SOAK_KILLED killed clients (default 8).
/// The time limit allows 6 s per killed client (each starts trackctl and a worker and waits for its first sample):
/// on the shared 2-CPU machine 1000 of them took 1.5–2.5 s each at load average 30–50 with the first builds, and
/// about 4 s each at load average 22–34 on 2026-12-02, when the whole operator-length soak ended 14 minutes
/// inside its former 4 s allowance (docs/SECURITY.md § Soak).
enum SoakLength {
    static let seconds = ProcessInfo.processInfo.environment["SOAK_SECONDS"].flatMap(Double.init) ?? 8
    static let killedClients = ProcessInfo.processInfo.environment["SOAK_KILLED"].flatMap(Int.init) ?? 8
    static let minutes = TestLimits.minutes + Int(seconds / 60) * 2 + killedClients / 10
}

/// Issue #16: the soak, as an operator runs it (`make soak`: SOAK_SECONDS=300, SOAK_KILLED=1000) and as `make test`
/// runs it (8 s, 8 killed clients; about a minute). One daemon, one uid: clients SIGKILLed mid-read, 16 threads of a mixed
/// workload (decoded reads checked frame by frame against ffmpeg, Status) for SOAK_SECONDS, after a burst of 200
/// connections that close at once (WorkerBoundTests: never more worker processes than the limit + the warm one),
/// workers killed by SIGKILL and SIGSEGV mid-read, then SIGTERM mid-read. Prints the figures; fails on any wrong byte, any refusal,
/// any unexpected error, a descriptor or memory leak in the supervisor, counters that disagree with what the
/// clients saw, or a stop that is not clean.
@Suite(.serialized, .timeLimit(.minutes(SoakLength.minutes)), .endsTheRunIfItHangs)
struct SoakTests {
    static let seconds = SoakLength.seconds
    static let killedClients = SoakLength.killedClients
    /// Room for the 16 threads, the killed clients (4 at a time) and the Status connections; the worker processes
    /// are bounded by it (plus the warm worker) through the burst and the rest.
    static let maxConnections = 32

    final class Tally: Sendable {
        let operations = Atomic<Int>(0), samples = Atomic<Int>(0), wrong = Atomic<Int>(0)
        let refusals = Mutex<[String]>([]), errors = Mutex<[String]>([])
    }

    /// The supervisor's open descriptors and resident memory (KiB).
    static func resources(_ pid: pid_t) -> (fds: Int, rssKiB: Int) {
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
        let rss = Procfs.status(pid).split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
        return (fds, rss)
    }

    /// `resources` once the supervisor has settled at rest: one child (the warm worker) and the same descriptor
    /// count on 5 polls in a row, 100 ms apart. A Status reply comes before its connection's worker is reaped and
    /// its descriptors are closed, so a count read just after one (as atRest asks) can be up to 3 high.
    static func settled(_ pid: pid_t) -> (fds: Int, rssKiB: Int)? {
        var last: Int?, same = 0
        return waitFor(timeout: .seconds(30), poll: .milliseconds(100)) {
            let now = resources(pid)
            guard Procfs.children(of: pid).count == 1 else {
                (last, same) = (nil, 0)
                return nil
            }
            same = now.fds == last ? same + 1 : 0
            last = now.fds
            return same >= 5 ? now : nil
        }
    }

    /// Every frame of Media.clip as y420, each checked against ffmpeg's. Returns the samples received.
    static func checkedRead(_ socketPath: String, _ expected: [String], _ tally: Tally) {
        do {
            let asset = try Asset(path: Media.clip, socketPath: socketPath)
            guard let track = asset.tracks(withMediaType: .video).first else { throw TrackError(.unknown, "no video track") }
            let output = try AssetReaderTrackOutput(track: track, outputSettings: DecoderThreadsTests.y420)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            _ = try reader.startReading()
            var index = 0
            while let sample = try output.copyNextSampleBuffer() {
                if index >= expected.count || md5Hex(sample.packedBytes()) != expected[index] { tally.wrong.add(1, ordering: .relaxed) }
                index += 1
            }
            tally.samples.add(index, ordering: .relaxed)
            if let error = reader.error { throw error }
            if index != expected.count { tally.wrong.add(1, ordering: .relaxed) }
        } catch let e as TrackError where e.code == -11902 || e.code == -11905 {
            tally.refusals.withLock { $0.append("\(e)") }
        } catch {
            tally.errors.withLock { $0.append("\(error)") }
        }
        tally.operations.add(1, ordering: .relaxed)
    }

    @Test func soak() throws {
        let daemon = try Daemon(extraArgs: ["--stop-timeout", "2", "--max-connections", "\(Self.maxConnections)"])
        defer { daemon.stop() }
        let socketPath = daemon.socketPath
        let expected = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p").map(\.md5)
        let tally = Tally()
        Self.checkedRead(socketPath, expected, tally)  // warm-up: the supervisor's first connection is counted in
        // Children first: a Status connection starts a worker of its own (the warm one, and a new warm one behind
        // it), so asking before the last one is reaped would see two children every time it asks.
        let atRest = { Procfs.children(of: daemon.pid).count == 1 && (try? daemon.status())?.activeConnections == 1 }
        // Generous: other suites run beside this one (DamagedDeterminismTests keeps two readers busy), and the warm
        // worker rehearses before it counts; the descriptor and RSS baselines below are only meaningful at rest.
        try #require(waitUntil(timeout: .seconds(120), atRest), "the daemon did not come to rest")
        let before = try #require(Self.settled(daemon.pid), "the supervisor's descriptors did not settle")
        let start = ContinuousClock.now
        let sampler = WorkerBoundTests.ChildSampler(supervisor: daemon.pid)

        // 0. A burst of 200 connections that close at once or soon after their Hello: bounded workers, none left.
        WorkerBoundTests.burst(socketPath, count: 200)
        let burstEnded = WorkerBoundTests.workersEnd(daemon.pid)

        // 1. Clients killed mid-read, four at a time, each batch once samples are flowing (or the batch is done).
        var killed = 0
        while killed < Self.killedClients {
            let base = try daemon.status().daemonSamplesSent
            let batch = try (0..<min(4, Self.killedClients - killed)).map { _ in
                try Child(Env.trackctl, ["--socket", socketPath, "read", Media.long, "--md5"])
            }
            _ = waitUntil(timeout: .seconds(30)) {
                ((try? daemon.status())?.daemonSamplesSent ?? 0) > base || batch.allSatisfy { !$0.isRunning }
            }
            for child in batch {
                kill(child.pid, SIGKILL)
                child.wait()
            }
            killed += batch.count
        }

        // 2. Sixteen threads of a mixed workload under this one uid for SOAK_SECONDS.
        let deadline = ContinuousClock.now + .milliseconds(Int(Self.seconds * 1000))
        let group = DispatchGroup()
        for thread in 0..<16 {
            group.enter()
            Thread {
                var i = thread
                while ContinuousClock.now < deadline {
                    if i % 4 == 3 {
                        do { _ = try Trackd.status(socketPath: socketPath) } catch { tally.errors.withLock { $0.append("status: \(error)") } }
                        tally.operations.add(1, ordering: .relaxed)
                    } else {
                        Self.checkedRead(socketPath, expected, tally)
                    }
                    i += 1
                }
                group.leave()
            }.start()
        }
        group.wait()

        // 3. Worker faults mid-read: SIGKILL and SIGSEGV from outside (crashes: the supervisor did not send them).
        var faults = 0
        for sig in [SIGKILL, SIGSEGV] {
            let asset = try Asset(path: Media.long, socketPath: socketPath)
            let worker = pid_t(try asset.serverStatus().workerPID)
            let track = try #require(asset.tracks(withMediaType: .video).first)
            let output = try AssetReaderTrackOutput(track: track, outputSettings: DecoderThreadsTests.y420)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            _ = try reader.startReading()
            _ = try output.copyNextSampleBuffer()
            kill(worker, sig)
            while try output.copyNextSampleBuffer() != nil {}
            #expect(reader.error?.code == -11819, "\(String(describing: reader.error))")
            faults += 1
        }

        // At rest again: no descriptor or memory kept for what ended; the counters against what the clients saw.
        #expect(waitUntil(timeout: .seconds(120), atRest), "\(Procfs.children(of: daemon.pid))")
        let mostWorkers = sampler.finish()
        let after = Self.settled(daemon.pid) ?? Self.resources(daemon.pid)
        let status = try daemon.status()
        let refusals = tally.refusals.withLock { $0 }, errors = tally.errors.withLock { $0 }
        let received = UInt64(tally.samples.load(ordering: .relaxed))

        // 4. SIGTERM mid-read: the read ends with −11904 (or completes within the grace); exit 0, no worker left.
        let (_, stopReader, stopOutput) = try GracefulStopTests.startedRead(Media.long, daemon)
        let workers = Procfs.children(of: daemon.pid)
        kill(daemon.pid, SIGTERM)
        while try stopOutput.copyNextSampleBuffer() != nil {}
        let stopCode = stopReader.error?.code ?? 0
        let exit = daemon.waitForExit()
        let left = workers.filter { Procfs.isAlive($0) }

        print("""
            soak: \(Int((ContinuousClock.now - start).components.seconds)) s, 1 uid
              burst                     200 connections closed at once or after Hello; workers gone within \(WorkerBoundTests.vanishedBound): \(burstEnded)
              most worker processes     \(mostWorkers) at once (bound: \(Self.maxConnections) connections + the warm worker)
              killed clients            \(killed)
              operations                \(tally.operations.load(ordering: .relaxed)) (16 threads, \(Int(Self.seconds)) s: checked reads of \(expected.count) frames, Status)
              wrong outputs             \(tally.wrong.load(ordering: .relaxed))
              refusals                  \(refusals.count)
              other errors              \(errors.count)
              worker faults injected    \(faults) (SIGKILL, SIGSEGV)
              supervisor fds            \(before.fds) before, \(after.fds) after
              supervisor RSS            \(before.rssKiB) KiB before, \(after.rssKiB) KiB after
              samples                   \(received) received by the checked reads; daemon counted \(status.daemonSamplesSent)
              worker crashes            \(status.workerCrashes) (expected \(faults)); watchdog kills \(status.watchdogKills)
              connections               \(status.connectionsAccepted) accepted, \(status.connectionsRefused) refused
              SIGTERM mid-read          client got \(stopCode), trackd exit \(exit), \(left.count) workers left
            """)
        #expect(tally.wrong.load(ordering: .relaxed) == 0)
        #expect(burstEnded, "workers of the burst's gone clients outlived them by more than \(WorkerBoundTests.vanishedBound)")
        #expect(mostWorkers <= Self.maxConnections + 1, "\(mostWorkers) worker processes at once")
        #expect(refusals.isEmpty, "\(refusals.prefix(3))")
        #expect(errors.isEmpty, "\(errors.prefix(3))")
        #expect(after.fds == before.fds, "supervisor descriptors \(before.fds) → \(after.fds)")
        #expect(after.rssKiB <= before.rssKiB + 64 * 1024, "supervisor RSS \(before.rssKiB) → \(after.rssKiB) KiB")
        #expect(status.daemonSamplesSent >= received, "the daemon counted fewer samples than the clients received")
        #expect(status.workerCrashes == UInt64(faults) && status.watchdogKills == 0, "\(status)")
        #expect(status.connectionsRefused == 0, "\(status)")
        #expect(stopCode == 0 || stopCode == -11904, "\(String(describing: stopReader.error))")
        #expect(exit == 0 && left.isEmpty, "exit \(exit), workers left \(left)")
    }
}
