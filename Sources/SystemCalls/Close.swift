import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// close(2) of a descriptor this process owns — the only close(2) in trackd's Swift code (`FileDescriptor` and
/// `ReceivedDescriptors` call it).
///
/// - EBADF: the number was not open (closed twice, or never owned). That is a programmer error, and continuing could
///   close a descriptor another thread opened meanwhile under the same number, so it stops the process (as swift-nio
///   does).
/// - EINTR: Linux has released the descriptor already; it is never closed again (another thread may own the number
///   by now).
/// - Any other error (EIO, or ENOSPC/EDQUOT from a file system that reports a failed write-back at close) is thrown:
///   the descriptor is released all the same.
func closeDescriptor(_ fd: Int32) throws(SystemError) {
    guard Glibc.close(fd) == -1 else { return }
    let e = Glibc.errno
    precondition(e != EBADF, "close(\(fd)): EBADF — the descriptor was not open (closed twice, or never owned)")
    if e == EINTR { return }
    throw SystemError("close(\(fd))", errno: e)
}

/// `closeDescriptor` where no caller can be told (an owner's deinit): a failure goes to `CloseFailures`.
func closeDescriptorReporting(_ fd: Int32) {
    do {
        try closeDescriptor(fd)
    } catch {
        CloseFailures.report(error)
    }
}

/// Where a close error goes when the descriptor's owner ended without a caller to throw to (its deinit): standard
/// error, unless the process routes it elsewhere (trackd: to its log).
public enum CloseFailures {
    private static let sink = Mutex<(@Sendable (SystemError) -> Void)?>(nil)

    /// Sends every later unthrown close error to `handler` (on the thread that closed).
    public static func route(to handler: @escaping @Sendable (SystemError) -> Void) {
        sink.withLock { $0 = handler }
    }

    static func report(_ error: SystemError) {
        if let handler = sink.withLock({ $0 }) {
            handler(error)
        } else {
            writeToStandardError("close of an owned descriptor failed: \(error)\n")
        }
    }
}
