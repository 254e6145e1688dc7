/// How much one asset's description holds at most: the container parsers stop collecting here, and the wire
/// carries no more (`Wire`'s limits of the same meaning are these numbers, docs/PROTOCOL.md §7.5, §7.6). A hostile
/// file's thousands of tracks, tags or edits cost no more than these.
public enum DescriptionBounds {
    /// Tracks of one asset.
    public static let tracks = 256
    /// Metadata items in one list (the asset's, or one track's).
    public static let metadataItems = 64
    /// Bytes of a metadata item's keySpace, key and commonKey each.
    public static let metadataKeyBytes = 255
    /// Bytes of a metadata item's value.
    public static let metadataValueBytes = 1024
    /// Segments of one track's edit list.
    public static let segments = 64
}
