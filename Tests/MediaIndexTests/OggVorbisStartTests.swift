import Foundation
import MediaIndex
import TestSupport
import Testing

/// OggVorbisStart on Ogg Vorbis files ffmpeg (libvorbis) and GStreamer (vorbisenc) make, against ffprobe's packets:
/// the first packet's PTS and where each packet of the first audio page ends (PTS + duration, integers in the
/// stream's time base, 1/rate) — on a stream whose only audio page is its last, 128 frames (the first packet's
/// duration) before ffprobe's but for the last packet, which ends at the granule position in both; then on those
/// files' pages changed in the test (IntegrationTests' VorbisTrimsTests: the packets a daemon delivers, decoded).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct OggVorbisStartTests {
    static func ffmpeg(_ seconds: String) -> [String] {
        ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=\(seconds)", "-c:a", "libvorbis"]
    }
    static func gst(buffers: Int) -> [String] {
        ["audiotestsrc", "num-buffers=\(buffers)", "samplesperbuffer=441", "!", "audio/x-raw,rate=44100,channels=1", "!",
         "vorbisenc", "!", "oggmux"]
    }
    /// (file, whether its only audio page is its last).
    static let files: [String: (file: String, onePage: Bool)] = [
        "ffmpeg-one-page": (Media.make("start-vorbis-short.ogg", ffmpeg("0.1")), true),
        "ffmpeg-pages": (Media.make("start-vorbis.ogg", ffmpeg("2")), false),
        "gst-one-page": (Media.makeWithGStreamer("start-vorbis-gst-short.ogg", gst(buffers: 10)), true),
        "gst-pages": (Media.makeWithGStreamer("start-vorbis-gst.ogg", gst(buffers: 200)), false),
    ]

    static func head(_ file: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)).prefix(OggVorbisStart.headBytes))
    }

    @Test(arguments: files.keys.sorted()) func firstPageIsFFprobes(_ name: String) throws {
        let (file, onePage) = try #require(Self.files[name])
        let start = try #require(OggVorbisStart.read(head: try Self.head(file)), "\(name): no start")
        let packets = try Probe.packets(file, "a:0")
        try #require(packets.count >= start.ends.count, "\(name): \(start.ends.count) on the first page, ffprobe lists \(packets.count)")
        #expect(start.isLast == onePage && (!onePage || start.ends.count == packets.count), "\(name): \(start)")
        // ffmpeg starts a stream's only page at 0: the first packet's duration later.
        let late = onePage ? try #require(packets[0].duration) : 0
        #expect(start.start == (packets[0].pts ?? 0) - late, "\(name): start \(start.start), ffprobe \(packets[0].pts ?? -1)")
        var ends = packets.prefix(start.ends.count).map { ($0.pts ?? 0) + ($0.duration ?? 0) - late }
        ends[ends.count - 1] += late
        #expect(start.ends == ends, "\(name): ends \(start.ends), ffprobe's less \(late): \(ends)")
    }

    /// The file's pages, each whole (header, lacing, body), and which is the first audio page (the first whose
    /// granule position is not 0: the header pages' is).
    static func pages(_ bytes: [UInt8]) -> (pages: [[UInt8]], audio: Int) {
        var pages: [[UInt8]] = []
        var at = 0
        while at + 27 <= bytes.count, at + 27 + Int(bytes[at + 26]) <= bytes.count {
            let count = Int(bytes[at + 26])
            let end = at + 27 + count + bytes[(at + 27)..<(at + 27 + count)].reduce(0) { $0 + Int($1) }
            guard end <= bytes.count else { break }
            pages.append(Array(bytes[at..<end]))
            at = end
        }
        return (pages, pages.firstIndex { $0[6..<14].contains { $0 != 0 } } ?? pages.count)
    }

    /// The granule position of the first audio page (GStreamer's: where its packets end, the first's excepted) moved
    /// by ±100 frames, the page marked the stream's last (EOS) or not: the packets end 100 frames earlier or later —
    /// but on a last page whose granule position is below what its packets decode to, which is cut at its end.
    @Test(arguments: [-100, 100]) func theGranulePositionPlacesThePage(_ shift: Int64) throws {
        let split = Self.pages(try Self.head(try #require(Self.files["gst-pages"]).file))
        try #require(split.audio < split.pages.count)
        let before = try #require(OggVorbisStart.read(head: split.pages.flatMap { $0 }))
        #expect(before.start == -128 && !before.isLast)
        for last in [false, true] {
            var pages = split.pages
            if last { pages[split.audio][5] |= 4 }
            let granule = UInt64(before.ends[before.ends.count - 1] + shift)
            for i in 0..<8 { pages[split.audio][6 + i] = UInt8(truncatingIfNeeded: granule >> (8 * UInt64(i))) }
            let after = try #require(OggVorbisStart.read(head: pages.flatMap { $0 }))
            let moved = last && shift < 0 ? 0 : shift
            #expect(after.isLast == last && after.start == before.start + moved, "\(last) \(shift): \(after)")
            #expect(Array(after.ends.dropLast()) == before.ends.dropLast().map { $0 + moved }, "\(last) \(shift): \(after.ends)")
            #expect(after.ends.last == Int64(granule))
        }
    }

    /// Not known: a second Vorbis stream (which one is the track's), a head cut before the first audio page ends,
    /// a first audio page of negative granule position, no Vorbis stream.
    @Test func whatIsNotKnown() throws {
        let (pages, audio) = Self.pages(try Self.head(try #require(Self.files["ffmpeg-pages"]).file))
        try #require(audio > 0 && audio + 1 < pages.count)
        var other = pages[0]
        other[14] ^= 0xFF  // another serial number
        #expect(OggVorbisStart.read(head: [pages[0], other].flatMap { $0 } + pages.dropFirst().flatMap { $0 }) == nil)
        let throughAudio = pages.prefix(audio + 1).flatMap { $0 }
        #expect(OggVorbisStart.read(head: throughAudio) != nil)
        for cut in [1, pages[audio].count / 2, pages[audio].count] {
            #expect(OggVorbisStart.read(head: Array(throughAudio.dropLast(cut))) == nil, "cut \(cut)")
        }
        var negative = pages
        for i in 6..<14 { negative[audio][i] = 0xFF }
        #expect(OggVorbisStart.read(head: negative.flatMap { $0 }) == nil)
        var notVorbis = pages
        notVorbis[0][28 + Int(notVorbis[0][26])] = UInt8(ascii: "V")
        #expect(OggVorbisStart.read(head: notVorbis.flatMap { $0 }) == nil)
    }
}
