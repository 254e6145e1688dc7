import CTrackSys
import Dispatch
import TrackdProtocol
import SystemCalls
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A connected AF_UNIX stream pair. Both fds are close-on-exec; the caller owns them.
func socketPair() -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    let rc = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    precondition(rc == 0, "socketpair failed")
    return (fds[0], fds[1])
}

/// Writes `bytes` on a raw socket with `fds` attached to the first byte (sendmsg + SCM_RIGHTS).
func rawSend(_ sock: Int32, _ bytes: [UInt8], fds: [Int32] = []) {
    let rc = bytes.withUnsafeBytes { raw in
        fds.withUnsafeBufferPointer { trackd_send_with_fds(sock, raw.baseAddress, raw.count, $0.baseAddress, Int32($0.count)) }
    }
    precondition(rc == bytes.count, "sendmsg sent \(rc) of \(bytes.count) bytes (errno \(trackd_errno()))")
}

/// The error `receive()` ends with; records an issue if it returns a frame instead.
func receiveFailure(_ socket: MessageSocket, sourceLocation: SourceLocation = #_sourceLocation) -> MessageSocket.ReceiveError? {
    do throws(MessageSocket.ReceiveError) {
        let frame = try socket.receive()
        Issue.record("received \(frame.message.type) instead of an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func expectBroken(_ socket: MessageSocket, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
    switch receiveFailure(socket, sourceLocation: sourceLocation) {
    case .broken(let e)?:
        #expect(e.code == AVErrorCode.protocolViolation.rawValue, sourceLocation: sourceLocation)
        #expect(e.message.contains(fragment), "\(e.message)", sourceLocation: sourceLocation)
    case .closed?:
        Issue.record("closed, expected broken (\(fragment))", sourceLocation: sourceLocation)
    case nil:
        break
    }
}

/// A sealed pool whose first 8 bytes hold `tag`.
func taggedPool(_ tag: UInt64, size: Int = 4096) throws -> (SharedMapping, Int32) {
    let (mapping, fd) = try SharedMapping.create(name: "trackd-test-\(tag)", size: size)
    mapping.base.storeBytes(of: tag, as: UInt64.self)
    return (mapping, fd)
}

/// The first 8 bytes of the memory behind `fd`, through a fresh read-only mapping.
func readTag(_ fd: Int32, size: Int = 4096) throws -> UInt64 {
    let mapping = try SharedMapping(fd: fd, size: size, writable: false)
    return mapping.base.load(as: UInt64.self)
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MessageSocketTests {
    @Test func framesWithoutDescriptors() throws {
        let (x, y) = socketPair()
        let a = MessageSocket(fd: x), b = MessageSocket(fd: y)
        for (i, message) in Fixtures.messages.enumerated() where message.type.fdCount == 0 {
            try a.send(message, requestID: UInt32(i + 100))
            let frame = try b.receive()
            #expect(frame.message == message)
            #expect(frame.requestID == UInt32(i + 100))
            #expect(frame.fds.count == 0)
        }
        // And the other direction.
        try b.send(.getStatus, requestID: 1)
        #expect(try a.receive().message == .getStatus)
    }

    @Test func poolDescriptorRefersToTheSameMemory() throws {
        let (x, y) = socketPair()
        let worker = MessageSocket(fd: x), client = MessageSocket(fd: y)
        let slotSize = 4096, slotCount = 3
        let (pool, poolFD) = try SharedMapping.create(name: "trackd-test-pool", size: slotSize * slotCount)
        defer { close(poolFD) }
        let added = PoolAdded(outputID: 1, poolID: 1, slotCount: UInt32(slotCount), slotSize: UInt64(slotSize))
        try worker.send(.poolAdded(added), requestID: 5, fds: [poolFD])
        let frame = try client.receive()
        #expect(frame.message == .poolAdded(added))
        #expect(frame.requestID == 5)
        try #require(frame.fds.count == 1)
        let received = frame.fds.rawValue(at: 0)  // (the frame owns it)
        #expect(received != poolFD)
        #expect(fcntl(received, F_GETFD) & FD_CLOEXEC != 0)  // MSG_CMSG_CLOEXEC
        #expect(SharedMapping.verifySealed(fd: received, size: slotSize * slotCount))

        let view = try SharedMapping(fd: received, size: slotSize * slotCount, writable: false)
        // Written through the worker's mapping after the client mapped it: the client sees it.
        let text = Array("slot two".utf8)
        (pool.base + 2 * slotSize).copyMemory(from: text, byteCount: text.count)
        #expect(Array(UnsafeRawBufferPointer(start: view.base + 2 * slotSize, count: text.count)) == text)
        (pool.base + 2 * slotSize).storeBytes(of: 0xAB, as: UInt8.self)
        #expect((view.base + 2 * slotSize).load(as: UInt8.self) == 0xAB)
    }

    /// Many frames, with and without descriptors, sent back to back from another thread: every frame gets its
    /// own descriptor, in order.
    @Test func manyFramesWithDescriptorsInOrder() throws {
        let (x, y) = socketPair()
        let sender = MessageSocket(fd: x), receiver = MessageSocket(fd: y)
        let pools = try (0..<8).map { try taggedPool(UInt64($0)) }
        let poolFDs = pools.map(\.1)
        defer { poolFDs.forEach { close($0) } }
        let count = 600
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            defer { done.signal() }
            do {
                for i in 0..<count {
                    let fd = poolFDs[i % 8]
                    switch i % 4 {
                    case 0: try sender.send(.poolAdded(PoolAdded(outputID: 1, poolID: UInt32(i), slotCount: 1, slotSize: 4096)),
                                            requestID: UInt32(i), fds: [fd])
                    case 1: try sender.send(.sample(Fixtures.sample), requestID: UInt32(i))
                    case 2: try sender.send(.image(ImageReady(actualTime: .zero, width: 1, height: 1, length: UInt64(i))),
                                            requestID: UInt32(i), fds: [fd])
                    default: try sender.send(.openAsset(name: "\(i)"), requestID: UInt32(i), fds: [fd])
                    }
                }
            } catch {
                Issue.record("send failed: \(error)")
            }
        }
        for i in 0..<count {
            let frame = try receiver.receive()
            #expect(frame.requestID == UInt32(i))
            #expect(frame.fds.count == frame.message.type.fdCount)
            if frame.fds.count > 0 {
                #expect(try readTag(frame.fds.rawValue(at: 0)) == UInt64(i % 8), "frame \(i)")
            }
        }
        done.wait()
    }

    /// A descriptor arrives with the first byte of its frame even when the rest trickles in later.
    @Test func frameSplitAcrossWrites() throws {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y)
        let (_, poolFD) = try taggedPool(77)
        defer { close(poolFD) }
        let bytes = Codec.frame(.poolAdded(PoolAdded(outputID: 1, poolID: 2, slotCount: 1, slotSize: 4096)), requestID: 3)
        rawSend(x, [bytes[0]], fds: [poolFD])
        for b in bytes.dropFirst() { rawSend(x, [b]) }
        let frame = try receiver.receive()
        try #require(frame.fds.count == 1)
        #expect(try readTag(frame.fds.rawValue(at: 0)) == 77)
    }

    @Test func manyFramesInOneWrite() throws {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y)
        let messages = Fixtures.messages.filter { $0.type.fdCount == 0 }.prefix(10)
        rawSend(x, messages.enumerated().flatMap { Codec.frame($1, requestID: UInt32($0)) })
        for (i, message) in messages.enumerated() {
            let frame = try receiver.receive()
            #expect(frame.message == message && frame.requestID == UInt32(i))
        }
    }

    /// More descriptors in one message than the receiver allows: the kernel truncates (MSG_CTRUNC) and the
    /// stream is broken.
    @Test(arguments: [(sent: 10, maxFds: 4), (sent: 5, maxFds: 4), (sent: 16, maxFds: 1), (sent: 2, maxFds: 1), (sent: 1, maxFds: 0)])
    func tooManyDescriptors(_ c: (sent: Int, maxFds: Int)) throws {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y, maxFds: c.maxFds)
        let (_, poolFD) = try taggedPool(1)
        defer { close(poolFD) }
        rawSend(x, Codec.frame(.poolAdded(PoolAdded(outputID: 1, poolID: 1, slotCount: 1, slotSize: 4096)), requestID: 1),
                fds: Array(repeating: poolFD, count: c.sent))
        expectBroken(receiver, "descriptors than the \(c.maxFds) allowed")
    }

    @Test func declaredDescriptorMissing() {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y)
        rawSend(x, Codec.frame(.poolAdded(PoolAdded(outputID: 1, poolID: 1, slotCount: 1, slotSize: 4096)), requestID: 1))
        expectBroken(receiver, "declares 1 descriptors but 0 arrived")
    }

    @Test func headerDescriptorCountMustMatchTheType() throws {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y)
        let (_, poolFD) = try taggedPool(1)
        defer { close(poolFD) }
        var bytes = Codec.frame(.openAsset(name: "a"), requestID: 1)
        bytes[6] = 2
        rawSend(x, bytes, fds: [poolFD, poolFD])
        expectBroken(receiver, "must carry 1 descriptors, header says 2")
    }

    /// A descriptor attached to a frame that declares none is unclaimed once that frame is decoded and no bytes
    /// of another frame are pending: the stream is broken at the next receive, before anything else is read.
    @Test func unclaimedDescriptors() throws {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y, maxFds: 4)
        let (_, poolFD) = try taggedPool(1)
        defer { close(poolFD) }
        for i in 0..<17 { rawSend(x, Codec.frame(.getStatus, requestID: UInt32(i)), fds: [poolFD]) }
        var outcome: MessageSocket.ReceiveError?
        var delivered = 0
        for _ in 0..<17 {
            do throws(MessageSocket.ReceiveError) {
                let frame = try receiver.receive()
                #expect(frame.fds.count == 0)
                delivered += 1
            } catch {
                outcome = error
                break
            }
        }
        #expect(delivered == 1, "only the frame the stray descriptor came with is delivered")
        guard case .broken(let e)? = outcome else {
            Issue.record("expected broken, got \(String(describing: outcome))")
            return
        }
        #expect(e.message.contains("no message claims"))
    }

    @Test func oversizedFrameOverTheSocket() throws {
        let (x, y) = socketPair()
        let a = MessageSocket(fd: x), b = MessageSocket(fd: y)
        b.setMaxMessageSize(24)
        try a.send(.hello(Hello(clientName: "")), requestID: 1)  // 24-byte payload: fits
        #expect(try b.receive().message == .hello(Hello(clientName: "")))
        try a.send(.hello(Hello(clientName: "x")), requestID: 2)  // 25 bytes
        expectBroken(b, "exceeds the limit of 24")
    }

    @Test func orderlyCloseAtAFrameBoundary() throws {
        let (x, y) = socketPair()
        let receiver = MessageSocket(fd: y)
        rawSend(x, Codec.frame(.ack, requestID: 9))
        close(x)
        #expect(try receiver.receive().message == .ack)
        guard case .closed? = receiveFailure(receiver) else {
            Issue.record("expected .closed")
            return
        }
    }

    @Test func closeInTheMiddleOfAFrame() {
        for cut in [1, 15, 16, 17] {
            let (x, y) = socketPair()
            let receiver = MessageSocket(fd: y)
            let bytes = Codec.frame(.openAsset(name: "abc"), requestID: 1)
            rawSend(x, Array(bytes.prefix(cut)))
            close(x)
            expectBroken(receiver, "closed in the middle of a frame")
        }
    }

    @Test func shutdownWakesABlockedReceiver() {
        let (x, y) = socketPair()
        defer { close(x) }
        let receiver = MessageSocket(fd: y)
        let result = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            if case .closed? = receiveFailure(receiver) { result.signal() }
        }
        // Shut down only once the receiver is blocked in recvmsg (a receive that starts after the shutdown would
        // return .closed without testing the wake-up), and still blocked: nothing has arrived.
        #expect(waitUntil(timeout: .seconds(10)) { Procfs.aThreadIsReceiving(on: y) }, "the receiver never blocked")
        #expect(result.wait(timeout: .now()) == .timedOut, "the receive returned before the shutdown")
        receiver.shutdown()
        #expect(result.wait(timeout: .now() + .seconds(5)) == .success)
    }

    /// A vanished peer gives EPIPE, not SIGPIPE (which would kill this test process).
    @Test func sendingToAClosedPeerThrowsEPIPE() {
        let (x, y) = socketPair()
        let a = MessageSocket(fd: x)
        close(y)
        do throws(SystemError) {
            try a.send(.getStatus, requestID: 1)
            Issue.record("send succeeded")
        } catch {
            #expect(error.errno == EPIPE)
        }
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SharedMappingTests {
    /// memfd_create through dlsym: Swift's Glibc module does not declare it (it needs _GNU_SOURCE).
    static func memfd(_ name: String, flags: UInt32) -> Int32 {
        typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
        guard let symbol = dlsym(nil, "memfd_create") else { return -1 }
        return unsafeBitCast(symbol, to: MemfdCreate.self)(name, flags)
    }

    static let mfdAllowSealing: UInt32 = 2
    static let fAddSeals: Int32 = 1033  // F_ADD_SEALS
    static let sealSeal: Int32 = 1, sealShrink: Int32 = 2, sealGrow: Int32 = 4, sealWrite: Int32 = 8

    @Test func createdPoolIsSealed() throws {
        let (mapping, fd) = try SharedMapping.create(name: "trackd-test", size: 8192)
        defer { close(fd) }
        #expect(mapping.size == 8192)
        #expect(SharedMapping.verifySealed(fd: fd, size: 8192))
        #expect(SharedMapping.verifySealed(fd: fd, size: 1))
        #expect(!SharedMapping.verifySealed(fd: fd, size: 8193))  // smaller than the pool the message describes
        let seals = trackd_memfd_get_seals(fd)
        #expect(seals == Self.sealSeal | Self.sealShrink | Self.sealGrow)  // no F_SEAL_WRITE: the worker writes
        #expect(trackd_required_seals() == Self.sealSeal | Self.sealShrink | Self.sealGrow)
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func sealedPoolCannotBeResizedOrResealed() throws {
        let (_, fd) = try SharedMapping.create(name: "trackd-test", size: 8192)
        defer { close(fd) }
        #expect(ftruncate(fd, 4096) == -1)
        #expect(errno == EPERM)
        #expect(ftruncate(fd, 16384) == -1)
        #expect(errno == EPERM)
        #expect(fcntl(fd, Self.fAddSeals, Self.sealWrite) == -1)
        #expect(errno == EPERM)
        var st = stat()
        #expect(fstat(fd, &st) == 0 && st.st_size == 8192)
    }

    @Test func unsealedOrPartlySealedMemfdFails() throws {
        // Created without MFD_ALLOW_SEALING: only F_SEAL_SEAL.
        let plain = Self.memfd("plain", flags: 0)
        try #require(plain >= 0)
        defer { close(plain) }
        #expect(ftruncate(plain, 4096) == 0)
        #expect(!SharedMapping.verifySealed(fd: plain, size: 4096))

        let fd = Self.memfd("partial", flags: Self.mfdAllowSealing)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(ftruncate(fd, 4096) == 0)
        #expect(!SharedMapping.verifySealed(fd: fd, size: 4096))
        #expect(fcntl(fd, Self.fAddSeals, Self.sealShrink | Self.sealGrow) == 0)
        #expect(!SharedMapping.verifySealed(fd: fd, size: 4096))  // still resealable: F_SEAL_SEAL missing
        #expect(fcntl(fd, Self.fAddSeals, Self.sealSeal) == 0)
        #expect(SharedMapping.verifySealed(fd: fd, size: 4096))
    }

    @Test func nonMemfdFails() throws {
        var template = Array("/tmp/trackd-test-XXXXXX".utf8CString)
        let file = mkstemp(&template)
        try #require(file >= 0)
        unlink(template)
        defer { close(file) }
        #expect(ftruncate(file, 4096) == 0)
        #expect(!SharedMapping.verifySealed(fd: file, size: 4096))

        var pipeFDs: [Int32] = [-1, -1]
        #expect(pipe(&pipeFDs) == 0)
        #expect(!SharedMapping.verifySealed(fd: pipeFDs[0], size: 0))
        pipeFDs.forEach { close($0) }

        let (x, y) = socketPair()
        #expect(!SharedMapping.verifySealed(fd: x, size: 0))
        close(x)
        close(y)
        #expect(!SharedMapping.verifySealed(fd: -1, size: 0))
    }

    @Test func mappingsOfOneFdShareMemory() throws {
        let (writer, fd) = try SharedMapping.create(name: "trackd-test", size: 4096 * 4)
        defer { close(fd) }
        let reader = try SharedMapping(fd: fd, size: 4096 * 4, writable: false)
        for i in 0..<4 { (writer.base + i * 4096).storeBytes(of: UInt32(i * 11), as: UInt32.self) }
        for i in 0..<4 { #expect((reader.base + i * 4096).load(as: UInt32.self) == UInt32(i * 11)) }
    }

    @Test func zeroSizeFailsCleanly() {
        #expect(throws: SystemError.self) { try SharedMapping.create(name: "trackd-test", size: 0) }
    }
}
