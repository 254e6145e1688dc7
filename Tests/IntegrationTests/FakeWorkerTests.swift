import Dispatch
import Foundation
import SystemCalls
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// TrackClient against a fake worker that sends what trackd never does (PROTOCOL.md §5): a HelloReply over the receive
/// limit before the handshake, a frame over the agreed size after it. Each is refused from its header.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FakeWorkerTests {
    /// A listening socket on a fresh path; `serve` runs on its own thread with the first connection, which stays open
    /// until the client closes it.
    final class FakeWorker: Sendable {
        let path: String
        private let listener: Int32
        private let done = DispatchSemaphore(value: 0)

        init(_ serve: @escaping @Sendable (MessageSocket) throws -> Void) throws {
            path = Env.tempDir("fake-worker") + "/trackd.sock"
            listener = try UnixSocket.bound(to: path).take()
            guard listen(listener, 1) == 0 else { throw TrackError(.unknown, "listen failed") }
            let (listener, done) = (listener, done)
            Thread {
                let socket = MessageSocket(fd: accept(listener, nil, nil), maxMessageSize: Wire.maxMessageSizeCeiling)
                try? serve(socket)
                while (try? socket.receive()) != nil {}  // until the client closes (its fds are closed with the frames)
                done.signal()
            }.start()
        }

        /// Waits for the served connection to end, then closes the listener.
        func finish() {
            #expect(done.wait(timeout: .now() + 30) == .success, "the client did not close the connection")
            close(listener)
        }
    }

    /// A frame header with `length` bytes of payload announced and none sent.
    static func header(length: UInt32, type: MessageType, requestID: UInt32) -> [UInt8] {
        var w = ByteWriter()
        FrameHeader(length: length, type: type.rawValue, fdCount: UInt16(type.fdCount), requestID: requestID).encode(into: &w)
        return w.bytes
    }

    static func write(_ socket: MessageSocket, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Until HelloReply the client's limit is 262,144 bytes: a HelloReply announcing one byte more is refused.
    @Test func beforeHelloReplyTheLimitIsTheDefault() throws {
        let fake = try FakeWorker { socket in
            let hello = try socket.receive()
            Self.write(socket, Self.header(length: Wire.defaultMaxMessageSize + 1, type: .helloReply, requestID: hello.requestID))
        }
        defer { fake.finish() }
        do {
            _ = try Asset(path: Media.clip, socketPath: fake.path)
            Issue.record("a HelloReply over the limit was accepted")
        } catch {
            #expect(error.knownCode == .protocolViolation && error.message.contains("exceeds the limit of 262144"), "\(error)")
        }
    }

    /// After HelloReply the client's limit is the agreed size (here 131,072, the smallest a worker may agree on).
    @Test func afterHelloReplyTheLimitIsTheAgreedSize() throws {
        let fake = try FakeWorker { socket in
            let hello = try socket.receive()
            try socket.send(.helloReply(HelloReply(version: 2, maxMessageSize: Wire.minMessageSize, maxFds: 4,
                                                   workerPID: 1, serverVersion: "fake")), requestID: hello.requestID)
            let open = try socket.receive()
            Self.write(socket, Self.header(length: Wire.minMessageSize + 1, type: .assetOpened, requestID: open.requestID))
        }
        defer { fake.finish() }
        do {
            _ = try Asset(path: Media.clip, socketPath: fake.path)
            Issue.record("a frame over the agreed size was accepted")
        } catch {
            #expect(error.message.contains("exceeds the limit of 131072"), "\(error)")
        }
    }
}
