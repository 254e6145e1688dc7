import Foundation
import TrackdProtocol
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

    /// The workers' "decoder threads: N (K other workers busy, C CPUs)" lines: the thread count a worker chose is
    /// in its log only (no reply or counter carries it), so these tests read it there.
    func threadLines(_ log: String) -> [(threads: Int, others: Int, cpus: Int)] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "decoder threads: ") else { return nil }
            let numbers = line[range.upperBound...].split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            return numbers.count == 3 ? (numbers[0], numbers[1], numbers[2]) : nil
        }
    }

    /// A thread per CPU, not libav's automatic CPUs + 1 (docs/BENCHMARKS.md, "Decode path").
    @Test func aLoneDecodeTakesAThreadPerCPU() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        try readChecked(daemon)
        let line = try #require(threadLines(daemon.log).first, "\(daemon.log)")
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
        let sawOthers = { self.threadLines(daemon.log).filter { $0.others >= 1 } }
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
