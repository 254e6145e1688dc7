import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A worker drops the file pages of the libraries and plugins it loaded and does not use again (CSandbox's
/// WorkerMemory.c; docs/BENCHMARKS.md "A worker's memory"): an idle warm worker had 66 MiB of them resident
/// before, 6 MiB after.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct WorkerMemoryTests {
    /// A field of /proc/<pid>/status in KiB ("RssFile:\t    6748 kB"), nil when absent.
    func statusKiB(_ pid: Int32, _ field: String) -> Int? {
        Procfs.status(pid).split(separator: "\n").first { $0.hasPrefix(field + ":") }
            .flatMap { Int($0.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") }
    }

    @Test func aWarmWorkerKeepsFewLibraryPagesResidentAndStillReads() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        // Ready (named trackd-warm) only after its rehearsal and the second release.
        let warm = try #require(waitFor { Procfs.children(of: daemon.pid).first { Procfs.comm($0) == "trackd-warm" } },
                                "no warm worker")
        // (Both records are written before it is named trackd-warm.)
        let released = daemon.events("library-pages-released") { $0.pid == warm }.compactMap { $0["after"] }
        #expect(released == ["plugins", "rehearsal"], "\(daemon.log)")
        let fileKiB = try #require(statusKiB(warm, "RssFile"), "\(Procfs.status(warm))")
        #expect(fileKiB < 24 * 1024, "an idle warm worker has \(fileKiB) KiB of file pages resident")
        // The worker runs (and decodes) code whose pages it dropped: they come back from the page cache.
        let read = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--md5"])
        #expect(read.status == 0, "\(read.stderr)")
        // It was the warm worker that served the read, and it finished normally (the supervisor reaps it a moment
        // after the read).
        let ended = daemon.waitForEvents("worker-ended") { $0.int("worker") == Int(warm) }
        #expect(ended.map { $0["how"] } == ["finished"], "\(daemon.log)")
        DaemonLog.expectClean(daemon.log)
    }
}
