import Foundation
import Protocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Zero-copy outputs (docs/design/zero-copy.md): for formats the converter or the decoder can write straight into a
/// memfd, the worker copies no pixel bytes. The frames' bytes are checked against ffmpeg by FormatTests and
/// ReadingTests, which take the same path; here the worker's own count says no copy happened.
@Suite struct ZeroCopyTests {
    /// Reads every frame of `file` as `code` on one connection, releasing each slot at once, then asks the same
    /// worker for its counters. Returns (frames, pools announced, the Status).
    func readAll(_ daemon: Daemon, _ file: String, _ code: FourCC) throws -> (Int, Int, StatusReport) {
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(file)
        let created = try raw.request(.createOutput(CreateOutput(
            assetID: asset.assetID, trackID: asset.tracks[0].id, timeRange: .everything,
            settings: [SettingsKey.pixelFormatType: .int(Int64(code.rawValue))])))
        guard case .outputCreated(let output) = created else { throw TrackError(.unknown, "expected OutputCreated, got \(created)") }
        var frames = 0, pools = 0
        loop: while true {
            let frame = try raw.socket.receive()
            frame.fds.forEach { close($0) }
            switch frame.message {
            case .poolAdded: pools += 1
            case .sample(let sample):
                frames += 1
                try raw.socket.send(.releaseSlots(outputID: output.outputID, slots: [sample.slot]), requestID: 0)
            case .outputFinished(let finished):
                #expect(finished.status == .completed, "\(finished)")
                break loop
            case .poolRemoved: continue
            default: throw TrackError(.unknown, "unexpected \(frame.message)")
            }
        }
        guard case .status(let status) = try raw.request(.getStatus) else { throw TrackError(.unknown, "no Status") }
        return (frames, pools, status)
    }

    @Test(arguments: ["y420", "420v", "420f", "BGRA", "2vuy"] as [FourCC])
    func decodedFramesAreNotCopied(_ code: FourCC) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (frames, pools, status) = try readAll(daemon, Media.clip, code)
        #expect(frames == 60)
        #expect(status.samplesSent == UInt64(frames))
        #expect(status.bytesCopied == 0, "\(code): the worker copied \(status.bytesCopied) bytes")
        // One pool per GStreamer memory; the buffer pool recycles a handful, not one per frame.
        #expect(pools >= 2 && pools <= 16, "\(pools) pools")
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
            frame.fds.forEach { close($0) }
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
