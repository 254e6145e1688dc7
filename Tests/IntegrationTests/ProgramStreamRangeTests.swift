import Foundation
import TestSupport
import Testing
import TrackClient

/// Time ranges of an MPEG-PS, decoded and passthrough, against ffmpeg: ffmpeg's `-f mpeg` (MPEG-2 with a GOP of 12 +
/// MP2) and GStreamer's mpegpsmux (H.264 with B-frames, one key frame + MP2), the files MPEGStreamDurationTests
/// makes. mpegpsdemux seeks by SCR into the middle of a GOP and ends a segment when any stream passes the stop;
/// trackd reads a PS range from the beginning and cuts it itself (TrackPipeline.readsFromStart). Ranges start just
/// before, at and just after a key frame (or, in GStreamer's file, mid-GOP), on a frame's time and one tick after it:
/// - decoded: the frames shown in the range (from the one shown at its start), ffmpeg's bytes (`-f framemd5`) and
///   ffprobe's PTS;
/// - passthrough: ffprobe's packets in decode order from the last key packet presented at or before the start,
///   through the last one whose DTS is before the end (PROTOCOL.md §12.7), each at its PTS;
/// - the same ranges again through ResetOutput on one output (each a flush-seek back to the beginning).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ProgramStreamRangeTests {
    static let kinds = ["ps-ffmpeg-mpeg2-mp2", "ps-gstreamer-h264-mp2"]

    /// ffprobe's packets of `stream` in decode order: PTS (placed as MPEGStreamDurationTests does where ffprobe has
    /// none), DTS and the key flag, integers in 1/90000.
    static func packets(_ file: String, _ stream: String) throws -> [(pts: Int64, dts: Int64, key: Bool)] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                    "packet=pts,dts,duration,flags", "-of", "json", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        let int = { (o: [String: Any], k: String) -> Int64? in (o[k] as? NSNumber)?.int64Value }
        return try (json["packets"] as? [[String: Any]] ?? []).map { p in
            let dts = try #require(int(p, "dts"))
            let pts = try int(p, "pts") ?? dts + #require(int(p, "duration"))
            return (pts, dts, (p["flags"] as? String ?? "").hasPrefix("K"))
        }
    }

    /// The packets a passthrough range [start, end) delivers (ticks on ffprobe's clock).
    static func stored(_ packets: [(pts: Int64, dts: Int64, key: Bool)], start: Int64, end: Int64) -> [Int64] {
        let first = packets.lastIndex { $0.key && $0.pts <= start } ?? 0
        return packets[first...].filter { $0.dts < end }.map(\.pts)
    }

    /// Frame indices (presentation order) the ranges start at: one before, at and one after each of the first two
    /// key frames after the first; GStreamer's file has one key frame, so mid-GOP frames (13: the frame shown at
    /// 0.45 s) stand in.
    static func starts(_ keys: [Int], frames: Int) -> [Int] {
        let later = keys.filter { $0 > 0 }.prefix(2)
        return later.isEmpty ? [13, frames / 2] : later.flatMap { [$0 - 1, $0, $0 + 1] }
    }

    @Test(arguments: kinds) func rangesAreFfmpegsFrames(kind: String) throws {
        let file = try #require(MPEGStreamDurationTests.files[kind])
        let time = try MPEGStreamDurationTests.timeline(file)
        let packets = try Self.packets(file, "v:0")
        let pts = packets.map(\.pts).sorted()
        let keys = packets.filter(\.key).map { p in pts.firstIndex(of: p.pts)! }.sorted()
        let md5 = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        try #require(md5.count == pts.count, "\(kind): ffmpeg's frames and ffprobe's packets")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        var ranges: [(range: MediaTimeRange, frames: Range<Int>, stored: [Int64])] = []
        for s in Self.starts(keys, frames: pts.count) {
            for offset: Int64 in [0, 1] {  // on the frame's time, and one tick after it
                let (start, end) = (pts[s] + offset, pts[s + 4])
                let range = MediaTimeRange(start: time(start), duration: MediaTime(value: end - start, timescale: 90000))
                ranges.append((range, s..<(s + 4), Self.stored(packets, start: start, end: end)))
            }
        }
        for (range, frames, stored) in ranges {
            let what = "\(kind) \(range.start.value)+\(range.duration.value)"
            let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420, range: range)
            #expect(decoded.map { md5Hex($0.packedBytes()) } == Array(md5[frames]), "\(what) decoded bytes")
            #expect(decoded.map(\.presentationTimeStamp) == pts[frames].map(time), "\(what) decoded PTS")
            let samples = try TimescaleTests.read(asset, track, nil, range: range)
            #expect(samples.map(\.presentationTimeStamp) == stored.map(time), "\(what) passthrough PTS")
        }
        // Those that do not overlap (ResetOutput's rule), through ResetOutput on one output, decoded and passthrough:
        // each a flush-seek back to the beginning.
        var apart: [(range: MediaTimeRange, frames: Range<Int>, stored: [Int64])] = []
        for r in ranges where apart.last.map({ pts[r.frames.lowerBound] >= pts[$0.frames.upperBound] }) ?? true {
            apart.append(r)
        }
        try #require(apart.count >= 2, "\(kind): ranges apart")
        for settings in [TimescaleTests.y420, nil] {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
            try output.setSupportsRandomAccess(true)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            try reader.setTimeRange(apart[0].range)
            #expect(try reader.startReading())
            var got: [MediaTime] = []
            while let s = try output.copyNextSampleBuffer() { got.append(s.presentationTimeStamp) }
            try output.reset(forReadingTimeRanges: apart.dropFirst().map(\.range))
            while let s = try output.copyNextSampleBuffer() { got.append(s.presentationTimeStamp) }
            output.markConfigurationAsFinal()
            let expected = settings == nil ? apart.flatMap(\.stored) : apart.flatMap { pts[$0.frames] }
            #expect(got == expected.map(time), "\(kind) reset ranges, \(settings == nil ? "passthrough" : "decoded")")
        }
    }

    /// The MP2 track of the same files: passthrough from the packet playing at the start through the last one
    /// before the end; decoded, exactly the range's 48 kHz samples, the same bytes as that stretch of a whole read.
    @Test(arguments: kinds) func audioRangesAreFfprobes(kind: String) throws {
        let file = try #require(MPEGStreamDurationTests.files[kind])
        let time = try MPEGStreamDurationTests.timeline(file)
        let packets = try Self.packets(file, "a:0")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.bitDepth: .int(16),
                                                SettingsKey.isFloat: .bool(false)]
        let wholeRead = try TimescaleTests.read(asset, track, settings)
        let whole = wholeRead.flatMap { $0.packedBytes() }
        let wholeStart = try #require(wholeRead.first?.presentationTimeStamp)
        try #require(wholeStart.timescale == 48000)
        let first = try #require(packets.first?.pts)
        let bytesPerFrame = Int(track.channelCount) * 2
        for (start, end) in [(first + 45000, first + 54000), (first + 90001, first + 99000)] {
            let range = MediaTimeRange(start: time(start), duration: MediaTime(value: end - start, timescale: 90000))
            let stored = try TimescaleTests.read(asset, track, nil, range: range)
            #expect(stored.map(\.presentationTimeStamp) == Self.stored(packets, start: start, end: end).map(time), "\(kind) \(start) passthrough")
            let decoded = try TimescaleTests.read(asset, track, settings, range: range)
            // The range's frames at 48 kHz, each end rounded (a tick of 1/90000 s is 8/15 of a frame).
            let (from, count) = ((time(start).value * 8 + 7) / 15, ((end - start) * 8 + 7) / 15)
            let bytes = decoded.flatMap { $0.packedBytes() }
            #expect(decoded.first?.presentationTimeStamp == MediaTime(value: from, timescale: 48000), "\(kind) \(start) decoded start")
            #expect(bytes.count == Int(count) * bytesPerFrame, "\(kind) \(start) decoded frames")
            let at = Int(from - wholeStart.value) * bytesPerFrame
            #expect(at >= 0 && at + bytes.count <= whole.count && Array(whole[at..<(at + bytes.count)]) == bytes,
                    "\(kind) \(start) decoded bytes")
        }
    }
}
