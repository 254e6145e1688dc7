import Foundation
import TestSupport
import Testing
import TrackClient

/// Consecutive outputs on one connection: a frame memory (memfd) an output's pipeline freed is kept by the worker
/// and used again, announced in a new PoolAdded, by the next output that needs one of its size (MemfdPool.c's
/// spares; PROTOCOL.md §12.2) — written before, it costs no page faults. The frames stay zero-copy and byte for byte
/// what a fresh worker delivers.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FrameMemoryReuseTests {
    static let bgra: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("BGRA")]
    static let picks: [[UInt64]] = [[5, 40, 17], [52, 3, 29], [5, 40, 17], [44, 11, 58]]

    /// The md5 of each frame's packed bytes, in request order; the frames (and their slots) are gone on return.
    func md5s(_ asset: Asset, _ track: AssetTrack, _ indices: [UInt64]) throws -> [String] {
        try asset.frames(atIndices: indices, track: track, outputSettings: Self.bgra).map { md5Hex($0.sample.packedBytes()) }
    }

    @Test func consecutiveReadFramesReuseFrameMemoriesAndDeliverTheSameBytes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        // Oracle: each pick read by a fresh connection (a worker of its own, which read nothing before for its client).
        var fresh: [[String]] = []
        for indices in Self.picks {
            let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
            fresh.append(try md5s(asset, try #require(asset.tracks(withMediaType: .video).first), indices))
        }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let before = try asset.serverStatus()
        for round in 0..<3 {
            for (i, indices) in Self.picks.enumerated() {
                #expect(try md5s(asset, track, indices) == fresh[i], "round \(round), pick \(indices)")
            }
        }
        // The worker writes a `read-frames-done` record, with its count so far, as each ReadFrames ends: a moment
        // after the client has the frames.
        let reads = Self.picks.count * 3
        let done = daemon.waitForEvents("read-frames-done", count: reads) { $0.pid == Int32(before.workerPID) }
        #expect(done.count == reads, "\(done)")
        #expect((done.last?.int("memories-reused") ?? 0) > 0, "no frame memory was used again over \(reads) ReadFrames: \(done)")
        let after = try asset.serverStatus()
        #expect(after.bytesCopied == before.bytesCopied, "frames were copied: \(after.bytesCopied - before.bytesCopied) bytes")
        #expect(after.samplesSent > before.samplesSent)
    }
}
