import Foundation
@testable import MediaIndex
import TestSupport
import Testing
import MediaVocabulary

/// ContainerMetadata on MP4/MOV and Matroska headers built in the test (ffmpeg-made files are compared with ffprobe
/// by IntegrationTests' MetadataTests): which boxes and elements become which items (PROTOCOL.md §7.5), edit lists
/// as segments (§7.6), and what a hostile file's sizes are cut to.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ContainerMetadataTests {
    static func item(_ space: String, _ key: String, _ common: String = "", _ value: String) -> MetadataItem {
        MetadataItem(keySpace: space, key: key, commonKey: common, value: value)
    }

    /// An iTunes ilst item (`data` type 1) and a QuickTime user-data text item (u16 length, u16 language).
    static func ilstItem(_ type: [UInt8], _ text: String) -> [UInt8] {
        let data = Box.full("data", Box.u32(0) + Array(text.utf8))  // version 0, flags 1 (UTF-8) set below
        var body = data
        body[11] = 1
        return Box.u32(UInt32(8 + body.count)) + type + body
    }

    static func userText(_ type: [UInt8], _ text: String) -> [UInt8] {
        let body = Box.u16(UInt16(text.utf8.count)) + Box.u16(0x55C4) + Array(text.utf8)
        return Box.u32(UInt32(8 + body.count)) + type + body
    }

    static func meta(handler: String, _ children: [UInt8], full: Bool = true) -> [UInt8] {
        let hdlr = Box.full("hdlr", Box.u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13))
        return Box.box("meta", (full ? [0, 0, 0, 0] : []) + hdlr + children)
    }

    static let nam: [UInt8] = [0xA9] + Array("nam".utf8), xyz: [UInt8] = [0xA9] + Array("xyz".utf8)
    static let cmt: [UInt8] = [0xA9] + Array("cmt".utf8), too: [UInt8] = [0xA9] + Array("too".utf8)

    /// mvhd's creation time, udta/meta/ilst (itsk), a QuickTime udta text item, an mdta meta with its keys;
    /// per track mdhd's creation time and language, hdlr's name (C and Pascal strings), the edit list.
    @Test func mp4AssetAndTrackItems() throws {
        var movie = SyntheticMovie()
        let ilst = Box.box("ilst", Self.ilstItem(Self.nam, "My Title") + Self.ilstItem(Self.too, "Lavf59") + Self.ilstItem(Self.cmt, "A comment"))
        let keys = Box.full("keys", Box.u32(2) + Box.u32(8 + 24) + Array("mdtacom.apple.quicktime.make".utf8)
                                      + Box.u32(8 + 17) + Array("mdtacom.example.other".utf8))
        let mdta = Self.meta(handler: "mdta", keys + Box.box("ilst", Self.ilstItem(Array(Box.u32(1)), "Acme")
                                                                + Self.ilstItem(Array(Box.u32(2)), "x") + Self.ilstItem(Array(Box.u32(3)), "none")),
                             full: false)
        movie.extra = [Box.box("udta", Self.meta(handler: "mdir", ilst) + Self.userText(Self.xyz, "+48.8577+002.2950/")), mdta]
        var body = movie.moovBody(dataStart: 48)
        // mvhd creation time: 2021-03-04T05:06:07Z = 1614834367 + 2082844800 s since 1904.
        body.replaceSubrange(12..<16, with: Box.u32(UInt32(1_614_834_367 + 2_082_844_800)))
        let found = ContainerMetadata.mp4(movie: body[...])
        #expect(found.items == [
            Self.item("mvhd", "creationTime", "creationDate", "2021-03-04T05:06:07Z"),
            Self.item("itsk", "©nam", "title", "My Title"), Self.item("itsk", "©too", "software", "Lavf59"),
            Self.item("itsk", "©cmt", "", "A comment"), Self.item("udta", "©xyz", "location", "+48.8577+002.2950/"),
            Self.item("mdta", "com.apple.quicktime.make", "make", "Acme"), Self.item("mdta", "com.example.other", "", "x"),
        ])
        #expect(found.tracks.map(\.id) == [1])
        // The synthetic mdhd: creation time 1 (before 1904 + 1970: taken as Unix time, as ffmpeg does), language 0
        // (Macintosh code 0: English); its hdlr name is empty (left out). No edit list: no segments.
        #expect(found.tracks[0].items == [Self.item("mdhd", "creationTime", "creationDate", "1970-01-01T00:00:01Z"),
                                          Self.item("mdhd", "language", "language", "eng")])
        #expect(found.tracks[0].segments == nil)
    }

    /// ffmpeg's `loci` for -metadata location=+48.8577+002.2950/ (bytes from an ffmpeg-made MP4), and the formatting
    /// of other values.
    @Test func threeGPPLocation() {
        let loci: [UInt8] = [0, 0, 0, 0, 0x15, 0xC7, 0, 0, 0, 0x02, 0x4B, 0x85, 0, 0x30, 0xDB, 0x92, 0, 0, 0, 0]
            + Array("earth".utf8) + [0, 0]
        #expect(ContainerMetadata.location3GPP(loci[...]) == "+48.8577+002.2950/")
        let placed: [UInt8] = [0, 0, 0, 0, 0x15, 0xC7] + Array("Paris".utf8) + [0, 0] + Box.u32(UInt32(bitPattern: -150_405))
            + Box.u32(UInt32(bitPattern: -655_360)) + Box.u32(2_162_688)
        #expect(ContainerMetadata.location3GPP(placed[...]) == "-10.0000-002.2950+33.000000/Paris")
        #expect(ContainerMetadata.fixed(0x8, 4, 2) == "+00.0001" && ContainerMetadata.fixed(3, 4, 1) == "+0.0000")
        #expect(ContainerMetadata.location3GPP(loci.prefix(12)) == nil)
    }

    @Test func languagesAndHandlerNames() {
        #expect(ContainerMetadata.language(0x1CB2) == "ger")  // (7, 5, 18) + 0x60 each
        #expect(ContainerMetadata.language(0x55C4) == "und")
        #expect(ContainerMetadata.language(2) == "ger" && ContainerMetadata.language(0x7FFF) == nil)
        #expect(ContainerMetadata.language(0x400) == nil)  // letters 0 are not a-z
        let prefix: [UInt8] = [0, 0, 0, 0] + Array("mhlrvide".utf8) + [UInt8](repeating: 0, count: 12)
        #expect(ContainerMetadata.handlerName((prefix + [12] + Array("VideoHandler".utf8))[...]) == "VideoHandler")
        let mp4: [UInt8] = [UInt8](repeating: 0, count: 8) + Array("soun".utf8) + [UInt8](repeating: 0, count: 12)
        #expect(ContainerMetadata.handlerName((mp4 + Array("Sound Handler X".utf8) + [0])[...]) == "Sound Handler X")
        // A name that starts with a byte equal to its length but in an MP4 hdlr (no component type) is a C string.
        #expect(ContainerMetadata.handlerName((mp4 + [3] + Array("abc".utf8))[...]) == "\u{3}abc")
    }

    /// ffmpeg's B-frame edit (one edit at media time 1024), an empty edit before it (audio delayed by 0.5 s), a
    /// segment duration of 0 (to the media's end), a dwell (rate 0) and a half-speed edit.
    @Test func editListsAsSegments() {
        let t = { (v: Int64, ts: Int32) in MediaTime(value: v, timescale: ts) }
        let r = { (s: MediaTime, d: MediaTime) in MediaTimeRange(start: s, duration: d) }
        let bFrames = ContainerMetadata.segments([(1000, 1024, 0x1_0000)], movieTimescale: 1000, media: (15360, 31744))
        #expect(bFrames == [TrackSegment(source: r(t(1024, 15360), t(15360, 15360)), target: r(t(0, 1000), t(1000, 1000)))])
        let delayed = ContainerMetadata.segments([(500, -1, 0x1_0000), (1000, 1024, 0x1_0000)], movieTimescale: 1000,
                                                 media: (44100, 45124))
        #expect(delayed == [.empty(target: r(t(0, 1000), t(500, 1000)), sourceDuration: t(22050, 44100)),
                            TrackSegment(source: r(t(1024, 44100), t(44100, 44100)), target: r(t(500, 1000), t(1000, 1000)))])
        #expect(delayed?[0].isEmpty == true && delayed?[1].isEmpty == false)
        let toTheEnd = ContainerMetadata.segments([(0, 100, 0x1_0000)], movieTimescale: 600, media: (90000, 90100))
        #expect(toTheEnd == [TrackSegment(source: r(t(100, 90000), t(90000, 90000)), target: r(t(0, 600), t(600, 600)))])
        // ffmpeg's -c copy with -itsoffset 0.5 of AAC: 476 ms empty, then 0 (to the end) at 1024.
        let copied = ContainerMetadata.segments([(476, -1, 0x1_0000), (0, 1024, 0x1_0000)], movieTimescale: 1000,
                                                media: (44100, 45124))
        #expect(copied == [.empty(target: r(t(0, 1000), t(476, 1000)), sourceDuration: t(20992, 44100)),
                           TrackSegment(source: r(t(1024, 44100), t(44100, 44100)), target: r(t(476, 1000), t(1000, 1000)))])
        let dwellAndSlow = ContainerMetadata.segments([(300, 0, 0), (600, 0, 0x8000)], movieTimescale: 600, media: (30, 30))
        #expect(dwellAndSlow == [TrackSegment(source: r(t(0, 30), t(0, 30)), target: r(t(0, 600), t(300, 600))),
                                 TrackSegment(source: r(t(0, 30), t(15, 30)), target: r(t(300, 600), t(600, 600)))])
        // Not reported: a media time below −1, a negative rate, a timescale of 0 or above 2³¹ − 1, an overflow.
        #expect(ContainerMetadata.segments([(1, -2, 0x1_0000)], movieTimescale: 1000, media: (1000, 0)) == nil)
        #expect(ContainerMetadata.segments([(1, 0, 0xFFFF_0000)], movieTimescale: 1000, media: (1000, 0)) == nil)
        #expect(ContainerMetadata.segments([(1, 0, 0x1_0000)], movieTimescale: 0, media: (1000, 0)) == nil)
        #expect(ContainerMetadata.segments([(1, 0, 0x1_0000)], movieTimescale: 1000, media: (0x8000_0000, 0)) == nil)
        #expect(ContainerMetadata.segments([(UInt64(Int64.max), 0, 0x1_0000), (1, 0, 0x1_0000), (1, 0, 0x1_0000)],
                                           movieTimescale: 1000, media: (1000, 0)) == nil)
    }

    /// The edit list as the moov holds it: SyntheticTrack's elst (versions 0 and 1) through `mp4(movie:)`.
    @Test func editListFromTheMovie() {
        var movie = SyntheticMovie()
        movie.tracks[0].timescale = 15360
        movie.tracks[0].edits = [(duration: 500, mediaTime: -1, rate: 0x1_0000), (duration: 1000, mediaTime: 1024, rate: 0x1_0000)]
        for version: UInt8 in [0, 1] {
            movie.tracks[0].elstVersion = version
            let segments = ContainerMetadata.mp4(movie: movie.moovBody(dataStart: 48)[...]).tracks.first?.segments
            #expect(segments?.count == 2 && segments?[0].isEmpty == true)
            #expect(segments?[1].source.start == MediaTime(value: 1024, timescale: 15360))
            #expect(segments?[1].target.start == MediaTime(value: 500, timescale: 1000))
        }
    }

    /// A hostile file's sizes: an elst count beyond its box (no segments), thousands of edits (the first 64),
    /// thousands of ilst items (the first 64), a value of 5000 bytes (1024), a keys box claiming 2³² − 1 keys.
    @Test func hostileSizesAreBounded() {
        var movie = SyntheticMovie()
        movie.tracks[0].edits = [(duration: 1, mediaTime: 0, rate: 0x1_0000)]
        movie.tracks[0].replaced["elst"] = Box.full("elst", Box.u32(.max) + Box.u32(1) + Box.u32(0) + Box.u32(0x1_0000))
        #expect(ContainerMetadata.mp4(movie: movie.moovBody(dataStart: 48)[...]).tracks[0].segments == nil)
        movie.tracks[0].replaced = [:]
        movie.tracks[0].edits = Array(repeating: (duration: 1, mediaTime: 0, rate: 0x1_0000), count: 5000)
        let many = Box.box("ilst", (0..<3000).flatMap { Self.ilstItem(Self.nam, "title \($0)") })
        let long = Box.box("ilst", Self.ilstItem(Self.cmt, String(repeating: "é", count: 2500)))
        let keys = Box.full("keys", Box.u32(.max) + Box.u32(8 + 4) + Array("mdtaabcd".utf8))
        movie.extra = [Box.box("udta", Self.meta(handler: "mdir", long) + Self.meta(handler: "mdir", many)),
                       Self.meta(handler: "mdta", keys + Box.box("ilst", Self.ilstItem(Array(Box.u32(1)), "v")))]
        let found = ContainerMetadata.mp4(movie: movie.moovBody(dataStart: 48)[...])
        #expect(found.tracks[0].segments?.count == DescriptionBounds.segments)
        // The synthetic mvhd's creation time (1 s) is the first item, the comment the second, then 62 titles.
        #expect(found.items.count == DescriptionBounds.metadataItems)
        #expect(found.items[1].key == "©cmt" && found.items[1].value == String(repeating: "é", count: 512))
        #expect(found.items.last?.value == "title 61")
    }

    // ── Matroska ─────────────────────────────────────────────────────────────────────────────────────────────

    /// An EBML element: its id bytes, an 8-byte size, the body.
    static func ebml(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] { id + [0x01] + Box.u64(UInt64(body.count)).dropFirst() + body }
    static func ebml(_ id: [UInt8], _ text: String) -> [UInt8] { ebml(id, Array(text.utf8)) }
    static func ebml(_ id: [UInt8], uint: UInt64) -> [UInt8] { ebml(id, Box.u64(uint)) }

    static func simpleTag(_ name: String, _ value: String, nested: [UInt8] = []) -> [UInt8] {
        ebml([0x67, 0xC8], ebml([0x45, 0xA3], name) + ebml([0x44, 0x87], value) + nested)
    }

    static func matroska(tagsAtTheEnd: Bool) -> [UInt8] {
        let header = ebml([0x1A, 0x45, 0xDF, 0xA3], ebml([0x42, 0x82], "matroska"))
        // DateUTC: 2021-03-04T05:06:07.25Z in ns since 2001-01-01.
        let date = UInt64((1_614_834_367 - 978_307_200) * 1_000_000_000 + 250_000_000)
        let info = ebml([0x15, 0x49, 0xA9, 0x66], ebml([0x7B, 0xA9], "My Title") + ebml([0x44, 0x61], uint: date)
                                                  + ebml([0x4D, 0x80], "Lavf59") + ebml([0x57, 0x41], "Lavf59"))
        let entry = ebml([0xAE], ebml([0xD7], uint: 1) + ebml([0x73, 0xC5], uint: 77) + ebml([0x22, 0xB5, 0x9C], "ger")
                               + ebml([0x53, 0x6E], "Main"))
        let tracks = ebml([0x16, 0x54, 0xAE, 0x6B], entry)
        let tags = ebml([0x12, 0x54, 0xC3, 0x67],
                        ebml([0x73, 0x73], ebml([0x63, 0xC0], []) + simpleTag("COMMENT", "A comment")
                                           + simpleTag("ENCODER", "Lavf59", nested: simpleTag("URL", "x")))
                        + ebml([0x73, 0x73], ebml([0x63, 0xC0], ebml([0x63, 0xC5], uint: 77)) + simpleTag("HANDLER_NAME", "H"))
                        + ebml([0x73, 0x73], ebml([0x63, 0xC0], ebml([0x63, 0xC4], uint: 5)) + simpleTag("CHAPTER", "no")))
        let cluster = ebml([0x1F, 0x43, 0xB6, 0x75], [UInt8](repeating: 0, count: tagsAtTheEnd ? 300_000 : 16))
        guard tagsAtTheEnd else {
            return header + ebml([0x18, 0x53, 0x80, 0x67], info + tracks + tags + cluster)
        }
        // SeekHead (first in the Segment: SeekHead 4 + 8, Seek 2 + 8, SeekID 2 + 8 + 4, SeekPosition 2 + 8 + 8 bytes)
        // pointing past the cluster.
        let seekSize = 4 + 8 + 2 + 8 + 2 + 8 + 4 + 2 + 8 + 8
        let tagsAt = UInt64(seekSize + info.count + tracks.count + cluster.count)
        let seek = ebml([0x11, 0x4D, 0x9B, 0x74], ebml([0x4D, 0xBB], ebml([0x53, 0xAB], [0x12, 0x54, 0xC3, 0x67])
                                                                     + ebml([0x53, 0xAC], uint: tagsAt)))
        #expect(seek.count == seekSize)
        return header + ebml([0x18, 0x53, 0x80, 0x67], seek + info + tracks + cluster + tags)
    }

    @Test(arguments: [false, true]) func matroskaItems(tagsAtTheEnd: Bool) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("metadata-\(UUID().uuidString).mkv")
        try Data(Self.matroska(tagsAtTheEnd: tagsAtTheEnd)).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let found = ContainerMetadata.read(fd: fd)
        #expect(found.items == [
            Self.item("mkv", "Title", "title", "My Title"), Self.item("mkv", "DateUTC", "creationDate", "2021-03-04T05:06:07.250000Z"),
            Self.item("mkv", "MuxingApp", "", "Lavf59"), Self.item("mkv", "WritingApp", "", "Lavf59"),
            Self.item("mkvtag", "COMMENT", "", "A comment"), Self.item("mkvtag", "ENCODER", "software", "Lavf59"),
            Self.item("mkvtag", "ENCODER/URL", "", "x"),
        ])
        #expect(found.tracks == [ContainerMetadata.Track(id: 1, items: [
            Self.item("mkv", "Language", "language", "ger"), Self.item("mkv", "Name", "title", "Main"),
            Self.item("mkvtag", "HANDLER_NAME", "", "H"),
        ])])
    }

    @Test func isoDates() {
        #expect(ContainerMetadata.iso8601(unixSeconds: 0) == "1970-01-01T00:00:00Z")
        #expect(ContainerMetadata.iso8601(unixSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(ContainerMetadata.iso8601(unixSeconds: -2_082_844_800) == "1904-01-01T00:00:00Z")
        #expect(ContainerMetadata.iso8601(unixSeconds: 1, microseconds: 5) == "1970-01-01T00:00:01.000005Z")
        #expect(ContainerMetadata.iso8601(unixSeconds: 253_402_300_800) == nil)
    }
}
