import Foundation
import Synchronization
import Testing

/// Media made once per test run with ffmpeg (libx264 with B-frames, AAC audio), never committed.
public enum Media {
    public static let dir = Env.tempDir("media")

    /// 320x240, 30 fps, 2 s, B-frames, GOP 15, AAC stereo 48 kHz; moov at the end (ffmpeg's default).
    public static let clip: String = make("clip.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-ac", "2", "-metadata:s:a:0", "language=eng",
    ])

    /// 1280x720, 30 fps, 20 s (600 frames), no audio: long enough to keep a worker busy while another one starts.
    public static let long: String = make("long.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=20",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    ])

    /// The same picture with the moov atom first.
    public static let faststart: String = make("faststart.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
    ])

    /// Full-range (JPEG-range) 4:2:0 source, odd-free small size.
    public static let fullRange: String = make("fullrange.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-pix_fmt", "yuvj420p", "-color_range", "pc",
    ])

    // Sources for the extra pixel formats: 160x90, 10 fps, 10 frames each.

    /// HEVC Main 10, 4:2:0 10-bit, video range.
    public static let hevc10: String = make("hevc10.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le",
    ])

    /// The same picture flagged full range (the same code values, the VUI says full).
    public static let hevc10Full: String = make("hevc10-full.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx265", "-x265-params", "log-level=error:range=full", "-pix_fmt", "yuv420p10le", "-color_range", "pc",
    ])

    /// ProRes 422 (standard), 4:2:2 10-bit.
    public static let prores422: String = make("prores422.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "prores_ks", "-profile:v", "2", "-pix_fmt", "yuv422p10le",
    ])

    /// ProRes 4444 with an alpha channel that varies over x, y and time: alpha = 3x + 2y + 20n (10-bit, < 1024).
    public static let prores4444: String = make("prores4444.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-vf", "format=yuva444p10le,geq=lum='lum(X,Y)':cb='cb(X,Y)':cr='cr(X,Y)':a='3*X+2*Y+20*N'",
        "-c:v", "prores_ks", "-profile:v", "4", "-pix_fmt", "yuva444p10le",
    ])

    /// VP9 profile 2 (10-bit 4:2:0), 3 frames.
    public static let vp9p2: String = make("vp9p2.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.3",
        "-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p10le", "-b:v", "0", "-crf", "40",
    ])

    /// ProRes 422 HQ (apch), 3 frames.
    public static let proresHQ: String = make("prores-hq.mov", [
        "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.3",
        "-c:v", "prores_ks", "-profile:v", "3", "-pix_fmt", "yuv422p10le",
    ])

    /// H.264 High 4:2:2 and High 4:4:4, 8-bit.
    public static let h264_422: String = make("h264-422.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv422p",
    ])
    public static let h264_444: String = make("h264-444.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv444p",
    ])

    /// Solid pure red (R 255, G 0, B 0), lossless 4:4:4, 3 frames.
    public static let red: String = make("red.mp4", [
        "-f", "lavfi", "-i", "color=c=0xFF0000:size=160x90:rate=10:duration=0.3",
        "-c:v", "libx264", "-preset", "veryfast", "-qp", "0", "-pix_fmt", "yuv444p",
    ])

    /// A file that is not media at all.
    public static let text: String = {
        let path = dir + "/notes.txt"
        try! String(repeating: "this is not a video\n", count: 200).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }()

    public static let empty: String = {
        let path = dir + "/empty.mp4"
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        return path
    }()

    /// The first 40% of `clip`, cut mid-stream (moov at the end is lost).
    public static let truncated: String = {
        let data = FileManager.default.contents(atPath: clip)!
        let path = dir + "/truncated.mp4"
        _ = FileManager.default.createFile(atPath: path, contents: data.prefix(data.count * 2 / 5))
        return path
    }()

    /// `name` written by a GStreamer pipeline (`gst-launch-1.0 -e … ! filesink`; the elements as gst-launch parses
    /// them, the filesink added).
    public static func makeWithGStreamer(_ name: String, _ elements: [String]) -> String {
        made(name, by: ["gst-launch-1.0"] + elements) { path in
            let r = try! run("gst-launch-1.0", ["-q", "-e"] + elements + ["!", "filesink", "location=\(path)"])
            precondition(r.status == 0, "gst-launch failed to make \(name): \(r.stderr)")
        }
    }

    /// `name` written by ffmpeg with `args` (input and output options; the path appended).
    public static func make(_ name: String, _ args: [String]) -> String {
        made(name, by: ["ffmpeg"] + args) { path in
            let r = try! run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y"] + args + [path])
            precondition(r.status == 0, "ffmpeg failed to make \(name): \(r.stderr)")
        }
    }

    /// One file per name for the whole run, made once by its first caller; a caller asking while it is being made
    /// waits for it (never reads a half-written file, never rewrites it under a reader). The recipe is the file's
    /// content key: one name asked for with two recipes is a test's mistake, and stops the run naming both.
    private static func made(_ name: String, by recipe: [String], _ write: (String) -> Void) -> String {
        let entry = files.withLock { files in
            if let entry = files[name] { return entry }
            let entry = MediaFile(recipe: recipe)
            files[name] = entry
            return entry
        }
        precondition(entry.recipe == recipe, "media \(name) asked for with two recipes: \(entry.recipe) and \(recipe)")
        let path = dir + "/" + name
        entry.written.withLock { written in
            if !written { write(path) }
            written = true
        }
        return path
    }

    private static let files = Mutex<[String: MediaFile]>([:])
}

/// A file `Media` makes: its recipe, and whether it is written (locked while it is being written).
private final class MediaFile: Sendable {
    let recipe: [String]
    let written = Mutex(false)

    init(recipe: [String]) { self.recipe = recipe }
}

/// ffmpeg/ffprobe as oracles.
public enum Oracle {
    /// `ffmpeg -f framemd5` of the first video stream decoded to `pixFmt`: one (size, md5) per frame.
    public static func frameMD5(_ file: String, pixFmt: String, extra: [String] = []) throws -> [(size: Int, md5: String)] {
        try frameMD5Fields(file, pixFmt: pixFmt, extra: extra).map { (Int($0[4])!, $0[5]) }
    }

    /// The same on the stream's own clock (`-copyts`, every frame kept), each frame's time in `timeBase` ("1:90000"):
    /// one (pts, md5) per frame — ffmpeg's time also for a frame ffprobe leaves without one.
    public static func timedFrameMD5(_ file: String, pixFmt: String, timeBase: String) throws -> [(pts: Int64, md5: String)] {
        try frameMD5Fields(file, pixFmt: pixFmt, extra: ["-copyts", "-fps_mode", "passthrough", "-enc_time_base", timeBase])
            .map { (Int64($0[2])!, $0[5]) }
    }

    /// framemd5's lines, each its fields: stream, dts, pts, duration, size, md5.
    private static func frameMD5Fields(_ file: String, pixFmt: String, extra: [String]) throws -> [[String]] {
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:v:0"] + extra
                            + ["-pix_fmt", pixFmt, "-f", "framemd5", "-"])
        #expect(r.status == 0, "ffmpeg framemd5: \(r.stderr)")
        return r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// The first video stream decoded by ffmpeg (`extra` are output options, e.g. `-pix_fmt yuv422p10le` or
    /// `-c:v v210`), written as rawvideo and cut into frames of `frameSize` bytes.
    public static func rawFrames(_ file: String, _ extra: [String], frameSize: Int) throws -> [[UInt8]] {
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
    public static func pixelFormat(_ file: String) throws -> (name: String, bits: Int, chroma: String, alpha: Bool) {
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
    public static func framePTS(_ file: String) throws -> [Double] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        return r.text.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces.union(.init(charactersIn: ",")))) }
    }

    /// Stored packets of the video stream in decode order: (dts, pts, size, keyframe).
    public static func packets(_ file: String) throws -> [(dts: Double, pts: Double, size: Int, key: Bool)] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time,pts_time,size,flags",
                                    "-of", "csv=p=0", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        return r.text.split(separator: "\n").map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return (Double(f[1]) ?? .nan, Double(f[0]) ?? .nan, Int(f[2]) ?? -1, f[3].hasPrefix("K"))
        }
    }
}
