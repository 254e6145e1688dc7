import MediaVocabulary

/// MP4/MOV metadata and edit lists from a moov box's body (PROTOCOL.md §7.5, §7.6):
/// - the asset: mvhd's creation time; moov/udta's QuickTime text items (©nam …) and udta/meta or moov/meta item
///   lists (iTunes `mdir`: itsk; QuickTime `mdta` with its keys box: mdta);
/// - each trak: mdhd's creation time and language, mdia/hdlr's name, a video track's stsd compressor name, its
///   udta/meta items, and edts/elst as segments (source in the mdhd timescale, target in the mvhd timescale).
extension ContainerMetadata {
    public static func mp4(movie: ArraySlice<UInt8>) -> ContainerMetadata {
        var result = ContainerMetadata()
        var reader = BoxReader(bytes: movie)
        var movieTimescale: UInt32 = 0
        var traks: [ArraySlice<UInt8>] = []
        while let box = reader.next() {
            switch box.type {
            case "mvhd":
                movieTimescale = ContainerIndex.fieldAfterTimes(box.body) ?? 0
                if let date = creationDate(box.body) {
                    append(MetadataItem(keySpace: "mvhd", key: "creationTime", commonKey: "creationDate", value: date), to: &result.items)
                }
            case "udta": userData(box.body, into: &result.items)
            case "meta": metaItems(box.body, into: &result.items)
            case "trak": traks.append(box.body)
            default: break
            }
        }
        for trak in traks.prefix(DescriptionBounds.tracks) {
            if let track = mp4Track(trak, movieTimescale: movieTimescale) { result.tracks.append(track) }
        }
        return result
    }

    private static func mp4Track(_ trak: ArraySlice<UInt8>, movieTimescale: UInt32) -> Track? {
        var id: UInt32?, edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)]?
        var media = (timescale: UInt32(0), duration: UInt64(0))
        var items: [MetadataItem] = [], trackItems: [MetadataItem] = []
        var reader = BoxReader(bytes: trak)
        while let box = reader.next() {
            switch box.type {
            case "tkhd": id = ContainerIndex.fieldAfterTimes(box.body)
            case "edts":
                var edts = BoxReader(bytes: box.body)
                while let elst = edts.next() {
                    if elst.type == "elst" { edits = editList(elst.body) }
                }
            case "mdia": media = mediaItems(box.body, into: &items)
            case "udta": userData(box.body, into: &trackItems)
            case "meta": metaItems(box.body, into: &trackItems)
            default: break
            }
        }
        guard let id else { return nil }
        for item in trackItems { append(item, to: &items) }
        let mapped = edits.flatMap { Self.segments($0, movieTimescale: movieTimescale, media: media) }
        return Track(id: id, segments: mapped, items: items)
    }

    /// mdia: mdhd's creation time and language, hdlr's name, (video) the first stsd entry's compressor name.
    /// Returns the mdhd timescale and duration.
    private static func mediaItems(_ mdia: ArraySlice<UInt8>, into items: inout [MetadataItem]) -> (UInt32, UInt64) {
        var timescale: UInt32 = 0, duration: UInt64 = 0, isVideo = false
        var reader = BoxReader(bytes: mdia)
        while let box = reader.next() {
            let b = box.body
            switch box.type {
            case "mdhd":
                timescale = ContainerIndex.fieldAfterTimes(b) ?? 0
                let v1 = b.first == 1
                if b.count >= (v1 ? 32 : 24) { duration = v1 ? be64(b, 24) : UInt64(be32(b, 16)) }
                if let date = creationDate(b) {
                    append(MetadataItem(keySpace: "mdhd", key: "creationTime", commonKey: "creationDate", value: date), to: &items)
                }
                if b.count >= (v1 ? 34 : 22), let language = language(UInt16(be32(b, v1 ? 30 : 18) & 0xFFFF)) {
                    append(MetadataItem(keySpace: "mdhd", key: "language", commonKey: "language", value: language), to: &items)
                }
            case "hdlr":
                guard b.count >= 24 else { continue }
                isVideo = fourCC(b, 8) == "vide"
                append(MetadataItem(keySpace: "hdlr", key: "name", value: handlerName(b)), to: &items)
            case "minf" where isVideo:
                if let name = compressorName(minf: b) {
                    append(MetadataItem(keySpace: "stsd", key: "compressorName", value: name), to: &items)
                }
            default: break
            }
        }
        return (timescale, duration)
    }

    /// mvhd's / mdhd's creation time (seconds since 1904, or since 1970 when smaller, as ffmpeg reads it); nil for 0.
    static func creationDate(_ b: ArraySlice<UInt8>) -> String? {
        guard let version = b.first, b.count >= (version == 1 ? 12 : 8) else { return nil }
        let stored = version == 1 ? be64(b, 4) : UInt64(be32(b, 4))
        guard stored > 0, stored <= UInt64(Int64.max) else { return nil }
        let seconds = Int64(stored)
        return iso8601(unixSeconds: seconds >= 2_082_844_800 ? seconds - 2_082_844_800 : seconds)
    }

    /// mdhd's packed ISO 639-2/T code (three 5-bit letters + 0x60), or a Macintosh language code below 0x400
    /// (QuickTime); nil for 0x7FFF (unspecified) and codes outside both.
    static func language(_ code: UInt16) -> String? {
        if code >= 0x400 && code != 0x7FFF {
            let letters = [code >> 10, code >> 5, code].map { UInt8(0x60 + ($0 & 0x1F)) }
            guard letters.allSatisfy({ (0x61...0x7A).contains($0) }) else { return nil }
            return String(decoding: letters, as: UTF8.self)
        }
        return Int(code) < macLanguages.count ? macLanguages[Int(code)] : nil
    }

    /// QuickTime's Macintosh language codes 0 … 23 as ISO 639-2 (ffmpeg's table, isom.c).
    static let macLanguages = ["eng", "fra", "ger", "ita", "dut", "sve", "spa", "dan", "por", "nor", "heb", "jpn",
                               "ara", "fin", "gre", "ice", "mlt", "tur", "hr ", "chi", "urd", "hin", "tha", "kor"]

    /// hdlr's name after the 24 bytes of version, flags, pre_defined/component type, handler type and reserved
    /// fields: a C string (MP4), or a Pascal string (QuickTime, when its length byte is the rest of the box).
    static func handlerName(_ b: ArraySlice<UInt8>) -> String {
        let name = b.dropFirst(24)
        if let length = name.first, Int(length) == name.count - 1, fourCC(b, 4) != "\0\0\0\0" { return text(name.dropFirst()) }
        return text(name)
    }

    /// minf/stbl/stsd's first VisualSampleEntry's compressorname (a 32-byte Pascal string at entry offset 50).
    static func compressorName(minf: ArraySlice<UInt8>) -> String? {
        var reader = BoxReader(bytes: minf)
        while let box = reader.next() {
            guard box.type == "stbl" else { continue }
            var stbl = BoxReader(bytes: box.body)
            while let table = stbl.next() {
                guard table.type == "stsd", table.body.count >= 8 + 82 else { continue }
                let entry = table.body.dropFirst(8)
                let length = min(Int(entry[entry.startIndex + 50]), 31)
                let name = text(entry.dropFirst(51).prefix(length))
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }
}
