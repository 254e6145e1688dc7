import Foundation
import TrackClient
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// trackctl's documented interface, driven as other tools drive it.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct TrackctlTests {
    @Test func md5LinesMatchFFmpegFramemd5() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange", "--md5"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "nv12")
        #expect(lines.count == oracle.count)
        for (i, (l, o)) in zip(lines, oracle).enumerated() {
            #expect(l.count == 5)
            #expect(l[0] == String(i))
            #expect(l[1].split(separator: ".").last?.count == 6, "PTS has 6 decimals")
            #expect(Int(l[3]) == o.size)
            #expect(l[4] == o.md5, "frame \(i)")
        }
    }

    /// --start/--duration set the reader's timeRange; --ranges reads ranges in the given order (random access);
    /// each line's md5 and pts equal ffmpeg's frame at that time.
    @Test func startDurationAndRanges() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        let pts = try Oracle.framePTS(Media.clip)
        func expected(_ start: Double, _ end: Double) -> [Int] {
            pts.indices.filter { pts[$0] + 1.0 / 30 > start + 0.0001 && pts[$0] < end - 0.0001 }
        }
        func check(_ args: [String], _ frames: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--md5"] + args)
            #expect(r.status == 0, "\(r.stderr)", sourceLocation: sourceLocation)
            let lines = r.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(lines.count == frames.count, "\(args): \(lines.count) lines, expected \(frames.count)", sourceLocation: sourceLocation)
            for (i, (l, f)) in zip(lines, frames).enumerated() {
                #expect(l[0] == String(i), sourceLocation: sourceLocation)
                #expect(abs((Double(l[1]) ?? -1) - pts[f]) < 0.0005, "\(args) line \(i) pts", sourceLocation: sourceLocation)
                #expect(l[4] == oracle[f].md5, "\(args) line \(i): frame \(f)", sourceLocation: sourceLocation)
            }
        }
        try check(["--start", "0.5", "--duration", "0.5"], expected(0.5, 1.0))
        try check(["--start", "1.5"], expected(1.5, 10))
        try check(["--ranges", "1.21-1.45,0.2-0.4,1.9-"], expected(1.21, 1.45) + expected(0.2, 0.4) + expected(1.9, 10))
        let bad = try daemon.trackctl(["read", Media.clip, "--ranges", "1-2", "--start", "1"])
        #expect(bad.status == 2 && bad.stderr.contains("cannot be combined"))
    }

    @Test func outputWritesThePackedBytes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("out")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try daemon.trackctl(["read", Media.clip, "--pixel-format", "y420", "--output", dir + "/frames.yuv"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("60 samples in"))
        let ours = try #require(FileManager.default.contents(atPath: dir + "/frames.yuv"))
        let theirs = try run("ffmpeg", ["-v", "error", "-i", Media.clip, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        #expect(ours.count == 320 * 240 * 3 / 2 * 60)
        #expect(ours == theirs)
    }

    @Test func tracksJSONHasExactlyTheDocumentedKeys() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["tracks", Media.clip, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        #expect(array.count == 2)
        let keys: Set<String> = ["id", "mediaType", "codec", "codecName", "width", "height", "nominalFrameRate", "duration",
                                 "timeRangeStart", "sampleRate", "channels", "depth", "hasAlpha", "bitsPerComponent", "chromaSubsampling",
                                 "recommendedPixelFormat", "rotation", "language", "profile", "level", "pixelAspectRatio",
                                 "colorRange", "colorMatrix", "colorPrimaries", "colorTransfer", "bitRate", "channelLayout",
                                 "timescale", "minFrameDuration", "segments", "metadata", "preferredTransform", "codecConfiguration"]
        for t in array { #expect(Set(t.keys) == keys) }
        #expect(array[0]["mediaType"] as? String == "video" && array[0]["codec"] as? String == "avc1")
        #expect(array[0]["codecName"] as? String == "H.264" && array[1]["codecName"] as? String == "AAC")
        #expect(array[0]["sampleRate"] is NSNull)
        #expect(array[1]["channels"] as? Int == 2)
        let table = try daemon.trackctl(["tracks", Media.clip])
        #expect(table.status == 0 && table.text.contains("avc1 (H.264)") && table.text.contains("mp4a (AAC)") && table.text.contains("320x240"))
    }

    /// Profile, level, sample aspect ratio, colour description, bit rate and channel layout, as ffprobe reports
    /// them for the same file (ffprobe is the oracle): in --json, in the detail lines of the table, on AssetTrack.
    @Test func tracksMatchFFprobesStreamDetails() throws {
        let file = Media.make("details.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=1", "-f", "lavfi", "-i", "sine=duration=1",
            "-vf", "setsar=4/3", "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-level", "3.1",
            "-color_range", "tv", "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
            "-c:a", "aac", "-ac", "6",
        ])
        let probe = try run("ffprobe", ["-v", "error", "-show_entries",
                                        "stream=profile,level,sample_aspect_ratio,display_aspect_ratio,color_range,bit_rate,channel_layout",
                                        "-of", "json", file])
        let streams = try #require((try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])?["streams"] as? [[String: Any]])
        let (v, a) = (streams[0], streams[1])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["tracks", file, "--json"])
        let tracks = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        let (tv, ta) = (tracks[0], tracks[1])
        #expect((tv["profile"] as? String)?.lowercased() == (v["profile"] as? String)?.lowercased())  // "main" / "Main"
        #expect((tv["level"] as? String).map { $0.replacingOccurrences(of: ".", with: "") } == (v["level"] as? Int).map(String.init))
        #expect(tv["pixelAspectRatio"] as? String == v["sample_aspect_ratio"] as? String)
        #expect(tv["colorRange"] as? String == v["color_range"] as? String)
        #expect(tv["colorMatrix"] as? Int == 1 && tv["colorPrimaries"] as? Int == 1 && tv["colorTransfer"] as? Int == 1)  // BT.709
        #expect((tv["bitRate"] as? Int).map(String.init) == v["bit_rate"] as? String)
        #expect((ta["profile"] as? String)?.lowercased() == (a["profile"] as? String)?.lowercased())  // "lc" / "LC"
        #expect(ta["channelLayout"] as? String == a["channel_layout"] as? String)
        #expect((ta["bitRate"] as? Int).map(String.init) == a["bit_rate"] as? String)
        let table = try daemon.trackctl(["tracks", file])
        #expect(table.text.contains("SAR 4:3 DAR \(v["display_aspect_ratio"] as? String ?? "?")"), "\(table.text)")
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(asset.tracks[0].pixelAspectRatio == PixelAspectRatio(numerator: 4, denominator: 3))
        #expect(asset.tracks[1].channelLayout == "5.1")
    }

    /// BITS, CHROMA and PIXFMT: the coded bit depth and chroma subsampling (ffprobe's pix_fmt is the oracle) and
    /// the decoder's native layout for them, in the table, in --json and on TrackClient's AssetTrack.
    @Test func tracksReportDepthChromaAndRecommendThePixelFormat() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let cases: [(file: String, codec: String, recommended: String)] = [
            (Media.clip, "avc1", "y420"), (Media.hevc10, "hev1", "x420"), (Media.vp9p2, "vp09", "x420"),
            (Media.h264_422, "avc1", "422v"), (Media.h264_444, "avc1", "444v"), (Media.prores422, "apcn", "v210"),
            (Media.proresHQ, "apch", "v210"), (Media.prores4444, "ap4h", "y416"),
        ]
        for c in cases {
            let oracle = try Oracle.pixelFormat(c.file)
            let r = try daemon.trackctl(["tracks", c.file, "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let array = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
            let video = try #require(array.first { $0["mediaType"] as? String == "video" })
            #expect(video["codec"] as? String == c.codec, "\(c.file)")
            #expect(video["bitsPerComponent"] as? Int == oracle.bits, "\(c.file): ffprobe says \(oracle.name)")
            #expect(video["chromaSubsampling"] as? String == oracle.chroma, "\(c.file): ffprobe says \(oracle.name)")
            #expect(video["hasAlpha"] as? Bool == oracle.alpha, "\(c.file): ffprobe says \(oracle.name)")
            #expect(video["recommendedPixelFormat"] as? String == c.recommended, "\(c.file)")

            let table = try daemon.trackctl(["tracks", c.file])
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            let header = try #require(lines.dropFirst().first)
            #expect(header.last == "PIXFMT", "the last column")
            let row = try #require(lines.first { $0.count > 1 && $0[1] == "video" })
            // Counted from the end: DURATION ("0.300 s") is two words.
            let bits = try #require(header.firstIndex(of: "BITS")) - header.count
            let chroma = try #require(header.firstIndex(of: "CHROMA")) - header.count
            #expect(row[row.count + bits] == "\(oracle.bits)" && row[row.count + chroma] == oracle.chroma, "\(row)")
            #expect(row.last == c.recommended)
            #expect(table.text.contains("PIXFMT: the recommended --pixel-format"))

            let asset = try Asset(path: c.file, socketPath: daemon.socketPath)
            let track = try #require(asset.tracks(withMediaType: .video).first)
            #expect(Int(track.bitsPerComponent) == oracle.bits && track.chromaSubsampling.description == oracle.chroma)
            #expect(track.recommendedPixelFormat?.code == FourCC(c.recommended))
        }
    }

    /// The table of RecommendedPixelFormat, including the cases no generated file reaches.
    @Test func recommendationTable() {
        func code(_ codec: FourCC, _ depth: UInt32 = 24, _ bits: UInt8 = 0, _ chroma: ChromaSubsampling = .unknown) -> String? {
            RecommendedPixelFormat.forTrack(codec: codec, depth: depth, bitsPerComponent: bits, chromaSubsampling: chroma)?
                .code.description
        }
        #expect(code("avc1") == "y420")  // nothing known: the codec's usual 8-bit 4:2:0
        #expect(code("hvc1", 24, 10, .yuv420) == "x420")
        #expect(code("hvc1", 24, 12, .yuv420) == "y416")
        #expect(code("avc1", 24, 10, .yuv422) == "v210")
        #expect(code("avc1", 24, 12, .yuv422) == "v216")
        #expect(code("hvc1", 24, 10, .yuv444) == "y416")
        #expect(code("avc1", 24, 8, .yuv400) == "L008")
        #expect(code("hvc1", 24, 10, .yuv400) == "L016")
        #expect(code("vp09", 32, 8, .yuv420) == "y408")  // alpha is kept
        #expect(code("apch") == "v210")
        #expect(code("ap4h", 32) == "y416")
        #expect(code("ap4x", 24) == "y416")
        #expect(code("????") == nil)
        #expect(code("jpeg") == nil)
        #expect(code("jpeg", 24, 8, .yuv422) == "422v")  // known from the record: any codec
    }

    @Test func settingSendsAnyEntry() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func read(_ args: [String]) throws -> Run { try daemon.trackctl(["read", Media.clip] + args) }
        let unknown = try read(["--setting", "BogusKey=1"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("-11861") && unknown.stderr.contains("invalid keys: BogusKey"))

        let y420 = try read(["--pixel-format", "y420", "--md5"])
        #expect(y420.status == 0 && y420.text.split(separator: "\n").count == 60)
        #expect(try read(["--setting", "PixelFormatType=y420", "--md5"]).text == y420.text)
        // The constant name as key, and --setting replacing --pixel-format's entry.
        #expect(try read(["--pixel-format", "BGRA", "--setting=kCVPixelBufferPixelFormatTypeKey=y420", "--md5"]).text == y420.text)

        let bgra = try read(["--pixel-format", "BGRA", "--md5"])
        #expect(bgra.status == 0)
        let list = try read(["--setting", #"PixelFormatType=["v308","BGRA"]"#, "--md5"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.text == bgra.text, "the first supported entry wins")
        let numbers = try read(["--setting", "PixelFormatType=[\(0x7633_3038), \(0x4247_5241)]", "--md5"])
        #expect(numbers.text == bgra.text)

        // A nested JSON dictionary and booleans reach the validator as such.
        let color = try read(["--setting", #"AVVideoColorPropertiesKey={"AVVideoColorPrimariesKey":"ITU_R_709_2","n":[1,2.5]}"#])
        #expect(color.status == 1)
        #expect(color.stderr.contains("AVAssetReaderTrackOutput does not currently support AVVideoColorPropertiesKey"))
        let jsonBool = try read(["--setting", "PixelFormatType=[true]"])
        #expect(jsonBool.status == 1 && jsonBool.stderr.contains("not true"), "\(jsonBool.stderr)")
        let width = try read(["--setting", "Width=true", "--setting", "Height=2"])
        #expect(width.status == 1 && width.stderr.contains("Width must be a number, not true"), "\(width.stderr)")
        let bigEndian = try read(["--setting", "AVLinearPCMIsBigEndianKey=true", "--md5"])
        #expect(bigEndian.status == 0, "\(bigEndian.stderr)")
        let flag = try read(["--big-endian", "--md5"])
        #expect(flag.status == 0 && bigEndian.text == flag.text)
        let rate = try read(["--sample-rate", "22050", "--setting", "AVSampleRateKey=8000", "--json"])
        let frames = rate.text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["frames"] as? Int
        }.reduce(0, +)
        #expect(abs(frames - 16000) < 200, "AVSampleRateKey=8000 wins over --sample-rate 22050: \(frames) frames")

        #expect(try read(["--setting", "Width=2", "--passthrough"]).status == 2)
        #expect(try read(["--setting", "Width"]).status == 2)
        #expect(try read(["--setting", #"PixelFormatType=["BGRA""#]).status == 2)
    }

    @Test func jsonReadAndPassthrough() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try daemon.trackctl(["read", Media.clip, "--passthrough", "--json", "--md5"])
        #expect(r.status == 0, "\(r.stderr)")
        let objects = r.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let packets = try Oracle.packets(Media.clip)
        #expect(objects.count == packets.count)
        #expect(objects.first?["sync"] as? Bool == true)
        #expect(objects.allSatisfy { ($0["md5"] as? String)?.count == 32 })
        #expect(zip(objects, packets).allSatisfy { ($0["size"] as? Int) == $1.size })
    }

    @Test func frameWritesAPNG() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("png")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try daemon.trackctl(["frame", Media.clip, "--time", "1.5", "--output", dir + "/f.png"])
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", dir + "/f.png"])
        #expect(probe.text.trimmingCharacters(in: .whitespacesAndNewlines) == "png,320,240")
    }

    @Test func exitCodes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        #expect(try run(Env.trackctl, ["--socket", daemon.dir + "/nobody.sock", "tracks", Media.clip]).status == 3)
        let unreachable = try run(Env.trackctl, ["--socket", daemon.dir + "/nobody.sock", "status"])
        #expect(unreachable.stderr.contains("Is trackd running?"))
        #expect(try daemon.trackctl(["read"]).status == 2)
        #expect(try daemon.trackctl(["read", Media.clip, "--pixel-format", "nope"]).status == 2)
        #expect(try daemon.trackctl(["bogus"]).status == 2)
        let notMedia = try daemon.trackctl(["read", Media.text])
        #expect(notMedia.status == 1)
        #expect(notMedia.stderr.contains("-11828"))
        let status = try daemon.trackctl(["status", "--json"])
        #expect(status.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        #expect(object["supervisorPid"] as? Int == Int(daemon.pid))
        let list = try run(Env.trackctl, ["read", "--pixel-format", "list"])
        #expect(list.status == 0 && list.text.contains("420v") && list.text.contains("NV12"))
    }
}

/// `trackctl --help`, `trackctl COMMAND --help` and usage errors that say what to do next. No daemon needed.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TrackctlHelpTests {
    static let commands = ["tracks", "read", "frames", "frame", "contact-sheet", "status"]

    /// "  trackctl [--socket PATH] COMMAND …": a complete command line running `command`.
    static func isExample(_ line: String, of command: String) -> Bool {
        var words = line.split(separator: " ").map { String($0) }
        guard line.hasPrefix("  trackctl "), !words.isEmpty else { return false }
        words.removeFirst()
        if words.first == "--socket" { words.removeFirst(min(2, words.count)) }
        return words.first == command
    }

    @Test func overviewListsEveryCommandWithAnExample() throws {
        for args in [["--help"], ["-h"], ["help"]] {
            let r = try run(Env.trackctl, args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(r.text.hasPrefix("usage: trackctl [--socket PATH] COMMAND"), "\(args)")
            for command in Self.commands {
                #expect(r.text.contains("\n  \(command) "), "\(args) lists \(command)")
                #expect(r.text.split(separator: "\n").contains { Self.isExample(String($0), of: command) }, "\(args) has an example of \(command)")
            }
            #expect(r.text.contains("trackctl COMMAND --help"))
        }
    }

    @Test(arguments: commands) func eachCommandHasHelp(_ command: String) throws {
        for args in [[command, "--help"], ["help", command], ["--socket", "/nowhere.sock", command, "FILE", "-h"]] {
            let r = try run(Env.trackctl, args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.first == "usage:", "\(args)")
            #expect(lines.dropFirst().first?.hasPrefix("  trackctl [--socket PATH] \(command) ") == true, "\(args)")
            let examples = try #require(lines.firstIndex(of: "examples:"), "\(args)")
            #expect(lines.dropFirst(examples + 1).prefix { !$0.isEmpty }.allSatisfy { Self.isExample($0, of: command) }, "\(args)")
            // Only this command's usage.
            for other in Self.commands where other != command {
                #expect(!r.text.contains("trackctl [--socket PATH] \(other) "), "\(args) shows \(other)'s usage")
            }
        }
    }

    @Test func usageErrorsSayWhatToDoNext() throws {
        let unknown = try run(Env.trackctl, ["bogus"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown command bogus"))
        #expect(unknown.stderr.contains("Run `trackctl --help`"))
        let none = try run(Env.trackctl, [])
        #expect(none.status == 2 && none.stderr.contains("no command given") && none.stderr.contains("Run `trackctl --help`"))
        let unknownHelp = try run(Env.trackctl, ["help", "bogus"])
        #expect(unknownHelp.status == 2 && unknownHelp.stderr.contains("unknown command bogus"))
        // A command's missing argument: that command's usage and where its options are explained.
        let frame = try run(Env.trackctl, ["frame", "clip.mp4"])
        #expect(frame.status == 2)
        #expect(frame.stderr.contains("frame needs --time SECONDS"))
        #expect(frame.stderr.contains("  trackctl [--socket PATH] frame FILE --time SECONDS"))
        #expect(frame.stderr.contains("Run `trackctl frame --help`"))
        #expect(!frame.stderr.contains("trackctl [--socket PATH] read "))
        let read = try run(Env.trackctl, ["--socket", "/nowhere.sock", "read"])
        #expect(read.status == 2 && read.stderr.contains("read takes exactly one FILE") && read.stderr.contains("Run `trackctl read --help`"))
        let option = try run(Env.trackctl, ["tracks", "clip.mp4", "--frobnicate"])
        #expect(option.status == 2 && option.stderr.contains("unknown option --frobnicate") && option.stderr.contains("Run `trackctl tracks --help`"))
    }

    /// Every command that talks to trackd says how to start it when it cannot be reached.
    @Test(arguments: [["tracks", "F"], ["read", "F"], ["frames", "F", "--at", "1"], ["frame", "F", "--time", "1", "--output", "unwritten.png"],
                      ["contact-sheet", "F", "--output", "unwritten.png"], ["status"]])
    func unreachableDaemonSaysHowToStartIt(_ args: [String]) throws {
        let dir = Env.tempDir("unreachable")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/clip.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([0])))
        let r = try run(Env.trackctl, ["--socket", dir + "/nobody.sock"] + args.map { $0 == "F" ? file : $0 })
        #expect(r.status == 3, "\(args): \(r.stderr)")
        #expect(r.stderr.contains("Is trackd running? Start it with `make serve` or `systemctl start trackd.socket`"), "\(args)")
    }
}

/// trackd under systemd socket activation: systemd-socket-activate passes the listening socket (LISTEN_FDS).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SocketActivationTests {
    @Test func readsFramesThroughAnActivatedSocket() throws {
        let activate = "/usr/bin/systemd-socket-activate"
        try #require(FileManager.default.isExecutableFile(atPath: activate), "systemd-socket-activate is installed by make deps")
        let dir = Env.tempDir("activate")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socketPath = dir + "/activated.sock"
        let activated = try Child(activate, ["-l", socketPath, Env.trackd])
        defer { _ = activated.terminate() }
        #expect(waitUntil(timeout: .seconds(5)) { FileManager.default.fileExists(atPath: socketPath) },
                "systemd-socket-activate made \(socketPath)")
        let r = try run(Env.trackctl, ["--socket", socketPath, "read", Media.clip, "--md5"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.split(separator: "\n").count == 60)
        let units = try run("/bin/bash", [FileManager.default.currentDirectoryPath + "/scripts/verify-units.sh"])
        #expect(units.status == 0, "systemd-analyze verify: \(units.stderr)")
    }
}
