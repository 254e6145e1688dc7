import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Holding frames never hangs (issue #24, PROTOCOL.md §12.3): the worker announces with OutputStalled when an output
/// waits because the client holds every slot; TrackClient then fails copyNextSampleBuffer at once, and reads on after
/// a release.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct HeldFramesTests {
    static let held = "all 8 frames of this output are held: copy them (alwaysCopiesSampleData) or release them"

    /// Zero-copy buffers kept in an array, as a loader that batches frames does: the ninth copyNextSampleBuffer throws
    /// the usage error at once; after one buffer is released the reader goes on to the end, every frame in order.
    @Test func keptZeroCopyBuffersFailTheNextReadAtOnce() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [SettingsKey.pixelFormatType: .string("y420")])
        try output.setAlwaysCopiesSampleData(false)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var kept: [SampleBuffer] = []
        for _ in 0..<8 { kept.append(try #require(try output.copyNextSampleBuffer())) }
        let started = Date()
        for _ in 0..<2 {  // asked again before a release: the same answer
            do {
                _ = try output.copyNextSampleBuffer()
                Issue.record("a ninth sample came while eight were held")
            } catch {
                #expect(error.message == Self.held && error.name == .internalInconsistency, "\(error)")
            }
        }
        print("held frames: copyNextSampleBuffer threw \(String(format: "%.3f", Date().timeIntervalSince(started))) s after the eighth sample")
        #expect(reader.status == .reading)
        kept.removeFirst()  // releases its slot
        var times = kept.map(\.presentationTimeStamp)
        kept.removeAll()
        while let sample = try output.copyNextSampleBuffer() { times.append(sample.presentationTimeStamp) }
        #expect(reader.status == .completed)
        #expect(times == (1..<60).map { MediaTime(value: Int64($0) * 512, timescale: 15360) })
    }

    /// On the wire: OutputStalled follows the eighth Sample, with the output's id, the CreateOutput's request id and
    /// held 8; after one release the ninth Sample comes, and another OutputStalled when the client holds 8 again.
    @Test func outputStalledOnTheWire() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))
        try socket.send(.hello(Hello(clientName: "stalls", capabilities: .outputStalled)), requestID: 1)
        guard case .helloReply(let hello) = try socket.receive().message else { Issue.record("no HelloReply"); return }
        #expect(hello.capabilities == .outputStalled)
        let fd = open(Media.clip, O_RDONLY | O_CLOEXEC)
        try socket.send(.openAsset(name: "clip.mp4"), requestID: 2, fds: [fd])
        close(fd)
        guard case .assetOpened(let opened) = try socket.receive().message,
              let video = opened.tracks.first(where: { $0.mediaType == .video }) else { Issue.record("no AssetOpened"); return }
        try socket.send(.createOutput(CreateOutput(assetID: opened.assetID, trackID: video.id, timeRange: .everything,
                                                   settings: [SettingsKey.pixelFormatType: .string("y420")])), requestID: 3)
        var samples: [Sample] = []
        var stalls: [(outputID: UInt32, held: UInt32)] = []
        var outputID: UInt32 = 0
        while stalls.count < 2 {
            let frame = try socket.receive()
            #expect(frame.requestID == 3)
            switch frame.message {
            case .outputCreated(let created): outputID = created.outputID
            case .sample(let sample): samples.append(sample)
            case .outputStalled(let id, let held):
                stalls.append((id, held))
                #expect(samples.count == (stalls.count == 1 ? 8 : 9), "OutputStalled after \(samples.count) samples")
                if stalls.count == 1 {
                    try socket.send(.releaseSlots(outputID: outputID, slots: [samples[0].slot]), requestID: 0)
                }
            case .poolAdded, .poolRemoved: break
            default: Issue.record("unexpected \(frame.message.type)"); return
            }
        }
        #expect(stalls.map(\.outputID) == [outputID, outputID] && stalls.map(\.held) == [8, 8])
    }
}
