import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The points of docs/PROTOCOL.md a client writer tripped on (issue #13): Hello's maxFds, the request id of a payload
/// error, the colorimetry RGB and untagged samples report; and kCVPixelBufferBytesPerRowAlignmentKey end to end.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ProtocolEdgesTests {
    /// A Hello with maxFds 0 is refused (§5): Error −11900 with the Hello's request id, then the connection closes.
    @Test func helloWithoutDescriptorsIsRefused() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))
        try socket.send(.hello(Hello(maxFds: 0, clientName: "no-fds")), requestID: 5)
        let reply = try socket.receive()
        #expect(reply.requestID == 5)
        #expect(reply.message == .error(TrackError(.protocolViolation,
                                                   "Hello's maxFds is 0; at least 1 is required (PoolAdded and Image carry a descriptor)")))
        #expect(throws: MessageSocket.ReceiveError.self) { _ = try socket.receive() }
        // maxFds 1 is enough.
        let one = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))
        try one.send(.hello(Hello(maxFds: 1, clientName: "one-fd")), requestID: 1)
        guard case .helloReply(let hello) = try one.receive().message else { Issue.record("no HelloReply"); return }
        #expect(hello.maxFds == 1)
    }

    /// A frame whose header is valid but whose payload does not decode is answered with request id 0 (§13), not
    /// the header's.
    @Test func payloadErrorCarriesRequestIDZero() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        var w = ByteWriter()
        FrameHeader(length: 2, type: MessageType.closeAsset.rawValue, fdCount: 0, requestID: 9).encode(into: &w)
        let bytes = w.bytes + [0x01, 0x00]  // CloseAsset's assetID is a u32: 2 bytes are a truncated payload
        _ = bytes.withUnsafeBytes { send(raw.socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = try raw.socket.receive()
        #expect(answer.requestID == 0)
        guard case .error(let e) = answer.message else { Issue.record("expected an Error, got \(answer.message)"); return }
        #expect(e.code == AVErrorCode.protocolViolation.rawValue && e.message.contains("truncated"), "\(e)")
        #expect(throws: MessageSocket.ReceiveError.self) { _ = try raw.socket.receive() }
    }

    /// The first decoded sample of `path` in `format`, with optional extra settings.
    func firstSample(_ path: String, _ format: String, _ daemon: Daemon, extra: [String: SettingValue] = [:]) throws -> SampleBuffer {
        let asset = try Asset(path: path, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        var settings = extra
        settings[SettingsKey.pixelFormatType] = .string(format)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        let sample = try #require(try output.copyNextSampleBuffer())
        reader.cancelReading()
        return sample
    }

    /// §7.3: RGB samples report sRGB (full range, identity matrix, BT.709 primaries, sRGB transfer); an untagged
    /// YCbCr source is BT.601 up to 576 lines (Media.clip, 240) and BT.709 above (Media.long, 720).
    @Test func colorimetryOfRGBAndUntaggedSources() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        #expect(try firstSample(Media.clip, "BGRA", daemon).colorimetry == Colorimetry(range: 2, matrix: 0, primaries: 1, transfer: 13))
        #expect(try firstSample(Media.clip, "420v", daemon).colorimetry == Colorimetry(range: 1, matrix: 6, primaries: 6, transfer: 6))
        #expect(try firstSample(Media.long, "420v", daemon).colorimetry == Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1))
    }

    /// kCVPixelBufferBytesPerRowAlignmentKey 64 and 256: every plane's bytesPerRow and offset is a multiple of it,
    /// and the visible bytes are ffmpeg's frames (Media.clip, 320×240 y420: rows of 320 and 160 bytes; with 64 the luma
    /// rows are already aligned and the chroma ones become 192, with 256 they become 512 and 256).
    @Test func bytesPerRowAlignment() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let expected = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p").map(\.md5)
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        for alignment in [64, 256] {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: [
                SettingsKey.pixelFormatType: .string("y420"), SettingsKey.bytesPerRowAlignment: .int(Int64(alignment)),
            ])
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            #expect(try reader.startReading())
            var md5s: [String] = []
            while let sample = try output.copyNextSampleBuffer() {
                #expect(sample.planes.count == 3)
                for plane in sample.planes {
                    #expect(Int(plane.bytesPerRow) % alignment == 0 && Int(plane.offset) % alignment == 0, "\(alignment): \(plane)")
                    #expect(plane.bytesPerRow >= plane.rowBytes)
                }
                #expect(sample.planes.map(\.rowBytes) == [320, 160, 160])
                #expect(sample.planes.map(\.bytesPerRow) == (alignment == 64 ? [320, 192, 192] : [512, 256, 256]))
                md5s.append(md5Hex(sample.packedBytes()))
            }
            #expect(reader.status == .completed)
            #expect(md5s == expected, "alignment \(alignment)")
        }
    }
}
