import Foundation
import Protocol
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// systemd/trackd.service's restrictions that can be reproduced without systemd as PID 1: trackd is started
/// through systemd-socket-activate by a wrapper that applies NoNewPrivileges, MemoryDenyWriteExecute (the kernel's
/// PR_SET_MDWE, which like systemd's filter refuses writable+executable memory, and is inherited by the workers),
/// UMask and LimitNOFILE, with the unit's Environment= lines. The unit's `systemd-analyze security` score is
/// checked by scripts/verify-units.sh.
@Suite(.serialized)
struct ServiceHardeningTests {
    static let unitPath = FileManager.default.currentDirectoryPath + "/systemd/trackd.service"

    /// `Key=value` lines of the unit's [Service] section (repeated keys in order).
    static func unitSettings() throws -> [(String, String)] {
        try String(contentsOfFile: unitPath, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<eq]), String(line[line.index(after: eq)...]))
        }
    }

    /// The unit's Environment= assignments, minus the cache paths (the test has no /var/cache/trackd).
    static func unitEnvironment() throws -> [String: String] {
        var env: [String: String] = [:]
        for (key, value) in try unitSettings() where key == "Environment" {
            let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 && !parts[1].hasPrefix("/var/cache") { env[parts[0]] = parts[1] }
        }
        return env
    }

    static let wrapper = """
        import ctypes, os, resource, sys
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_NO_NEW_PRIVS, PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 38, 65, 1
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0: sys.exit(4)
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0: sys.exit(3)
        if sys.argv[1] == "probe": sys.exit(0)
        os.umask(int(sys.argv[1], 8))
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), int(sys.argv[2])))
        os.execv(sys.argv[3], sys.argv[3:])
        """

    /// trackd behind systemd-socket-activate, under the wrapper.
    final class HardenedDaemon {
        let dir = Env.tempDir("hardened")
        let socketPath: String
        let logPath: String
        let child: Child

        init(env: [String: String]) throws {
            let settings = try ServiceHardeningTests.unitSettings()
            let umask = try #require(settings.first { $0.0 == "UMask" }?.1)
            let nofile = try #require(settings.first { $0.0 == "LimitNOFILE" }?.1)
            socketPath = dir + "/trackd.sock"
            logPath = dir + "/trackd.log"
            // systemd-socket-activate passes on only the variables named with -E, like systemd's Environment=.
            let setenv = env.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
            child = try Child("python3", ["-c", ServiceHardeningTests.wrapper, umask, nofile,
                                          "/usr/bin/systemd-socket-activate", "-l", socketPath] + setenv + [Env.trackd],
                              stderr: logPath)
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath) { usleep(25_000) }
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        func trackctl(_ args: [String]) throws -> Run { try run(Env.trackctl, ["--socket", socketPath] + args) }

        deinit {
            _ = child.terminate()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    static var mdweSupported: Bool {
        (try? run("python3", ["-c", wrapper, "probe"]).status) == 0
    }

    /// Video conversion and scaling, audio conversion and resampling (all ORC users in GStreamer) and a thumbnail,
    /// under the unit's restrictions, give the same bytes as an unrestricted trackd.
    @Test func readsUnderTheUnitsRestrictionsMatchAnUnrestrictedDaemon() throws {
        let env = try Self.unitEnvironment()
        #expect(env["ORC_CODE"] == "backup", "the unit sets MemoryDenyWriteExecute, so ORC must not generate code")
        if !Self.mdweSupported { print("ServiceHardeningTests: this kernel has no PR_SET_MDWE; W^X is not enforced here") }
        let hardened = try HardenedDaemon(env: env)
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
        #expect(!hardened.log.contains("killed by signal"), "\(hardened.log)")
    }

    /// Why the unit sets ORC_CODE=backup: under W^X, ORC's generated code cannot be mapped and the worker dies
    /// (contained: the client gets an error, the supervisor serves on). Also shows that W^X is in force.
    @Test func withoutOrcBackupWriteXorExecuteKillsTheWorkerOnly() throws {
        guard Self.mdweSupported else {
            print("ServiceHardeningTests: this kernel has no PR_SET_MDWE; nothing to show")
            return
        }
        var env = try Self.unitEnvironment()
        env["ORC_CODE"] = nil
        let hardened = try HardenedDaemon(env: env)
        let r = try hardened.trackctl(["read", Media.clip, "--pixel-format", "BGRA", "--width", "160", "--height", "120"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("-11819"), "\(r.stderr)")
        let status = try hardened.trackctl(["status"])
        #expect(status.status == 0, "the supervisor stopped serving: \(status.stderr)\n\(hardened.log)")
        #expect(hardened.log.contains("killed by signal"), "\(hardened.log)")
    }
}
