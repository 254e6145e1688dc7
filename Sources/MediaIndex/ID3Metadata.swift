import MediaVocabulary
import SystemCalls

// ID3v2.3 and ID3v2.4 tags at the start of a file (MP3, also AAC/ADTS): text frames, TXXX and COMM become the
// asset's items, keySpace `id3` (docs/PROTOCOL.md §7.5).

extension ContainerMetadata {
    /// The tag at offset 0 of the file, whose first bytes are `head`; empty for another version, an unsynchronised
    /// v2.3 tag or a damaged header.
    static func id3(head: [UInt8], file: borrowing FileDescriptor) -> ContainerMetadata {
        guard head.count >= 10, head.starts(with: Array("ID3".utf8)), head[3] == 3 || head[3] == 4,
              head[6..<10].allSatisfy({ $0 < 0x80 }) else { return ContainerMetadata() }
        let version = head[3], flags = head[5]
        if version == 3 && flags & 0x80 != 0 { return ContainerMetadata() }  // whole-tag unsynchronisation
        let size = syncsafe(head[6..<10])
        guard let tag = try? [UInt8](preading: file, count: min(size, maxTagBytes), at: 10) else { return ContainerMetadata() }
        var at = 0
        if flags & 0x40 != 0, tag.count >= 4 {  // an extended header: skipped
            at = version == 4 ? syncsafe(tag[0..<4]) : 4 + Int(bigEndian(tag[0..<4]))
        }
        var items: [MetadataItem] = []
        while at + 10 <= tag.count, tag[at] != 0 {
            let id = String(decoding: tag[at..<at + 4], as: UTF8.self)
            let length = version == 4 ? syncsafe(tag[at + 4..<at + 8]) : Int(bigEndian(tag[at + 4..<at + 8]))
            let frameFlags = tag[at + 9]
            guard length > 0, at + 10 + length <= tag.count else { break }
            // Compressed, encrypted or unsynchronised frames (v2.4: bits 3, 2, 1; v2.3: bits 7, 6) are left out.
            let plain = version == 4 ? frameFlags & 0x0E == 0 : frameFlags & 0xC0 == 0
            if plain, let item = id3Item(id, Array(tag[at + 10..<at + 10 + length])) { append(item, to: &items) }
            at += 10 + length
        }
        return ContainerMetadata(items: items)
    }

    /// A text frame (`T…`), a TXXX (its description as the key) or a COMM (its text).
    static func id3Item(_ id: String, _ body: [UInt8]) -> MetadataItem? {
        guard let encoding = body.first, encoding <= 3 else { return nil }
        var strings = id3Strings(body.dropFirst(id == "COMM" ? 4 : 1), encoding: encoding)
        switch id {
        case "TXXX":
            guard strings.count >= 2 else { return nil }
            return MetadataItem(keySpace: "id3", key: String(strings[0].prefix(255)), value: strings[1])
        case "COMM":
            guard strings.count >= 2 else { return nil }
            strings.removeFirst()  // the short description
        default:
            guard id.hasPrefix("T") else { return nil }
        }
        guard let value = strings.first else { return nil }
        return MetadataItem(keySpace: "id3", key: id, commonKey: id3CommonKeys[id] ?? "", value: value)
    }

    /// The NUL-separated strings of a frame body in ID3 encoding 0 (ISO-8859-1), 1 (UTF-16 with BOM), 2 (UTF-16BE)
    /// or 3 (UTF-8).
    static func id3Strings(_ bytes: ArraySlice<UInt8>, encoding: UInt8) -> [String] {
        let bytes = Array(bytes.prefix(DescriptionBounds.metadataValueBytes * 2 + 512))
        guard encoding == 1 || encoding == 2 else {
            return bytes.split(separator: 0, omittingEmptySubsequences: false).map { part in
                encoding == 0 ? String(part.map { Character(Unicode.Scalar($0)) }) : text(part)
            }
        }
        let units = stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var strings: [String] = []
        for var part in units.split(separator: 0, omittingEmptySubsequences: false) {
            var littleEndian = false
            if encoding == 1, let bom = part.first, bom == 0xFFFE || bom == 0xFEFF {
                littleEndian = bom == 0xFFFE
                part = part.dropFirst()
            }
            strings.append(String(decoding: part.map { littleEndian ? $0.byteSwapped : $0 }, as: UTF16.self))
        }
        return strings
    }

    static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int { bytes.reduce(0) { $0 << 7 | Int($1 & 0x7F) } }

    static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 { bytes.reduce(0) { $0 << 8 | UInt32($1) } }

    static let id3CommonKeys: [String: String] = [
        "TIT2": "title", "TPE1": "artist", "TALB": "albumName", "TCOP": "copyright", "TDRC": "creationDate",
        "TYER": "creationDate", "TSSE": "software", "TPUB": "publisher", "TLAN": "language", "TCOM": "creator",
        "COMM": "description",
    ]
}
