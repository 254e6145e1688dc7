import CTrackSys

#if canImport(Glibc)
import Glibc
#endif

// The process-wide calls the supervisor, the worker and trackctl make — signals, children, clocks, paths, users,
// standard error — behind APIs that take and return Swift values. The C calls take pointers (`&set`, a path as
// `const char *`), so each is marked `unsafe` here, once, where the pointer's lifetime is the call's.

/// A set of signals (sigset_t): blocked in a thread, or waited for.
public struct SignalSet: Sendable {
    private var set = sigset_t()

    public init(_ signals: [Int32]) {
        unsafe sigemptyset(&set)
        for signal in signals { unsafe sigaddset(&set, signal) }
    }

    /// Blocks them in the calling thread (pthread_sigmask SIG_BLOCK); threads it starts later inherit the mask.
    public func blockInThisThread() {
        var blocked = set
        unsafe pthread_sigmask(SIG_BLOCK, &blocked, nil)
    }

    /// Waits for one of them to be pending (sigwait, which takes it); nil when the wait failed.
    public func wait() -> Int32? {
        var waited = set
        var signal: Int32 = 0
        return unsafe sigwait(&waited, &signal) == 0 ? signal : nil
    }

    /// Waits at most `milliseconds` for one of them (sigtimedwait); nil on timeout, interruption or error.
    public func wait(milliseconds: Int) -> Int32? {
        var waited = set
        var timeout = timespec(tv_sec: milliseconds / 1000, tv_nsec: milliseconds % 1000 * 1_000_000)
        let signal = unsafe sigtimedwait(&waited, nil, &timeout)
        return signal > 0 ? signal : nil
    }
}

/// strsignal(3): "Terminated", "Segmentation fault" …
public func signalDescription(_ signal: Int32) -> String {
    unsafe String(cString: strsignal(signal))
}

/// Installs `handler` for `signal` with no flags (no SA_RESTART: a blocking call the signal interrupts returns EINTR)
/// and nothing masked while it runs (sigaction).
public func installSignalHandler(_ signal: Int32, _ handler: @escaping @convention(c) (Int32) -> Void) {
    var action = sigaction()
    unsafe action.__sigaction_handler.sa_handler = handler
    unsafe sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    unsafe sigaction(signal, &action, nil)
}

/// A child that has ended, as wait4 reports it.
public struct EndedChild: Sendable {
    public var pid: pid_t
    /// The wait status (exit code in bits 8–15, the terminating signal in bits 0–6).
    public var status: Int32
    /// Its resource usage (CPU time, peak RSS).
    public var usage: rusage
}

/// Reaps one child that has ended, without waiting (wait4(-1, WNOHANG)); nil when none has (or there is none).
public func reapEndedChild() -> EndedChild? {
    var status: Int32 = 0
    var usage = rusage()
    let pid = unsafe wait4(-1, &status, WNOHANG, &usage)
    return pid > 0 ? EndedChild(pid: pid, status: status, usage: usage) : nil
}

/// Milliseconds since the epoch (CLOCK_REALTIME).
public func wallClockMilliseconds() -> UInt64 {
    var ts = timespec()
    unsafe clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}

/// Seconds on CLOCK_MONOTONIC, for measuring intervals.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    unsafe clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The running executable's path (readlink /proc/self/exe), or nil.
public func currentExecutablePath() -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = unsafe readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Whether `path` names a Unix socket itself (lstat: a symlink to one does not count).
public func isUnixSocket(atPath path: String) -> Bool {
    var st = stat()
    return unsafe lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
}

/// unlink(2); false (errno set) when it failed.
@discardableResult
public func removeFile(atPath path: String) -> Bool {
    unsafe unlink(path) == 0
}

/// The uid and gid of the user named `name` (getpwnam), or nil when there is none.
public func userIDs(named name: String) -> (uid: uid_t, gid: gid_t)? {
    guard let entry = unsafe getpwnam(name) else { return nil }
    return unsafe (entry.pointee.pw_uid, entry.pointee.pw_gid)
}

/// Writes `text` to standard error in one write(2), unbuffered (a short or failed write is not retried: a log line
/// is not worth blocking or failing for).
public func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = unsafe Glibc.write(2, bytes.baseAddress, bytes.count) }
}

/// posix_spawn of `path` with `arguments` (argv, argv[0] first) and `environment`, the descriptors `descriptors`
/// becoming its fds 3, 4, … (trackd_spawn_with_fds: every other descriptor is closed in the child). Returns its pid.
/// EINTR is not retried (a spawn is not repeated).
public func spawnProcess(_ path: String, arguments: [String], environment: [String], descriptors: [Int32])
    throws(SystemError) -> pid_t {
    var argv: [UnsafeMutablePointer<CChar>?] = unsafe arguments.map { unsafe strdup($0) } + [nil]
    defer { unsafe argv.forEach { unsafe free($0) } }
    var envp: [UnsafeMutablePointer<CChar>?] = unsafe environment.map { unsafe strdup($0) } + [nil]
    defer { unsafe envp.forEach { unsafe free($0) } }
    return try syscall("posix_spawn \(path)", retryOnInterrupt: false) {
        unsafe trackd_spawn_with_fds(path, &argv, &envp, descriptors, Int32(descriptors.count))
    }
}

/// Names the calling thread (prctl PR_SET_NAME: /proc/<pid>/comm for the main thread; at most 15 bytes are kept).
public func setThreadName(_ name: String) {
    _ = unsafe trackd_set_thread_name(name)
}
