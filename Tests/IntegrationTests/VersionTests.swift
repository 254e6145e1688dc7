import Foundation
import TrackdProtocol
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The protocol's versions against a real daemon (PROTOCOL.md §2.1, §5): a version-1 client gets one Error in
/// version 1's layout and the close; a version-2 client's appended bytes are ignored; the supervisor's refusals are
/// in the layout every version reads.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct VersionTests {
    /// Every byte the peer sends until it closes the connection (at most 10 s).
    static func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 1000) >= 0 else { break }
            guard pfd.revents != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return bytes }
            bytes += buffer[0..<n]
        }
        Issue.record("the connection did not close within 10 s")
        return bytes
    }

    /// `bytes` written whole on `fd` (a Unix socket: one send takes them all).
    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(sent == bytes.count)
    }

    /// Version 1's Hello (no capabilities), as a client written for version 1 sends it.
    static func version1Hello(requestID: UInt32) -> [UInt8] {
        var frame = Codec.frame(.hello(Hello(minVersion: 1, maxVersion: 1, clientName: "v1")), requestID: requestID)
        frame.removeLast(8)
        frame.replaceSubrange(0..<4, with: [UInt8(frame.count - Wire.headerSize), 0, 0, 0])
        return frame
    }

    /// Exactly one frame, then the end: an Error with the Hello's request id naming the versions, whose payload is
    /// its code and message and nothing after (what a strict version-1 decoder accepts).
    @Test func aVersion1ClientGetsOneErrorNamingTheVersions() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let fd = try UnixSocket.connect(to: daemon.socketPath)
        defer { close(fd) }
        Self.write(fd, Self.version1Hello(requestID: 7))
        let bytes = Self.readToEnd(fd)
        let message = Array("trackd speaks protocol version 2; this client offers 1…1".utf8)
        let expected = FrameHeader(length: UInt32(6 + message.count), type: MessageType.error.rawValue, fdCount: 0, requestID: 7)
        var header = ByteWriter()
        expected.encode(into: &header)
        #expect(bytes == header.bytes + [0x84, 0xD1, 0xFF, 0xFF] + [UInt8(message.count), 0] + message)
    }

    /// A later revision's client: bytes appended to its Hello and to a request are ignored; HelloReply's capabilities
    /// are the agreed ones (none of the offered bits the worker does not send).
    @Test func appendedBytesFromAClientAreIgnored() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let fd = try UnixSocket.connect(to: daemon.socketPath)
        let socket = MessageSocket(fd: fd)
        var hello = Codec.frame(.hello(Hello(clientName: "newer", capabilities: Capabilities(rawValue: .max))), requestID: 1)
        hello += [1, 2, 3, 4, 5]
        hello.replaceSubrange(0..<4, with: [UInt8(hello.count - Wire.headerSize), 0, 0, 0])
        Self.write(fd, hello)
        guard case .helloReply(let reply) = try socket.receive().message else { Issue.record("no HelloReply"); return }
        #expect(reply.version == 2 && reply.capabilities == .agreed(offered: Capabilities(rawValue: .max)))
        Self.write(fd, [3, 0, 0, 0] + [0x08, 0, 0, 0] + [2, 0, 0, 0] + [0, 0, 0, 0] + [9, 9, 9])  // GetStatus + 3 bytes
        let status = try socket.receive()
        guard case .status(let report) = status.message, status.requestID == 2 else { Issue.record("no Status: \(status.message)"); return }
        #expect(report.workerPID == reply.workerPID)
    }

    /// A connection the supervisor refuses gets its Error in version 1's layout too, whatever the client's version.
    @Test func aRefusalIsInTheLayoutEveryVersionReads() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections-per-uid", "1"])
        defer { daemon.stop() }
        let served = MessageSocket(fd: try UnixSocket.connect(to: daemon.socketPath))
        try served.send(.hello(Hello(clientName: "served")), requestID: 1)
        guard case .helloReply = try served.receive().message else { Issue.record("no HelloReply"); return }
        let fd = try UnixSocket.connect(to: daemon.socketPath)
        defer { close(fd) }
        _ = Self.version1Hello(requestID: 1).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let bytes = Self.readToEnd(fd)
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        let frame = try #require(try decoder.next())
        guard case .error(let error) = frame.message else { Issue.record("not an Error: \(frame.message)"); return }
        #expect(frame.header.requestID == 0 && error.knownCode == .limitExceeded)
        #expect(bytes.count == Wire.headerSize + 6 + error.message.utf8.count, "one Error, its code and message only")
    }
}
