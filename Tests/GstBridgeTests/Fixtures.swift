import Foundation
import GstBridge
import TrackdProtocol
import TestSupport

/// Media generated at test time with ffmpeg into one temporary directory (never committed).
enum Fixtures {
    /// This run's own directory (Env.tempDir: pid and a random suffix). Not one shared by every run: another run
    /// (another checkout, another user) would rewrite the files a test reads here, a file left by an older recipe,
    /// ffmpeg or GStreamer would be read as this one's, and a directory another user made is not writable.
    static let directory = URL(fileURLWithPath: Env.tempDir("gstbridge-fixtures"))

    /// Runs a tool (in /usr/bin), returns stdout; throws with stderr on failure.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        let result = try TestSupport.run(tool, arguments)
        guard result.status == 0 else {
            throw FixtureError(message: "\(tool) \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
        return result.stdout
    }

    /// Generates `name` once per process with ffmpeg `arguments` (output path appended).
    static func make(_ name: String, _ arguments: [String]) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try lock.withLock {
            if !FileManager.default.fileExists(atPath: path) {
                let temporary = path + ".\(getpid()).tmp.\(name.split(separator: ".").last!)"
                try run("ffmpeg", ["-nostdin", "-v", "error", "-y"] + arguments + [temporary])
                guard rename(temporary, path) == 0 else { throw FixtureError(message: "rename \(temporary)") }
            }
        }
        return path
    }

    static let lock = NSLock()

    /// 2 s of 320x240 30 fps H.264 (B-frames, GOP 15) + AAC; moov at the end (ffmpeg's default).
    static func clip() throws -> String {
        try make("clip.mp4", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi",
                              "-i", "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:v", "libx264", "-bf", "2",
                              "-g", "15", "-pix_fmt", "yuv420p", "-c:a", "aac", "-metadata:s:a:0", "language=fra"])
    }

    /// The same streams with the moov atom first.
    static func faststart() throws -> String {
        let clip = try clip()
        return try make("faststart.mp4", ["-i", clip, "-c", "copy", "-movflags", "+faststart"])
    }

    /// Full-range (yuvj420p / color_range pc) H.264.
    static func fullRange() throws -> String {
        // Only the range is flagged: with a colr box naming BT.709, GStreamer 1.22's qtdemux drops the box's
        // full-range bit and reports bt709 (limited), so no GStreamer pipeline can know the range.
        try make("fullrange.mp4", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-t", "0.4", "-c:v", "libx264",
                                   "-vf", "scale=out_range=full", "-pix_fmt", "yuvj420p", "-color_range", "pc",
                                   "-x264-params", "fullrange=on"])
    }

    /// ProRes (`profile` 0…5 of prores_ks) in a .mov; 4444 profiles with alpha.
    static func prores(_ profile: Int) throws -> String {
        let alpha = profile >= 4
        return try make("prores\(profile).mov", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "0.2",
                                                 "-c:v", "prores_ks", "-profile:v", "\(profile)",
                                                 "-pix_fmt", alpha ? "yuva444p10le" : "yuv422p10le"])
    }

    /// H.264 + AAC + a mov_text subtitle track (English).
    static func withSubtitles() throws -> String {
        let srt = directory.appendingPathComponent("cues.srt").path
        try lock.withLock {
            try Data("1\n00:00:00,500 --> 00:00:00,900\nhello\n".utf8).write(to: URL(fileURLWithPath: srt))
        }
        return try make("subtitles.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i", "sine",
                                          "-i", srt, "-t", "1", "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264",
                                          "-c:a", "aac", "-c:s", "mov_text", "-metadata:s:s:0", "language=eng"])
    }

    /// A copy of `path` with bytes patched: `edit` gets the file's bytes and changes them.
    static func patched(_ path: String, as name: String, _ edit: (inout [UInt8]) throws -> Void) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try edit(&bytes)
        let out = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: out), options: .atomic)
        return out
    }

    /// Index of `needle` in `bytes` at or after `from`.
    static func find(_ needle: String, in bytes: [UInt8], from: Int = 0) -> Int? {
        let n = Array(needle.utf8)
        guard bytes.count >= n.count else { return nil }
        return (from...(bytes.count - n.count)).first { i in bytes[i..<i + n.count].elementsEqual(n) }
    }

    /// Opens `path` read-only; the caller (MediaSource) owns the fd.
    static func open(_ path: String) -> Int32 { Glibc.open(path, O_RDONLY | O_CLOEXEC) }

    static func source(_ path: String) throws -> MediaSource { try MediaSource(fd: open(path)) }
}

struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
