import Foundation
import TrackdProtocol
import TestSupport
import Testing

/// The rotation tag, treated alike by `frame`, `frames` and `contact-sheet` (--rotation apply, the default, or
/// keep) through TrackdAppliesPreferredTrackTransform, against ffmpeg: its autorotate turns a 90°-tagged
/// 1280×720 track into 720×1280 frames, `-noautorotate` keeps them. Turning moves samples without changing them
/// (videoflip on the decoder's I420; ffmpeg's transpose), so y420 frames are compared by MD5, byte for byte —
/// which also pins the turned size. The
/// image formats follow --output's extension; `-` is PNG on stdout.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct RotationTests {
    /// ffmpeg-made and ffmpeg-tagged: 5 frames of 1280×720 H.264, remuxed with `rotate=<degrees>` (mov's tkhd matrix;
    /// ffmpeg 5.1 writes `rotate=90` as 90° counter-clockwise, which trackd reports as 270).
    static func rotated(_ degrees: Int) -> String {
        let plain = Media.make("rotation-plain.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=10:duration=0.5",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        ])
        return Media.make("rotated-\(degrees).mp4", ["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=\(degrees)"])
    }
    static let r90 = rotated(90)
    /// The same as 4:4:4, for comparing RGB with ffmpeg's without chroma upsampling (which the two do differently).
    static let r90444: String = {
        let plain = Media.make("rotation-plain-444.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=10:duration=0.5",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p",
        ])
        return Media.make("rotated-444-90.mp4", ["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90"])
    }()

    /// ffmpeg's yuv420p framemd5 of `file`, autorotated or not.
    func ffmpegMD5(_ file: String, autorotate: Bool) throws -> [String] {
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error"] + (autorotate ? [] : ["-noautorotate"])
                            + ["-i", file, "-map", "0:v:0", "-pix_fmt", "yuv420p", "-f", "framemd5", "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        return r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces)
        }
    }

    /// `trackctl frames --md5` lines' MD5s (frames 0 … 4, y420 named as ffmpeg names it).
    func trackctlMD5(_ daemon: Daemon, _ file: String, _ extra: [String]) throws -> [String] {
        let r = try daemon.trackctl(["frames", file, "--index", "0,1,2,3,4", "--pixel-format", "yuv420p", "--md5"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        return r.text.split(separator: "\n").map { String($0.split(separator: " ").last!) }
    }

    @Test(arguments: [90, 180, 270])
    func framesMatchFFmpegsAutorotate(degrees: Int) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let file = degrees == 90 ? Self.r90 : Self.rotated(degrees)
        // ffprobe's display-matrix rotation is counter-clockwise; trackd's is clockwise.
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream_side_data=rotation",
                                        "-of", "csv=p=0", file])
        let counterClockwise = Int(probe.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        let tracks = try daemon.trackctl(["tracks", file, "--json"])
        #expect(tracks.text.contains("\"rotation\":\((360 - counterClockwise) % 360)"), "\(probe.text) \(tracks.text)")
        let upright = try ffmpegMD5(file, autorotate: true), coded = try ffmpegMD5(file, autorotate: false)
        #expect(upright.count == 5 && upright != coded)
        #expect(try trackctlMD5(daemon, file, []) == upright)
        #expect(try trackctlMD5(daemon, file, ["--rotation", "keep"]) == coded)
    }

    /// `frame` writes the upright frame, PNG or JPEG by extension or PNG on stdout, each decoding (ffmpeg) to the
    /// same picture as ffmpeg's autorotated frame converted with BT.709 (the untagged HD default): PNG within 6
    /// code values (RGBFormatTests' conversion bound), JPEG within a mean of 3 (lossy, quality 92). 4:4:4 source.
    @Test func frameWritesTheUprightImageInTheFormatItsExtensionNames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("rotation-frame")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let reference = try Oracle.rawFrames(Self.r90444, ["-vf", "scale=in_color_matrix=bt709:in_range=tv,format=rgb24"],
                                             frameSize: 720 * 1280 * 3)[2]
        func decoded(_ path: String) throws -> (codec: String, rgb: [UInt8]) {
            let probe = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path])
            let rgb = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            return (probe.text.trimmingCharacters(in: .whitespacesAndNewlines), [UInt8](rgb.stdout))
        }
        func mean(_ a: [UInt8]) -> Double {
            Double(zip(a, reference).map { abs(Int($0) - Int($1)) }.reduce(0, +)) / Double(max(1, reference.count))
        }
        for (name, codec) in [("f.png", "png"), ("f.JPG", "mjpeg"), ("f.jpeg", "mjpeg")] {
            let r = try daemon.trackctl(["frame", Self.r90444, "--time", "0.2", "--output", dir + "/" + name])
            #expect(r.status == 0, "\(r.stderr)")
            let (probe, rgb) = try decoded(dir + "/" + name)
            #expect(probe == "\(codec),720,1280", "\(name): \(probe)")
            #expect(rgb.count == reference.count)
            if codec == "png" {
                let worst = zip(rgb, reference).map { abs(Int($0) - Int($1)) }.max() ?? 255
                #expect(worst <= RGBFormatTests.tolerance, "\(name) differs from ffmpeg's frame by \(worst)")
            }
            #expect(mean(rgb) <= (codec == "png" ? RGBFormatTests.meanTolerance : 3.0), "\(name): mean \(mean(rgb))")
        }
        // - is PNG on stdout (the report goes to stderr), the same bytes as the .png file.
        let piped = try daemon.trackctl(["frame", Self.r90444, "--time", "0.2", "--output", "-"])
        #expect(piped.status == 0 && piped.stderr.contains("720x1280 PNG"), "\(piped.stderr)")
        #expect(piped.stdout == FileManager.default.contents(atPath: dir + "/f.png"))
        let kept = try daemon.trackctl(["frame", Self.r90, "--time", "0.2", "--rotation", "keep", "--output", dir + "/k.png"])
        #expect(kept.status == 0 && kept.text.contains("1280x720 PNG"), "\(kept.text)")
        // An unknown extension is a usage error, before trackd is asked.
        let bmp = try daemon.trackctl(["frame", Self.r90, "--time", "0.2", "--output", dir + "/f.bmp"])
        #expect(bmp.status == 2 && bmp.stderr.contains("unknown image extension .bmp; use .png, .jpg or .jpeg"), "\(bmp.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/f.bmp"))
        let sheet = try daemon.trackctl(["contact-sheet", Self.r90, "--count", "2", "--output", dir + "/s.webp"])
        #expect(sheet.status == 2 && sheet.stderr.contains("unknown image extension .webp"), "\(sheet.stderr)")
    }

    /// contact-sheet: tiles 320 wide, TH = 320 × display height / width — 568 upright (applied), 180 as coded
    /// (kept); a JPEG by extension; PNG on stdout for `-`.
    @Test func contactSheetAppliesOrKeepsTheSameWay() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("rotation-sheet")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (args, tileHeight) in [([String](), 568), (["--rotation", "keep"], 180)] {
            let r = try daemon.trackctl(["contact-sheet", Self.r90, "--count", "2", "--output", dir + "/s.jpg"] + args)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.text.contains("JPEG") && r.text.contains("tiles 320x\(tileHeight)"), "\(r.text)")
            let probe = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,height", "-of", "csv=p=0", dir + "/s.jpg"])
            #expect(probe.text.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,\(40 + tileHeight + 34)")
        }
        let piped = try daemon.trackctl(["contact-sheet", Self.r90, "--count", "2", "--output", "-"])
        #expect(piped.status == 0 && piped.stdout.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(piped.stderr)")
    }
}
