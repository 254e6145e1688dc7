import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// W^X in the worker's own seccomp filter (docs/SECURITY.md, "W^X"): a worker started outside systemd — no
/// MemoryDenyWriteExecute, no PR_SET_MDWE — compiles its conversions' ORC code before its filter, and entering the
/// sandbox seals it (CSandbox's OrcSeal.c): private read+exec memory with no writable alias, and nothing executable
/// mapped after the filter. That the filter refuses such mappings, and that a program first compiled after it runs
/// its C backup, is shown at unit level (SandboxFilterTests, in a forked child); here, from the outside, on a worker
/// that has just converted: its /proc status, environment and memory map, before and after more conversions.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct WriteXorExecuteTests {
    /// Every sample of the clip's video track with `settings`, through a new reader on `asset`.
    func read(_ asset: Asset, _ settings: [String: SettingValue]) throws -> [SampleBuffer] {
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        try reader.add(output)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let sample = try output.copyNextSampleBuffer() { samples.append(sample) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return samples
    }

    /// Lines of /proc/<pid>/maps of concern: executable and writable, shared (ORC's dual-mapped code file) or
    /// anonymous (no path, or a name in brackets other than the kernel's [vdso]/[vsyscall]); and any mapping of ORC's
    /// orcexec file, executable or not (its writable alias).
    static func executableMemoryOfConcern(_ maps: String) -> [String] {
        maps.split(separator: "\n").map(String.init).filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5 else { return false }
            let perms = fields[1]
            let path = fields.count > 5 ? String(fields[5]) : ""
            if path.contains("/orcexec.") { return true }
            guard perms.contains("x") else { return false }
            let anonymous = path.isEmpty || (path.hasPrefix("[") && path != "[vdso]" && path != "[vsyscall]")
            return perms.contains("w") || perms.hasSuffix("s") || anonymous
        }
    }

    /// A /proc file to its end (its size is 0 to stat, and a large one comes in pieces).
    static func readWhole(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The executable lines of /proc/<pid>/maps (address range, permissions, path).
    static func executableMappings(_ maps: String) -> [String] {
        maps.split(separator: "\n").map(String.init).filter { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first?.contains("x") == true
        }
    }

    /// ORC's sealed code: private read+exec mappings of the memfd OrcSeal.c fills.
    static func sealedOrcCode(_ maps: String) -> [String] {
        executableMappings(maps).filter { $0.contains(" r-xp ") && $0.contains("/memfd:trackd-orc-code") }
    }

    @Test func workerOutsideSystemdHasNoWritableExecutableMemoryAndStillConverts() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        // 4:2:0 bi-planar, byte for byte ffmpeg's nv12.
        let nv12 = try read(asset, [SettingsKey.pixelFormatType: .string("420v")])
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "nv12")
        #expect(nv12.count == oracle.count && !oracle.isEmpty, "frame count")
        for (i, (s, o)) in zip(nv12, oracle).enumerated() {
            #expect(md5Hex(s.packedBytes()) == o.md5, "420v frame \(i): bytes differ from ffmpeg's nv12")
        }
        // BGRA scaled to 160x120: videoconvert and videoscale, GStreamer's ORC users.
        let bgra = try read(asset, [SettingsKey.pixelFormatType: .string("BGRA"), SettingsKey.width: .int(160),
                                    SettingsKey.height: .int(120)])
        #expect(bgra.count == oracle.count, "BGRA frame count")
        #expect(bgra.allSatisfy { $0.width == 160 && $0.height == 120 && $0.packedBytes().count == 160 * 120 * 4 })
        #expect(Set(bgra.map { md5Hex($0.packedBytes()) }).count > 1, "BGRA frames of a moving picture all alike")

        let pid = try asset.serverStatus().workerPID
        #expect(pid > 0)
        let before = try Self.readWhole("/proc/\(pid)/maps")
        // More conversions in the same worker, with other ORC programs (planar RGB).
        let planar = try read(asset, [SettingsKey.pixelFormatType: .string("_RGP")])
        #expect(planar.count == oracle.count, "planar RGB frame count")
        #expect(try asset.serverStatus().workerPID == pid, "the reads were served by different workers")
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("\nSeccomp:\t2\n"), "\(status)")
        let filters = status.split(separator: "\n").first { $0.hasPrefix("Seccomp_filters:") }
            .flatMap { Int($0.split(separator: "\t").last ?? "") }
        #expect((filters ?? 0) >= 1, "\(status)")
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
            .split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        #expect(environ.filter { $0.hasPrefix("ORC_CODE=") }.isEmpty, "\(environ)")
        let maps = try Self.readWhole("/proc/\(pid)/maps")
        #expect(Self.executableMemoryOfConcern(maps).isEmpty, "\(maps)")
        // ORC generated code before the filter (the conversions run at its speed), and it is sealed.
        #expect(!Self.sealedOrcCode(maps).isEmpty, "no sealed ORC code: conversions run ORC's C code\n\(maps)")
        // Nothing executable was mapped (or unmapped) by the conversions after the first read.
        #expect(Self.executableMappings(maps) == Self.executableMappings(before), "\(before)\n---\n\(maps)")
    }

    /// DV (4:1:1: Y41B out of the decoder) to BGRA runs an ORC program the warm-up does not compile
    /// (video_orc_unpack_YUV9, found with ORC_DEBUG=3), so after the filter the sealed ORC runs its C backup. It
    /// converts, the worker survives, and the bytes are videoconvert's own as gst-launch makes them outside any
    /// sandbox with ORC's generated code: the fallback is exact, not merely alive.
    @Test func aConversionNotCompiledBeforeTheFilterFallsBackToORCsCCode() throws {
        let dv = Media.make("dv-411.mov", ["-f", "lavfi", "-i", "testsrc2=size=720x480:rate=30000/1001", "-frames:v", "5",
                                           "-c:v", "dvvideo", "-pix_fmt", "yuv411p"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: dv, socketPath: daemon.socketPath)
        let bgra = try read(asset, [SettingsKey.pixelFormatType: .string("BGRA")])
        let out = Env.tempDir("wx") + "/dv.bgra"
        let r = try run("gst-launch-1.0", ["-q", "filesrc", "location=\(dv)", "!", "qtdemux", "!", "decodebin", "!",
                                          "videoconvert", "dither=0", "!", "video/x-raw,format=BGRA", "!", "filesink",
                                          "location=\(out)"])
        #expect(r.status == 0, "gst-launch: \(r.stderr)")
        let oracle = [UInt8](FileManager.default.contents(atPath: out) ?? Data())
        let frame = 720 * 480 * 4
        #expect(bgra.count == 5 && oracle.count == 5 * frame, "\(bgra.count) frames; gst-launch wrote \(oracle.count) bytes")
        for (i, sample) in bgra.enumerated() where oracle.count >= (i + 1) * frame {
            #expect(sample.packedBytes() == Array(oracle[i * frame..<(i + 1) * frame]), "frame \(i) differs from videoconvert's")
        }
        #expect(try asset.serverStatus().workerPID > 0, "the worker is gone")
    }

    /// The check above would see ORC's unsealed code: an anonymous executable mapping, or any orcexec mapping.
    @Test func mapsCheckSeesWritableOrAnonymousExecutableMemory() {
        let maps = """
            55d0c0a00000-55d0c0a21000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6
            7f0000000000-7f0000001000 rwxp 00000000 00:00 0
            7f0000002000-7f0000003000 r-xp 00000000 00:00 0
            7f0000004000-7f0000005000 r-xs 00000000 00:01 77 /tmp/orcexec.a1b2c3 (deleted)
            7f0000006000-7f0000007000 rw-s 00000000 00:01 77 /tmp/orcexec.a1b2c3 (deleted)
            7f0000008000-7f0000009000 r-xp 00000000 00:01 78 /memfd:trackd-orc-code (deleted)
            7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
            """
        #expect(Self.executableMemoryOfConcern(maps).count == 4)
        #expect(Self.sealedOrcCode(maps) == ["7f0000008000-7f0000009000 r-xp 00000000 00:01 78 /memfd:trackd-orc-code (deleted)"])
    }
}
