#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: what was being done, the call's name and the errno it left, captured at the call (see
/// `syscall`). Its description is the whole log line — "context: call: strerror" — formatted here and nowhere else.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The call, with its argument when that says which (`"bind /run/trackd.sock"`).
    public var call: String
    public var errno: Int32
    /// What the caller was doing (`"cannot start a warm worker"`), or nil.
    public var context: String?

    public init(_ call: String, errno: Int32, context: String? = nil) {
        self.call = call
        self.errno = errno
        self.context = context
    }

    /// strerror's text for `errno`.
    public var reason: String { unsafe String(cString: strerror(errno)) }

    public var description: String {
        let what = "\(call): \(reason)"
        guard let context else { return what }
        return "\(context): \(what)"
    }

    /// The same error, saying what the caller was doing.
    public func context(_ context: String) -> SystemError {
        SystemError(call, errno: errno, context: context)
    }
}

/// errno as it is now. Read it only right after the call that set it; `syscall` does.
@inline(__always)
public func currentErrno() -> Int32 { Glibc.errno }
