import Foundation
import TrackdProtocol
import TrackClient
import Testing

/// The track's format description beyond the codec (PROTOCOL.md §7.2 revision 1): preferredTransform as ffprobe's
/// display matrix, the codec configuration as ffprobe's extradata, and the colour range the bitstream declares as
/// ffprobe's color_range — on ffmpeg-made files, through trackctl tracks --json and TrackClient.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FormatDescriptionTests {
    /// ffprobe's `key=` hex dump (`-show_data`) of the first video stream as bytes: after "0000000k: ", 41 columns
    /// of hex pairs in groups of four digits.
    static func ffprobeData(_ file: String, _ key: String) throws -> [UInt8] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_data", "-show_streams", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let lines = r.text.split(separator: "\n").map(String.init)
        guard let at = lines.firstIndex(of: key + "=") else { return [] }
        let dump = lines[(at + 1)...].prefix { $0.count > 10 && $0.dropFirst(8).hasPrefix(": ") }
        let hex = dump.map { String($0.dropFirst(10).prefix(41)).filter { $0 != " " } }.joined()
        return stride(from: 0, to: hex.count, by: 2).map { i in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    static func ffprobeMatrix(_ file: String) throws -> [Int32] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_streams", file])
        let lines = r.text.split(separator: "\n")
        guard let at = lines.firstIndex(where: { $0.hasPrefix("displaymatrix=") }) else { return DisplayMatrix.identity.values }
        return lines[(at + 1)...(at + 3)].flatMap { $0.split(separator: " ").dropFirst().compactMap { Int32($0) } }
    }

    static func tracksJSON(_ daemon: Daemon, _ file: String) throws -> [[String: Any]] {
        let r = try daemon.trackctl(["tracks", file, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
    }

    /// An ffmpeg stream copy of an MP4 with a `rotate` tag: the tkhd matrix ffmpeg wrote is the track's
    /// preferredTransform, number for number (16.16 → a b c d tx ty).
    @Test(arguments: [90, 180, 270])
    func preferredTransformIsFfprobesDisplayMatrix(_ rotate: Int) throws {
        let file = Media.make("transform-\(rotate).mp4", ["-i", Media.faststart, "-c", "copy", "-metadata:s:v", "rotate=\(rotate)"])
        let m = try Self.ffprobeMatrix(file).map { Double($0) / 65_536 }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let t = asset.tracks[0].preferredTransform
        #expect([t.a, t.b, t.c, t.d, t.tx, t.ty] == [m[0], m[1], m[3], m[4], m[6], m[7]])
        #expect(t != .identity)
        let json = try #require(try Self.tracksJSON(daemon, file).first?["preferredTransform"] as? [String: Double])
        #expect(["a", "b", "c", "d", "tx", "ty"].map { json[$0] } == [m[0], m[1], m[3], m[4], m[6], m[7]])
    }

    /// The codec configuration is ffprobe's extradata (avcC for H.264 in MP4 and Matroska); a TS carries none.
    @Test(arguments: ["mp4", "mkv", "ts"])
    func codecConfigurationIsFfprobesExtradata(_ container: String) throws {
        let file = Media.make("config.\(container)", ["-i", Media.faststart, "-c", "copy"])
        let expected = try Self.ffprobeData(file, "extradata")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(asset.tracks[0].codecConfiguration == expected, "\(container)")
        if container != "ts" { #expect(!expected.isEmpty && expected.first == 1, "an avcC") }
    }

    /// A full-range H.264 stream (VUI video_full_range_flag 1) reports full range in every container, as ffprobe's
    /// color_range; a limited-range one reports tv.
    @Test(arguments: ["mp4", "mkv", "ts"])
    func colorRangeIsTheBitstreams(_ container: String) throws {
        let full = Media.make("range-full.\(container)", ["-i", Media.fullRange, "-c", "copy"])
        let limited = Media.make("range-tv.\(container)", [
            "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25:duration=1", "-c:v", "libx264", "-preset", "veryfast",
            "-pix_fmt", "yuv420p", "-color_range", "tv",
        ])
        let daemon = try Daemon()
        defer { daemon.stop() }
        for (file, name) in [(full, "pc"), (limited, "tv")] {
            let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=color_range",
                                            "-of", "csv=p=0", file])
            #expect(probe.text.trimmingCharacters(in: .whitespacesAndNewlines) == name, "ffprobe on \(file)")
            #expect(try Self.tracksJSON(daemon, file).first?["colorRange"] as? String == name, "\(file)")
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            #expect(asset.tracks[0].colorimetry.range == (name == "pc" ? 2 : 1), "\(file)")
        }
    }
}
