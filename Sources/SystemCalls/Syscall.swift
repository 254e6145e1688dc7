#if canImport(Glibc)
import Glibc
#endif

/// Runs one system call (or C shim) that returns -1 with errno set on failure: errno is captured right after the
/// call, EINTR is retried here (the one place trackd retries it), any other failure throws a SystemError naming
/// `call`. Returns the call's result.
@inline(__always)
public func syscall<Result: FixedWidthInteger>(_ call: @autoclosure () -> String, retryOnInterrupt: Bool = true,
                                               _ body: () -> Result) throws(SystemError) -> Result {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let e = Glibc.errno
        if e == EINTR && retryOnInterrupt { continue }
        throw SystemError(call(), errno: e)
    }
}

/// The environment variable `name` (getenv), or nil when it is not set.
public func environmentVariable(_ name: String) -> String? {
    unsafe getenv(name).map { unsafe String(cString: $0) }
}
