import Foundation
import TestSupport
import Testing
import TrackClient

/// Decoded audio read from a time range is the same slice of ffmpeg's whole-file decode, on ffmpeg-made Vorbis
/// (libvorbis; Matroska with 250 ms clusters, Ogg with 250 ms pages), Opus (libopus; WebM and Matroska with 250 ms
/// clusters, Ogg with 250 ms pages) and FLAC (16-bit, 1152-frame frames; native and Matroska with 250 ms clusters)
/// files of a gated stereo tone (libvorbis switches between short and long blocks), and GStreamer's Vorbis in
/// Matroska (vorbisenc, matroskamux), an ffmpeg-made AAC-LC in Matroska, FLAC in Matroska (flacenc, matroskamux),
/// Opus in WebM (opusenc, webmmux: its last block is stored at the file's Duration), and one whose last block has
/// a DiscardPadding that matroskademux 1.22 does not apply (Opus only): MP3 in Matroska (libmp3lame's end padding).
/// Each range is whole frames at the track's rate, a table of starts: 0, a packet boundary, mid-packet, over a page
/// or cluster boundary, near the end, up to the end and past it. The whole read (no range) is ffmpeg's frames one
/// after the other from ffmpeg's first PTS (exactly in Ogg's 1/rate; within half a tick in Matroska, whose
/// milliseconds are not frames: MatroskaAudioGrid), without a gap. Every range gives min(length, total − start)
/// frames, its first PTS is its start (an integer in 1/rate), and its samples are the whole decode's at the same
/// positions: trackd decodes what comes before a range start (Vorbis: the previous block's overlap; Opus: more than
/// the 80 ms of RFC 7845 §4.6; AudioRangePlan.decoderPreroll) and cuts at the range's frames.
/// - Opus, 16-bit: the bytes of ffmpeg's libopus decode (`-c:a libopus -request_sample_fmt s16 -apply_phase_inv 0`:
///   GStreamer's opusdec is libopus too, with intensity-stereo phase inversion off; both decode the whole stream to
///   the same bytes).
/// - FLAC, 16-bit: lossless, so the bytes of ffmpeg's decode (`-f s16le`), the whole read's and every range's.
/// - AAC-LC in Matroska (ffmpeg's encoder, `-aac_pns 0`), 32-bit float: the bytes of ffmpeg's decode (GStreamer's
///   avdec_aac is the same decoder).
/// - MP3 in Matroska, 16-bit: the bytes of ffmpeg's fixed-point decoder (`-c:a mp3`: GStreamer's avdec_mp3; ffmpeg's
///   default, mp3float, is up to 1 LSB off it). That decoder carries each sample's rounding remainder into the next and
///   a seek's flush resets it, so a range after a seek is up to 1 LSB off the whole read, to its end (ffmpeg's own
///   decoder started at the same packet is too): the bound the ranges are held to.
/// - Vorbis, 32-bit float: libvorbis (GStreamer's vorbisdec) against ffmpeg's own Vorbis decoder differs in float
///   rounding only, within 2 × 10⁻⁵ of full scale (AudioCountsTests); the exact oracle for the range's bytes is then
///   the same decoder's whole decode, trackd's reading of the track from 0 with no range, itself ffmpeg's count and
///   within that bound.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AudioRangesTests {
    static func source(_ rate: Int) -> [String] {
        ["-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*440*t)*lt(mod(t\\,0.1)\\,0.05)|0.3*sin(2*PI*660*t):s=\(rate):d=3"]
    }
    static let vorbis = source(44100) + ["-c:a", "libvorbis"], opus = source(48000) + ["-c:a", "libopus"]
    /// 16-bit 1152-frame FLAC frames: more than 52 packets in 3 s (the table's mid-packet range); lossless, so both
    /// decoders' 16-bit samples are the same bytes.
    static let flac = source(44100) + ["-c:a", "flac", "-sample_fmt", "s16", "-frame_size", "1152"]
    /// AAC-LC (ffmpeg's encoder, 1024-frame packets) without perceptual noise substitution, whose noise after a seek
    /// is not the whole read's (docs/PROTOCOL.md §10.4).
    static let aac = source(44100) + ["-c:a", "aac", "-aac_pns", "0"]
    static let mp3 = source(44100) + ["-c:a", "libmp3lame"]
    static let clusters = ["-cluster_time_limit", "250"], pages = ["-page_duration", "250000"]
    static let files: [String: String] = [
        "vorbis-mka": Media.make("ranges-vorbis.mka", vorbis + clusters),
        "vorbis-ogg": Media.make("ranges-vorbis.ogg", vorbis + pages),
        // MP3 in Matroska: libmp3lame's end padding is the last block's DiscardPadding.
        "mp3-mka": Media.make("ranges-mp3.mka", mp3 + clusters),
        "opus-webm": Media.make("ranges-opus.webm", opus + clusters),
        "opus-mka": Media.make("ranges-opus.mka", opus + clusters),
        "opus-ogg": Media.make("ranges-opus.opus", opus + pages),
        // GStreamer's encoder and muxer (vorbisenc, matroskamux): the same grid from another encoder.
        "vorbis-gst-mka": Media.makeWithGStreamer("ranges-vorbis-gst.mka", gst(44100, 882) + ["vorbisenc", "!", "matroskamux"]),
        // FLAC: frames that decode alone (AudioRangePlan.decoderPreroll).
        "flac": Media.make("ranges-flac.flac", flac),
        // FLAC in Matroska: block times in milliseconds, frames on the block-size grid (MatroskaAudioGrid).
        "flac-mka": Media.make("ranges-flac.mka", flac + clusters),
        "flac-gst-mka": Media.makeWithGStreamer("ranges-flac-gst.mka",
                                                gst(44100, 1152) + ["flacenc", "blocksize=1152", "!", "matroskamux"]),
        // AAC in Matroska: packets on the 1024-frame grid (MatroskaAudioGrid).
        "aac-mka": Media.make("ranges-aac.mka", aac + clusters),
        // GStreamer's Opus in WebM (opusenc, webmmux): its last block is stored at the file's Duration (MatroskaTail).
        "opus-gst-webm": Media.makeWithGStreamer("ranges-opus-gst.webm", gst(48000, 960) + ["opusenc", "!", "webmmux"]),
    ]
    /// 3 s of GStreamer's ticks (a 1 kHz beep every second), stereo.
    static func gst(_ rate: Int, _ frames: Int) -> [String] {
        ["audiotestsrc", "wave=ticks", "num-buffers=\(3 * rate / frames)", "samplesperbuffer=\(frames)", "!",
         "audio/x-raw,rate=\(rate),channels=2", "!"]
    }

    /// The table: (name, first frame, frames) at the track's rate, from ffmpeg's decoded frames: `bounds` are where
    /// each decoded packet starts (frames from the first), `total` the frame count.
    static func ranges(bounds: [Int64], total: Int64, rate: Int64) -> [(String, Int64, Int64)] {
        [("start", 0, 1000),
         ("packet", bounds[40], rate / 10),
         ("mid-packet", (bounds[50] + bounds[51]) / 2 + 1, 3001),
         ("spans-page", total * 11 / 20 + 101, rate * 3 / 10),  // 0.3 s from mid-page: over a 250 ms boundary
         ("near-end", total - 2500, 1000),
         ("to-end", total - 3000, 3000),
         ("past-end", total - 1000, 5000)]
    }

    /// The track's first audio output, read over `range` (in 1/`rate`; nil: the whole track).
    static func read(_ daemon: Daemon, _ file: String, _ range: (first: Int64, frames: Int64)?, rate: Int32,
                     _ settings: [String: SettingValue]?) throws -> [SampleBuffer] {
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        if let range {
            try reader.setTimeRange(MediaTimeRange(start: MediaTime(value: range.first, timescale: rate),
                                                   duration: MediaTime(value: range.frames, timescale: rate)))
        }
        #expect(try reader.startReading(), "\(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { samples.append(s) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return samples
    }

    @Test(arguments: files.keys.sorted()) func rangesAreSlicesOfTheWholeDecode(_ name: String) throws {
        let file = try #require(Self.files[name])
        let isOpus = name.hasPrefix("opus"), isMP3 = name.hasPrefix("mp3")
        // Compared byte for byte with ffmpeg's decode: Opus, FLAC and MP3 as 16-bit, AAC as float (GStreamer's
        // avdec_aac and avdec_mp3 are ffmpeg's aac and mp3 decoders).
        let sixteen = isOpus || isMP3 || name.hasPrefix("flac")
        let sameDecoder = sixteen || name.hasPrefix("aac")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let rate: Int64 = isOpus ? 48000 : 44100, channels = 2
        let frames = try Probe.frames(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let sizes = frames.map { Int64($0.samples ?? 0) }
        let bounds = sizes.reduce(into: [Int64(0)]) { $0.append($0.last! + $1) }
        let total = bounds.last!
        let bits = sixteen ? 16 : 32
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(!sixteen),
                                                SettingsKey.bitDepth: .int(Int64(bits))]
        // GStreamer's opusdec leaves libopus's intensity-stereo phase inversion off; ffmpeg's libopus turns it on.
        let opusDecoder = ["-c:a", "libopus", "-request_sample_fmt", "s16", "-apply_phase_inv", "0"]
        let decoder = isOpus ? opusDecoder : isMP3 ? ["-c:a", "mp3"] : []
        let theirs = try [UInt8](run("ffmpeg", ["-v", "error"] + decoder
                                 + ["-i", file, "-map", "0:a:0", "-f", sixteen ? "s16le" : "f32le", "-"]).stdout)
        let frameBytes = channels * bits / 8
        try #require(theirs.count == Int(total) * frameBytes, "\(name): ffmpeg's decode \(theirs.count) bytes, \(total) frames")
        // The whole read (no range): ffmpeg's frames, one after the other from ffmpeg's first frame's PTS (exact in
        // Ogg's 1/rate; within half a millisecond tick in Matroska), Opus's bytes and Vorbis's within the bound.
        let wholeRead = try Self.read(daemon, file, nil, rate: Int32(rate), settings)
        let whole = wholeRead.flatMap { $0.packedBytes() }
        let anchor = try #require(wholeRead.first?.presentationTimeStamp)
        let origin = anchor.value * rate / Int64(anchor.timescale)
        let ffmpegFirst = try #require(frames.first?.pts) * base.num * rate  // × 1/(den × rate) s
        #expect(2 * abs(origin * base.den - ffmpegFirst) <= base.num * rate,
                "\(name): first PTS \(anchor), ffmpeg's \(ffmpegFirst)/\(base.den * rate)")
        let gaps = zip(wholeRead, wholeRead.dropFirst()).filter {
            $0.presentationTimeStamp.value * rate / Int64($0.presentationTimeStamp.timescale) + Int64($0.numberOfSamples)
                != $1.presentationTimeStamp.value * rate / Int64($1.presentationTimeStamp.timescale)
        }
        let gap = gaps.first.map { "\($0.1.presentationTimeStamp) after \($0.0.presentationTimeStamp) + \($0.0.numberOfSamples)" }
        #expect(gaps.isEmpty, "\(name): \(gaps.count) samples do not start where the one before ends, e.g. \(gap ?? "")")
        try #require(whole.count == theirs.count, "\(name): the whole read \(whole.count) bytes, ffmpeg's \(theirs.count)")
        let wholeWorst = Self.maxDifference(whole, theirs, float: !sixteen)
        #expect(sameDecoder ? whole == theirs : wholeWorst < 2e-5, "\(name): the whole read up to \(wholeWorst) from ffmpeg's decode")
        for (range, start, length) in Self.ranges(bounds: bounds, total: total, rate: rate) {
            let first = origin + start
            let ours = try Self.read(daemon, file, (first, length), rate: Int32(rate), settings)
            let count = ours.reduce(0) { $0 + Int64($1.numberOfSamples) }
            let pts = ours.first?.presentationTimeStamp
            let bytes = ours.flatMap { $0.packedBytes() }
            let from = Int(start) * frameBytes, to = Int(min(total, start + length)) * frameBytes
            let exact = Array(whole[from..<to])
            #expect(count == min(length, total - start), "\(name) \(range): \(count) frames, want \(min(length, total - start))")
            #expect(pts.map { $0.value * rate == first * Int64($0.timescale) } == true,
                    "\(name) \(range): first PTS \(String(describing: pts)), want \(first)/\(rate)")
            // MP3: the fixed-point decoder's rounding after a seek's flush (above): 1 LSB at most.
            let close = isMP3 && bytes.count == exact.count && Self.maxDifference(bytes, exact, float: false) <= 1
            #expect(bytes == exact || close, "\(name) \(range) at \(first): \(Self.difference(bytes, exact, float: !sixteen))")
            if !sameDecoder {
                let worst = Self.maxDifference(bytes, Array(theirs[from..<to]), float: true)
                #expect(bytes.count == to - from && worst < 2e-5, "\(name) \(range): up to \(worst) from ffmpeg's decode")
            }
        }
    }

    /// The largest difference between the samples both hold (full scale 1 for float, 32 768 for 16-bit).
    static func maxDifference(_ a: [UInt8], _ b: [UInt8], float: Bool) -> Double {
        if float {
            let x = a.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let y = b.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            return Double(zip(x, y).map { abs($0 - $1) }.max() ?? 0)
        }
        let x = a.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let y = b.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        return Double(zip(x, y).map { abs(Int($0) - Int($1)) }.max() ?? 0)
    }

    static func difference(_ a: [UInt8], _ b: [UInt8], float: Bool) -> String {
        let firstDiffering = a.indices.first { $0 < b.count && a[$0] != b[$0] }
        return "\(a.count) bytes, the whole decode's \(b.count); first differing byte \(firstDiffering ?? -1), "
            + "up to \(maxDifference(a, b, float: float)) apart"
    }
}
