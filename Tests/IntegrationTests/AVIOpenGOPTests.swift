import Foundation
import TestSupport
import Testing
import TrackClient

/// H.264 in AVI with open GOPs (x264 `open-gop=1`: key frames after the first are I-pictures that are not IDR, and
/// the B-pictures decoded right after one may be shown before it, referring to the GOP before). Every range of a
/// table around each key frame either delivers exactly ffmpeg's frames at their integer times, nothing lost, or —
/// when the demuxer starts decoding at a key frame with such leading B-pictures — fails with −11838 before any frame
/// (PROTOCOL.md §7.2). Made by ffmpeg and by GStreamer's x264enc ! avimux.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AVIOpenGOPTests {
    /// 60 frames at 30 fps (time base 1/30), 320×240, two B-frames between references.
    /// - `leading`: a key frame every 24 frames, scene cuts off, fixed B-frames: key frames at decode times 0, 22 and
    ///   46, the second and third shown at 24 and 48 after the two leading B-pictures decoded after them.
    /// - `plain`: ffmpeg's `-g 30` with open GOPs: the second key frame, at 30, has no leading B-picture.
    /// - `gstreamer`: `leading` made by x264enc ! avimux.
    static func file(_ variant: String) -> String {
        let source = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-pix_fmt", "yuv420p",
                      "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-f", "avi"]
        let leading = "open-gop=1:keyint=24:min-keyint=24:scenecut=0:b-adapt=0"
        switch variant {
        case "leading": return Media.make("open-gop-leading.avi", source + ["-x264-params", leading])
        case "plain": return Media.make("open-gop-plain.avi", source + ["-g", "30", "-x264-params", "open-gop=1"])
        default:
            return Media.makeWithGStreamer("open-gop-gstreamer.avi", [
                "videotestsrc", "num-buffers=60", "!", "video/x-raw,width=320,height=240,framerate=30/1,format=I420", "!",
                "x264enc", "speed-preset=veryfast", "bframes=2", "key-int-max=24", "b-adapt=false",
                "option-string=open-gop=1:min-keyint=24:scenecut=0", "!", "avimux"])
        }
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

    /// Ranges of 1 to 5 frames starting from 3 frames before to 3 after each key frame but the first, and all of it.
    static func ranges(_ keys: [(dts: Int64, leading: Bool)]) -> [(start: Int64, end: Int64)] {
        [(0, 60)] + keys.dropFirst().flatMap { key in
            (key.dts - 3...key.dts + 3).flatMap { start in (1...5).map { (start, min(start + $0, 60)) } }
        }
    }

    /// A range starting at `start` is decoded from the last key frame before it (avidemux's seek): refused exactly
    /// when that is a later key frame with leading B-pictures.
    static func refused(_ start: Int64, _ keys: [(dts: Int64, leading: Bool)]) -> Bool {
        guard let from = keys.lastIndex(where: { $0.dts < start }) else { return false }
        return from > 0 && keys[from].leading
    }

    static func range(_ start: Int64, _ end: Int64) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(value: start, timescale: 30), duration: MediaTime(value: end - start, timescale: 30))
    }

    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    @Test(arguments: ["leading", "plain", "gstreamer"]) func rangesAreExactOrRefused(_ variant: String) throws {
        let file = Self.file(variant)
        let keys = try Self.keyFrames(file)
        try #require(keys.count > 1 && keys.dropFirst().allSatisfy { $0.leading == (variant != "plain") },
                     "\(variant): key frames \(keys)")
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count == 60, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        var counts = (exact: 0, refused: 0)
        for (start, end) in Self.ranges(keys) {
            let what = "\(variant) frames \(start)..<\(end)"
            let read = try Self.read(asset, Self.range(start, end))
            if Self.refused(start, keys) {
                counts.refused += 1
                Self.expectRefused(read, what)
            } else {
                counts.exact += 1
                Self.expectExact(read, Int(start)..<Int(end), oracle, what)
            }
        }
        print("open-GOP H.264 AVI (\(variant)): \(counts.exact) ranges exact, \(counts.refused) refused")
    }

    /// ResetOutput takes the same path: resets to ranges decoded from the first key frame, or from one without
    /// leading B-pictures, are exact; a reset to a range the demuxer starts at a key frame with leading B-pictures
    /// fails the output with −11838, before any frame.
    @Test(arguments: ["leading", "plain"]) func resetsAreExactOrRefused(_ variant: String) throws {
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
        let key = keys[1].dts
        let resets: [(Int64, Int64)] = [(0, 3), (key - 2, key + 1), (key + 1, key + 4), (key - 1, key + 3)]
        for (i, (start, end)) in resets.enumerated() {
            if i > 0 { try output.reset(forReadingTimeRanges: [Self.range(start, end)]) }
            var samples: [SampleBuffer] = []
            while let s = try output.copyNextSampleBuffer() { samples.append(s) }
            let what = "\(variant) reset to frames \(start)..<\(end)"
            if Self.refused(start, keys) { return Self.expectRefused((reader, output, samples), what) }
            Self.expectExact((reader, output, samples), Int(start)..<Int(end), oracle, what, completes: false)
        }
        #expect(variant == "plain", "no reset was refused")
        output.markConfigurationAsFinal()
        #expect(try output.copyNextSampleBuffer() == nil && reader.status == .completed && output.samplesLost == 0,
                "\(variant): \(reader.status), lost \(output.samplesLost)")
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

    /// The read failed with −11838 before any frame.
    static func expectRefused(_ read: Read, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(read.reader.status == .failed && read.reader.error?.knownCode == .operationNotSupportedForAsset
                    && read.samples.isEmpty,
                "\(what): \(read.reader.status), \(String(describing: read.reader.error)), \(read.samples.count) frames",
                sourceLocation: sourceLocation)
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
