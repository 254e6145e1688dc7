import MediaVocabulary

/// MP4/MOV item lists and edit lists (PROTOCOL.md §7.5, §7.6).
extension ContainerMetadata {
    /// udta: QuickTime text items (type starting with ©: u16 length, u16 language, text — or an iTunes `data` box)
    /// and a nested meta box.
    static func userData(_ udta: ArraySlice<UInt8>, into items: inout [MetadataItem]) {
        var reader = BoxReader(bytes: udta)
        while let box = reader.next() {
            if box.type == "meta" { metaItems(box.body, into: &items); continue }
            if box.type == "loci", let location = location3GPP(box.body) {
                append(MetadataItem(keySpace: "udta", key: "loci", commonKey: "location", value: location), to: &items)
            }
            guard reader.lastType >> 24 == 0xA9 else { continue }
            let key = atomKey(raw: reader.lastType)
            let b = box.body
            let value: String?
            if b.count >= 16, fourCC(b, 4) == "data" {
                value = dataValue(b)
            } else if b.count >= 4 {
                value = text(b.dropFirst(4).prefix(Int(be32(b, 0) >> 16)))
            } else {
                value = nil
            }
            guard let value else { continue }
            append(MetadataItem(keySpace: "udta", key: key, commonKey: commonKey(keySpace: "udta", key: key), value: value),
                   to: &items)
        }
    }

    /// 3GPP `loci` (what ffmpeg writes for an MP4's location): version/flags, u16 language, the place name (C
    /// string), u8 role, then longitude, latitude and altitude as 16.16 fixed point — as ffmpeg prints it, ISO 6709:
    /// latitude `%+08.4f`, longitude `%+09.4f`, a non-zero altitude `%+f`, then "/" and the place name.
    static func location3GPP(_ b: ArraySlice<UInt8>) -> String? {
        let rest = b.dropFirst(6)
        guard let end = rest.firstIndex(of: 0), b.endIndex - end >= 14 else { return nil }
        let place = text(rest[..<end])
        let at = end + 2 - b.startIndex  // after the NUL and the role
        let longitude = Int32(bitPattern: be32(b, at)), latitude = Int32(bitPattern: be32(b, at + 4))
        let altitude = Int32(bitPattern: be32(b, at + 8))
        return fixed(latitude, 4, 2) + fixed(longitude, 4, 3) + (altitude != 0 ? fixed(altitude, 6, 1) : "") + "/" + place
    }

    /// A 16.16 fixed-point value as printf's `%+0W.Df` prints it (the exact value rounded half to even, at least
    /// `digits` integer digits).
    static func fixed(_ raw: Int32, _ decimals: Int, _ digits: Int) -> String {
        let scale = (0..<decimals).reduce(Int64(1)) { p, _ in p * 10 }
        let q = Int64(raw.magnitude) * scale
        var whole = q >> 16
        let rem = q & 0xFFFF
        if rem > 0x8000 || (rem == 0x8000 && whole % 2 == 1) { whole += 1 }
        let integer = String(whole / scale), fraction = String(whole % scale)
        return (raw < 0 ? "-" : "+") + String(repeating: "0", count: max(0, digits - integer.count)) + integer + "."
            + String(repeating: "0", count: max(0, decimals - fraction.count)) + fraction
    }

    /// meta (a full box in MP4, a plain box in QuickTime): its hdlr says `mdir` (iTunes: each ilst item's type is
    /// its key, key space itsk) or `mdta` (each ilst item's type is a 1-based index into the keys box, key space mdta).
    static func metaItems(_ meta: ArraySlice<UInt8>, into items: inout [MetadataItem]) {
        let body = meta.count >= 8 && fourCC(meta, 4) == "hdlr" ? meta : meta.dropFirst(4)
        var reader = BoxReader(bytes: body)
        var handler = "", keys: [String] = [], list: ArraySlice<UInt8>?
        while let box = reader.next() {
            switch box.type {
            case "hdlr" where box.body.count >= 12: handler = fourCC(box.body, 8)
            case "keys": keys = metaKeys(box.body)
            case "ilst": list = box.body
            default: break
            }
        }
        guard let list else { return }
        var ilst = BoxReader(bytes: list)
        while let entry = ilst.next() {
            let keySpace = handler == "mdta" ? "mdta" : "itsk"
            var key = ""
            if keySpace == "mdta" {
                guard ilst.lastType >= 1, Int(ilst.lastType) <= keys.count else { continue }
                key = keys[Int(ilst.lastType) - 1]
            } else {
                key = atomKey(raw: ilst.lastType)
            }
            var value: String?
            var children = BoxReader(bytes: entry.body)
            while let child = children.next() {
                if child.type == "name", key == "----" { key = text(child.body.dropFirst(4)) }
                if child.type == "data", value == nil { value = dataValue(child.body) }
            }
            guard let value, !key.isEmpty else { continue }
            append(MetadataItem(keySpace: keySpace, key: key, commonKey: commonKey(keySpace: keySpace, key: key), value: value),
                   to: &items)
        }
    }

    /// A `data` box's value when its type indicator is 1 (UTF-8); nil for other types (numbers, images …).
    static func dataValue(_ data: ArraySlice<UInt8>) -> String? {
        guard data.count >= 8, be32(data, 0) & 0xFF_FFFF == 1 else { return nil }
        return text(data.dropFirst(8))
    }

    /// keys: version/flags, u32 count, then each key as u32 size, u32 namespace, the key's bytes (at most
    /// `DescriptionBounds.metadataItems` × 4 keys are read).
    static func metaKeys(_ b: ArraySlice<UInt8>) -> [String] {
        guard b.count >= 8 else { return [] }
        var keys: [String] = []
        var at = 8
        for _ in 0..<min(Int(be32(b, 4)), 4 * DescriptionBounds.metadataItems) {
            guard b.count - at >= 8 else { break }
            let size = Int(be32(b, at))
            guard size >= 8, size <= b.count - at else { break }
            keys.append(text(b.dropFirst(at + 8).prefix(size - 8)))
            at += size
        }
        return keys
    }

    /// The key of an atom type: 0xA9 as "©", other bytes as Latin-1.
    static func atomKey(raw: UInt32) -> String {
        String([raw >> 24, raw >> 16, raw >> 8, raw].map { Character(Unicode.Scalar(UInt8($0 & 0xFF))) })
    }

    // ── Edit lists ───────────────────────────────────────────────────────────────────────────────────────────────

    /// elst's first `DescriptionBounds.segments` entries (segment duration, media time, rate 16.16), or nil when the count
    /// does not fit in the box.
    static func editList(_ b: ArraySlice<UInt8>) -> [(duration: UInt64, mediaTime: Int64, rate: UInt32)]? {
        guard let version = b.first, b.count >= 8 else { return nil }
        let width = version == 1 ? 20 : 12
        let count = Int(be32(b, 4))
        guard count <= (b.count - 8) / width else { return nil }
        return (0..<min(count, DescriptionBounds.segments)).map { i in
            let at = 8 + i * width
            if version == 1 { return (be64(b, at), Int64(bitPattern: be64(b, at + 8)), be32(b, at + 16)) }
            return (UInt64(be32(b, at)), Int64(Int32(bitPattern: be32(b, at + 4))), be32(b, at + 8))
        }
    }

    /// AVAssetTrackSegments of an edit list: each edit's target range follows the one before in the movie timescale
    /// (starting at 0), its source starts at the media time in the media timescale, and its source duration is the
    /// segment duration × rate in the media timescale, rounded to the nearest tick (halves up). A segment duration
    /// of 0 (fragmented files; ffmpeg's `-c copy` of a delayed track) runs to the media's end: its source is the rest
    /// of the media exactly, its target that rounded to the movie timescale. Media time −1 is an empty edit. nil — no segments reported —
    /// when a timescale is 0 or above 2³¹ − 1, a rate is negative, a media time is below −1, or a time overflows.
    static func segments(_ edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)], movieTimescale: UInt32,
                         media: (timescale: UInt32, duration: UInt64)) -> [TrackSegment]? {
        guard movieTimescale > 0, movieTimescale <= UInt32(Int32.max), media.timescale > 0,
              media.timescale <= UInt32(Int32.max) else { return nil }
        let movieScale = Int32(movieTimescale), mediaScale = Int32(media.timescale)
        func rounded(_ n: Int128, _ d: Int128) -> Int64? { Int64(exactly: (n + d / 2) / d) }
        var cursor: Int64 = 0
        var result: [TrackSegment] = []
        for edit in edits {
            let rate = Int32(bitPattern: edit.rate)
            guard rate >= 0, edit.mediaTime >= -1, var duration = Int64(exactly: edit.duration) else { return nil }
            var sourceDuration: Int64
            if duration == 0, edit.mediaTime >= 0, let mediaDuration = Int64(exactly: media.duration) {
                sourceDuration = max(0, mediaDuration - edit.mediaTime)  // the rest of the media, exactly
                guard let full = rounded(Int128(sourceDuration) * Int128(movieScale), Int128(mediaScale)) else { return nil }
                duration = full
            } else {
                guard let scaled = rounded(Int128(duration) * Int128(mediaScale) * Int128(rate), Int128(movieScale) * 0x1_0000)
                else { return nil }
                sourceDuration = scaled
            }
            let target = MediaTimeRange(start: MediaTime(value: cursor, timescale: movieScale),
                                        duration: MediaTime(value: duration, timescale: movieScale))
            let source = MediaTime(value: sourceDuration, timescale: mediaScale)
            result.append(edit.mediaTime == -1
                ? .empty(target: target, sourceDuration: source)
                : TrackSegment(source: MediaTimeRange(start: MediaTime(value: edit.mediaTime, timescale: mediaScale),
                                                      duration: source), target: target))
            let (next, overflow) = cursor.addingReportingOverflow(duration)
            guard !overflow else { return nil }
            cursor = next
        }
        return result
    }
}
