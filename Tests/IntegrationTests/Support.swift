import Foundation
import Protocol
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Test support: real binaries, real processes, media generated at test time.
enum Env {
    /// The directory holding the built `trackd` and `trackctl` (TRACKD_BUILD_DIR, else next to the test bundle).
    static let buildDir: String = {
        if let dir = ProcessInfo.processInfo.environment["TRACKD_BUILD_DIR"], !dir.isEmpty { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<4 {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("trackd").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug"
    }()

    static var trackd: String { buildDir + "/trackd" }
    static var trackctl: String { buildDir + "/trackctl" }

    static func tempDir(_ name: String) -> String {
        let path = NSTemporaryDirectory() + "trackd-test-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: Data
    var stderr: String
    var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// A child process started with posix_spawn and reaped with waitpid on its own pid. (Foundation's Process is not
/// used: its SIGCHLD monitoring on Linux can miss exits while another child of the test process is alive.)
struct Child {
    let pid: pid_t

    /// Starts `executable` (a path, or a name looked up in /usr/bin) with stdin from /dev/null and stdout/stderr
    /// appended to the given files (or /dev/null).
    init(_ executable: String, _ args: [String], stdout: String? = nil, stderr: String? = nil,
         env: [String: String] = [:]) throws {
        let path = executable.hasPrefix("/") ? executable : "/usr/bin/" + executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
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
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff
    }

    /// True while the child has not exited (does not reap it).
    var isRunning: Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid == 0
    }

    func terminate() -> Int32 {
        kill(pid, SIGTERM)
        return wait()
    }
}

/// Runs a command to completion, capturing its output (through files, so large outputs cannot block).
@discardableResult
func run(_ executable: String, _ args: [String], env: [String: String] = [:]) throws -> Run {
    let dir = Env.tempDir("run")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let outPath = dir + "/out", errPath = dir + "/err"
    let status = try Child(executable, args, stdout: outPath, stderr: errPath, env: env).wait()
    return Run(status: status, stdout: FileManager.default.contents(atPath: outPath) ?? Data(),
               stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
}

/// A real trackd supervisor on a private socket. `stop()` ends it (SIGTERM; it stops its workers).
final class Daemon {
    let dir: String
    let socketPath: String
    let logPath: String
    let child: Child
    private var stopped = false

    init(extraArgs: [String] = [], env: [String: String] = [:]) throws {
        dir = Env.tempDir("daemon")
        socketPath = dir + "/trackd.sock"
        logPath = dir + "/trackd.log"
        // Each daemon has its own frame-index cache directory unless the test names one.
        var env = env
        if env["CACHE_DIRECTORY"] == nil { env["CACHE_DIRECTORY"] = dir + "/cache" }
        child = try Child(Env.trackd, ["--socket", socketPath] + extraArgs, stderr: logPath, env: env)
        // Ready: trackd logs "listening on" after bind() and listen() (the socket file alone appears at bind). The
        // signals it handles are blocked from its first instruction, so a SIGTERM is never lost before that.
        for _ in 0..<400 {
            if log.contains("listening on") { return }
            if !child.isRunning { break }
            usleep(25_000)
        }
        throw TrackError(.unknown, "trackd did not start listening on \(socketPath) within 10 s; log:\n\(log)")
    }

    var pid: Int32 { child.pid }
    var isRunning: Bool { !stopped && child.isRunning }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() {
        guard !stopped else { return }
        stopped = true
        _ = child.terminate()
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit { stop() }

    /// Runs trackctl against this daemon.
    func trackctl(_ args: [String]) throws -> Run {
        try run(Env.trackctl, ["--socket", socketPath] + args)
    }
}

/// Media made once per test run with ffmpeg (libx264 with B-frames, AAC audio), never committed.
enum Media {
    static let dir = Env.tempDir("media")

    /// 320x240, 30 fps, 2 s, B-frames, GOP 15, AAC stereo 48 kHz; moov at the end (ffmpeg's default).
    static let clip: String = make("clip.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-ac", "2", "-metadata:s:a:0", "language=eng",
    ])

    /// 1280x720, 30 fps, 20 s (600 frames), no audio: long enough to keep a worker busy while another one starts.
    static let long: String = make("long.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=20",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    ])

    /// The same picture with the moov atom first.
    static let faststart: String = make("faststart.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
    ])

    /// Full-range (JPEG-range) 4:2:0 source, odd-free small size.
    static let fullRange: String = make("fullrange.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-pix_fmt", "yuvj420p", "-color_range", "pc",
    ])

    // Sources for the extra pixel formats: 160x90, 10 fps, 10 frames each.

    /// HEVC Main 10, 4:2:0 10-bit, video range.
    static let hevc10: String = make("hevc10.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le",
    ])

    /// The same picture flagged full range (the same code values, the VUI says full).
    static let hevc10Full: String = make("hevc10-full.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx265", "-x265-params", "log-level=error:range=full", "-pix_fmt", "yuv420p10le", "-color_range", "pc",
    ])

    /// ProRes 422 (standard), 4:2:2 10-bit.
    static let prores422: String = make("prores422.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "prores_ks", "-profile:v", "2", "-pix_fmt", "yuv422p10le",
    ])

    /// ProRes 4444 with an alpha channel that varies over x, y and time: alpha = 3x + 2y + 20n (10-bit, < 1024).
    static let prores4444: String = make("prores4444.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-vf", "format=yuva444p10le,geq=lum='lum(X,Y)':cb='cb(X,Y)':cr='cr(X,Y)':a='3*X+2*Y+20*N'",
        "-c:v", "prores_ks", "-profile:v", "4", "-pix_fmt", "yuva444p10le",
    ])

    /// VP9 profile 2 (10-bit 4:2:0), 3 frames.
    static let vp9p2: String = make("vp9p2.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.3",
        "-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p10le", "-b:v", "0", "-crf", "40",
    ])

    /// ProRes 422 HQ (apch), 3 frames.
    static let proresHQ: String = make("prores-hq.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.3",
        "-c:v", "prores_ks", "-profile:v", "3", "-pix_fmt", "yuv422p10le",
    ])

    /// H.264 High 4:2:2 and High 4:4:4, 8-bit.
    static let h264_422: String = make("h264-422.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv422p",
    ])
    static let h264_444: String = make("h264-444.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv444p",
    ])

    /// Solid pure red (R 255, G 0, B 0), lossless 4:4:4, 3 frames.
    static let red: String = make("red.mp4", [
        "-f", "lavfi", "-i", "color=c=0xFF0000:size=160x90:rate=10:duration=0.3",
        "-c:v", "libx264", "-preset", "veryfast", "-qp", "0", "-pix_fmt", "yuv444p",
    ])

    /// A file that is not media at all.
    static let text: String = {
        let path = dir + "/notes.txt"
        try! String(repeating: "this is not a video\n", count: 200).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }()

    static let empty: String = {
        let path = dir + "/empty.mp4"
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        return path
    }()

    /// The first 40% of `clip`, cut mid-stream (moov at the end is lost).
    static let truncated: String = {
        let data = FileManager.default.contents(atPath: clip)!
        let path = dir + "/truncated.mp4"
        _ = FileManager.default.createFile(atPath: path, contents: data.prefix(data.count * 2 / 5))
        return path
    }()

    static func make(_ name: String, _ args: [String]) -> String {
        let path = dir + "/" + name
        let r = try! run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y"] + args + [path])
        precondition(r.status == 0, "ffmpeg failed to make \(name): \(r.stderr)")
        return path
    }
}

/// ffmpeg/ffprobe as oracles.
enum Oracle {
    /// `ffmpeg -f framemd5` of the first video stream decoded to `pixFmt`: one (size, md5) per frame.
    static func frameMD5(_ file: String, pixFmt: String, extra: [String] = []) throws -> [(size: Int, md5: String)] {
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:v:0"] + extra
                            + ["-pix_fmt", pixFmt, "-f", "framemd5", "-"])
        #expect(r.status == 0, "ffmpeg framemd5: \(r.stderr)")
        return r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return (Int(f[4])!, f[5])
        }
    }

    /// The first video stream decoded by ffmpeg (`extra` are output options, e.g. `-pix_fmt yuv422p10le` or
    /// `-c:v v210`), written as rawvideo and cut into frames of `frameSize` bytes.
    static func rawFrames(_ file: String, _ extra: [String], frameSize: Int) throws -> [[UInt8]] {
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:v:0"] + extra
                            + ["-f", "rawvideo", "-"])
        #expect(r.status == 0, "ffmpeg rawvideo: \(r.stderr)")
        let bytes = [UInt8](r.stdout)
        #expect(bytes.count % frameSize == 0, "ffmpeg wrote \(bytes.count) bytes, not whole \(frameSize)-byte frames")
        return stride(from: 0, to: bytes.count - bytes.count % frameSize, by: frameSize).map {
            Array(bytes[$0..<$0 + frameSize])
        }
    }

    /// The first video stream's pix_fmt as ffprobe reports it ("yuv420p10le" …) read as (bits per component,
    /// chroma subsampling "4:2:0" …, alpha).
    static func pixelFormat(_ file: String) throws -> (name: String, bits: Int, chroma: String, alpha: Bool) {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=pix_fmt",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let name = r.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let chroma = name.contains("420") ? "4:2:0" : name.contains("422") ? "4:2:2" : name.contains("444") ? "4:4:4" : "?"
        // "yuv420p" → 8; "yuv420p10le" → 10: the digits after the last "p".
        let tail = name.split(separator: "p").last.map(String.init) ?? ""
        let bits = Int(tail.prefix { $0.isNumber }) ?? 8
        return (name, bits, chroma, name.hasPrefix("yuva"))
    }

    /// Presentation times of the decoded video frames, from ffprobe.
    static func framePTS(_ file: String) throws -> [Double] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        return r.text.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces.union(.init(charactersIn: ",")))) }
    }

    /// Stored packets of the video stream in decode order: (dts, pts, size, keyframe).
    static func packets(_ file: String) throws -> [(dts: Double, pts: Double, size: Int, key: Bool)] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time,pts_time,size,flags",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        return r.text.split(separator: "\n").map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return (Double(f[1]) ?? .nan, Double(f[0]) ?? .nan, Int(f[2]) ?? -1, f[3].hasPrefix("K"))
        }
    }
}

/// Expects `body` to throw an AssetReaderUsageError (AVFoundation's exception) with exactly this name and message.
func usage(_ name: AssetReaderUsageError.Name, _ message: String, _ body: () throws -> Void,
           sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        try body()
        Issue.record("expected \(message)", sourceLocation: sourceLocation)
    } catch let error as AssetReaderUsageError {
        #expect(error.name == name, sourceLocation: sourceLocation)
        #expect(error.message == message, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected an AssetReaderUsageError, got \(error)", sourceLocation: sourceLocation)
    }
}
