import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The worker sandbox (docs/SECURITY.md): seccomp filter, no_new_privs, dropped uid, resource limits — checked from
/// the outside, in /proc, on a worker that has just served a decode.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct SandboxTests {
    /// /proc/<pid>/<file> of the worker serving `asset`.
    func workerProc(_ asset: Asset, _ file: String) throws -> String {
        let pid = try asset.serverStatus().workerPID
        #expect(pid > 0)
        return try String(contentsOfFile: "/proc/\(pid)/\(file)", encoding: .utf8)
    }

    /// Decodes a few frames so the filter has seen real work before the checks.
    func decodeSome(_ asset: Asset) throws {
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("BGRA")])
        try reader.add(output)
        #expect(try reader.startReading())
        var frames = 0
        while frames < 5, try output.copyNextSampleBuffer() != nil { frames += 1 }
        #expect(frames == 5)
        reader.cancelReading()
    }

    @Test func workerRunsUnderSeccompWithNoNewPrivsAndWithoutRoot() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        try decodeSome(asset)
        let status = try workerProc(asset, "status")
        #expect(status.contains("\nSeccomp:\t2\n"), "\(status)")
        #expect(status.contains("\nNoNewPrivs:\t1\n"), "\(status)")
        if getuid() == 0 {
            let uids = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }.map(String.init) ?? ""
            let gids = status.split(separator: "\n").first { $0.hasPrefix("Gid:") }.map(String.init) ?? ""
            let nobody = try #require(getpwnam("nobody"))
            // Real, effective, saved and filesystem ids all dropped.
            #expect(uids == "Uid:" + String(repeating: "\t\(nobody.pointee.pw_uid)", count: 4), "\(uids)")
            #expect(gids == "Gid:" + String(repeating: "\t\(nobody.pointee.pw_gid)", count: 4), "\(gids)")
            let groups = status.split(separator: "\n").first { $0.hasPrefix("Groups:") }.map(String.init) ?? ""
            #expect(groups.trimmingCharacters(in: .whitespaces) == "Groups:", "\(groups)")
        }
        // The same worker still decodes after the checks.
        try decodeSome(asset)
    }

    /// "Max address space  4294967296  4294967296  bytes" → the soft and hard columns.
    func limit(_ limits: String, _ name: String) -> [String] {
        guard let line = limits.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return [] }
        return line.dropFirst(name.count).split(separator: " ").map(String.init)
    }

    @Test func workerHasTheDefaultResourceLimits() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        try decodeSome(asset)
        let limits = try workerProc(asset, "limits")
        #expect(limit(limits, "Max address space").prefix(2) == ["4294967296", "4294967296"], "\(limits)")
        #expect(limit(limits, "Max cpu time").prefix(2) == ["600", "605"], "\(limits)")
        #expect(limit(limits, "Max open files").prefix(2) == ["256", "256"], "\(limits)")
        #expect(limit(limits, "Max core file size").prefix(2) == ["0", "0"], "\(limits)")
    }

    @Test func workerLimitsFollowTheCommandLine() throws {
        let daemon = try Daemon(extraArgs: ["--worker-memory", "3221225472", "--worker-cpu", "120"])
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        try decodeSome(asset)
        let limits = try workerProc(asset, "limits")
        #expect(limit(limits, "Max address space").prefix(2) == ["3221225472", "3221225472"], "\(limits)")
        #expect(limit(limits, "Max cpu time").prefix(2) == ["120", "125"], "\(limits)")
    }

    @Test func badSandboxOptionsAreRejected() throws {
        let r = try run(Env.trackd, ["--socket", "/nonexistent/x.sock", "--worker-memory", "lots"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--worker-memory"), "\(r.stderr)")
        if getuid() == 0 {
            let root = try run(Env.trackd, ["--socket", "/nonexistent/x.sock", "--worker-user", "root"])
            #expect(root.status == 1)
            #expect(root.stderr.contains("must not run as root"), "\(root.stderr)")
        }
    }
}
