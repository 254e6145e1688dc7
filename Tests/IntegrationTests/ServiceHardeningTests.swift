import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// systemd/trackd.service's restrictions that can be reproduced without systemd as PID 1: trackd is started
/// through systemd-socket-activate by a wrapper that applies NoNewPrivileges, MemoryDenyWriteExecute (the kernel's
/// PR_SET_MDWE, which like systemd's filter refuses writable+executable memory, and is inherited by the workers),
/// the unit's SystemCallFilter= (expanded by systemd-analyze, loaded with libseccomp), UMask and LimitNOFILE, with
/// the unit's Environment= lines. The unit's `systemd-analyze security` score is
/// checked by scripts/verify-units.sh.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ServiceHardeningTests {
    static let unitPath = FileManager.default.currentDirectoryPath + "/systemd/trackd.service"

    /// `Key=value` lines of the unit's [Service] section (repeated keys in order).
    static func unitSettings() throws -> [(String, String)] {
        try String(contentsOfFile: unitPath, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<eq]), String(line[line.index(after: eq)...]))
        }
    }

    /// The unit's Environment= assignments, with its CacheDirectory (/var/cache/trackd) replaced by `cache`.
    static func unitEnvironment(cache: String) throws -> [String: String] {
        var env: [String: String] = [:]
        for (key, value) in try unitSettings() where key == "Environment" {
            let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { env[parts[0]] = parts[1].replacingOccurrences(of: "/var/cache/trackd", with: cache) }
        }
        return env
    }

    /// Applies the unit's restrictions, then execs argv[4:]. argv: unit path, umask, nofile limit. The unit's
    /// SystemCallFilter= lines are expanded with `systemd-analyze syscall-filter` and loaded with libseccomp as
    /// systemd does (allow-list, later `~` lines removing, SystemCallErrorNumber=EPERM for the rest, native only).
    static let wrapper = """
        import ctypes, os, re, resource, subprocess, sys
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_NO_NEW_PRIVS, PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 38, 65, 1
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0: sys.exit(4)
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0: sys.exit(3)
        if sys.argv[1] == "probe": sys.exit(0)
        if os.getuid() == 0:  # User=: the service never runs as root (nobody stands in for the trackd user)
            os.setgroups([]); os.setgid(65534); os.setuid(65534)
        def expand(name, seen):
            if not name.startswith("@"): return {name}
            if name in seen: return set()
            seen.add(name)
            out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", name], capture_output=True, text=True, check=True).stdout
            calls = set()
            for line in out.splitlines()[1:]:
                line = line.strip()
                if line and not line.startswith("#"): calls |= expand(line, seen)
            return calls
        allowed = set()
        for line in open(sys.argv[1]):
            m = re.match(r"SystemCallFilter=(~?)(.*)", line.strip())
            if not m: continue
            names = set().union(*(expand(n, set()) for n in m.group(2).split()))
            allowed = allowed - names if m.group(1) else allowed | names
        if not allowed: sys.exit(5)
        seccomp = ctypes.CDLL("libseccomp.so.2")
        seccomp.seccomp_init.restype = ctypes.c_void_p
        seccomp.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
        seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
        ctx = seccomp.seccomp_init(0x00050000 | 1)  # SCMP_ACT_ERRNO(EPERM)
        for name in sorted(allowed):
            nr = seccomp.seccomp_syscall_resolve_name(name.encode())
            if nr >= 0: seccomp.seccomp_rule_add(ctx, 0x7fff0000, nr, 0)  # SCMP_ACT_ALLOW
        os.umask(int(sys.argv[2], 8))
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[3]), int(sys.argv[3])))
        if seccomp.seccomp_load(ctx) != 0: sys.exit(6)
        os.execv(sys.argv[4], sys.argv[4:])
        """

    /// trackd behind systemd-socket-activate, under the wrapper.
    final class HardenedDaemon {
        let dir = Env.tempDir("hardened")
        let socketPath: String
        let logPath: String
        let child: Child

        /// `orc`: keep the unit's ORC_CODE setting.
        init(orc: Bool = true) throws {
            // Writable by the unprivileged service user: the socket and the registry cache live here.
            chmod(dir, 0o777)
            var env = try ServiceHardeningTests.unitEnvironment(cache: dir)
            if !orc { env["ORC_CODE"] = nil }
            env["TRACKD_EVENTS"] = "1"  // (a test's addition: the event records the assertions read)
            let settings = try ServiceHardeningTests.unitSettings()
            let umask = try #require(settings.first { $0.0 == "UMask" }?.1)
            let nofile = try #require(settings.first { $0.0 == "LimitNOFILE" }?.1)
            socketPath = dir + "/trackd.sock"
            logPath = dir + "/trackd.log"
            // systemd-socket-activate passes on only the variables named with -E, like systemd's Environment=.
            let setenv = env.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
            child = try Child("python3", ["-c", ServiceHardeningTests.wrapper, ServiceHardeningTests.unitPath, umask, nofile,
                                          "/usr/bin/systemd-socket-activate", "-l", socketPath] + setenv + [Env.trackd],
                              stderr: logPath)
            // systemd-socket-activate writes this once the socket listens (the file appears at bind, and a connect
            // between the two is refused).
            let logPath = logPath
            waitUntil { DaemonLog.read(logPath).contains("Listening on ") }
            // The first connection starts trackd (socket activation), which builds a fresh plugin registry in its
            // cache directory, then its first worker: on a loaded 2-core machine that took longer than a client's
            // 30 s Hello bound. Started here by a status request that waits as long as it takes (the suite's time
            // limit bounds it), so the reads below measure the restrictions, not the service's first start.
            _ = try Daemon.handshakeAndStatus(MessageSocket(fd: try UnixSocket.connect(to: socketPath)))
        }

        var log: String { DaemonLog.read(logPath) }

        func trackctl(_ args: [String]) throws -> Run { try run(Env.trackctl, ["--socket", socketPath] + args) }

        /// The supervisor's worker-crash counter, from `trackctl status --json`.
        func workerCrashes() throws -> Int? {
            let status = try trackctl(["status", "--json"])
            return (try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])?["workerCrashes"] as? Int
        }

        deinit {
            _ = child.terminate()
            DaemonLog.expectClean(log)
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    static var mdweSupported: Bool {
        (try? run("python3", ["-c", wrapper, "probe"]).status) == 0
    }

    /// Video conversion and scaling, audio conversion and resampling (all ORC users in GStreamer) and a thumbnail,
    /// under the unit's restrictions, give the same bytes as an unrestricted trackd.
    @Test func readsUnderTheUnitsRestrictionsMatchAnUnrestrictedDaemon() throws {
        let env = try Self.unitEnvironment(cache: "/c")
        #expect(env["ORC_CODE"] == "backup", "the unit sets ORC_CODE=backup (the supervisor generates no code; workers get none, docs/SECURITY.md)")
        #expect(env["GST_REGISTRY"] == "/c/registry.bin", "the registry belongs in the CacheDirectory")
        if !Self.mdweSupported { print("ServiceHardeningTests: this kernel has no PR_SET_MDWE; only the workers enforce W^X here (their own filter)") }
        let hardened = try HardenedDaemon()
        let plain = try Daemon()
        defer { plain.stop() }
        let reads: [[String]] = [
            ["read", Media.clip, "--pixel-format", "BGRA", "--width", "160", "--height", "120", "--md5"],
            ["read", Media.clip, "--pixel-format", "420v", "--md5"],
            ["read", Media.clip, "--track", "2", "--audio-format", "lpcm", "--sample-rate", "44100", "--channels", "1", "--md5"],
        ]
        for args in reads {
            let a = try hardened.trackctl(args), b = try plain.trackctl(args)
            #expect(a.status == 0, "\(args): \(a.stderr)\n\(hardened.log)")
            #expect(b.status == 0, "\(args): \(b.stderr)")
            #expect(!a.text.isEmpty && a.text == b.text, "\(args): output differs under the unit's restrictions")
        }
        let png = hardened.dir + "/frame.png"
        let frame = try hardened.trackctl(["frame", Media.clip, "--time", "0.5", "--output", png])
        #expect(frame.status == 0, "\(frame.stderr)")
        #expect(FileManager.default.fileExists(atPath: png))
        #expect(try hardened.workerCrashes() == 0, "\(hardened.log)")
        // The supervisor (systemd-socket-activate exec'd it in the same process) really ran restricted.
        let status = try String(contentsOfFile: "/proc/\(hardened.child.pid)/status", encoding: .utf8)
        #expect(status.contains("\nSeccomp:\t2\n") && status.contains("\nNoNewPrivs:\t1\n"), "\(status)")
        if getuid() == 0 { #expect(status.contains("\nUid:\t65534\t"), "\(status)") }
        // It serves the socket systemd passed (written at its start, before it served the requests above).
        #expect(DaemonEvents.read(hardened.logPath, "listening").map { $0["socket"] } == ["systemd"], "\(hardened.log)")
    }

    /// Under W^X (the unit's, PR_SET_MDWE here, and the worker's own filter) a worker compiles ORC's code before
    /// its filter and seals it (docs/SECURITY.md "W^X"); the supervisor removes ORC_CODE from workers' environment
    /// whatever its own says, so a unit (or an operator's environment) without it converts the same: BGRA scaled
    /// video, resampled audio.
    @Test func withoutTheUnitsOrcSettingWorkersStillConvert() throws {
        let hardened = try HardenedDaemon(orc: false)
        let reads: [[String]] = [
            ["read", Media.clip, "--pixel-format", "BGRA", "--width", "160", "--height", "120", "--md5"],
            ["read", Media.clip, "--track", "2", "--audio-format", "lpcm", "--sample-rate", "44100", "--channels", "1", "--md5"],
        ]
        for args in reads {
            let r = try hardened.trackctl(args)
            #expect(r.status == 0, "\(args): \(r.stderr)\n\(hardened.log)")
            #expect(!r.text.isEmpty)
        }
        #expect(try hardened.workerCrashes() == 0, "\(hardened.log)")
    }
}
