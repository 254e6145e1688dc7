import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Unix stream socket set-up shared by trackd and its clients.
public enum UnixSocket {
    /// A new close-on-exec AF_UNIX stream socket.
    public static func make() throws(SystemError) -> FileDescriptor {
        try FileDescriptor("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    }

    /// Calls `body` with `path` as a sockaddr_un.
    public static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(SystemError) -> R {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw SystemError("socket path too long: \(path)", errno: ENAMETOOLONG)
        }
        unsafe withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            unsafe raw.copyBytes(from: bytes)
            unsafe raw[bytes.count] = 0
        }
        return unsafe withUnsafePointer(to: &addr) {
            unsafe $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { unsafe body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A socket connected to `path`, as a raw descriptor the caller owns (for code that hands it to C calls; else
    /// use `connected(to:)`).
    public static func connect(to path: String) throws(SystemError) -> Int32 {
        try connected(to: path).take()
    }

    /// A socket connected to `path`.
    public static func connected(to path: String) throws(SystemError) -> FileDescriptor {
        let fd = try make()
        // Not retried on EINTR: the connection then completes asynchronously, and a second connect fails.
        let (rc, e) = try unsafe withAddress(path) { unsafe (Glibc.connect(fd.rawValue, $0, $1), currentErrno()) }
        guard rc == 0 else { throw SystemError("connect \(path)", errno: e) }
        return fd
    }
}
