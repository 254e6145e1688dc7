#if canImport(Glibc)
import Glibc
#endif

/// Runs one system call (or C shim) that returns -1 with errno set on failure: errno is captured right after the
/// call, EINTR is retried here, any other failure throws a SystemError naming `call`. Returns the call's result.
///
/// This is where Swift code retries EINTR; the C shims it calls (CTrackSys) retry nothing. Three loops in C retry
/// EINTR themselves, each because its loop cannot come back to Swift between two calls (each site says so):
/// - CGstShim/FdSrc.c `trackd_fd_src_fill`: pread(2) in the media source element's fill, on a GStreamer streaming
///   thread, where a failure must become the element's GST_ELEMENT_ERROR;
/// - CSandbox/WorkerMemory.c `trackd_release_library_pages`: read(2) of /proc/self/smaps into a parser whose
///   partial line stays in C's buffer between reads;
/// - CSandbox/OrcSeal.c `relocate`: write(2) of ORC's code into a memfd while the worker replaces those code
///   mappings just before its seccomp filter, with no Swift code between the steps.
/// close(2) is never retried (see `closeDescriptor`).
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
