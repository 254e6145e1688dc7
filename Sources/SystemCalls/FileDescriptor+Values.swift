import CTrackSys

#if canImport(Glibc)
import Glibc
#endif

// The few socket calls the supervisor makes without blocking, and polls: the buffer pointers stay in here.
extension FileDescriptor {
    /// poll(2) for `events` (POLLIN …) for at most `timeoutMs` ms (-1: no limit): the events that occurred, 0 on
    /// timeout, nil when poll failed (EINTR included: the caller decides whether to wait again).
    public func poll(_ events: Int16, timeoutMs: Int32) -> Int16? {
        var pending = pollfd(fd: rawValue, events: events, revents: 0)
        let n = unsafe Glibc.poll(&pending, 1, timeoutMs)
        return n < 0 ? nil : n == 0 ? 0 : pending.revents
    }

    /// Sends `bytes` only if the socket takes them at once (MSG_DONTWAIT; MSG_NOSIGNAL: a vanished peer is EPIPE,
    /// not SIGPIPE). Returns what send(2) returned: the bytes queued, or -1.
    @discardableResult
    public func sendWithoutWaiting(_ bytes: [UInt8]) -> Int {
        unsafe bytes.withUnsafeBytes { raw in
            unsafe Glibc.send(rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
    }

    /// One byte, if one is waiting (recv MSG_DONTWAIT); nil when none is, or on end of file or error.
    public func receiveByteWithoutWaiting() -> UInt8? {
        var byte: UInt8 = 0
        return unsafe recv(rawValue, &byte, 1, Int32(MSG_DONTWAIT)) == 1 ? byte : nil
    }
}

extension SharedDescriptor {
    /// For each descriptor, whether its peer has hung up (poll without waiting: POLLHUP, which the kernel sets once
    /// the peer's last descriptor is closed). All false when poll fails.
    public static func hungUp(_ descriptors: [SharedDescriptor]) -> [Bool] {
        var fds = descriptors.map { pollfd(fd: $0.rawValue, events: 0, revents: 0) }
        guard !fds.isEmpty, unsafe Glibc.poll(&fds, nfds_t(fds.count), 0) > 0 else {
            return Array(repeating: false, count: descriptors.count)
        }
        return fds.map { $0.revents & Int16(POLLHUP) != 0 }
    }

    /// Waits until the peer of one of `descriptors` hangs up (POLLHUP), `wake` is readable, or `timeoutMs` passes
    /// (-1: no limit). Returns at once when one has hung up already. A failed poll (EINTR) returns too: the
    /// caller looks again.
    public static func waitForHangUp(_ descriptors: [SharedDescriptor], orReadable wake: borrowing FileDescriptor,
                                     timeoutMs: Int32) {
        var fds = [pollfd(fd: wake.rawValue, events: Int16(POLLIN), revents: 0)]
            + descriptors.map { pollfd(fd: $0.rawValue, events: 0, revents: 0) }
        _ = unsafe Glibc.poll(&fds, nfds_t(fds.count), timeoutMs)
    }
}
