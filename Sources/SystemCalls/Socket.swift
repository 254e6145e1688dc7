import CTrackSys

#if canImport(Glibc)
import Glibc
#endif

/// Both ends of a new close-on-exec socketpair.
@frozen public struct SocketPair: ~Copyable {
    public var first: FileDescriptor
    public var second: FileDescriptor

    public enum Kind: Sendable {
        /// SOCK_STREAM
        case stream
        /// SOCK_SEQPACKET: message boundaries kept, one message per receive.
        case sequencedPackets
    }

    /// socketpair(AF_UNIX, `kind` | SOCK_CLOEXEC).
    public init(_ kind: Kind) throws(SystemError) {
        let type = kind == .stream ? SOCK_STREAM : SOCK_SEQPACKET
        var pair: [Int32] = [-1, -1]
        _ = try syscall("socketpair") {
            unsafe socketpair(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        }
        first = FileDescriptor(taking: pair[0])
        second = FileDescriptor(taking: pair[1])
    }
}

extension FileDescriptor {
    /// Sends all of `bytes` with `descriptors` attached to the first sendmsg (the kernel duplicates them; they stay
    /// the caller's). EINTR is retried (by `syscall`) and a short write continues without the descriptors; a vanished
    /// peer is EPIPE, never SIGPIPE.
    public func send(_ bytes: UnsafeRawBufferPointer, descriptors: [Int32] = []) throws(SystemError) {
        var done = 0
        var attached = descriptors
        while done < bytes.count || !attached.isEmpty {
            let n = try syscall("sendmsg") {
                unsafe attached.withUnsafeBufferPointer {
                    unsafe trackd_send_with_fds(rawValue, bytes.baseAddress.map { unsafe $0 + done }, bytes.count - done,
                                                $0.baseAddress, Int32($0.count))
                }
            }
            guard n > 0 || done == bytes.count else { throw SystemError("sendmsg", errno: EIO) }
            attached = []
            done += n
        }
    }

    /// `send` of `bytes` with one descriptor attached.
    public func send(_ bytes: [UInt8], passing descriptor: borrowing FileDescriptor) throws(SystemError) {
        let fd = descriptor.rawValue
        try unsafe bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try unsafe send(raw, descriptors: [fd]) } }.get()
    }

    /// `send` of `bytes`, with `descriptors` attached.
    public func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(SystemError) {
        try unsafe bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try unsafe send(raw, descriptors: descriptors) }
        }.get()
    }

    /// One recvmsg into `buffer`, taking up to `maxDescriptors` descriptors (close-on-exec) into the returned
    /// message's owner. EINTR is retried (by `syscall`).
    public func receive(into buffer: UnsafeMutableRawBufferPointer, maxDescriptors: Int) throws(SystemError)
        -> ReceivedMessage {
        try receiveMessage(maxDescriptors: maxDescriptors) { fds, nfds, truncated in
            unsafe trackd_recv_with_fds(rawValue, buffer.baseAddress, buffer.count, fds, Int32(maxDescriptors), nfds, truncated)
        }
    }

    /// `receive` into the start of `buffer`.
    public func receive(into buffer: inout [UInt8], maxDescriptors: Int) throws(SystemError) -> ReceivedMessage {
        try receiveMessage(maxDescriptors: maxDescriptors) { fds, nfds, truncated in
            unsafe buffer.withUnsafeMutableBytes { raw in
                unsafe trackd_recv_with_fds(rawValue, raw.baseAddress, raw.count, fds, Int32(maxDescriptors), nfds, truncated)
            }
        }
    }

    /// `recvmsg` (given where the descriptors, their count and the truncation flag go) behind `syscall`, its
    /// descriptors owned from the moment it returns.
    private func receiveMessage(maxDescriptors: Int,
                                _ recvmsg: (UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int32>,
                                            UnsafeMutablePointer<Int32>) -> Int) throws(SystemError) -> ReceivedMessage {
        var fds = [Int32](repeating: -1, count: max(maxDescriptors, 1))
        var nfds: Int32 = 0
        var truncated: Int32 = 0
        let n = try syscall("recvmsg") { unsafe recvmsg(&fds, &nfds, &truncated) }
        return ReceivedMessage(count: n, descriptors: ReceivedDescriptors(taking: Array(fds.prefix(Int(nfds)))),
                               truncated: truncated != 0)
    }

    /// The peer's pid, uid and gid (SO_PEERCRED) of a connected Unix socket.
    public func peerCredentials() throws(SystemError) -> (pid: Int32, uid: UInt32, gid: UInt32) {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        _ = try syscall("getsockopt SO_PEERCRED") { unsafe trackd_peer_credentials(rawValue, &pid, &uid, &gid) }
        return (pid, uid, gid)
    }

    /// A new connection on this listening socket (close-on-exec). EINTR is retried; any other error is thrown.
    public func accept() throws(SystemError) -> FileDescriptor {
        try FileDescriptor("accept") { trackd_accept_cloexec(rawValue) }
    }

    /// Bytes waiting unread in this socket's receive queue (FIONREAD), or -1.
    public var unreadBytes: Int32 { trackd_socket_unread(rawValue) }
}
