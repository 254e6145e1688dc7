// Asset and track metadata (AVMetadataItem-shaped) and a track's edit-list segments (AVAssetTrackSegment-shaped):
// what AssetOpened and the track record carry after their older fields (docs/PROTOCOL.md §7.5, §7.6).

extension MetadataItem {
    /// The bytes this item takes on the wire: its record's size, then four strings.
    public var encodedSize: Int {
        12 + [keySpace, key, commonKey].reduce(0) { $0 + min($1.utf8.count, Wire.maxMetadataKey) }
            + min(value.utf8.count, Wire.maxMetadataValue)
    }

    /// Four strings: keySpace, key, commonKey (each cut to 255 bytes), value (cut to 1024 bytes), each cut at a
    /// Unicode scalar boundary.
    func encode(into w: inout ByteWriter) {
        w.string(keySpace, max: Wire.maxMetadataKey)
        w.string(key, max: Wire.maxMetadataKey)
        w.string(commonKey, max: Wire.maxMetadataKey)
        w.string(value, max: Wire.maxMetadataValue)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> MetadataItem {
        MetadataItem(keySpace: try r.string("metadata.keySpace", max: Wire.maxMetadataKey),
                     key: try r.string("metadata.key", max: Wire.maxMetadataKey),
                     commonKey: try r.string("metadata.commonKey", max: Wire.maxMetadataKey),
                     value: try r.string("metadata.value", max: Wire.maxMetadataValue))
    }

    /// A list of items as AssetOpened and the track record carry it: a u16 count (`f`), then each item's record.
    static func decodeList(from r: inout ByteReader, _ f: StaticString) throws(TrackError) -> [MetadataItem] {
        try r.list(f, max: Wire.maxMetadataItems) { r throws(TrackError) in try r.record("metadata.size", decode(from:)) }
    }
}

extension TrackSegment {
    /// 68 bytes: the record's size, then source start, source duration, target start, target duration.
    public static let encodedSize = 68

    func encode(into w: inout ByteWriter) {
        w.timeRange(source)
        w.timeRange(target)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> TrackSegment {
        TrackSegment(source: try r.timeRange("segment.sourceStart", "segment.sourceDuration"),
                     target: try r.timeRange("segment.targetStart", "segment.targetDuration"))
    }
}

extension AssetOpened {
    /// The message with its metadata and segments cut to `Wire.maxMetadataBytes` in all: the asset's items, then
    /// each track's segments and items in track order, are kept while their running total fits; the first item or
    /// segment that would pass the limit and everything after it in the same order are left out (PROTOCOL.md §7.5).
    /// The tracks' codec configurations, in track order, are kept while their total fits `Wire.maxCodecConfig`.
    public func boundingMetadata(to limit: Int = Wire.maxMetadataBytes) -> AssetOpened {
        var budget = limit
        func keep<T>(_ items: [T], max: Int, size: (T) -> Int) -> [T] {
            var kept: [T] = []
            for item in items.prefix(max) {
                let n = size(item)
                guard n <= budget else { budget = 0; break }
                budget -= n
                kept.append(item)
            }
            return kept
        }
        var bounded = self
        bounded.metadata = keep(metadata, max: Wire.maxMetadataItems, size: \.encodedSize)
        for i in bounded.tracks.indices {
            bounded.tracks[i].segments = keep(tracks[i].segments, max: Wire.maxSegments) { _ in TrackSegment.encodedSize }
            bounded.tracks[i].metadata = keep(tracks[i].metadata, max: Wire.maxMetadataItems, size: \.encodedSize)
        }
        // The codec configurations have their own total (PROTOCOL.md §7.2): one that would pass it is sent empty.
        var configBudget = Wire.maxCodecConfig
        for i in bounded.tracks.indices {
            let n = bounded.tracks[i].codecConfiguration.count
            if n > configBudget { bounded.tracks[i].codecConfiguration = [] } else { configBudget -= n }
        }
        return bounded
    }
}

extension ByteWriter {
    /// A string cut to `max` bytes at a Unicode scalar boundary.
    mutating func string(_ s: String, max: Int) {
        var utf8 = Array(s.utf8)
        if utf8.count > max {
            var cut = max
            while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
            utf8 = Array(utf8[..<cut])
        }
        string(String(decoding: utf8, as: UTF8.self))
    }
}

extension ByteReader {
    /// A string of at most `max` bytes (more is a protocol violation).
    mutating func string(_ f: StaticString, max: Int) throws(TrackError) -> String {
        let s = try string(f)
        guard s.utf8.count <= max else {
            throw TrackError(.protocolViolation, "\(f): string of \(s.utf8.count) bytes exceeds \(max)")
        }
        return s
    }
}
