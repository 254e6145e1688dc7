import Foundation
import TrackdProtocol
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Holding frames never hangs (issue #24, PROTOCOL.md §12.3): the worker announces with OutputStalled when an output
/// waits because the client holds every slot.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct HeldFramesTests {
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
            frame.fds.forEach { close($0) }
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
