import MediaVocabulary
import SystemCalls

// Asset metadata of the simple tag formats, read with pread (no GStreamer, so the same on every open): FLAC's
// VORBIS_COMMENT block, RIFF LIST/INFO (WAV and AVI) and ID3v2 (MP3). docs/PROTOCOL.md §7.5 lists the keys.

extension ContainerMetadata {
    /// The most bytes one tag block is read from.
    static let maxTagBytes = 1 << 20

    /// FLAC: the VORBIS_COMMENT block among the metadata blocks after "fLaC" (the asset's items).
    static func flac(file: borrowing FileDescriptor, size: UInt64) -> ContainerMetadata {
        var at = 4, blocks = 0
        while blocks < 128, UInt64(at + 4) <= size, let header = try? [UInt8](preading: file, count: 4, at: at),
              header.count == 4 {
            let length = Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            if header[0] & 0x7F == 4 {
                guard let block = try? [UInt8](preading: file, count: min(length, maxTagBytes), at: at + 4) else { break }
                return ContainerMetadata(items: vorbisComments(block))
            }
            if header[0] & 0x80 != 0 { break }  // the last metadata block
            at += 4 + length
            blocks += 1
        }
        return ContainerMetadata()
    }

    /// A Vorbis comment (vendor, then "KEY=value" fields; lengths little-endian): keySpace `vorbis`, the key as
    /// stored; the vendor string as key `vendor`.
    static func vorbisComments(_ bytes: [UInt8]) -> [MetadataItem] {
        var items: [MetadataItem] = []
        func le32(_ at: Int) -> Int? {
            guard at >= 0, at + 4 <= bytes.count else { return nil }
            return bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        guard let vendorLength = le32(0), 4 + vendorLength <= bytes.count, let count = le32(4 + vendorLength) else { return [] }
        append(MetadataItem(keySpace: "vorbis", key: "vendor", commonKey: "", value: text(bytes[4..<4 + vendorLength])), to: &items)
        var at = 8 + vendorLength
        for _ in 0..<min(count, 4096) {
            guard let length = le32(at), at + 4 + length <= bytes.count else { break }
            let field = bytes[at + 4..<at + 4 + length]
            at += 4 + length
            guard let equals = field.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: field[..<equals].prefix(255), as: UTF8.self)
            append(MetadataItem(keySpace: "vorbis", key: key, commonKey: vorbisCommonKeys[key.uppercased()] ?? "",
                                value: text(field[(equals + 1)...])), to: &items)
        }
        return items
    }

    /// RIFF (WAV, AVI): the INFO list among the top-level chunks (the asset's items), keySpace `riffinfo`.
    static func riff(file: borrowing FileDescriptor, size: UInt64) -> ContainerMetadata {
        var at = 12, chunks = 0
        while chunks < 1024, UInt64(at + 12) <= size, let header = try? [UInt8](preading: file, count: 12, at: at),
              header.count == 12 {
            let length = Int(header[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            if header[0..<4].elementsEqual("LIST".utf8), header[8..<12].elementsEqual("INFO".utf8) {
                guard let list = try? [UInt8](preading: file, count: min(max(length - 4, 0), maxTagBytes), at: at + 12) else { break }
                return ContainerMetadata(items: riffInfo(list))
            }
            at += 8 + length + (length & 1)
            chunks += 1
        }
        return ContainerMetadata()
    }

    /// The sub-chunks of a LIST/INFO: id (`INAM`, `IART` …), little-endian size, NUL-terminated text.
    static func riffInfo(_ bytes: [UInt8]) -> [MetadataItem] {
        var items: [MetadataItem] = [], at = 0
        while at + 8 <= bytes.count {
            let key = String(decoding: bytes[at..<at + 4], as: UTF8.self)
            let length = Int(bytes[at + 4..<at + 8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard at + 8 + length <= bytes.count else { break }
            append(MetadataItem(keySpace: "riffinfo", key: key, commonKey: riffInfoCommonKeys[key] ?? "",
                                value: text(bytes[at + 8..<at + 8 + length])), to: &items)
            at += 8 + length + (length & 1)
        }
        return items
    }

    static let vorbisCommonKeys: [String: String] = [
        "TITLE": "title", "ARTIST": "artist", "ALBUM": "albumName", "DESCRIPTION": "description",
        "COMMENT": "description", "COPYRIGHT": "copyright", "DATE": "creationDate", "ENCODER": "software",
        "ORGANIZATION": "publisher", "LANGUAGE": "language",
    ]

    static let riffInfoCommonKeys: [String: String] = [
        "INAM": "title", "IART": "artist", "IPRD": "albumName", "ICMT": "description", "ICOP": "copyright",
        "ICRD": "creationDate", "ISFT": "software", "IENG": "creator", "ILNG": "language",
    ]
}
