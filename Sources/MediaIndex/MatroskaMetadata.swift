import MediaVocabulary
import SystemCalls

/// Matroska/WebM metadata (PROTOCOL.md §7.5): Segment/Info's Title, DateUTC, MuxingApp and WritingApp; each
/// TrackEntry's Name, Language and LanguageBCP47 (key space mkv, the element's name as key); and Tags' SimpleTags
/// (key space mkvtag, TagName as stored, nested tags as "PARENT/CHILD"), for the asset when the Tag targets no track,
/// for a track when its Targets name the track's TrackUID. Elements are read in the Segment before the first Cluster
/// within the file's first `TrackTimescale.headBytes`; a Tags element beyond that is read at the SeekHead's position
/// (at most `maxTagsBytes`). Matroska has no edit list: its tracks get no segments here.
extension ContainerMetadata {
    static let maxTagsBytes = 1 << 20

    static func matroska(head: [UInt8], file: borrowing FileDescriptor) -> ContainerMetadata {
        let segment = matroskaSegment(head)
        var result = matroska(head)
        if !segment.sawTags, let tagsAt = segment.tagsPosition, tagsAt >= UInt64(head.count), tagsAt < UInt64(Int.max),
           let bytes = try? [UInt8](preading: file, count: maxTagsBytes, at: Int(tagsAt)),
           let tags = TrackTimescale.ebmlElement(bytes, 0), tags.id == 0x1254C367 {
            matroskaTags(bytes, from: tags.body, to: tags.end ?? bytes.count, uids: segment.trackUIDs, into: &result)
        }
        return result
    }

    /// What `head` (the file's first bytes) holds.
    public static func matroska(_ head: [UInt8]) -> ContainerMetadata {
        var result = ContainerMetadata()
        let segment = matroskaSegment(head)
        for (id, start, end) in segment.children {
            switch id {
            case 0x1549A966: matroskaInfo(head, from: start, to: end, into: &result.items)
            case 0x1654AE6B: result.tracks = matroskaTracks(head, from: start, to: end)
            default: break
            }
        }
        for (id, start, end) in segment.children where id == 0x1254C367 {
            matroskaTags(head, from: start, to: end, uids: segment.trackUIDs, into: &result)
        }
        return result
    }

    /// The Segment's top-level elements before the first Cluster (id, body start, end), the Tags position its
    /// SeekHead gives (absolute), and each TrackEntry's TrackUID → TrackNumber.
    static func matroskaSegment(_ b: [UInt8]) -> (children: [(UInt32, Int, Int)], tagsPosition: UInt64?, sawTags: Bool,
                                                  trackUIDs: [UInt64: UInt32]) {
        var children: [(UInt32, Int, Int)] = [], tagsPosition: UInt64?, uids: [UInt64: UInt32] = [:]
        guard let header = TrackTimescale.ebmlElement(b, 0), header.id == 0x1A45DFA3, let headerEnd = header.end,
              let segment = TrackTimescale.ebmlElement(b, headerEnd), segment.id == 0x18538067 else { return ([], nil, false, [:]) }
        var at = segment.body
        while let element = TrackTimescale.ebmlElement(b, at), element.id != 0x1F43B675, let end = element.end {
            children.append((element.id, element.body, end))
            if element.id == 0x114D9B74 {  // SeekHead: Seek { SeekID, SeekPosition }
                for (seekID, seekStart, seekEnd) in ebmlChildren(b, element.body, end) where seekID == 0x4DBB {
                    let fields = ebmlChildren(b, seekStart, seekEnd)
                    guard let idField = fields.first(where: { $0.0 == 0x53AB }),
                          TrackTimescale.ebmlUnsigned(b, idField.1, idField.2) == 0x1254C367,
                          let position = fields.first(where: { $0.0 == 0x53AC }),
                          let offset = TrackTimescale.ebmlUnsigned(b, position.1, position.2) else { continue }
                    tagsPosition = UInt64(segment.body).addingReportingOverflow(offset).overflow
                        ? nil : UInt64(segment.body) + offset
                }
            }
            if element.id == 0x1654AE6B {
                for (entryID, entryStart, entryEnd) in ebmlChildren(b, element.body, end) where entryID == 0xAE {
                    let fields = ebmlChildren(b, entryStart, entryEnd)
                    guard let number = fields.first(where: { $0.0 == 0xD7 }), let uid = fields.first(where: { $0.0 == 0x73C5 }),
                          let n = TrackTimescale.ebmlUnsigned(b, number.1, number.2), n <= UInt64(UInt32.max),
                          let u = TrackTimescale.ebmlUnsigned(b, uid.1, uid.2) else { continue }
                    uids[u] = UInt32(n)
                }
            }
            at = end
        }
        return (children, tagsPosition, children.contains { $0.0 == 0x1254C367 }, uids)
    }

    /// The children (id, body start, end) of the element body `from ..< to`; stops at one that does not fit.
    static func ebmlChildren(_ b: [UInt8], _ from: Int, _ to: Int) -> [(UInt32, Int, Int)] {
        var children: [(UInt32, Int, Int)] = []
        var at = from
        while at < to, children.count < 4096, let child = TrackTimescale.ebmlElement(b, at), let end = child.end, end <= to {
            children.append((child.id, child.body, end))
            at = end
        }
        return children
    }

    private static func matroskaInfo(_ b: [UInt8], from: Int, to: Int, into items: inout [MetadataItem]) {
        for (id, start, end) in ebmlChildren(b, from, to) {
            let value = text(b[start..<end])
            switch id {
            case 0x7BA9: append(MetadataItem(keySpace: "mkv", key: "Title", commonKey: "title", value: value), to: &items)
            case 0x4D80: append(MetadataItem(keySpace: "mkv", key: "MuxingApp", value: value), to: &items)
            case 0x5741: append(MetadataItem(keySpace: "mkv", key: "WritingApp", value: value), to: &items)
            case 0x4461:  // DateUTC: signed nanoseconds since 2001-01-01T00:00:00Z
                guard end - start == 8, let raw = TrackTimescale.ebmlUnsigned(b, start, end) else { continue }
                let ns = Int64(bitPattern: raw)
                let seconds = ns / 1_000_000_000 - (ns % 1_000_000_000 < 0 ? 1 : 0)
                let micro = (ns - seconds * 1_000_000_000) / 1_000
                guard let date = iso8601(unixSeconds: seconds + 978_307_200, microseconds: micro) else { continue }
                append(MetadataItem(keySpace: "mkv", key: "DateUTC", commonKey: "creationDate", value: date), to: &items)
            default: break
            }
        }
    }

    private static func matroskaTracks(_ b: [UInt8], from: Int, to: Int) -> [Track] {
        var tracks: [Track] = []
        for (entryID, entryStart, entryEnd) in ebmlChildren(b, from, to) where entryID == 0xAE && tracks.count < DescriptionBounds.tracks {
            var track = Track(id: 0)
            for (id, start, end) in ebmlChildren(b, entryStart, entryEnd) {
                switch id {
                case 0xD7: track.id = UInt32(clamping: TrackTimescale.ebmlUnsigned(b, start, end) ?? 0)
                case 0x536E: append(MetadataItem(keySpace: "mkv", key: "Name", commonKey: "title", value: text(b[start..<end])), to: &track.items)
                case 0x22B59C:
                    append(MetadataItem(keySpace: "mkv", key: "Language", commonKey: "language", value: text(b[start..<end])), to: &track.items)
                case 0x22B59D:
                    append(MetadataItem(keySpace: "mkv", key: "LanguageBCP47", commonKey: "language", value: text(b[start..<end])),
                           to: &track.items)
                default: break
                }
            }
            if track.id > 0 { tracks.append(track) }
        }
        return tracks
    }

    /// Tags: each Tag's SimpleTags go to the asset (no TagTrackUID, or 0) or to the tracks its TagTrackUIDs name;
    /// Tags for editions, chapters or attachments are left out.
    static func matroskaTags(_ b: [UInt8], from: Int, to: Int, uids: [UInt64: UInt32], into result: inout ContainerMetadata) {
        for (tagID, tagStart, tagEnd) in ebmlChildren(b, from, to) where tagID == 0x7373 {
            let fields = ebmlChildren(b, tagStart, tagEnd)
            var trackIDs: [UInt32] = [], otherTarget = false
            for (targetsID, start, end) in fields where targetsID == 0x63C0 {
                for (id, s, e) in ebmlChildren(b, start, end) {
                    let value = TrackTimescale.ebmlUnsigned(b, s, e) ?? 0
                    if id == 0x63C5, value != 0 {
                        if let trackID = uids[value] { trackIDs.append(trackID) } else { otherTarget = true }
                    }
                    if [0x63C9, 0x63C4, 0x63C6].contains(id), value != 0 { otherTarget = true }
                }
            }
            guard !otherTarget else { continue }
            var items: [MetadataItem] = []
            for (id, start, end) in fields where id == 0x67C8 { simpleTag(b, start, end, prefix: "", depth: 0, into: &items) }
            if trackIDs.isEmpty {
                for item in items { append(item, to: &result.items) }
            }
            for trackID in trackIDs {
                if !result.tracks.contains(where: { $0.id == trackID }) { result.tracks.append(Track(id: trackID)) }
                guard let i = result.tracks.firstIndex(where: { $0.id == trackID }) else { continue }
                for item in items { append(item, to: &result.tracks[i].items) }
            }
        }
    }

    /// One SimpleTag: TagName and TagString (binary tags are left out), then its nested SimpleTags (4 levels at most).
    private static func simpleTag(_ b: [UInt8], _ from: Int, _ to: Int, prefix: String, depth: Int, into items: inout [MetadataItem]) {
        let fields = ebmlChildren(b, from, to)
        guard let name = fields.first(where: { $0.0 == 0x45A3 }).map({ text(b[$0.1..<$0.2]) }), !name.isEmpty else { return }
        let key = prefix + name
        if let string = fields.first(where: { $0.0 == 0x4487 }) {
            append(MetadataItem(keySpace: "mkvtag", key: key, commonKey: commonKey(keySpace: "mkvtag", key: key),
                                value: text(b[string.1..<string.2])), to: &items)
        }
        guard depth < 4 else { return }
        for (id, start, end) in fields where id == 0x67C8 { simpleTag(b, start, end, prefix: key + "/", depth: depth + 1, into: &items) }
    }
}
