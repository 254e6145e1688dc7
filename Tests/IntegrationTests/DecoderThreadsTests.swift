import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// A decoded output created while other workers are busy shares the CPUs out (libav's max-threads, videoconvert's
/// n-threads) instead of taking a thread per CPU; a lone one takes one per CPU. Either way the bytes are ffmpeg's.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecoderThreadsTests {
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .int(Int64(FourCC("y420").rawValue))]

    /// Reads every frame of Media.clip as y420 on a connection of its own and checks them against ffmpeg.
    func readChecked(_ daemon: Daemon) throws {
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.y420)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var md5: [String] = []
        while let sample = try output.copyNextSampleBuffer() { md5.append(md5Hex(sample.packedBytes())) }
        #expect(reader.status == .completed)
        #expect(md5 == (try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")).map(\.md5))
    }

    /// The workers' `decoder-threads` records (written as each decoded output is created, before its first sample):
    /// the thread count a worker chose is in these only (no reply or counter carries it).
    func threadRecords(_ daemon: Daemon) -> [(threads: Int, others: Int, cpus: Int)] {
        daemon.events("decoder-threads").compactMap { e in
            guard let threads = e.int("threads"), let others = e.int("others"), let cpus = e.int("cpus") else { return nil }
            return (threads, others, cpus)
        }
    }

    /// A thread per CPU, not libav's automatic CPUs + 1 (docs/BENCHMARKS.md, "Decode path").
    @Test func aLoneDecodeTakesAThreadPerCPU() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        try readChecked(daemon)
        let line = try #require(threadRecords(daemon).first, "\(daemon.log)")
        #expect(line.others == 0)
        #expect(line.threads == line.cpus)
    }

    @Test func aDecodeStartedBesideABusyOneSharesTheCPUs() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("threads")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Another client reading 600 frames as fast as they come (a client slow to release them would leave its
        // worker idle, waiting on it): that worker is busy, an output pulling, while this one starts.
        let busy = try Child(Env.trackctl, ["--socket", daemon.socketPath, "read", Media.long, "--pixel-format", "y420"],
                             stdout: "/dev/null", stderr: dir + "/err")
        defer { _ = busy.terminate() }
        // Busy: its samples are flowing (the daemon-wide sample counter moves).
        #expect(try waitUntil { try daemon.status().daemonSamplesSent > 0 }, "the busy reader never read")
        // Every decode logs its count; the busy reader's own line (0 others) is not the one looked for.
        let sawOthers = { self.threadRecords(daemon).filter { $0.others >= 1 } }
        var lines = sawOthers()
        for _ in 0..<10 where lines.isEmpty && busy.isRunning {
            try readChecked(daemon)
            lines = sawOthers()
        }
        let line = try #require(lines.first, "no decode saw the other worker busy: \(daemon.log)")
        #expect(line.threads == max(1, line.cpus / (line.others + 1)))
        // Workers that rehearsed and then started more threads say nothing of GLib (no scheduler-settings CRITICAL;
        // the daemon's stop checks the whole log again).
        #expect(DaemonLog.glibWarnings(daemon.log).isEmpty, "\(daemon.log)")
    }
}
