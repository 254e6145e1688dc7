import Foundation
import TrackdProtocol
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Zero-copy outputs (docs/design/zero-copy.md): for formats the converter or the decoder can write straight into a
/// memfd, the worker copies no pixel bytes. The frames' bytes are checked against ffmpeg by FormatTests and
/// ReadingTests, which take the same path; here the worker's own count says no copy happened.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ZeroCopyTests {
    /// Reads every frame of `file` as `code` on one connection, releasing each slot at once, then asks the same
    /// worker for its counters. Returns (frames, pools announced, the Status, the Samples' bytes).
    func readAll(_ daemon: Daemon, _ file: String, _ code: FourCC?) throws -> (Int, Int, StatusReport, UInt64) {
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(file)
        let created = try raw.request(.createOutput(CreateOutput(
            assetID: asset.assetID, trackID: asset.tracks[0].id, timeRange: .everything,
            settings: code.map { [SettingsKey.pixelFormatType: .int(Int64($0.rawValue))] })))
        guard case .outputCreated(let output) = created else { throw TrackError(.unknown, "expected OutputCreated, got \(created)") }
        var frames = 0, pools = 0
        var bytes: UInt64 = 0
        loop: while true {
            let frame = try raw.socket.receive()
            switch frame.message {
            case .poolAdded: pools += 1
            case .sample(let sample):
                frames += 1
                bytes += sample.length
                try raw.socket.send(.releaseSlots(outputID: output.outputID, slots: [sample.slot]), requestID: 0)
            case .outputFinished(let finished):
                #expect(finished.status == .completed, "\(finished)")
                break loop
            case .poolRemoved: continue
            default: throw TrackError(.unknown, "unexpected \(frame.message)")
            }
        }
        guard case .status(let status) = try raw.request(.getStatus) else { throw TrackError(.unknown, "no Status") }
        return (frames, pools, status, bytes)
    }

    @Test(arguments: ["y420", "420v", "420f", "BGRA", "2vuy"] as [FourCC])
    func decodedFramesAreNotCopied(_ code: FourCC) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (frames, pools, status, _) = try readAll(daemon, Media.clip, code)
        #expect(frames == 60)
        #expect(status.samplesSent == UInt64(frames))
        #expect(status.bytesCopied == 0, "\(code): the worker copied \(status.bytesCopied) bytes")
        // One pool per GStreamer memory; the buffer pool recycles a handful, not one per frame.
        #expect(pools >= 2 && pools <= 16, "\(pools) pools")
    }

    /// `trackctl status` shows the whole daemon's counters: every connection's samples, bytes copied and bytes sent
    /// zero-copy, including connections that have ended (their workers reaped).
    @Test func daemonWideCountersInStatus() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (frames, _, zeroCopy, shared) = try readAll(daemon, Media.clip, "y420")
        let (packets, _, copying, copied) = try readAll(daemon, Media.clip, nil)  // passthrough: copied
        #expect(zeroCopy.bytesCopied == 0 && copying.bytesCopied == copied && shared > 0 && copied > 0)
        // The second connection's own answer already counts the first, whose worker may still be alive.
        #expect(copying.daemonSamplesSent == UInt64(frames + packets))
        // Both connections are closed; once their workers are reaped the totals stay.
        var report: [String: Any] = [:]
        try waitUntil(poll: .milliseconds(100)) {
            let status = try daemon.trackctl(["status", "--json"])
            report = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
            return report["activeConnections"] as? Int == 1
        }
        #expect(report["activeConnections"] as? Int == 1)
        #expect(report["samplesSent"] as? Int == frames + packets)
        #expect(report["bytesCopied"] as? Int == Int(copied))
        #expect(report["bytesZeroCopy"] as? Int == Int(shared))
        let text = try daemon.trackctl(["status"]).text
        #expect(text.contains("bytes copied          \(copied)"), "\(text)")
    }

    /// Passthrough samples are the demuxer's buffers: they are copied, and counted.
    @Test func passthroughIsCountedAsCopied() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip)
        guard case .outputCreated(let output) = try raw.request(.createOutput(CreateOutput(
            assetID: asset.assetID, trackID: asset.tracks[0].id, timeRange: .everything, settings: nil))) else {
            Issue.record("no output")
            return
        }
        var bytes: UInt64 = 0
        loop: while true {
            let frame = try raw.socket.receive()
            switch frame.message {
            case .sample(let sample):
                bytes += sample.length
                try raw.socket.send(.releaseSlots(outputID: output.outputID, slots: [sample.slot]), requestID: 0)
            case .outputFinished: break loop
            default: continue
            }
        }
        guard case .status(let status) = try raw.request(.getStatus) else { Issue.record("no Status"); return }
        #expect(bytes > 0 && status.bytesCopied == bytes)
    }
}
