import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

extension UnixSocket {
    /// A new socket bound to `path` (which must not exist), not yet listening.
    public static func bound(to path: String) throws(SystemError) -> FileDescriptor {
        let fd = try make()
        let (rc, e) = try unsafe withAddress(path) { address, length in
            (unsafe Glibc.bind(fd.rawValue, address, length), currentErrno())
        }
        guard rc == 0 else { throw SystemError("bind \(path)", errno: e) }
        return fd
    }
}
