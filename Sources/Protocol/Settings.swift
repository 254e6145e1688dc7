/// A typed value in an output-settings dictionary, mirroring the property-list types AVFoundation accepts.
public indirect enum SettingValue: Sendable, Hashable, CustomStringConvertible {
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case string(String)
    case array([SettingValue])
    case dictionary([String: SettingValue])

    public var intValue: Int64? {
        switch self {
        case .int(let v): v
        case .double(let d) where d.rounded() == d && abs(d) < 9e18: Int64(d)
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .int(let v): "\(v)"
        case .double(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + "}"
        }
    }
}

/// Output-settings keys, spelled as Apple's constants' string values (what an NSDictionary built with the
/// constants holds), so a dictionary dumped on macOS can be sent unchanged.
public enum SettingsKey {
    public static let pixelFormatType = "PixelFormatType"  // kCVPixelBufferPixelFormatTypeKey
    public static let width = "Width"  // kCVPixelBufferWidthKey
    public static let height = "Height"  // kCVPixelBufferHeightKey
    public static let videoCodec = "AVVideoCodecKey"
    public static let videoCleanAperture = "AVVideoCleanApertureKey"
    public static let videoPixelAspectRatio = "AVVideoPixelAspectRatioKey"
    public static let videoScalingMode = "AVVideoScalingModeKey"
    public static let videoColorProperties = "AVVideoColorPropertiesKey"
    public static let formatID = "AVFormatIDKey"

    /// Constant names people type (`kCVPixelBufferPixelFormatTypeKey`) → the key's string value.
    public static let aliases: [String: String] = [
        "kCVPixelBufferPixelFormatTypeKey": pixelFormatType,
        "kCVPixelBufferWidthKey": width,
        "kCVPixelBufferHeightKey": height,
    ]

    public static func canonical(_ key: String) -> String { aliases[key] ?? key }
}

/// What a validated video output asks the pipeline for.
public struct VideoOutputRequest: Sendable, Hashable {
    public var pixelFormat: PixelFormat
    public var width: Int?
    public var height: Int?

    public init(pixelFormat: PixelFormat, width: Int? = nil, height: Int? = nil) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }
}

/// Validation of an output-settings dictionary, shared by both ends: TrackClient rejects bad settings when the
/// output is created (as AVAssetReaderTrackOutput's initializer does), and the worker checks again because it
/// cannot trust a client. Messages use Apple's wording.
public enum OutputSettings {
    static let unsupportedVideoKeys: [String: String] = [
        SettingsKey.videoCleanAperture: "AVAssetReaderTrackOutput does not currently support AVVideoCleanApertureKey",
        SettingsKey.videoPixelAspectRatio: "AVAssetReaderTrackOutput does not currently support AVVideoPixelAspectRatioKey",
        SettingsKey.videoScalingMode: "AVAssetReaderTrackOutput does not currently support AVVideoScalingModeKey",
        SettingsKey.videoColorProperties: "AVAssetReaderTrackOutput does not currently support AVVideoColorPropertiesKey",
    ]
    static let knownVideoKeys: Set<String> = [SettingsKey.pixelFormatType, SettingsKey.width, SettingsKey.height]

    /// Validates settings for a video track. `nil` settings mean passthrough and are not passed here.
    public static func validateVideo(_ settings: [String: SettingValue]) throws(TrackError) -> VideoOutputRequest {
        var canonical: [String: SettingValue] = [:]
        for key in settings.keys.sorted() {
            let name = SettingsKey.canonical(key)
            // Both spellings of one key: which value wins must not depend on dictionary order.
            guard canonical[name] == nil else {
                throw TrackError(.unsupportedOutputSettings, "Output settings dictionary contains both \(name) and \(key)")
            }
            canonical[name] = settings[key]
        }
        let settings = canonical
        if settings[SettingsKey.videoCodec] != nil {
            throw TrackError(.unsupportedOutputSettings, "AVAssetReaderOutput does not currently support compressed output")
        }
        if settings[SettingsKey.formatID] != nil {
            throw TrackError(.unsupportedOutputSettings, "Output settings are not compatible with media type vide")
        }
        for key in settings.keys.sorted() {
            if let message = unsupportedVideoKeys[key] { throw TrackError(.unsupportedOutputSettings, message) }
        }
        let unknown = settings.keys.filter { !knownVideoKeys.contains($0) }.sorted()
        if !unknown.isEmpty {
            throw TrackError(.unsupportedOutputSettings,
                             "Output settings dictionary contains one or more invalid keys: \(unknown.joined(separator: ", "))")
        }
        var format = PixelFormat.named("420v")!
        if let value = settings[SettingsKey.pixelFormatType] {
            let candidates: [SettingValue] = if case .array(let list) = value { list } else { [value] }
            guard !candidates.isEmpty else {
                throw TrackError(.unsupportedOutputSettings, "kCVPixelBufferPixelFormatTypeKey is an empty array")
            }
            var chosen: PixelFormat?
            var named: [String] = []
            var unsupported: UnsupportedPixelFormat?
            for candidate in candidates {
                let f: PixelFormat?
                switch candidate {
                case .int(let n) where n >= 0 && n <= Int64(UInt32.max):
                    f = PixelFormat.named(FourCC(rawValue: UInt32(n)))
                    named.append(FourCC(rawValue: UInt32(n)).description)
                    if f == nil, unsupported == nil { unsupported = UnsupportedPixelFormat.named(FourCC(rawValue: UInt32(n))) }
                case .string(let s):
                    f = PixelFormat.parse(s)
                    named.append(s)
                    if f == nil, unsupported == nil { unsupported = UnsupportedPixelFormat.parse(s) }
                default:
                    throw TrackError(.unsupportedOutputSettings,
                                     "kCVPixelBufferPixelFormatTypeKey must be a number or an array of numbers, not \(candidate)")
                }
                if let f { chosen = f; break }
            }
            guard let chosen else {
                if let unsupported { throw TrackError(.unsupportedOutputSettings, unsupported.message) }
                throw TrackError(.unsupportedOutputSettings,
                                 "Unsupported pixel format \(named.joined(separator: ", ")) (see `trackctl read --pixel-format list`)")
            }
            format = chosen
        }
        func dimension(_ key: String) throws(TrackError) -> Int? {
            guard let value = settings[key] else { return nil }
            guard let n = value.intValue else {
                throw TrackError(.unsupportedOutputSettings, "\(key) must be a number, not \(value)")
            }
            guard n >= 0 else { throw TrackError(.unsupportedOutputSettings, "\(key) must not be negative (\(n))") }
            guard n <= 16384 else { throw TrackError(.unsupportedOutputSettings, "\(key) \(n) is larger than 16384") }
            return n == 0 ? nil : Int(n)
        }
        let width = try dimension(SettingsKey.width)
        let height = try dimension(SettingsKey.height)
        if !format.scalable && (width != nil || height != nil) {
            throw TrackError(.unsupportedOutputSettings,
                             "AVAssetReaderTrackOutput does not support scaling to Width/Height with pixel format \(format.code)")
        }
        return VideoOutputRequest(pixelFormat: format, width: width, height: height)
    }
}
