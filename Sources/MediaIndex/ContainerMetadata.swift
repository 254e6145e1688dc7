import MediaVocabulary
import SystemCalls

/// An asset's metadata and each track's metadata and edit list, read from the container with pread (no GStreamer):
/// MP4/MOV (`MP4Metadata.swift`), Matroska/WebM (`MatroskaMetadata.swift`), and the asset tags of FLAC, WAV, AVI
/// (`TagMetadata.swift`), ID3v2 (MP3, `ID3Metadata.swift`) and MPEG-TS service names (`TransportStreamMetadata.swift`). Which boxes and elements become
/// which items, and the AVFoundation common keys they map to, is docs/PROTOCOL.md §7.5; segments §7.6.
public struct ContainerMetadata: Sendable, Equatable {
    public struct Track: Sendable, Equatable {
        /// The container's track number: MP4 tkhd track_ID, Matroska TrackNumber (trackd's track ids).
        public var id: UInt32
        /// The edit list's segments; nil when the track has none (the caller maps the track onto itself).
        public var segments: [TrackSegment]?
        public var items: [MetadataItem]

        public init(id: UInt32, segments: [TrackSegment]? = nil, items: [MetadataItem] = []) {
            self.id = id
            self.segments = segments
            self.items = items
        }
    }

    public var items: [MetadataItem] = []
    public var tracks: [Track] = []

    public init(items: [MetadataItem] = [], tracks: [Track] = []) {
        self.items = items
        self.tracks = tracks
    }

    /// What the file's container states; empty for other containers or a header this cannot read.
    public static func read(file: borrowing FileDescriptor) -> ContainerMetadata {
        guard let size = try? file.regularFileSize(), size > 12,
              let head = try? [UInt8](preading: file, count: Int(min(size, UInt64(TrackTimescale.headBytes))), at: 0)
        else { return ContainerMetadata() }
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return matroska(head: head, file: file) }
        if head.starts(with: Array("fLaC".utf8)) { return flac(file: file, size: size) }
        if head.starts(with: Array("RIFF".utf8)), head[8..<12].elementsEqual("WAVE".utf8) || head[8..<12].elementsEqual("AVI ".utf8) {
            return riff(file: file, size: size)
        }
        if head.starts(with: Array("ID3".utf8)) { return id3(head: head, file: file) }
        if head.count >= 377, head[0] == 0x47, head[188] == 0x47, head[376] == 0x47 { return transportStream(head: head) }
        if head.count >= 8, ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot"].contains(fourCC(head, 4)),
           let moov = ContainerIndex.readMovie(file, fileSize: size) {
            return mp4(movie: moov)
        }
        return ContainerMetadata()
    }

    /// `read(file:)` of a descriptor the caller keeps open.
    public static func read(fd: Int32) -> ContainerMetadata {
        let file = FileDescriptor(taking: fd)
        let metadata = read(file: file)
        _ = file.take()  // the caller's descriptor: not closed here
        return metadata
    }

    /// The track's own entry, if the container has one.
    public func track(_ id: UInt32) -> Track? { tracks.first { $0.id == id } }

    /// Appends an item unless the list already holds `DescriptionBounds.metadataItems` (a hostile file's thousands of tags
    /// stop there) or the value is empty.
    static func append(_ item: MetadataItem, to items: inout [MetadataItem]) {
        guard !item.value.isEmpty, items.count < DescriptionBounds.metadataItems else { return }
        items.append(item)
    }

    /// Text from stored bytes: up to the first NUL, invalid UTF-8 replaced (U+FFFD), at most `DescriptionBounds.metadataValueBytes`
    /// bytes read.
    static func text(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: bytes.prefix(DescriptionBounds.metadataValueBytes).prefix { $0 != 0 }, as: UTF8.self)
    }
}

// ── Dates and common keys ────────────────────────────────────────────────────────────────────────────────────────

extension ContainerMetadata {
    /// ISO 8601 in UTC: "2021-03-04T05:06:07Z", with six fractional digits when `microseconds` is not 0; nil
    /// outside years 1 … 9999.
    static func iso8601(unixSeconds: Int64, microseconds: Int64 = 0) -> String? {
        guard unixSeconds > -62_135_596_800, unixSeconds < 253_402_300_800 else { return nil }
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secondOfDay = unixSeconds - days * 86_400
        // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var text = String(repeating: "0", count: max(0, 4 - String(year).count)) + "\(year)"
        text += "-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))"
        if microseconds > 0 {
            let digits = String(microseconds)
            text += "." + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
        }
        return text + "Z"
    }

    /// AVMetadataCommonKey for a key of the given key space ("" when AVFoundation has none).
    static func commonKey(keySpace: String, key: String) -> String {
        switch keySpace {
        case "udta", "itsk": return atomCommonKeys[key] ?? ""
        case "mdta": return key.hasPrefix("com.apple.quicktime.") ? quickTimeCommonKeys[String(key.dropFirst(20))] ?? "" : ""
        case "mkvtag": return matroskaTagCommonKeys[key.uppercased()] ?? ""
        default: return ""
        }
    }

    static let atomCommonKeys: [String: String] = [
        "©nam": "title", "©ART": "artist", "©alb": "albumName", "©aut": "author", "©cpy": "copyright", "cprt": "copyright",
        "©day": "creationDate", "©des": "description", "desc": "description", "©swr": "software", "©too": "software",
        "©mak": "make", "©mod": "model", "©xyz": "location", "©pub": "publisher", "©wrt": "creator",
    ]

    static let quickTimeCommonKeys: [String: String] = [
        "title": "title", "artist": "artist", "album": "albumName", "author": "author", "copyright": "copyright",
        "creationdate": "creationDate", "description": "description", "make": "make", "model": "model",
        "software": "software", "location.ISO6709": "location", "publisher": "publisher",
    ]

    static let matroskaTagCommonKeys: [String: String] = [
        "TITLE": "title", "ARTIST": "artist", "DESCRIPTION": "description", "COPYRIGHT": "copyright",
        "ENCODER": "software", "DATE_RECORDED": "creationDate", "PUBLISHER": "publisher",
    ]
}
