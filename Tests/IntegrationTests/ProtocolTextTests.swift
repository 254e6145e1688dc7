import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The points a client written from PROTOCOL.md alone had to guess (issue #25), as the text now states them, against
/// a real daemon.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ProtocolTextTests {
    /// The one Error a broken connection gets, then the close.
    static func expectViolationThenClose(_ socket: MessageSocket, _ fragment: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try socket.receive()
        #expect(answer.requestID == 0, "a payload that does not decode has no request id", sourceLocation: sourceLocation)
        guard case .error(let e) = answer.message else {
            Issue.record("expected an Error, got \(answer.message)", sourceLocation: sourceLocation)
            return
        }
        #expect(e.knownCode == .protocolViolation && e.message.contains(fragment), "\(e)", sourceLocation: sourceLocation)
        #expect(throws: MessageSocket.ReceiveError.self, sourceLocation: sourceLocation) { _ = try socket.receive() }
    }

    /// §8 Hello, §13: a wrong magic is a payload that does not decode, so its Error has request id 0.
    @Test func aHelloWithAWrongMagicIsAnsweredWithRequestIDZero() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))
        var bytes = Codec.frame(.hello(Hello(clientName: "magic")), requestID: 5)
        bytes[Wire.headerSize] = 0x74  // "tRKD"
        _ = bytes.withUnsafeBytes { send(socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try Self.expectViolationThenClose(socket, "magic")
    }

    /// §8 ReleaseSlots, §13: a client MUST NOT send one naming no slot; the worker treats it as a violation.
    @Test func anEmptyReleaseSlotsIsAViolation() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        try raw.socket.send(.releaseSlots(outputID: 1, slots: []), requestID: 0)
        try Self.expectViolationThenClose(raw.socket, "releaseSlots.count: 0; at least one slot is required")
    }

    /// §8 ReadFrames and GenerateImage: the 2 s 30 fps clip ends at 30720/15360, where frame 59 (at 30208/15360) stops
    /// being displayed. ReadFrames names frame 59 one tick before the end and no frame at the end; GenerateImage
    /// names frame 59 at the end and after it.
    @Test func readFramesAndGenerateImageAtTheTracksEnd() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let t = { (v: Int64) in MediaTime(value: v, timescale: 15360) }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.naturalTimeScale == 15360 && track.timeRangeStart == t(0) && track.duration == t(30720))
        let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]
        let last = try asset.frames(at: [t(30719)], track: track, outputSettings: y420)
        #expect(last.map(\.index) == [59] && last.first?.sample.presentationTimeStamp == t(30208))
        do {
            _ = try asset.frames(at: [t(30720)], track: track, outputSettings: y420)
            Issue.record("ReadFrames at the track's end named a frame")
        } catch {
            #expect(error.knownCode == .invalidArgument)
            #expect(error.message == "ReadFrames request 0: frame time 2.0 s is after the last frame, which ends at 2.0 s", "\(error)")
        }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let opened = try raw.openAsset(Media.clip)
        for time in [t(30720), MediaTime(value: 100, timescale: 1)] {
            try raw.socket.send(.generateImage(GenerateImage(assetID: opened.assetID, trackID: track.trackID, time: time)), requestID: 50)
            let reply = try raw.socket.receive()
            guard case .image(let image) = reply.message else { Issue.record("no Image at \(time): \(reply.message)"); continue }
            #expect(image.actualTime == t(30208), "GenerateImage at \(time)")
        }
    }

    /// §7.2: `language` is never "und": ffmpeg's MP4 stores "und" in mdhd, the track record says "" and the mdhd item
    /// carries "und" as stored; a track whose mdhd says "eng" says "eng".
    @Test func undeterminedLanguageIsEmpty() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let opened = try raw.openAsset(Media.clip)
        let video = try #require(opened.tracks.first { $0.mediaType == .video })
        let audio = try #require(opened.tracks.first { $0.mediaType == .audio })
        #expect(video.language == "" && video.metadata.filter { $0.identifier == "mdhd/language" }.map(\.value) == ["und"])
        #expect(audio.language == "eng" && audio.metadata.filter { $0.identifier == "mdhd/language" }.map(\.value) == ["eng"])
    }
}
