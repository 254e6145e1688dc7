import Foundation
@testable import MediaIndex
import TestSupport
import Testing
import MediaVocabulary

/// The asset tags of FLAC, RIFF (WAV/AVI) and ID3v2 built here, for what ffmpeg does not write (ffmpeg-made files
/// are compared with ffprobe by IntegrationTests' MetadataTests): ID3v2.3 sizes, UTF-16 and Latin-1 text, COMM,
/// frames left out, and hostile sizes.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TagMetadataTests {
    /// The metadata `ContainerMetadata.read` finds in a file of `bytes`.
    static func read(_ bytes: [UInt8]) throws -> ContainerMetadata {
        let path = Env.tempDir("tags") + "/file"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return ContainerMetadata.read(fd: fd)
    }

    static func be32(_ v: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
    static func le32(_ v: Int) -> [UInt8] { be32(v).reversed() }

    /// An ID3v2.3 frame (plain 32-bit size).
    static func frame(_ id: String, _ body: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        Array(id.utf8) + be32(body.count) + [0, flags] + body
    }

    @Test func id3v23TextEncodings() throws {
        let text16: [UInt8] = "Tïtle €".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let utf16: [UInt8] = [1, 0xFF, 0xFE] + text16 + [0, 0]
        var frames = Self.frame("TIT2", utf16) + Self.frame("TPE1", [0, 0x41, 0x6E, 0xE9])  // Latin-1 "Ané"
        frames += Self.frame("COMM", [3] + Array("engshort".utf8) + [0] + Array("the comment".utf8))
        frames += Self.frame("TXXX", [3] + Array("MOOD".utf8) + [0] + Array("calm".utf8))
        frames += Self.frame("TALB", [3] + Array("zipped".utf8), flags: 0x80)  // compressed: left out
        frames += Self.frame("APIC", [0, 1, 2, 3])  // not text: left out
        let size = frames.count + 16  // and padding
        let syncsafe = [21, 14, 7, 0].map { UInt8(size >> $0 & 0x7F) }
        let tag = Array("ID3".utf8) + [3, 0, 0] + syncsafe + frames + [UInt8](repeating: 0, count: 16)
        let items = try Self.read(tag + [0xFF, 0xFB, 0x90, 0x00]).items
        #expect(items == [
            MetadataItem(keySpace: "id3", key: "TIT2", commonKey: "title", value: "Tïtle €"),
            MetadataItem(keySpace: "id3", key: "TPE1", commonKey: "artist", value: "Ané"),
            MetadataItem(keySpace: "id3", key: "COMM", commonKey: "description", value: "the comment"),
            MetadataItem(keySpace: "id3", key: "MOOD", commonKey: "", value: "calm"),
        ], "\(items)")
    }

    @Test func flacAndRiff() throws {
        let comment = Self.le32(3) + Array("abc".utf8) + Self.le32(2) + Self.le32(9) + Array("TITLE=One".utf8)
            + Self.le32(6) + Array("noeq=x".utf8.dropLast(2)) + Array("xx".utf8)
        let streamInfo = [UInt8](repeating: 0, count: 34)
        let flac = Array("fLaC".utf8) + [0, 0, 0, 34] + streamInfo + [0x84, 0, 0, UInt8(comment.count)] + comment
        #expect(try Self.read(flac).items == [MetadataItem(keySpace: "vorbis", key: "vendor", value: "abc"),
                                             MetadataItem(keySpace: "vorbis", key: "TITLE", commonKey: "title", value: "One")])
        let info = Array("INFO".utf8) + Array("INAM".utf8) + Self.le32(3) + Array("Odd".utf8) + [0]
            + Array("IZZZ".utf8) + Self.le32(2) + Array("z".utf8) + [0]
        let riff = Array("RIFF".utf8) + Self.le32(0) + Array("WAVE".utf8) + Array("fmt ".utf8) + Self.le32(2) + [0, 0]
            + Array("LIST".utf8) + Self.le32(info.count) + info
        #expect(try Self.read(riff).items == [MetadataItem(keySpace: "riffinfo", key: "INAM", commonKey: "title", value: "Odd"),
                                             MetadataItem(keySpace: "riffinfo", key: "IZZZ", value: "z")])
    }

    /// Sizes beyond the file end, an ID3 size that is not syncsafe, a FLAC block chain that never ends: no items,
    /// no crash, no hang.
    @Test func hostileSizes() throws {
        let flac = Array("fLaC".utf8) + [0x7F, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 64)
        #expect(try Self.read(flac).items.isEmpty)
        let riff = Array("RIFF".utf8) + Self.le32(0) + Array("AVI ".utf8) + Array("JUNK".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + [0, 0, 0, 0]
        #expect(try Self.read(riff).items.isEmpty)
        let id3 = Array("ID3".utf8) + [4, 0, 0, 0x80, 0, 0, 0] + [UInt8](repeating: 0x54, count: 32)
        #expect(try Self.read(id3).items.isEmpty)
        let frameTooLong = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 20] + Array("TIT2".utf8) + [0x7F, 0x7F, 0x7F, 0x7F, 0, 0, 3, 0x41]
            + [UInt8](repeating: 0, count: 8)
        #expect(try Self.read(frameTooLong).items.isEmpty)
    }

    /// An SDT in MPEG-TS packets: ISO-8859-1 and UTF-8 (selector 0x15) names; a descriptor longer than its section
    /// and a section cut by its packet give no items and no crash.
    @Test func transportStreamServiceDescriptor() {
        func packets(_ descriptor: [UInt8]) -> [UInt8] {
            let service: [UInt8] = [0, 1, 0xFC, 0x80, UInt8(descriptor.count)] + descriptor
            let body: [UInt8] = [0, 1, 0xC1, 0, 0, 0xFF, 0x01, 0xFF] + service + [0, 0, 0, 0]  // … and a CRC
            let section: [UInt8] = [0x42, 0xF0, UInt8(body.count)] + body
            let sdt: [UInt8] = [0x47, 0x40, 0x11, 0x10, 0] + section
            let pad = [UInt8](repeating: 0xFF, count: 188 - sdt.count)
            let null: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)
            return sdt + pad + null + null
        }
        let good = packets([0x48, 11, 1, 3] + [0x41, 0xE9, 0x42] + [5, 0x15, 0xC3, 0xA9, 0x6E, 0x6F])
        #expect(ContainerMetadata.transportStream(head: good).items == [
            MetadataItem(keySpace: "mpegts", key: "service_provider", commonKey: "publisher", value: "AéB"),
            MetadataItem(keySpace: "mpegts", key: "service_name", commonKey: "title", value: "éno"),
        ])
        #expect(ContainerMetadata.transportStream(head: packets([0x48, 11, 1, 200, 0x41])).items.isEmpty)
        #expect(ContainerMetadata.transportStream(head: packets([0x48, 250, 1, 3, 0x41])).items.isEmpty)
        #expect(ContainerMetadata.transportStream(head: Array(good.prefix(100))).items.isEmpty)
    }
}

