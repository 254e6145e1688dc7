import Foundation
import TestSupport
import Testing
import TrackClient

/// Consecutive ReadFrames on one connection, same track and settings: the worker keeps the last one's pipeline and
/// seeks it (a flushing, accurate seek) instead of building a new one (Session+KeptPipeline.swift). Every frame is
/// still ffmpeg's, each converted once, zero-copy; other settings get a pipeline of their own.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct KeptPipelineTests {
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    /// For each of worker `pid`'s `read-frames` records, in order: whether it used the kept pipeline. The worker
    /// writes one as it plans each ReadFrames, before answering it; the wait for `count` of them (at most 10 s) only
    /// bounds how long a missing one is looked for.
    static func reuses(_ daemon: Daemon, worker pid: UInt32, count: Int) -> [Bool] {
        daemon.waitForEvents("read-frames", count: count) { $0.pid == Int32(pid) }.map { $0["pipeline"] == "kept" }
    }

    /// The md5 of each frame's packed bytes, in request order; the frames (and their slots) are gone on return.
    func md5s(_ asset: Asset, _ track: AssetTrack, _ indices: [UInt64],
              _ settings: [String: SettingValue] = Self.y420) throws -> [String] {
        try asset.frames(atIndices: indices, track: track, outputSettings: settings).map { md5Hex($0.sample.packedBytes()) }
    }

    @Test func consecutiveReadFramesSeekTheKeptPipelineAndDeliverFfmpegsFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")  // 60 frames, GOPs of 15
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        // Same GOP, far ahead, backwards, several ranges, the first frame again.
        let picks: [[UInt64]] = [[3], [5, 9], [58], [20], [21, 2, 44], [0], [14, 13]]
        let before = try asset.serverStatus()
        for indices in picks {
            let got = try md5s(asset, track, indices)
            #expect(got == indices.map { oracle[Int($0)].md5 }, "frames \(indices)")
        }
        let after = try asset.serverStatus()
        let delivered = UInt64(picks.joined().count)
        #expect(after.framesConverted - before.framesConverted == delivered, "each frame converted once")
        #expect(after.bytesCopied == before.bytesCopied, "frames were copied: \(after.bytesCopied - before.bytesCopied) bytes")
        let pid = before.workerPID
        let expected = [false] + Array(repeating: true, count: picks.count - 1)
        #expect(Self.reuses(daemon, worker: pid, count: picks.count) == expected, "\(daemon.log)")
    }

    @Test func otherSettingsBuildAPipelineOfTheirOwn() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        let half = Self.y420.merging([SettingsKey.width: .int(160)]) { $1 }
        let bgra: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("BGRA")]
        // Oracles for the other settings: a fresh connection each.
        var fresh: [[String]] = []
        for settings in [half, bgra] {
            let other = try Asset(path: Media.clip, socketPath: daemon.socketPath)
            fresh.append(try md5s(other, try #require(other.tracks(withMediaType: .video).first), [33], settings))
        }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let pid = try asset.serverStatus().workerPID
        #expect(try md5s(asset, track, [31]) == [oracle[31].md5])
        #expect(try md5s(asset, track, [33], half) == fresh[0], "Width 160")
        #expect(try md5s(asset, track, [33], bgra) == fresh[1], "BGRA")
        #expect(try md5s(asset, track, [32]) == [oracle[32].md5])
        #expect(try md5s(asset, track, [34]) == [oracle[34].md5])
        #expect(Self.reuses(daemon, worker: pid, count: 5) == [false, false, false, false, true], "\(daemon.log)")
    }

    /// A CreateOutput between two ReadFrames drops the kept pipeline (that output may need its memory): the next
    /// ReadFrames builds one, and its frame is still ffmpeg's.
    @Test func aCreateOutputDropsTheKeptPipeline() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let pid = try asset.serverStatus().workerPID
        #expect(try md5s(asset, track, [10]) == [oracle[10].md5])
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.y420)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(MediaTimeRange(start: MediaTime(value: 20, timescale: 30), duration: MediaTime(value: 3, timescale: 30)))
        #expect(try reader.startReading())
        var read = 0
        while let sample = try output.copyNextSampleBuffer() {
            #expect(md5Hex(sample.packedBytes()) == oracle[20 + read].md5, "range frame \(read)")
            read += 1
        }
        #expect(read == 3)
        #expect(try md5s(asset, track, [11]) == [oracle[11].md5])
        #expect(try md5s(asset, track, [12]) == [oracle[12].md5])
        #expect(Self.reuses(daemon, worker: pid, count: 3) == [false, false, true], "\(daemon.log)")
    }
}
