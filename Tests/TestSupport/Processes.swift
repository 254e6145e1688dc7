import Foundation
import TrackdProtocol
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Test support: real binaries, real processes, media generated at test time.
public enum Env {
    /// The directory holding the built `trackd` and `trackctl` (TRACKD_BUILD_DIR, else next to the test bundle).
    public static let buildDir: String = {
        if let dir = ProcessInfo.processInfo.environment["TRACKD_BUILD_DIR"], !dir.isEmpty { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<4 {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("trackd").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug"
    }()

    public static var trackd: String { buildDir + "/trackd" }
    public static var trackctl: String { buildDir + "/trackctl" }

    public static func tempDir(_ name: String) -> String {
        let path = NSTemporaryDirectory() + "trackd-test-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Output of a finished command.
public struct Run {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    public var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// A child process started with posix_spawn and reaped with waitpid on its own pid. (Foundation's Process is not
/// used: its SIGCHLD monitoring on Linux can miss exits while another child of the test process is alive.)
public struct Child: Sendable {
    public let pid: pid_t

    /// Starts `executable` (a path, or a name looked up in /usr/bin) with stdin from /dev/null and stdout/stderr
    /// appended to the given files (or /dev/null); `inheriting` descriptors become its fds 3, 4, … (socket
    /// activation's LISTEN_FDS).
    public init(_ executable: String, _ args: [String], stdout: String? = nil, stderr: String? = nil,
                env: [String: String] = [:], inheriting: [Int32] = []) throws {
        let path = executable.hasPrefix("/") ? executable : "/usr/bin/" + executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        for (i, fd) in inheriting.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, Int32(3 + i)) }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(env) { $1 }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard rc == 0 else { throw SystemError("posix_spawn \(path)", errno: rc) }
        self.pid = pid
    }

    /// Waits for the exit; returns the exit status, or 128 + signal.
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
    }

    /// True while the child has not exited (does not reap it).
    public var isRunning: Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid == 0
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`; returns as `wait()`. A child may hold SIGTERM
    /// blocked: children inherit the spawning thread's signal mask, and a test thread's (libdispatch's) blocks most
    /// signals — systemd-socket-activate, which never unblocks them before it execs trackd, ignored a SIGTERM sent
    /// before the first connection, and a plain wait() then waited for ever.
    @discardableResult
    public func terminate(grace: Duration = defaultWaitTimeout) -> Int32 {
        kill(pid, SIGTERM)
        if !waitUntil(timeout: grace, poll: .milliseconds(20), { !isRunning }) { kill(pid, SIGKILL) }
        return wait()
    }
}

/// Runs a command to completion, capturing its output (through files, so large outputs cannot block).
@discardableResult
public func run(_ executable: String, _ args: [String], env: [String: String] = [:]) throws -> Run {
    let dir = Env.tempDir("run")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let outPath = dir + "/out", errPath = dir + "/err"
    let status = try Child(executable, args, stdout: outPath, stderr: errPath, env: env).wait()
    return Run(status: status, stdout: FileManager.default.contents(atPath: outPath) ?? Data(),
               stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
}

/// What /proc says about processes (Linux).
public enum Procfs {
    /// The children of `pid`, from every thread's children list.
    public static func children(of pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { pid_t($0) }
        }
    }

    /// True while `pid` exists (a zombie not yet reaped counts).
    public static func isAlive(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 }

    /// /proc/<pid>/status (empty once the process is gone).
    public static func status(_ pid: pid_t) -> String {
        (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    }

    /// The process's comm (its thread name), without the newline.
    public static func comm(_ pid: pid_t) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    /// How long ago the process started, in ms (field 22 of /proc/<pid>/stat, in clock ticks since boot, against
    /// CLOCK_BOOTTIME); nil once it is gone.
    public static func ageMs(_ pid: pid_t) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)" start with the state, field 3; starttime is field 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        let now = Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1_000_000
        return now - ticks * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// recvmsg(2)'s system call number.
    #if arch(x86_64)
    public static let recvmsgSyscall = 47
    #elseif arch(arm64)
    public static let recvmsgSyscall = 212
    #endif

    /// True while a thread of this process is blocked in recvmsg(2) on `fd`: /proc/self/task/*/syscall gives the
    /// number of the system call a blocked thread is in, then its arguments in hex (the first is the descriptor).
    public static func aThreadIsReceiving(on fd: Int32) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.contains { task in
            let fields = ((try? String(contentsOfFile: "/proc/self/task/\(task)/syscall", encoding: .utf8)) ?? "")
                .split(separator: " ")
            return fields.count > 1 && Int(fields[0]) == recvmsgSyscall && Int(fields[1].dropFirst(2), radix: 16) == Int(fd)
        }
    }
}
