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

/// Descriptors that arrived with a message (SCM_RIGHTS), owned here until taken; those not taken are closed
/// when this goes.
public final class ReceivedDescriptors {
    private var raw: [Int32]

    init(_ raw: [Int32]) { self.raw = raw }

    deinit { for fd in raw { _ = Glibc.close(fd) } }

    public var count: Int { raw.count }

    /// Every descriptor not yet taken, now the caller's as raw descriptors (for a message's descriptor list).
    public func takeAll() -> [Int32] {
        defer { raw = [] }
        return raw
    }

    /// The first descriptor not yet taken, now the caller's.
    public func takeFirst() -> FileDescriptor? {
        raw.isEmpty ? nil : FileDescriptor(taking: raw.removeFirst())
    }
}

extension FileDescriptor {
    /// Sends all of `bytes` in one sendmsg with `descriptors` attached (the kernel duplicates them; they stay the
    /// caller's). EINTR and short writes are handled by the shim; a vanished peer is EPIPE, never SIGPIPE.
    public func send(_ bytes: UnsafeRawBufferPointer, descriptors: [Int32] = []) throws(SystemError) {
        _ = try syscall("sendmsg") {
            unsafe descriptors.withUnsafeBufferPointer {
                unsafe trackd_send_with_fds(rawValue, bytes.baseAddress, bytes.count, $0.baseAddress, Int32($0.count))
            }
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

    /// One recvmsg into `buffer`, taking up to `maxDescriptors` descriptors (close-on-exec). `count` 0 is the peer's
    /// orderly shutdown; `truncated` means the peer sent more descriptors than allowed (the kernel's MSG_CTRUNC; the
    /// shim closed them all), which a caller treats as a protocol error. EINTR is retried.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, maxDescriptors: Int) throws(SystemError)
        -> (count: Int, descriptors: ReceivedDescriptors, truncated: Bool) {
        var fds = [Int32](repeating: -1, count: max(maxDescriptors, 1))
        var nfds: Int32 = 0
        var truncated: Int32 = 0
        let n = unsafe trackd_recv_with_fds(rawValue, buffer.baseAddress, buffer.count, &fds, Int32(maxDescriptors), &nfds, &truncated)
        let e = trackd_errno()
        let received = ReceivedDescriptors(Array(fds.prefix(Int(max(nfds, 0)))))
        guard n >= 0 else { throw SystemError("recvmsg", errno: e) }
        return (n, received, truncated != 0)
    }

    /// `receive` into the start of `buffer`.
    public func receive(into buffer: inout [UInt8], maxDescriptors: Int) throws(SystemError)
        -> (count: Int, descriptors: ReceivedDescriptors, truncated: Bool) {
        try unsafe buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try unsafe receive(into: raw, maxDescriptors: maxDescriptors) }
        }.get()
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
