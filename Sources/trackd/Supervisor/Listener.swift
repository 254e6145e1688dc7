import CSystemd
import Protocol

#if canImport(Glibc)
import Glibc
#endif

/// The listening Unix stream socket: either handed over by systemd (socket activation, LISTEN_FDS) or bound
/// by trackd itself at `--socket PATH`.
struct Listener {
    let fd: Int32
    /// The path trackd bound (and unlinks on exit); nil when systemd owns the socket.
    let ownedPath: String?

    /// Socket activation through libsystemd's sd_listen_fds (unsets LISTEN_* so workers do not see them).
    static func fromSystemd() throws(SystemError) -> Listener? {
        let n = sd_listen_fds(1)
        if n < 0 { throw SystemError("sd_listen_fds", errno: -n) }
        guard n > 0 else { return nil }
        guard n == 1 else { throw SystemError("sd_listen_fds: expected exactly one socket, got \(n)", errno: EINVAL) }
        let fd = SD_LISTEN_FDS_START
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            throw SystemError("LISTEN_FDS: fd 3 is not a listening Unix stream socket", errno: EINVAL)
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return Listener(fd: fd, ownedPath: nil)
    }

    static func bind(path: String) throws(SystemError) -> Listener {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw SystemError("socket path too long: \(path)", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // A stale socket from a crashed trackd is replaced; a live one (something answers) is not.
        if isLiveSocket(&addr) {
            close(fd)
            throw SystemError("another trackd is already listening on \(path)", errno: EADDRINUSE)
        }
        var st = stat()
        if lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw SystemError("bind \(path)", errno: e)
        }
        guard listen(fd, 128) == 0 else {
            let e = errno
            close(fd)
            unlink(path)
            throw SystemError("listen", errno: e)
        }
        return Listener(fd: fd, ownedPath: path)
    }

    private static func isLiveSocket(_ addr: inout sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0
    }
}

