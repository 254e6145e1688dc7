// Asset and track metadata (AVMetadataItem-shaped) and a track's edit-list segments (AVAssetTrackSegment-shaped).

/// One metadata item, as AVMetadataItem has it: the key space it is stored in, its key there, the AVFoundation
/// common key it maps to ("" when none), and its value as text (dates ISO 8601, locations ISO 6709).
public struct MetadataItem: Sendable, Hashable, CustomStringConvertible {
    /// "udta" (QuickTime user data), "itsk" (iTunes ilst), "mdta" (QuickTime metadata), "mvhd", "mdhd", "hdlr",
    /// "stsd" (MP4/MOV structure), "mkv" (Matroska elements), "mkvtag" (Matroska SimpleTags), "vorbis" (FLAC),
    /// "riffinfo" (WAV, AVI), "id3" (MP3), "mpegts" (service names) — PROTOCOL.md §7.5.
    public var keySpace: String
    public var key: String
    /// AVMetadataCommonKey's string ("title", "creationDate", "software", "make", "model", "location", "artist",
    /// "albumName", "description", "copyright", "author", "language" …), or "".
    public var commonKey: String
    public var value: String

    public init(keySpace: String, key: String, commonKey: String = "", value: String) {
        self.keySpace = keySpace
        self.key = key
        self.commonKey = commonKey
        self.value = value
    }

    /// AVMetadataItem.identifier's shape: "keySpace/key".
    public var identifier: String { "\(keySpace)/\(key)" }

    public var description: String {
        "\(identifier)\(commonKey.isEmpty ? "" : " (\(commonKey))") = \(value)"
    }
}

/// One segment of a track's edit list (AVAssetTrackSegment): `source` in the track's media time (the media
/// timescale), `target` in the presentation (movie) time. An empty edit has an invalid `source.start`.
public struct TrackSegment: Sendable, Hashable, CustomStringConvertible {
    public var source: MediaTimeRange
    public var target: MediaTimeRange

    public init(source: MediaTimeRange, target: MediaTimeRange) {
        self.source = source
        self.target = target
    }

    /// An empty edit (nothing of the media is shown during `target`).
    public static func empty(target: MediaTimeRange, sourceDuration: MediaTime) -> TrackSegment {
        TrackSegment(source: MediaTimeRange(start: .invalid, duration: sourceDuration), target: target)
    }

    /// AVAssetTrackSegment.isEmpty.
    public var isEmpty: Bool { !source.start.isValid }

    public var description: String {
        let source = isEmpty ? "empty" : "\(self.source.start)+\(self.source.duration)"
        return "\(source) → \(target.start)+\(target.duration)"
    }
}
