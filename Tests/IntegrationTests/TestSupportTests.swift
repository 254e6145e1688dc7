import Foundation
import Synchronization
import TestSupport
import Testing

/// The shared test helpers, checked on their own: a helper that cannot fail would let every test using it pass.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct TestSupportTests {
    /// GLib's default handler's lines, with and without a domain, are found; trackd's own warnings are not.
    @Test func daemonLogCheckFindsGLibCriticalsAndWarnings() {
        let log = """
            <6>trackd[10]: listening on /tmp/x/trackd.sock
            <4>trackd[10]: worker 12 (client uid 0 pid 11) killed by signal 9 (Killed), max RSS 40 MiB, CPU 0.10 s
            (trackd:12): GStreamer-CRITICAL **: 12:00:00.000: gst_sample_set_caps: assertion 'gst_sample_is_writable (sample)' failed
            (trackd:12): GLib-GObject-WARNING **: 12:00:00.001: invalid cast from 'GstQueue' to 'GstAppSink'
            ** (trackd:12): CRITICAL **: 12:00:00.002: no domain
            <3>trackd-worker[12]: open failed: WARNING is not a GLib line here
            """
        let found = DaemonLog.glibWarnings(log)
        #expect(found.count == 3, "\(found)")
        #expect(found.allSatisfy { $0.contains("(trackd:12)") })
        #expect(DaemonLog.glibWarnings(log, allowing: ["gst_sample_set_caps", "invalid cast", "no domain"]).isEmpty)
        #expect(DaemonLog.glibWarnings("").isEmpty)
    }

    /// Event records are found with their process, pid and fields; log lines about the same things are not records.
    @Test func eventRecordsAreParsedAndOtherLinesAreNot() {
        let log = """
            <6>trackd[10]: listening on /tmp/x/trackd.sock
            <7>trackd[10]: event=listening socket=path
            <4>trackd[10]: worker 12 (client uid 0 pid 11) killed by signal 9 (Killed), max RSS 40 MiB, CPU 0.10 s
            <7>trackd[10]: event=worker-ended worker=12 how=killed status=0 signal=9 max-rss-mib=40
            <6>trackd-worker[13]: decoder threads: 2 (0 other workers busy, 2 CPUs)
            <7>trackd-worker[13]: event=decoder-threads threads=2 others=0 cpus=2
            (trackd:12): GStreamer-CRITICAL **: event=listening
            """
        let events = DaemonEvents.parse(log)
        #expect(events.map(\.name) == ["listening", "worker-ended", "decoder-threads"], "\(events)")
        #expect(events.map(\.process) == ["trackd", "trackd", "trackd-worker"])
        #expect(events.map(\.pid) == [10, 10, 13])
        #expect(events[1].int("signal") == 9 && events[1]["how"] == "killed" && events[1]["restarted-on"] == nil)
        #expect(events[2].fields == ["threads": "2", "others": "0", "cpus": "2"])
    }

    /// The names the tests may ask for are the ones trackd writes, and docs/ARCHITECTURE.md's table lists them all.
    @Test func eventRecordNamesAreTrackdsAndDocumented() throws {
        #expect(DaemonEvents.names.count >= 20 && DaemonEvents.names.contains("worker-ended"), "\(DaemonEvents.names)")
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/ARCHITECTURE.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        let start = try #require(text.range(of: "\n## Event records\n"))
        let section = String(text[start.upperBound...]).components(separatedBy: "\n## ")[0]
        let documented = Set(section.matches(of: #/\n\| `([a-z-]+)` \| /#).map { String($0.output.1) })
        let (extra, missing) = (documented.subtracting(DaemonEvents.names), DaemonEvents.names.subtracting(documented))
        #expect(documented == DaemonEvents.names, "documented only: \(extra); undocumented: \(missing)")
    }

    /// A record written after the wait began is found; one that never comes is waited for no longer than asked.
    @Test func waitingForARecordEndsWhenItIsWrittenOrAtTheBound() throws {
        let dir = Env.tempDir("events")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/trackd.log"
        try Data("<6>trackd[10]: hello\n".utf8).write(to: URL(fileURLWithPath: path))
        let writer = Thread {
            usleep(100_000)
            let handle = FileHandle(forWritingAtPath: path)!
            handle.seekToEndOfFile()
            handle.write(Data("<7>trackd[10]: event=hang-up\n".utf8))
            handle.closeFile()
        }
        writer.start()
        #expect(DaemonEvents.wait(path, "hang-up", timeout: .seconds(10)).count == 1)
        let start = monotonicMs()
        #expect(DaemonEvents.wait(path, "stopped", timeout: .milliseconds(200)).isEmpty)
        #expect(monotonicMs() - start >= 200)
    }

    @Test func waitUntilWaitsForTheConditionAndNoLonger() {
        let start = monotonicMs()
        #expect(waitUntil(timeout: .seconds(5)) { monotonicMs() - start >= 50 })
        let late = monotonicMs()
        #expect(!waitUntil(timeout: .milliseconds(100)) { false })
        #expect(monotonicMs() - late >= 100)
        var calls = 0
        // No longer: it returns at the first check that holds (counted, not timed: a loaded machine may take seconds).
        #expect(waitFor(timeout: .seconds(5)) { () -> Int? in calls += 1; return calls == 3 ? calls : nil } == 3)
        #expect(calls == 3)
    }

    @Test func holdsFailsAtTheFirstBrokenCheck() {
        var checks = 0
        #expect(!holds(for: .seconds(5), poll: .milliseconds(1)) { checks += 1; return checks < 3 })
        #expect(checks == 3)
        #expect(holds(for: .milliseconds(50)) { true })
    }

    /// SplitMix64's published first outputs for seed 0 (so a printed seed replays the same inputs everywhere).
    @Test func splitMix64IsTheReferenceGenerator() {
        var rng = SplitMix64(seed: 0)
        #expect([rng.next(), rng.next(), rng.next()] == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F])
    }

    /// RFC 1321's test vectors, through libmd, in one piece and in parts.
    @Test func md5IsRFC1321() {
        #expect(md5Hex([]) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(md5Hex(Array("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        var md5 = MD5()
        md5.update(Array("message ".utf8))
        md5.update(Array("digest".utf8))
        #expect(md5.finish() == "f96b697d7cb7938d525a2f31aaf161d0")
    }
}

/// The hang guard's countdown fires once after its delay, and not at all once cancelled.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct CountdownTests {
    @Test func firesAfterItsDelayUnlessCancelled() {
        let fired = Mutex(0)
        let start = monotonicMs()
        let countdown = Countdown(after: .milliseconds(50)) { fired.withLock { $0 += 1 } }
        #expect(waitUntil(timeout: .seconds(10)) { fired.withLock { $0 } == 1 })
        #expect(monotonicMs() - start >= 50)
        countdown.cancel()
        let cancelled = Countdown(after: .milliseconds(50)) { fired.withLock { $0 += 1 } }
        cancelled.cancel()
        #expect(holds(for: .milliseconds(200)) { fired.withLock { $0 } == 1 })
    }

    /// A child that ignores SIGTERM (as systemd-socket-activate does before it execs trackd, with the test thread's
    /// signals blocked) is killed once the grace has passed: terminate() never waits for ever.
    @Test func terminateKillsAChildThatIgnoresSIGTERM() throws {
        let ready = Env.tempDir("terminate") + "/ready"
        let child = try Child("sh", ["-c", "trap '' TERM; : > \"$0\"; while :; do sleep 1; done", ready])
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })  // the trap is set
        #expect(child.terminate(grace: .milliseconds(300)) == 128 + SIGKILL)
    }
}
