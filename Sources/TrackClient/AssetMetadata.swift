import TrackdProtocol

extension Asset {
    /// The items that have an AVFoundation common key (`AVAsset.commonMetadata`).
    public var commonMetadata: [MetadataItem] { metadata.filter { !$0.commonKey.isEmpty } }

    /// The creation date (ISO 8601) the container states (`AVAsset.creationDate`), or nil.
    public var creationDate: String? { commonMetadata.first { $0.commonKey == "creationDate" }?.value }
}

extension AssetTrack {
    /// The items that have an AVFoundation common key (`AVAssetTrack.commonMetadata`).
    public var commonMetadata: [MetadataItem] { metadata.filter { !$0.commonKey.isEmpty } }
}

extension MetadataItem {
    /// The items of `items` with this common key (`AVMetadataItem.metadataItems(from:filteredByIdentifier:)`'s use
    /// for common keys), in order.
    public static func items(_ items: [MetadataItem], withCommonKey key: String) -> [MetadataItem] {
        items.filter { $0.commonKey == key }
    }

    /// The items of `items` stored under `key` in `keySpace`, in order.
    public static func items(_ items: [MetadataItem], withKey key: String, keySpace: String) -> [MetadataItem] {
        items.filter { $0.key == key && $0.keySpace == keySpace }
    }
}
