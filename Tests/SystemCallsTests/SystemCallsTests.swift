import Foundation
import SystemCalls
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct SystemCallsTests {
    @Test func errorNamesTheCallAndContextOnce() {
        let error = SystemError("open /nowhere", errno: ENOENT)
        #expect(error.description == "open /nowhere: \(String(cString: strerror(ENOENT)))")
        #expect(error.context("cannot read the cache").description
            == "cannot read the cache: open /nowhere: \(String(cString: strerror(ENOENT)))")
    }

    @Test func syscallCapturesErrnoAtTheCall() {
        let error = #expect(throws: SystemError.self) {
            _ = try FileDescriptor("open /nonexistent/x") { open("/nonexistent/x", O_RDONLY | O_CLOEXEC) }
        }
        #expect(error?.errno == ENOENT && error?.call == "open /nonexistent/x")
    }

    /// A connected pair (close-on-exec: no child of another test inherits it) whose first end is owned by a
    /// FileDescriptor: the second end reads end of file (0) once the first is closed, and EAGAIN (-1) while it is
    /// open. (Checking the descriptor number itself would race with other tests opening files.)
    private func withPair(_ body: (consuming FileDescriptor) -> Void) throws -> Int {
        let pair = try SocketPair(.stream)
        let reader = pair.second
        body(pair.first)
        var byte: UInt8 = 0
        return recv(reader.rawValue, &byte, 1, Int32(MSG_DONTWAIT))
    }

    @Test func ownershipEndsInCloseTakeOrDeinit() throws {
        #expect(try withPair { fd in
            do { try fd.close() } catch { Issue.record("close: \(error)") }
        } == 0)
        #expect(try withPair { _ in } == 0)  // deinit
        var taken: Int32 = -1
        #expect(try withPair { taken = $0.take() } == -1)  // still open: EAGAIN
        Glibc.close(taken)
    }

    /// More than a socket's buffer, so the writer blocks and the reader sees short reads: both loops must continue.
    @Test func writeFullyAndReadFullyCrossShortTransfers() throws {
        let pair = try SocketPair(.stream)
        let reader = pair.second
        let writer = DescriptorHandoff(pair.first)
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let thread = Thread {
            guard let out = writer.take() else { return }
            _ = bytes.withUnsafeBytes { raw in try? out.writeFully(raw) }
        }
        thread.start()
        var received = [UInt8](repeating: 0, count: bytes.count + 10)
        let n = try received.withUnsafeMutableBytes { raw in try reader.readFully(into: raw) }
        #expect(n == bytes.count)  // fewer than asked only at end of file (the writer closed)
        #expect(Array(received.prefix(n)) == bytes)
    }

    @Test func preadFullyStopsAtEndOfFile() throws {
        let memfd = try FileDescriptor.sealedMemfd(name: "test", size: 100)
        let bytes = [UInt8](0..<100)
        try bytes.withUnsafeBytes { raw in try memfd.pwriteFully(raw) }
        #expect(try memfd.regularFileSize() == 100)
        #expect(try [UInt8](preading: memfd, count: 40, at: 10) == Array(bytes[10..<50]))
        #expect(try [UInt8](preading: memfd, count: 40, at: 80) == Array(bytes[80...]))
    }

    @Test func descriptorsTravelWithAMessage() throws {
        let pair = try SocketPair(.sequencedPackets)
        let sender = pair.first
        let receiver = pair.second
        let memfd = try FileDescriptor.sealedMemfd(name: "test", size: 8)
        try sender.send([1, 2, 3], passing: memfd)
        var buffer = [UInt8](repeating: 0, count: 8)
        var message = try receiver.receive(into: &buffer, maxDescriptors: 2)
        #expect(message.count == 3 && buffer.prefix(3) == [1, 2, 3] && message.descriptors.count == 1 && !message.truncated)
        guard let received = message.descriptors.takeFirst() else {
            Issue.record("no descriptor arrived")
            return
        }
        #expect(try received.regularFileSize() == 8)
        #expect(message.descriptors.count == 0)
        try sender.close()
        let end = try receiver.receive(into: &buffer, maxDescriptors: 2)
        #expect(end.count == 0)
    }

    /// Three descriptors arrive with one message; one is taken out, one moved into another owner, one stays: each
    /// stays open exactly as long as its owner. (Each is one end of a socketpair whose other end reads EAGAIN while
    /// it is open and end of file once the last copy is closed.)
    @Test func receivedDescriptorsCloseWithTheirOwner() throws {
        let link = try SocketPair(.sequencedPackets)
        var sent: [Int32] = [], peers: [Int32] = []
        for _ in 0..<3 {
            let pair = try SocketPair(.stream)
            sent.append(pair.first.take())
            peers.append(pair.second.take())
        }
        defer { for fd in peers { try? FileDescriptor(taking: fd).close() } }
        try link.first.send([9], descriptors: sent)
        for fd in sent { try FileDescriptor(taking: fd).close() }  // only the received copies are left open
        func hungUp() -> [Bool] {
            peers.map { fd in
                var byte: UInt8 = 0
                return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0
            }
        }
        var buffer: [UInt8] = [0]
        var message = try link.second.receive(into: &buffer, maxDescriptors: 4)
        try #require(message.count == 1 && message.descriptors.count == 3)
        let first = message.descriptors.takeFirst()
        let second = message.descriptors.removeFirst(1)
        #expect(hungUp() == [false, false, false])
        _ = consume message  // the third
        #expect(hungUp() == [false, false, true])
        try second.close()
        #expect(hungUp() == [false, true, true])
        _ = consume first
        #expect(hungUp() == [true, true, true])
    }
}
