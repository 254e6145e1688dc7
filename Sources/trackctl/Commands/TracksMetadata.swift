import TrackdProtocol
import TrackClient

/// `trackctl tracks`: the asset's and tracks' metadata (PROTOCOL.md §7.5) and segments (§7.6), as text and JSON.
extension TracksCommand {
    /// --json --asset: {"duration", "metadata", "tracks"}.
    static func assetJSON(_ asset: Asset, tracks: JSON.Value) -> JSON.Value {
        .object([("duration", time(asset.duration)), ("metadata", metadataJSON(asset.metadata)), ("tracks", tracks)])
    }

    /// Items as objects {"keySpace", "key", "commonKey" (null when none), "value"}, in order.
    static func metadataJSON(_ items: [MetadataItem]) -> JSON.Value {
        .array(items.map { item in
            .object([("keySpace", .string(item.keySpace)), ("key", .string(item.key)),
                     ("commonKey", item.commonKey.isEmpty ? .null : .string(item.commonKey)), ("value", .string(item.value))])
        })
    }

    /// {"empty", "source": {"start", "duration"}, "target": {…}}: each time as {"value", "timescale"} (exact), null
    /// when not numeric (an empty edit's source start).
    static func segmentJSON(_ s: TrackSegment) -> JSON.Value {
        func range(_ r: MediaTimeRange) -> JSON.Value { .object([("start", time(r.start)), ("duration", time(r.duration))]) }
        return .object([("empty", .bool(s.isEmpty)), ("source", range(s.source)), ("target", range(s.target))])
    }

    static func time(_ t: MediaTime) -> JSON.Value {
        t.isNumeric ? .object([("value", .int(t.value)), ("timescale", .int(Int64(t.timescale)))]) : .null
    }

    /// After the table: "asset: keySpace/key (commonKey) = value" lines, then each track's items and segments.
    static func printMetadata(_ asset: Asset) {
        for item in asset.metadata { print("asset: \(item)") }
        for t in asset.tracks {
            for item in t.metadata { print("track \(t.trackID): \(item)") }
            for (i, segment) in t.segments.enumerated() { print("track \(t.trackID) segment \(i): \(segment)") }
        }
    }
}
