#if canImport(Glibc)
import Glibc
#endif

/// Unix stream socket set-up shared by trackd and its clients.
public enum UnixSocket {
    /// A new close-on-exec AF_UNIX stream socket.
    public static func make() throws(SystemError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        return fd
    }

    /// Calls `body` with `path` as a sockaddr_un.
    public static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(SystemError) -> R {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw SystemError("socket path too long: \(path)", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A socket connected to `path`. The caller owns the returned fd.
    public static func connect(to path: String) throws(SystemError) -> Int32 {
        let fd = try make()
        let rc = try withAddress(path) { Glibc.connect(fd, $0, $1) }
        if rc != 0 {
            let e = errno
            close(fd)
            throw SystemError("connect \(path)", errno: e)
        }
        return fd
    }
}
