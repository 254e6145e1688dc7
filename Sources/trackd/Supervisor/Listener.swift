import CSystemd
import TrackdProtocol
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The listening Unix stream socket: either handed over by systemd (socket activation, LISTEN_FDS) or bound
/// by trackd itself at `--socket PATH`.
struct Listener: ~Copyable, Sendable {
    let descriptor: FileDescriptor
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
        return Listener(descriptor: FileDescriptor(taking: fd), ownedPath: nil)
    }

    static func bind(path: String) throws(SystemError) -> Listener {
        // A stale socket from a crashed trackd is replaced; a live one (something answers) is not.
        if (try? UnixSocket.connected(to: path)) != nil {  // (the probe's connection closes at once)
            throw SystemError("another trackd is already listening on \(path)", errno: EADDRINUSE)
        }
        if isUnixSocket(atPath: path) { removeFile(atPath: path) }
        let fd = try UnixSocket.bound(to: path)
        do {
            _ = try syscall("listen") { listen(fd.rawValue, 128) }
        } catch {
            removeFile(atPath: path)
            throw error
        }
        return Listener(descriptor: fd, ownedPath: path)
    }
}
