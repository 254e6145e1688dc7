import MediaVocabulary

// MPEG-TS: the service names of the first Service Description Table (PID 0x11, table 0x42) in the file's first
// bytes become the asset's items, keySpace `mpegts` (docs/PROTOCOL.md §7.5).

extension ContainerMetadata {
    /// The SDT's first service descriptor in `head` (188-byte packets from offset 0): `service_provider` and
    /// `service_name`, as ffprobe names them. Empty when the SDT is not within `head` or not in one packet.
    static func transportStream(head: [UInt8]) -> ContainerMetadata {
        for at in stride(from: 0, through: head.count - 188, by: 188) where head[at] == 0x47 {
            let pid = Int(head[at + 1] & 0x1F) << 8 | Int(head[at + 2])
            let unitStart = head[at + 1] & 0x40 != 0, adaptation = head[at + 3] >> 4 & 2 != 0
            guard pid == 0x11, unitStart else { continue }
            var payload = at + 4 + (adaptation ? 1 + Int(head[at + 4]) : 0)
            guard payload < at + 188 else { continue }
            payload += 1 + Int(head[payload])  // the pointer field
            guard payload + 3 <= at + 188, head[payload] == 0x42 else { continue }
            let sectionEnd = min(payload + 3 + (Int(head[payload + 1] & 0x0F) << 8 | Int(head[payload + 2])) - 4, at + 188)
            return ContainerMetadata(items: sdtServices(Array(head[payload..<max(payload, sectionEnd)])))
        }
        return ContainerMetadata()
    }

    /// The first service's service descriptor (tag 0x48) of an SDT section (without its CRC).
    static func sdtServices(_ section: [UInt8]) -> [MetadataItem] {
        var at = 11  // table id, length (2), transport stream id (2), version, section numbers (2), network id (2), reserved
        while at + 5 <= section.count {
            let loopLength = Int(section[at + 3] & 0x0F) << 8 | Int(section[at + 4])
            var d = at + 5
            let end = min(at + 5 + loopLength, section.count)
            while d + 2 <= end {
                let tag = section[d], length = Int(section[d + 1])
                guard d + 2 + length <= end else { break }
                if tag == 0x48, length >= 3 {
                    let body = Array(section[d + 2..<d + 2 + length])
                    let providerLength = Int(body[1])
                    guard 2 + providerLength < body.count else { return [] }
                    let nameLength = Int(body[2 + providerLength])
                    guard 3 + providerLength + nameLength <= body.count else { return [] }
                    var items: [MetadataItem] = []
                    append(MetadataItem(keySpace: "mpegts", key: "service_provider", commonKey: "publisher",
                                        value: dvbText(body[2..<2 + providerLength])), to: &items)
                    append(MetadataItem(keySpace: "mpegts", key: "service_name", commonKey: "title",
                                        value: dvbText(body[3 + providerLength..<3 + providerLength + nameLength])), to: &items)
                    return items
                }
                d += 2 + length
            }
            at = end
        }
        return []
    }

    /// DVB text (EN 300 468 annex A): a first byte 0x15 selects UTF-8; other selectors (below 0x20) and the
    /// default table are read as ISO-8859-1, which they match for ASCII.
    static func dvbText(_ bytes: ArraySlice<UInt8>) -> String {
        guard let first = bytes.first, first < 0x20 else { return String(bytes.map { Character(Unicode.Scalar($0)) }) }
        let skip = first == 0x10 ? 3 : first == 0x1F ? 2 : 1
        let rest = bytes.dropFirst(skip)
        return first == 0x15 ? text(rest) : String(rest.map { Character(Unicode.Scalar($0)) })
    }
}
