import Foundation
import TestSupport
import Testing
import TrackClient

/// Passthrough outputs (no settings) deliver every stored sample as ffmpeg's demuxer has it — compared with
/// `ffmpeg -c copy -f framemd5`: the same count, and each sample's size, bytes (MD5) and PTS (in the stream's
/// time_base, as integers) — with codec headers only in the codec configuration, never as samples.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct PassthroughCompletenessTests {
    /// (pts, size, md5) of every packet of stream `map` (`0:a`, `0:v`) in `file`, and the stream's time_base.
    func framemd5(_ file: String, _ map: String) throws -> (packets: [(pts: Int64, size: Int, md5: String)], timeBase: (Int64, Int64)) {
        let r = try run("ffmpeg", ["-v", "error", "-i", file, "-map", map, "-c", "copy", "-f", "framemd5", "-"])
        #expect(r.status == 0, "\(r.stderr)")
        var packets: [(Int64, Int, String)] = [], timeBase: (Int64, Int64) = (0, 1)
        for line in r.text.split(separator: "\n") {
            if line.hasPrefix("#tb 0: ") {
                let parts = line.dropFirst(7).split(separator: "/").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
                if parts.count == 2 { timeBase = (parts[0], parts[1]) }
            }
            if line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            // stream, dts, pts, duration, size, md5[, side data: "S=1, size, md5"]
            guard fields.count >= 6, let pts = Int64(fields[2]), let size = Int(fields[4]) else { continue }
            packets.append((pts, size, fields[5]))
        }
        return (packets, timeBase)
    }

    /// Every passthrough sample of `track`: (PTS, bytes' MD5, size, trims), and the output's codec configuration.
    func passthrough(_ file: String, _ daemon: Daemon, _ type: MediaType) throws
        -> (samples: [(pts: MediaTime, size: Int, md5: String, trims: (MediaTime?, MediaTime?))], config: [UInt8]) {
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: type).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var samples: [(MediaTime, Int, String, (MediaTime?, MediaTime?))] = []
        while let sample = try output.copyNextSampleBuffer() {
            let bytes = sample.packedBytes()
            let trims = (sample.attachment(forKey: SampleBuffer.trimDurationAtStartKey),
                         sample.attachment(forKey: SampleBuffer.trimDurationAtEndKey))
            samples.append((sample.presentationTimeStamp, bytes.count, md5Hex(bytes), trims))
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return (samples, output.outputFormat?.codecConfig ?? [])
    }

    /// Whether `time` is `value` × `timeBase` to within half a tick of the time base, in integers.
    static func isTime(_ time: MediaTime, _ value: Int64, timeBase: (num: Int64, den: Int64)) -> Bool {
        guard time.isNumeric else { return false }
        let scale = Int64(time.timescale)
        return 2 * abs(time.value * timeBase.den - value * timeBase.num * scale) < scale * timeBase.num
    }

    @discardableResult
    func compare(_ file: String, _ type: MediaType, map: String,
                 check: ([(pts: MediaTime, size: Int, md5: String, trims: (MediaTime?, MediaTime?))]) throws -> Void = { _ in })
        throws -> [UInt8] {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, config) = try passthrough(file, daemon, type)
        try check(ours)
        let (theirs, timeBase) = try framemd5(file, map)
        #expect(theirs.count > 10)
        #expect(ours.count == theirs.count, "\(file): \(ours.count) samples, ffmpeg has \(theirs.count) packets")
        for (i, (a, b)) in zip(ours, theirs).enumerated() {
            #expect(a.size == b.size && a.md5 == b.md5, "\(file) sample \(i): \(a.size) bytes \(a.md5), ffmpeg \(b.size) \(b.md5)")
            #expect(Self.isTime(a.pts, b.pts, timeBase: timeBase), "\(file) sample \(i): PTS \(a.pts), ffmpeg \(b.pts) × \(timeBase)")
        }
        return config
    }

    /// The extradata ffprobe shows for the first stream of `file` (`-show_data`'s hex dump).
    func extradata(_ file: String) throws -> [UInt8] {
        let r = try run("ffprobe", ["-v", "error", "-show_streams", "-show_data", file])
        var bytes: [UInt8] = [], inDump = false
        for line in r.text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "extradata=" { inDump = true; continue }
            guard inDump else { continue }
            guard let colon = line.firstIndex(of: ":"), line.count > 10 else { break }
            // "00000000: 1200 1200 0007 …  ascii": the hex groups end at the double space before the text.
            let hex = line[line.index(colon, offsetBy: 2)...].components(separatedBy: "  ")[0].replacingOccurrences(of: " ", with: "")
            var at = hex.startIndex
            while at < hex.endIndex, let next = hex.index(at, offsetBy: 2, limitedBy: hex.endIndex), let byte = UInt8(hex[at..<next], radix: 16) {
                bytes.append(byte)
                at = next
            }
        }
        return bytes
    }

    /// FLAC: the frames only — flacparse's fLaC marker and metadata blocks (STREAMINFO, VORBIS_COMMENT, PADDING) are
    /// not samples — and the codec configuration is STREAMINFO, ffmpeg's 34-byte extradata. In Matroska too.
    @Test(arguments: ["flac", "flacMKA"])
    func flacFramesAndStreamInfo(_ name: String) throws {
        let file = name == "flac" ? AudioMedia.flac : AudioMedia.flacMKA
        let config = try compare(file, .audio, map: "0:a")
        let expected = try extradata(file)
        #expect(expected.count == 34, "ffprobe's extradata: \(expected.count) bytes")
        #expect(config == expected, "codec configuration \(config.count) bytes")
    }

    /// H.264 in MP4 (B-frames, an edit list): unchanged — every stored sample, avcC as the configuration, no trims.
    @Test func h264InMP4() throws {
        let config = try compare(Media.clip, .video, map: "0:v") { ours in
            #expect(ours.allSatisfy { $0.trims.0 == nil && $0.trims.1 == nil })
        }
        #expect(config.first == 1, "avcC version 1, got \(config.prefix(4))")
    }

    /// AAC in MP4 made by ffmpeg (its edit list skips the 1024 frames of priming and ends inside the last packet):
    /// every stored packet — the priming packet (PTS −1024) and the last one too — with the trims the edit implies:
    /// the first packet's TrimDurationAtStart is ffprobe's skip_samples, the last one's TrimDurationAtEnd the part
    /// of its 1024 frames beyond its edited duration; no other packet has trims. Two lengths: qtdemux 1.22 pushes
    /// the last packet of the 1.5 s track but not of the 3 s one.
    @Test(arguments: [1.5, 3.0])
    func aacInMP4(_ seconds: Double) throws {
        let file = seconds == 1.5 ? ChunkMedia.aacMP4 : ChunkMedia.aacMP4Long
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                    "packet=pts,duration:packet_side_data=skip_samples", "-of", "json", file])
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let packets = try #require(json["packets"] as? [[String: Any]])
        let skip = try #require(((packets.first?["side_data_list"] as? [[String: Any]])?.first?["skip_samples"]) as? Int)
        let lastDuration = try #require(packets.last?["duration"] as? Int)
        #expect(skip == 1024 && lastDuration < 1024)
        let rate: Int64 = 44100
        try compare(file, .audio, map: "0:a") { ours in
            try #require(ours.count == packets.count)
            let first = ours[0].trims, last = ours[ours.count - 1].trims
            #expect(first.0.map { $0.value * rate == Int64(skip) * Int64($0.timescale) } == true, "\(String(describing: first.0))")
            #expect(first.1 == nil)
            #expect(last.0 == nil)
            #expect(last.1.map { $0.value * rate == Int64(1024 - lastDuration) * Int64($0.timescale) } == true,
                    "\(String(describing: last.1))")
            #expect(ours.dropFirst().dropLast().allSatisfy { $0.trims.0 == nil && $0.trims.1 == nil })
        }
    }

    /// H.264 in MPEG-TS made by ffmpeg (B-frames, three GOPs): every stored access unit — the keyframes too, which
    /// h264parse flags HEADER because they carry SPS/PPS (they were left out as codec headers: 27 of ffmpeg's 30
    /// packets) — in decode order, with ffmpeg's PTS and DTS less the first PCR (PROTOCOL.md §7.1) and its key
    /// frames. The parser delivers each access unit length-prefixed (PROTOCOL.md §9), so the bytes are compared as
    /// NAL units: each sample's are ffmpeg's packet's, without the start codes.
    @Test func h264InMPEGTS() throws {
        let file = Media.make("passthrough-h264.ts", TimescaleTests.source + TimescaleTests.x264 + ["-f", "mpegts"])
        let bytes = try #require(FileManager.default.contents(atPath: file))
        let pcr = try #require(TransportStreamTimesTests.firstPCR([UInt8](bytes)))
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,dts,size,flags",
                                    "-of", "csv=p=0", file])
        let packets = r.text.split(separator: "\n").map { $0.split(separator: ",") }.filter { $0.count >= 4 }
        let stored = try run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:v", "-c", "copy", "-f", "h264", "-"]).stdout
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let ours = try TimescaleTests.read(asset, try #require(asset.tracks(withMediaType: .video).first), nil)
        #expect(packets.count == 30 && packets.filter { $0[3].hasPrefix("K") }.count == 3)
        #expect(ours.count == packets.count, "\(ours.count) samples, ffprobe has \(packets.count) packets")
        var at = 0
        for (i, (sample, packet)) in zip(ours, packets).enumerated() {
            let (pts, dts, size) = (Int64(packet[0])! - pcr, Int64(packet[1])! - pcr, Int(packet[2])!)
            #expect(sample.presentationTimeStamp == MediaTime(value: pts, timescale: 90000), "sample \(i) PTS")
            #expect(sample.decodeTimeStamp == MediaTime(value: dts, timescale: 90000), "sample \(i) DTS")
            #expect(sample.isSync == packet[3].hasPrefix("K"), "sample \(i) sync")
            let theirs = Self.annexBUnits(Array(stored[at..<min(at + size, stored.count)]))
            at += size
            #expect(Self.lengthPrefixedUnits(sample.packedBytes()) == theirs, "sample \(i): NAL units differ")
        }
    }

    /// AAC in ffmpeg's MPEG-TS (beside H.264): every stored ADTS frame, the bytes and sizes of `-c copy -f framemd5`,
    /// at ffprobe's PTS less the first PCR. The first (ffmpeg's priming frame, PTS 130080) ends where tsdemux starts
    /// its segment, at the video's first PTS, and appsink dropped it as outside the segment: 47 of 48 arrived.
    @Test func aacInMPEGTS() throws {
        let file = TransportStreamTimesTests.file
        let bytes = try #require(FileManager.default.contents(atPath: file))
        let pcr = try #require(TransportStreamTimesTests.firstPCR([UInt8](bytes)))
        let probed = try TransportStreamTimesTests.packets("a:0")
        let (theirs, _) = try framemd5(file, "0:a")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (ours, _) = try passthrough(file, daemon, .audio)
        #expect(theirs.count == 48 && probed.count == theirs.count)
        #expect(ours.count == theirs.count, "\(ours.count) samples, ffmpeg has \(theirs.count) packets")
        for (i, (a, (b, p))) in zip(ours, zip(theirs, probed)).enumerated() {
            #expect(a.size == b.size && a.md5 == b.md5, "sample \(i): \(a.size) bytes \(a.md5), ffmpeg \(b.size) \(b.md5)")
            #expect(a.pts == MediaTime(value: p.pts - pcr, timescale: 90000), "sample \(i): PTS \(a.pts), ffprobe \(p.pts) − \(pcr)")
        }
    }

    /// The NAL units of an Annex B access unit (split at 00 00 01 / 00 00 00 01 start codes).
    static func annexBUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        var starts: [(code: Int, payload: Int)] = []
        var i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                starts.append((i > 0 && bytes[i - 1] == 0 ? i - 1 : i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        return starts.indices.map { k in
            Array(bytes[starts[k].payload..<(k + 1 < starts.count ? starts[k + 1].code : bytes.count)])
        }
    }

    /// The NAL units of a sample of 4-byte big-endian lengths and units.
    static func lengthPrefixedUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = [], at = 0
        while at + 4 <= bytes.count {
            let length = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            guard at + 4 + length <= bytes.count else { return units + [[]] }
            units.append(Array(bytes[at + 4..<at + 4 + length]))
            at += 4 + length
        }
        return units
    }
}
