import Foundation
import TestSupport
import Testing
import TrackClient

/// H.264 and MPEG-4 Part 2 in AVI with open GOPs (x264 `open-gop=1`: key frames after the first are I-pictures that
/// are not IDR; ffmpeg's `mpeg4` without `+cgop`: open GOVs), where the B-pictures decoded right after a key frame
/// may be shown before it, referring to the GOP before. Every range of a table around each key frame — starting in
/// the GOP before, at the key frame's decode time, on its leading B-pictures, on the key frame, after it, and across
/// GOPs — and every reset delivers exactly ffmpeg's frames (framemd5) at their integer times, nothing lost
/// (PROTOCOL.md §7.2). Made by ffmpeg and by GStreamer's x264enc ! avimux.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AVIOpenGOPTests {
    /// 60 frames at 30 fps (time base 1/30), 320×240, two B-frames between references.
    /// - `leading`: a key frame every 24 frames, scene cuts off, fixed B-frames: key frames at decode times 0, 22 and
    ///   46, the second and third shown at 24 and 48 after the two leading B-pictures decoded after them.
    /// - `plain`: ffmpeg's `-g 30` with open GOPs: the second key frame, at 30, has no leading B-picture.
    /// - `gstreamer`: `leading` made by x264enc ! avimux.
    /// - `mpeg4`: ffmpeg's MPEG-4 Part 2, a key frame every 24 frames, open GOVs: laid out as `leading`.
    /// - `leading-160x120`, `leading-192x144`: `leading` at that size, where most B-pictures are 256–511 bytes, so
    ///   their 4-byte NAL lengths in h264parse's `avc` form start with the bytes of a start code (00 00 01).
    static func file(_ variant: String) -> String {
        let (width, height) = size(variant)
        let source = ["-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=30:duration=2", "-pix_fmt", "yuv420p",
                      "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-f", "avi"]
        let leading = "open-gop=1:keyint=24:min-keyint=24:scenecut=0:b-adapt=0"
        switch variant {
        case "leading": return Media.make("open-gop-leading.avi", source + ["-x264-params", leading])
        case "leading-160x120", "leading-192x144":
            return Media.make("open-gop-\(variant).avi", source + ["-x264-params", leading])
        case "plain": return Media.make("open-gop-plain.avi", source + ["-g", "30", "-x264-params", "open-gop=1"])
        case "mpeg4":
            return Media.make("open-gop-mpeg4.avi", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                     "-pix_fmt", "yuv420p", "-c:v", "mpeg4", "-bf", "2", "-g", "24",
                                                     "-q:v", "4", "-f", "avi"])
        default:
            return Media.makeWithGStreamer("open-gop-gstreamer.avi", [
                "videotestsrc", "num-buffers=60", "!", "video/x-raw,width=320,height=240,framerate=30/1,format=I420", "!",
                "x264enc", "speed-preset=veryfast", "bframes=2", "key-int-max=24", "b-adapt=false",
                "option-string=open-gop=1:min-keyint=24:scenecut=0", "!", "avimux"])
        }
    }

    /// A variant's picture size: 320×240 unless its name ends in `-WxH`.
    static func size(_ variant: String) -> (width: Int, height: Int) {
        let wh = variant.split(separator: "-").last?.split(separator: "x").compactMap { Int($0) } ?? []
        return wh.count == 2 ? (wh[0], wh[1]) : (320, 240)
    }

    /// The file's key frames (decode times, from ffprobe's packets) and whether each is shown after pictures decoded
    /// after it (its place among ffprobe's frames, in display order, is later than its decode time).
    static func keyFrames(_ file: String) throws -> [(dts: Int64, leading: Bool)] {
        let packets = try Probe.packets(file, "v:0")
        let frames = try Probe.frames(file, "v:0")
        try #require(packets.count == 60 && frames.count == 60, "\(packets.count) packets, \(frames.count) frames")
        let decoded = packets.filter(\.keyframe).compactMap(\.dts)
        let shown = frames.indices.filter { frames[$0].keyframe }
        try #require(decoded.count == shown.count && decoded.first == 0, "key frames at \(decoded), shown at \(shown)")
        return zip(decoded, shown).map { ($0, Int64($1) > $0) }
    }

    /// Ranges of 1 and 4 frames starting from 1 frame before to 3 after each key frame's decode time but the first
    /// (the GOP before, the key frame's decode time, its leading B-pictures, the key frame shown, after it), one across
    /// every later GOP from a leading B-picture on, and all of it.
    static func ranges(_ keys: [(dts: Int64, leading: Bool)]) -> [(start: Int64, end: Int64)] {
        var ranges: [(start: Int64, end: Int64)] = [(0, 60), (keys[1].dts + 1, 60)]
        for key in keys.dropFirst() {
            for start in key.dts - 1...key.dts + 3 {
                ranges += [(start, start + 1), (start, min(start + 4, 60))]
            }
        }
        return ranges
    }

    static func range(_ start: Int64, _ end: Int64) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(value: start, timescale: 30), duration: MediaTime(value: end - start, timescale: 30))
    }

    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    @Test(arguments: ["leading", "plain", "gstreamer", "mpeg4", "leading-160x120", "leading-192x144"])
    func rangesAreExact(_ variant: String) throws {
        let file = Self.file(variant)
        let keys = try Self.keyFrames(file)
        try #require(keys.count > 1 && keys.dropFirst().allSatisfy { $0.leading == (variant != "plain") },
                     "\(variant): key frames \(keys)")
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count == 60, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let ranges = Self.ranges(keys)
        for (start, end) in ranges {
            Self.expectExact(try Self.read(asset, Self.range(start, end)), Int(start)..<Int(end), oracle,
                             "\(variant) frames \(start)..<\(end)")
        }
        print("open-GOP AVI (\(variant)): \(ranges.count) ranges read")
    }

    /// ResetOutput takes the same path: resets to ranges starting in the GOP before a key frame, on its leading
    /// B-pictures and on the key frame are exact.
    @Test(arguments: ["leading", "plain", "gstreamer", "mpeg4", "leading-160x120", "leading-192x144"])
    func resetsAreExact(_ variant: String) throws {
        let file = Self.file(variant)
        let keys = try Self.keyFrames(file)
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count == 60 && keys.count > 1, "ffmpeg decodes \(oracle.count) frames, key frames \(keys)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let output = try AssetReaderTrackOutput(track: try #require(asset.tracks(withMediaType: .video).first),
                                                outputSettings: Self.y420)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(Self.range(0, 3))
        #expect(try reader.startReading())
        let (key, last) = (keys[1].dts, keys[keys.count - 1].dts)
        let resets: [(Int64, Int64)] = [(0, 3), (key - 2, key + 1), (key + 1, key + 4), (last + 2, last + 5),
                                        (key - 1, key + 3), (key + 2, last + 3)]
        for (i, (start, end)) in resets.enumerated() {
            if i > 0 { try output.reset(forReadingTimeRanges: [Self.range(start, end)]) }
            var samples: [SampleBuffer] = []
            while let s = try output.copyNextSampleBuffer() { samples.append(s) }
            Self.expectExact((reader, output, samples), Int(start)..<Int(end), oracle,
                             "\(variant) reset to frames \(start)..<\(end)", completes: false)
        }
        output.markConfigurationAsFinal()
        #expect(try output.copyNextSampleBuffer() == nil && reader.status == .completed && output.samplesLost == 0,
                "\(variant): \(reader.status), lost \(output.samplesLost)")
    }

    /// GenerateImage takes the ranges' seek: the image at a time on the GOP before a key frame, at its decode time,
    /// on its leading B-pictures, on the key frame and after it (each on the frame's tick, a quarter and three quarters
    /// of a tick later: the frame shown then, not the nearest tick's, PROTOCOL.md §7.1), at
    /// the start, the end and past the end (the last frame) is ffmpeg's frame shown then — of ffmpeg's RGB frames from
    /// 2 before to 2 after it, the nearest to the PNG's pixels, within 3 code values on average (videoconvert's and
    /// swscale's conversions differ slightly) — at that frame's tick.
    /// Also on closed-GOP H.264 and MPEG-4 with B-frames (AVILostSamplesTests' files: `closed-h264`, `closed-mpeg4`).
    @Test(arguments: ["leading", "plain", "gstreamer", "mpeg4", "closed-h264", "closed-mpeg4", "leading-160x120",
                      "leading-192x144"])
    func imagesAreExact(_ variant: String) throws {
        let closed = variant.hasPrefix("closed-") ? String(variant.dropFirst("closed-".count)) : nil
        let file = closed.map(AVILostSamplesTests.file) ?? Self.file(variant)
        let (width, height) = Self.size(variant)
        let (keys, oracle) = try Self.rgbOracle(file, width: width, height: height)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let dir = Env.tempDir("open-gop-image")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // (time in 1/120 s, the frame shown then, §7.1)
        var times: [(Int64, Int)] = [(0, 0), (1, 0), (2, 0), (3, 0), (233, 58), (235, 58), (236, 59), (237, 59), (240, 59), (400, 59)]
        for key in keys.dropFirst() {
            for tick in key.dts - 1...key.dts + 3 {
                times += [(4 * tick, Int(tick)), (4 * tick + 1, Int(tick)), (4 * tick + 3, Int(tick))]
            }
        }
        for (time, frame) in times {
            try Self.expectImage(asset, track, at: MediaTime(value: time, timescale: 120), frame: frame,
                                 shownAt: MediaTime(value: Int64(frame), timescale: 30), oracle, dir: dir, width: width,
                                 height: height, "\(variant) image at \(time)/120 s")
        }
        print("open-GOP AVI (\(variant)): \(times.count) images")
    }

    /// `trackctl frame --time` and `contact-sheet` on these tracks (ReadFrames on the frames' decode times, §7.2) give
    /// the exact frames too: `frame` at a time on the GOP before a key
    /// frame, its leading B-pictures, the key frame, after it, the end and past the end writes the PNG nearest ffmpeg's
    /// RGB frame shown then (mean < 3, as `imagesAreExact`) and prints that frame's index and tick; a 4-frame contact
    /// sheet is the 2×2 grid whose tiles are ffmpeg's frames shown at the slices' centres (0.25, 0.75, 1.25, 1.75 s,
    /// each the middle of a frame of the track's 1/30 grid: frames 7, 22, 37, 52, not the next ones, §7.1).
    @Test(arguments: ["leading", "mpeg4"]) func trackctlImagesAreExact(_ variant: String) throws {
        let file = Self.file(variant)
        let (keys, oracle) = try Self.rgbOracle(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("open-gop-trackctl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // (time as trackctl's N/D in 1/120 s, the frame shown then)
        let key = keys[1].dts
        var times: [(Int64, Int)] = [(0, 0), (237, 59), (238, 59), (400, 59)]
        for tick in key - 1...key + 3 { times.append((4 * tick + 1, Int(tick))) }
        for (time, frame) in times {
            let what = "\(variant) frame at \(time)/120 s"
            let png = dir + "/frame.png"
            let r = try daemon.trackctl(["frame", file, "--time", "\(time)/120", "--output", png])
            #expect(r.status == 0, "\(what): \(r.stderr)")
            let tick = String(format: "%.6f", Double(frame) / 30)
            #expect(r.text.contains("320x240 PNG, frame \(frame) at \(tick) s"), "\(what): \(r.text)")
            Self.expectNearest(try Self.rgb(png, what), frame, oracle, what)
        }

        let sheet = dir + "/sheet.png"
        let r = try daemon.trackctl(["contact-sheet", file, "--count", "4", "--output", sheet])
        #expect(r.status == 0 && r.text.contains("4 frames of track") && r.text.contains("2 columns x 2 rows"), "\(r.text) \(r.stderr)")
        let (width, height) = (12 + 2 * 332, 40 + 2 * (240 + 34))
        let pixels = [UInt8](try run("ffmpeg", ["-v", "error", "-i", sheet, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout)
        try #require(pixels.count == width * height * 3, "the sheet is \(pixels.count) bytes of RGB, not \(width)x\(height)")
        for (i, frame) in [7, 22, 37, 52].enumerated() {
            let (x0, y0) = (12 + (i % 2) * 332, 40 + (i / 2) * (240 + 34))
            var tile: [UInt8] = []
            for y in y0..<y0 + 240 { tile += pixels[(y * width + x0) * 3..<(y * width + x0 + 320) * 3] }
            Self.expectNearest(tile, frame, oracle, "\(variant) sheet tile \(i)")
        }
    }

    /// The file's key frames and ffmpeg's 60 frames of it as RGB (rgb24, `width`×`height`).
    static func rgbOracle(_ file: String, width: Int = 320, height: Int = 240) throws
        -> (keys: [(dts: Int64, leading: Bool)], frames: [[UInt8]]) {
        let keys = try keyFrames(file)
        let oracle = try Oracle.rawFrames(file, ["-vsync", "passthrough", "-pix_fmt", "rgb24"],
                                          frameSize: width * height * 3)
        try #require(oracle.count == 60 && keys.count > 1, "ffmpeg decodes \(oracle.count) frames, key frames \(keys)")
        return (keys, oracle)
    }

    /// A 320×240 (or `width`×`height`) image file as RGB (rgb24), decoded by ffmpeg.
    static func rgb(_ image: String, _ what: String, width: Int = 320, height: Int = 240) throws -> [UInt8] {
        let rgb = [UInt8](try run("ffmpeg", ["-v", "error", "-i", image, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout)
        try #require(rgb.count == width * height * 3, "\(what): \(rgb.count) bytes of RGB")
        return rgb
    }

    /// GenerateImage of `track` at `time`: the frame `frame`, reported `shownAt`, its PNG nearest ffmpeg's frame
    /// `frame` of `oracle` (expectNearest; images `width`×`height`, written in `dir`).
    static func expectImage(_ asset: Asset, _ track: AssetTrack, at time: MediaTime, frame: Int, shownAt: MediaTime,
                            _ oracle: [[UInt8]], dir: String, width: Int = 320, height: Int = 240, _ what: String) throws {
        let image: GeneratedImage
        do {
            image = try asset.generateImage(track: track, at: time)
        } catch {
            Issue.record("\(what): \(error)")
            return
        }
        #expect(image.actualTime == shownAt, "\(what): \(image.actualTime)")
        let png = dir + "/frame.png"
        _ = FileManager.default.createFile(atPath: png, contents: Data(image.png))
        expectNearest(try rgb(png, what, width: width, height: height), frame, oracle, what)
    }

    /// Of ffmpeg's frames from 2 before to 2 after `frame`, `rgb` is nearest that one, within 3 code values on average.
    static func expectNearest(_ rgb: [UInt8], _ frame: Int, _ oracle: [[UInt8]], _ what: String) {
        let near = max(0, frame - 2)...min(oracle.count - 1, frame + 2)
        let distances = near.map { distance(rgb, oracle[$0]) }
        let nearest = near.lowerBound + distances.indices.min { distances[$0] < distances[$1] }!
        #expect(nearest == frame && distances[frame - near.lowerBound] < 3,
                "\(what): nearest ffmpeg frame \(nearest), distances to frames \(near): \(distances)")
    }

    /// The mean absolute difference of two images' bytes.
    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Double {
        var sum = 0
        for i in 0..<min(a.count, b.count) { sum += abs(Int(a[i]) - Int(b[i])) }
        return Double(sum) / Double(max(a.count, 1))
    }

    typealias Read = (reader: AssetReader, output: AssetReaderTrackOutput, samples: [SampleBuffer])

    /// The decoded frames (y420) of `asset`'s video track in `range`, with the reader and output that read them.
    static func read(_ asset: Asset, _ range: MediaTimeRange) throws -> Read {
        let output = try AssetReaderTrackOutput(track: try #require(asset.tracks(withMediaType: .video).first),
                                                outputSettings: y420)
        let reader = AssetReader(asset: asset)
        try reader.setTimeRange(range)
        try reader.add(output)
        var samples: [SampleBuffer] = []
        if try reader.startReading() {
            while let s = try output.copyNextSampleBuffer() { samples.append(s) }
        }
        return (reader, output, samples)
    }

    /// The read delivered ffmpeg's frames `wanted` (framemd5, display order) at their ticks (frame n at n/30 s),
    /// nothing lost; the reader completed, or (`completes` false: a random-access output not yet marked final) reads on.
    static func expectExact(_ read: Read, _ wanted: Range<Int>, _ oracle: [(size: Int, md5: String)], _ what: String,
                            completes: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        let samples = read.samples
        #expect(samples.count == wanted.count, "\(what): \(samples.count) frames", sourceLocation: sourceLocation)
        #expect(samples.map { md5Hex($0.packedBytes()) } == oracle[wanted].map(\.md5), "\(what): frames differ from ffmpeg's",
                sourceLocation: sourceLocation)
        #expect(samples.map(\.presentationTimeStamp) == wanted.map { MediaTime(value: Int64($0), timescale: 30) },
                "\(what): times \(samples.map(\.presentationTimeStamp))", sourceLocation: sourceLocation)
        #expect(read.reader.status == (completes ? .completed : .reading) && read.output.samplesLost == 0,
                "\(what): \(read.reader.status), \(String(describing: read.reader.error)), lost \(read.output.samplesLost)",
                sourceLocation: sourceLocation)
    }
}
