import Foundation
import TrackClient
import Testing

/// The track's format description beyond the codec (PROTOCOL.md §7.2): preferredTransform as ffprobe's display
/// matrix, the codec configuration as ffprobe's extradata (its parameter sets in MPEG-TS), ProRes's depth as its sample
/// description's — on ffmpeg-made files, through trackctl tracks --json and TrackClient.
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

    /// The codec configuration is the record the container stores where it stores one — MP4, MOV, Matroska:
    /// ffprobe's extradata byte for byte, with libx264's High-profile trailer and x265's SEI — and the parser's
    /// avcC/hvcC where the stream is Annex B (MPEG-TS), whose parameter sets are ffprobe's Annex B extradata's; in
    /// both, the passthrough output's codecConfig, through TrackClient and trackctl tracks --json.
    @Test(arguments: ["h264", "hevc"], ["mp4", "mov", "mkv", "ts"])
    func codecConfigurationIsTheStoredRecord(_ codec: String, _ container: String) throws {
        let source = codec == "h264" ? Media.faststart : Media.hevc10  // libx264 High, x265 Main 10
        let file = Media.make("config-\(codec).\(container)", ["-i", source, "-c", "copy"])
        let extradata = try Self.ffprobeData(file, "extradata")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let ours = track.codecConfiguration
        #expect(ours == (try Self.passthroughConfiguration(asset, track)), "the passthrough output's codecConfig")
        let json = try #require(try Self.tracksJSON(daemon, file).first?["codecConfiguration"] as? String)
        #expect(json == ours.map { String(format: "%02x", $0) }.joined())
        guard container == "ts" else {
            #expect(ours == extradata, "\(codec) in \(container): \(ours.count) bytes, ffprobe's \(extradata.count)")
            return
        }
        #expect(ours.first == 1, "an avcC or hvcC")
        let expected = Self.annexBUnits(extradata)
        #expect(expected.count == (codec == "h264" ? 2 : 3), "the SPS and PPS (and VPS)")
        #expect((codec == "h264" ? Self.avcCUnits(ours) : Self.hvcCUnits(ours)) == expected)
    }

    /// The codec configuration of `track`'s passthrough output.
    static func passthroughConfiguration(_ asset: Asset, _ track: AssetTrack) throws -> [UInt8] {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        return try #require(output.outputFormat).codecConfig
    }

    /// ProRes from ffmpeg's prores_ks in MOV: the track's depth (kCMFormatDescriptionExtension_Depth) is the depth
    /// of the file's sample description — 32 for 4444 with alpha, 24 for 4444 without and for 422 — and hasAlpha
    /// is what ffprobe's pixel format says, through TrackClient and trackctl tracks.
    @Test(arguments: [("2", "yuv422p10le"), ("4", "yuv444p10le"), ("4", "yuva444p10le")])
    func proresDepthIsTheSampleDescriptions(_ profile: String, _ pixFmt: String) throws {
        let file = Media.make("prores-depth-\(pixFmt).mov", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=0.2",
                                                              "-c:v", "prores_ks", "-profile:v", profile, "-pix_fmt", pixFmt])
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=pix_fmt", "-of", "csv=p=0", file])
        let alpha = probe.text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("yuva")
        #expect(alpha == pixFmt.hasPrefix("yuva"), "ffprobe: \(probe.text)")
        let stored = try #require(Self.sampleDescriptionDepth(file))
        #expect(stored == (alpha ? 32 : 24), "stsd depth \(stored)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let track = try Asset(path: file, socketPath: daemon.socketPath).tracks[0]
        #expect(track.depth == UInt32(stored) && track.hasAlpha == alpha, "\(pixFmt): \(track.depth) \(track.hasAlpha)")
        let json = try #require(try Self.tracksJSON(daemon, file).first)
        #expect(json["depth"] as? Int == Int(stored) && json["hasAlpha"] as? Bool == alpha, "\(json)")
    }

    /// The depth field of the first sample entry of the first `stsd` box (QuickTime's image description: 82 bytes
    /// into the entry), read from the file's bytes.
    static func sampleDescriptionDepth(_ file: String) -> UInt16? {
        guard let data = FileManager.default.contents(atPath: file).map(Array.init),
              let at = data.indices.dropLast(4).first(where: { data[$0..<($0 + 4)].elementsEqual("stsd".utf8) }),
              at + 12 + 84 <= data.count else { return nil }
        let depth = at + 12 + 82  // after the type: version and flags, entry count; then the entry
        return UInt16(data[depth]) << 8 | UInt16(data[depth + 1])
    }

    /// The SPS and PPS NAL units of an avcC (ISO 14496-15 5.3.3.1), in order.
    static func avcCUnits(_ c: [UInt8]) -> [[UInt8]] {
        guard c.count > 6 else { return [] }
        var units: [[UInt8]] = [], at = 5
        for countMask in [0x1F, 0xFF] {
            guard at < c.count else { break }
            let n = Int(c[at]) & countMask
            at += 1
            units += sizedUnits(c, at: &at, count: n)
        }
        return units
    }

    /// The NAL units of an hvcC's arrays (ISO 14496-15 8.3.3.1: 22 header bytes, numOfArrays, then each array's type
    /// byte, u16 count and u16-sized units), in order.
    static func hvcCUnits(_ c: [UInt8]) -> [[UInt8]] {
        guard c.count > 23 else { return [] }
        var units: [[UInt8]] = [], at = 23
        for _ in 0..<Int(c[22]) where at + 3 <= c.count {
            let n = Int(c[at + 1]) << 8 | Int(c[at + 2])
            at += 3
            units += sizedUnits(c, at: &at, count: n)
        }
        return units
    }

    /// `count` NAL units from `at`, each after its u16 size (cut short at the end of `c`); `at` moves past them.
    static func sizedUnits(_ c: [UInt8], at: inout Int, count: Int) -> [[UInt8]] {
        var units: [[UInt8]] = []
        for _ in 0..<count where at + 2 <= c.count {
            let size = Int(c[at]) << 8 | Int(c[at + 1])
            units.append(Array(c[(at + 2)..<min(at + 2 + size, c.count)]))
            at += 2 + size
        }
        return units
    }

    /// The NAL units of an Annex B byte stream (split at 00 00 01 start codes; a 00 before one belongs to it).
    static func annexBUnits(_ b: [UInt8]) -> [[UInt8]] {
        var starts: [Int] = []
        var i = 0
        while i + 3 <= b.count {
            if b[i] == 0, b[i + 1] == 0, b[i + 2] == 1 { starts.append(i + 3); i += 3 } else { i += 1 }
        }
        return starts.enumerated().map { k, start in
            var end = k + 1 < starts.count ? starts[k + 1] - 3 : b.count
            while end > start, b[end - 1] == 0 { end -= 1 }
            return Array(b[start..<end])
        }
    }
}
