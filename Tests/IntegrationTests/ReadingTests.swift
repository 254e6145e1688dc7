import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// End to end through a real trackd, real workers and real GStreamer, checked against ffmpeg/ffprobe.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ReadingTests {
    /// Every sample of `track` decoded with `settings`, as (pts seconds, packed md5, packed size).
    func readAll(_ asset: Asset, settings: [String: SettingValue]?, copies: Bool = true)
        throws -> (samples: [(pts: Double, dts: MediaTime, md5: String, size: Int, sync: Bool)], reader: AssetReader)
    {
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        try output.setAlwaysCopiesSampleData(copies)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        var result: [(Double, MediaTime, String, Int, Bool)] = []
        while let sample = try output.copyNextSampleBuffer() {
            let packed = sample.packedBytes()
            result.append((sample.presentationTimeStamp.seconds, sample.decodeTimeStamp, md5Hex(packed), packed.count, sample.isSync))
        }
        return (result, reader)
    }

    @Test func tracksMatchFFprobe() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let video = try #require(asset.tracks(withMediaType: .video).first)
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(video.codec == "avc1")
        #expect(video.naturalSize.width == 320 && video.naturalSize.height == 240)
        #expect(abs(video.nominalFrameRate - 30) < 0.01)
        #expect(abs(video.duration.seconds - 2.0) < 0.05)
        #expect(video.depth == 24 && !video.hasAlpha)
        #expect(audio.codec == "mp4a")
        #expect(audio.sampleRate == 48000 && audio.channelCount == 2)
        #expect(audio.languageCode == "eng")
        #expect(video.trackID == 1 && audio.trackID == 2, "track ids are the container's (ffmpeg numbers them 1, 2)")
    }

    @Test(arguments: [("420v", "nv12"), ("y420", "yuv420p")])
    func decodedFramesEqualFFmpeg(format: String, pixFmt: String) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let code = try #require(PixelFormat.parse(format)).code
        let (samples, reader) = try readAll(asset, settings: [SettingsKey.pixelFormatType: .int(Int64(code.rawValue))],
                                            copies: format == "y420")
        #expect(reader.status == .completed)
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: pixFmt)
        let pts = try Oracle.framePTS(Media.clip)
        #expect(samples.count == 60)
        #expect(samples.count == oracle.count)
        for (i, (s, o)) in zip(samples, oracle).enumerated() {
            #expect(s.size == o.size, "frame \(i) size")
            #expect(s.md5 == o.md5, "frame \(i) bytes differ from ffmpeg's")
        }
        #expect(pts.count == samples.count)
        for (i, (s, p)) in zip(samples, pts).enumerated() {
            #expect(abs(s.pts - p) < 0.0005, "frame \(i) pts \(s.pts) vs ffprobe \(p)")
        }
    }

    @Test func passthroughGivesStoredPacketsInDecodeOrder() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        let config = try #require(output.outputFormat).codecConfig
        #expect(config.first == 1, "avcC starts with configurationVersion 1")
        var got: [(dts: Double, pts: Double, size: Int, sync: Bool)] = []
        while let s = try output.copyNextSampleBuffer() {
            #expect(s.format == "avc1")
            #expect(s.decodeTimeStamp.isValid)
            got.append((s.decodeTimeStamp.seconds, s.presentationTimeStamp.seconds, s.dataLength, s.isSync))
        }
        #expect(reader.status == .completed)
        let packets = try Oracle.packets(Media.clip)
        #expect(got.count == packets.count)
        for (i, (g, p)) in zip(got, packets).enumerated() {
            #expect(g.size == p.size, "packet \(i) size")
            #expect(abs(g.pts - p.pts) < 0.0005, "packet \(i) pts")
            #expect(g.sync == p.key, "packet \(i) sync flag")
        }
        // Decode order: DTS never decreases, PTS does (B-frames).
        #expect(zip(got, got.dropFirst()).allSatisfy { $0.dts <= $1.dts })
        #expect(zip(got, got.dropFirst()).contains { $0.pts > $1.pts })
    }

    /// Passthrough with a range starting between keyframes starts at the sync sample at or before the range start
    /// (what a decoder needs to show the range), and its samples cover the range to its end: for the reader's
    /// timeRange and after a random-access reset.
    @Test func passthroughRangesStartAtThePrecedingSyncSample() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        // GOP 15 at 30 fps: keyframes at 0, 0.5, 1.0, 1.5 s; 1.21 lies between 1.0 and 1.5.
        try reader.setTimeRange(MediaTimeRange(start: MediaTime(seconds: 1.21), duration: MediaTime(seconds: 0.24)))
        #expect(try reader.startReading())
        let packets = try Oracle.packets(Media.clip)
        func check(start: Double, end: Double, sourceLocation: SourceLocation = #_sourceLocation) throws {
            var got: [(pts: Double, sync: Bool, size: Int)] = []
            while let s = try output.copyNextSampleBuffer() {
                got.append((s.presentationTimeStamp.seconds, s.isSync, s.dataLength))
            }
            let first = try #require(got.first, sourceLocation: sourceLocation)
            #expect(first.sync && first.pts <= start + 0.0001, "first sample \(first)", sourceLocation: sourceLocation)
            #expect(abs(first.pts - 1.0) < 0.0005, "the keyframe at 1.0 s, not \(first.pts)", sourceLocation: sourceLocation)
            // Every frame shown in [start, end) is there, with the stored sizes.
            let shown = packets.filter { $0.pts + 1.0 / 30 > start + 0.0001 && $0.pts < end - 0.0001 }
            for p in shown {
                let match = got.first { abs($0.pts - p.pts) < 0.0005 }
                #expect(match?.size == p.size, "frame at \(p.pts)", sourceLocation: sourceLocation)
            }
            // In decode order, from the keyframe through the last packet shown before the end, nothing skipped: the
            // B-frames at 1.4333 need the P-frame at 1.4667 (stored before them), which a PTS stop would drop.
            let k = try #require(packets.firstIndex { abs($0.pts - first.pts) < 0.0005 }, sourceLocation: sourceLocation)
            let last = try #require(packets.lastIndex { $0.pts < end - 0.0001 }, sourceLocation: sourceLocation)
            #expect(got.count >= last - k + 1 && got.count <= last - k + 3, "\(got.map(\.pts))", sourceLocation: sourceLocation)
            for (g, p) in zip(got, packets[k...last]) {
                #expect(abs(g.pts - p.pts) < 0.0005 && g.size == p.size, "\(g) vs \(p)", sourceLocation: sourceLocation)
            }
            #expect(got.allSatisfy { $0.pts < end + 0.1 }, "\(got.map(\.pts))", sourceLocation: sourceLocation)
        }
        try check(start: 1.21, end: 1.45)
        try output.reset(forReadingTimeRanges: [MediaTimeRange(start: MediaTime(seconds: 1.21), duration: MediaTime(seconds: 0.24))])
        try check(start: 1.21, end: 1.45)
        output.markConfigurationAsFinal()
        #expect(reader.status == .completed)
    }

    @Test func moovAtStartAndEndBothPlay() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        for file in [Media.faststart, Media.clip] {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let (samples, reader) = try readAll(asset, settings: [:])
            #expect(reader.status == .completed)
            #expect(samples.count == (file == Media.clip ? 60 : 30))
        }
    }

    @Test func scaledBGRAHasTheRequestedSize() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [
            "PixelFormatType": .string("BGRA"), "Width": .int(160), "Height": .int(90),
        ])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        let first = try #require(try output.copyNextSampleBuffer())
        #expect(first.format == "BGRA")
        #expect(first.width == 160 && first.height == 90)
        #expect(first.planes.count == 1 && first.planes[0].rowBytes == 640 && first.planes[0].height == 90)
        #expect(first.packedBytes().count == 160 * 90 * 4)
        reader.cancelReading()
        #expect(reader.status == .cancelled)
        #expect(try output.copyNextSampleBuffer() == nil)
    }

    @Test func fullRangeSourceIsConvertedToVideoRangeFor420v() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.fullRange, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        for (code, range, lumaRange) in [("420v", UInt8(1), 16...235), ("420f", UInt8(2), 0...255)] {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string(code)])
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            #expect(try reader.startReading())
            var minY = 255, maxY = 0
            while let s = try output.copyNextSampleBuffer() {
                #expect(s.colorimetry.range == range, "\(code) reports range \(s.colorimetry.range)")
                let luma = s.planes[0]
                s.withUnsafeBytes { raw in
                    for row in 0..<Int(luma.height) {
                        for x in 0..<Int(luma.rowBytes) {
                            let v = Int(raw[Int(luma.offset) + row * Int(luma.bytesPerRow) + x])
                            minY = min(minY, v)
                            maxY = max(maxY, v)
                        }
                    }
                }
            }
            #expect(reader.status == .completed)
            #expect(lumaRange.contains(minY) && lumaRange.contains(maxY), "\(code): luma \(minY)...\(maxY)")
            if code == "420f" { #expect(minY < 16 || maxY > 235, "full range output uses the full scale") }
        }
    }

    @Test func timeRangeLimitsTheSamples() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [:])
        let reader = AssetReader(asset: asset)
        try reader.setTimeRange(MediaTimeRange(start: MediaTime(seconds: 0.5), duration: MediaTime(seconds: 0.5)))
        try reader.add(output)
        #expect(try reader.startReading())
        var pts: [Double] = []
        while let s = try output.copyNextSampleBuffer() { pts.append(s.presentationTimeStamp.seconds) }
        #expect(reader.status == .completed)
        #expect(pts.count >= 15 && pts.count <= 16, "\(pts)")
        #expect(pts.allSatisfy { $0 >= 0.5 - 1.0 / 30 && $0 < 1.0 })
    }

    @Test func frameIsTheExactFrameShownAtThatTime() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        // 1.21 s lies inside frame 36 (1.200–1.233 s), between the keyframes at 1.0 and 1.5 s (GOP 15): the
        // nearest keyframe would be the wrong answer.
        let image = try asset.generateImage(track: track, at: MediaTime(seconds: 1.21))
        #expect(Array(image.png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(image.width == 320 && image.height == 240)
        let pts = try Oracle.framePTS(Media.clip)
        let expected = try #require(pts.last { $0 <= 1.21 })
        #expect(abs(image.actualTime.seconds - expected) < 0.0005)
        // The PNG shows that frame: compare with ffmpeg's decode of the same frame, converted to RGB.
        let dir = Env.tempDir("frame")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = FileManager.default.createFile(atPath: dir + "/f.png", contents: Data(image.png))
        let ours = try run("ffmpeg", ["-v", "error", "-i", dir + "/f.png", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout
        let index = try #require(pts.firstIndex(of: expected))
        func theirs(_ n: Int) throws -> Data {
            try run("ffmpeg", ["-v", "error", "-i", Media.clip, "-vf", "select=eq(n\\,\(n))", "-frames:v", "1",
                               "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout
        }
        #expect(ours.count == 320 * 240 * 3)
        // Colour conversion differs slightly between GStreamer and swscale, so compare by mean absolute difference:
        // the right frame is much closer than its neighbours.
        func distance(_ a: Data, _ b: Data) -> Double {
            guard a.count == b.count else { return .infinity }
            return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
        }
        let dRight = distance(ours, try theirs(index))
        let dPrev = distance(ours, try theirs(index - 1))
        let dNext = distance(ours, try theirs(index + 1))
        #expect(dRight < 3, "mean abs difference to ffmpeg's frame \(index): \(dRight)")
        #expect(dRight < dPrev && dRight < dNext, "\(dRight) vs neighbours \(dPrev), \(dNext)")
    }

    /// Holding every slot stops the worker: it never sends more samples than the pool has slots, and resumes
    /// when they are released.
    @Test func heldSlotsApplyBackPressure() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("BGRA")])
        try output.setAlwaysCopiesSampleData(false)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var held: [SampleBuffer] = []
        for _ in 0..<8 { held.append(try #require(try output.copyNextSampleBuffer())) }  // a pool has at most 8 slots
        // A worker without back-pressure would run ahead: the count stays at 8 for 300 ms.
        #expect(try holds(for: .milliseconds(300)) { try asset.serverStatus().samplesSent == 8 })
        let sent = try asset.serverStatus().samplesSent
        #expect(sent == 8, "the worker sent \(sent) samples while the client held every slot")
        held.removeAll()
        var rest = 0
        while try output.copyNextSampleBuffer() != nil { rest += 1 }
        #expect(rest == 52)
        #expect(reader.status == .completed)
    }

    @Test func twoClientsReadAtOnce() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let results = Mutex2<[Int]>([])
        let socketPath = daemon.socketPath
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            do {
                let asset = try Asset(path: Media.clip, socketPath: socketPath)
                let (samples, reader) = try readAll(asset, settings: ["PixelFormatType": .string("y420")], copies: false)
                results.with { $0.append(reader.status == .completed ? samples.count : -1) }
            } catch {
                results.with { $0.append(-2) }
            }
        }
        #expect(results.with { $0 } == [60, 60, 60])
    }
}

/// A tiny lock box for tests.
final class Mutex2<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ v: T) { value = v }
    func with<R>(_ f: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return f(&value)
    }
}
