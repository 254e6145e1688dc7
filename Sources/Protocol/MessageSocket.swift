import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A connected Unix stream socket speaking the framed protocol, with descriptor passing.
///
/// Sending is safe from any thread (one lock serialises whole frames). Receiving is blocking and belongs to one
/// dedicated thread. Received descriptors queue in arrival order and each frame takes as many as its header
/// declares (the kernel delivers a message's descriptors with its first bytes, never later); a frame that
/// declares more than have arrived, descriptors left over once every received byte is decoded into whole
/// frames, or a read the kernel truncated (MSG_CTRUNC), is a protocol error.
public final class MessageSocket: Sendable {
    private let descriptor: FileDescriptor
    /// The socket's descriptor, for a call that borrows it (it stays this socket's).
    public var fd: Int32 { descriptor.rawValue }
    private let sendLock = Mutex(())
    private let receiveState: Mutex<ReceiveState>
    /// Told `true` before a frame is written and `false` once all of it is; a write that fails leaves it `true`.
    private let sending: (@Sendable (Bool) -> Void)?

    struct ReceiveState: ~Copyable {
        var decoder: FrameDecoder
        var pendingFds = ReceivedDescriptors()
        var maxFds: Int
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    }

    /// Takes ownership of `fd` (closed in deinit). `sending`, when given, is told when a frame is being written, so
    /// that another process holding the connection knows whether the stream is between frames (trackd's supervisor,
    /// which may add an Error frame once a worker it killed is gone).
    public init(fd: consuming FileDescriptor, maxMessageSize: UInt32 = Wire.defaultMaxMessageSize,
                maxFds: Int = Int(Wire.maxFdsPerMessage), sending: (@Sendable (Bool) -> Void)? = nil) {
        self.descriptor = fd
        self.sending = sending
        self.receiveState = Mutex(ReceiveState(decoder: FrameDecoder(maxMessageSize: maxMessageSize), maxFds: maxFds))
    }

    /// Takes ownership of the raw descriptor `fd` (closed in deinit).
    public convenience init(fd: Int32, maxMessageSize: UInt32 = Wire.defaultMaxMessageSize,
                            maxFds: Int = Int(Wire.maxFdsPerMessage)) {
        self.init(fd: FileDescriptor(taking: fd), maxMessageSize: maxMessageSize, maxFds: maxFds)
    }

    /// Changes the receive limit after the handshake.
    public func setMaxMessageSize(_ size: UInt32) {
        receiveState.withLock { $0.decoder.maxMessageSize = size }
    }

    /// Sends one frame. `fds` must match the type's fixed descriptor count; they are not closed (the kernel
    /// duplicates them into the receiver).
    public func send(_ message: Message, requestID: UInt32, fds: [Int32] = []) throws(SystemError) {
        precondition(fds.count == message.type.fdCount, "\(message.type) carries \(message.type.fdCount) fds")
        let bytes = Codec.frame(message, requestID: requestID)
        try sendLock.withLock { _ in
            sending?(true)
            let result = Result { () throws(SystemError) in try descriptor.send(bytes, descriptors: fds) }
            if case .success = result { sending?(false) }
            return result
        }.get()
    }

    public enum ReceiveError: Error, Sendable {
        /// The peer closed the connection at a frame boundary.
        case closed
        /// The stream is unusable: a protocol violation (including EOF mid-frame) or a socket error.
        case broken(TrackError)
    }

    /// Blocks until one complete frame has arrived. The caller owns the returned descriptors.
    ///
    /// With `check`, the wait is bounded: before every wait for more bytes (so also between the pieces of a
    /// frame that trickles in) `check` is asked with the number of bytes of an incomplete frame buffered so far,
    /// and a wait lasts at most `pollMs`; an error from `check` ends the receive as `.broken`. `didRead` is
    /// called after every read from the socket.
    public func receive(pollMs: Int32 = 1000, check: ((_ pendingBytes: Int) -> TrackError?)? = nil,
                        didRead: (() -> Void)? = nil) throws(ReceiveError) -> ReceivedFrame {
        try receiveState.withLock { (state: inout ReceiveState) throws(ReceiveError) -> ReceivedFrame in
            while true {
                do throws(TrackError) {
                    if let (header, message) = try state.decoder.next() {
                        let n = Int(header.fdCount)
                        guard state.pendingFds.count >= n else {
                            throw TrackError(.protocolViolation,
                                             "\(message.type) declares \(n) descriptors but \(state.pendingFds.count) arrived")
                        }
                        return ReceivedFrame(requestID: header.requestID, message: message,
                                             fds: state.pendingFds.removeFirst(n))
                    }
                    // Every byte received so far is decoded into whole frames. Descriptors arrive with the first
                    // byte of their frame, so any still queued were sent with a frame that declares none.
                    if state.decoder.pendingBytes == 0 && !state.pendingFds.isEmpty {
                        throw TrackError(.protocolViolation,
                                         "peer sent \(state.pendingFds.count) descriptors no message claims (attached to a frame whose header declares fewer)")
                    }
                } catch {
                    throw .broken(error)
                }
                if let check {
                    if let error = check(state.decoder.pendingBytes) { throw .broken(error) }
                    let ready = descriptor.poll(Int16(POLLIN), timeoutMs: pollMs)
                    if ready == 0 || (ready == nil && currentErrno() == EINTR) { continue }
                }
                let maxFds = state.maxFds
                let received: ReceivedMessage
                do {
                    received = try descriptor.receive(into: &state.buffer, maxDescriptors: maxFds)
                } catch {
                    didRead?()
                    throw .broken(TrackError(.protocolViolation, "\(error)"))
                }
                didRead?()
                let (n, truncated) = (received.count, received.truncated)
                state.pendingFds.append(received.descriptors)
                if truncated {
                    throw .broken(TrackError(.protocolViolation,
                                             "peer sent more descriptors than the \(state.maxFds) allowed per message (MSG_CTRUNC)"))
                }
                if n == 0 {
                    if state.decoder.pendingBytes == 0 { throw .closed }
                    throw .broken(TrackError(.protocolViolation, "connection closed in the middle of a frame"))
                }
                if state.pendingFds.count > state.maxFds * 4 {
                    throw .broken(TrackError(.protocolViolation, "peer sent descriptors no message claims"))
                }
                state.decoder.feed(state.buffer[0..<n])
            }
        }
    }

    /// Shuts the connection down in both directions, waking a thread blocked in `receive()`.
    public func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
