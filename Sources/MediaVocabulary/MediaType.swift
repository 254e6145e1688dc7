/// What kind of media a track carries.
public enum MediaType: UInt8, Sendable, CustomStringConvertible {
    case other = 0, video = 1, audio = 2, subtitle = 3

    /// AVMediaType's string ("vide", "soun", "sbtl") for messages, and the JSON spelling for tools.
    public var avMediaType: String {
        switch self {
        case .video: "vide"
        case .audio: "soun"
        case .subtitle: "sbtl"
        case .other: "othr"
        }
    }

    public var description: String {
        switch self {
        case .video: "video"
        case .audio: "audio"
        case .subtitle: "subtitle"
        case .other: "other"
        }
    }
}
