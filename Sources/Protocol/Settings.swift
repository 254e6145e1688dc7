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

    /// How every message prints a double (docs/PROTOCOL.md §10.3, "How values are printed"): the shortest decimal
    /// that reads back as the same double — plain, with at least one digit after the point, when 1e-4 ≤ |v| < 2^53
    /// ("1.0", "44100.5"), else in exponent form ("1e+16", "1e-05") — and "nan", "inf", "-inf", "-0.0". That is
    /// Swift's own description of a Double, named here so that it is one rule, pinned by SettingsEdgesTests.
    public static func format(_ value: Double) -> String { "\(value)" }

    public var description: String {
        switch self {
        case .int(let v): "\(v)"
        case .double(let v): Self.format(v)
        case .bool(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + "}"
        }
    }
}

// Settings on the wire (docs/PROTOCOL.md §10.1): a tag byte, then the value; a dictionary is a u16 count of
// (string key, value) pairs in key order, no key twice; nesting at most `Wire.maxSettingsDepth` deep.
extension SettingValue {
    func encode(into w: inout ByteWriter) {
        switch self {
        case .int(let i): w.u8(1); w.i64(i)
        case .double(let d): w.u8(2); w.f64(d)
        case .bool(let b): w.u8(3); w.bool(b)
        case .string(let s): w.u8(4); w.string(s)
        case .array(let a): w.u8(5); w.list(a, max: Wire.maxSettingsItems) { w, item in item.encode(into: &w) }
        case .dictionary(let d): w.u8(6); Self.encodeDictionary(d, into: &w)
        }
    }

    static func encodeDictionary(_ d: [String: SettingValue], into w: inout ByteWriter) {
        w.list(d.keys.sorted(), max: Wire.maxSettingsItems) { w, key in
            w.string(key)
            d[key]!.encode(into: &w)
        }
    }

    /// `depth` is the nesting depth of the container that holds this value (the top-level dictionary is 1).
    /// Every array or dictionary value is one level deeper than its container.
    static func decode(from r: inout ByteReader, depth: Int) throws(TrackError) -> SettingValue {
        switch try r.u8("settings.tag") {
        case 1: return .int(try r.i64("settings.int"))
        case 2: return .double(try r.f64("settings.double"))
        case 3: return .bool(try r.bool("settings.bool"))
        case 4: return .string(try r.string("settings.string"))
        case 5:
            try checkDepth(depth + 1)
            return .array(try r.list("settings.arrayCount", max: Wire.maxSettingsItems) { r throws(TrackError) in
                try decode(from: &r, depth: depth + 1)
            })
        case 6: return .dictionary(try decodeDictionary(from: &r, depth: depth + 1))
        case let t: throw TrackError(.protocolViolation, "settings: unknown value tag \(t)")
        }
    }

    static func decodeDictionary(from r: inout ByteReader, depth: Int) throws(TrackError) -> [String: SettingValue] {
        try checkDepth(depth)
        let n = try r.count("settings.dictionaryCount", max: Wire.maxSettingsItems)
        var d: [String: SettingValue] = [:]
        for _ in 0..<n {
            let key = try r.string("settings.key")
            guard d[key] == nil else { throw TrackError(.protocolViolation, "settings: key \"\(key)\" appears twice") }
            d[key] = try decode(from: &r, depth: depth)
        }
        return d
    }

    private static func checkDepth(_ depth: Int) throws(TrackError) {
        guard depth <= Wire.maxSettingsDepth else {
            throw TrackError(.protocolViolation, "settings: nesting deeper than \(Wire.maxSettingsDepth)")
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
    public static let allowWideColor = "AVVideoAllowWideColorKey"
    public static let bytesPerRowAlignment = "kCVPixelBufferBytesPerRowAlignmentKey"  // its string value is its name
    /// trackd's extensions (docs/SETTINGS.md): the YCbCr matrix assumed for video that names none, and whether frames
    /// are turned upright by the track's rotation.
    public static let untaggedYCbCrMatrix = "TrackdUntaggedYCbCrMatrix"
    public static let appliesPreferredTrackTransform = "TrackdAppliesPreferredTrackTransform"
    public static let formatID = "AVFormatIDKey"
    public static let sampleRate = "AVSampleRateKey"
    public static let numberOfChannels = "AVNumberOfChannelsKey"
    public static let channelLayout = "AVChannelLayoutKey"
    public static let bitDepth = "AVLinearPCMBitDepthKey"
    public static let isFloat = "AVLinearPCMIsFloatKey"
    public static let isBigEndian = "AVLinearPCMIsBigEndianKey"
    public static let isNonInterleaved = "AVLinearPCMIsNonInterleaved"
    public static let sampleRateConverterQuality = "AVSampleRateConverterAudioQualityKey"
    /// trackd's output setting for AVAssetReaderAudioMixOutput/TrackOutput's `audioTimePitchAlgorithm` property.
    public static let audioTimePitchAlgorithm = "TrackdAudioTimePitchAlgorithm"
    /// Encoder keys: audio keys, but not for linear PCM.
    public static let encoderKeys: Set<String> = [
        "AVEncoderAudioQualityKey", "AVEncoderAudioQualityForVBRKey", "AVEncoderBitRateKey",
        "AVEncoderBitRatePerChannelKey", "AVEncoderBitRateStrategyKey", "AVEncoderBitDepthHintKey",
        "AVSampleRateConverterAlgorithmKey",
    ]
    public static let linearPCMKeys: Set<String> = [
        formatID, sampleRate, numberOfChannels, channelLayout, bitDepth, isFloat, isBigEndian, isNonInterleaved,
        audioTimePitchAlgorithm,
    ]
    /// Keys that only make sense for audio (an audio dictionary on a video track is rejected by them).
    public static var audioKeys: Set<String> { linearPCMKeys.union(encoderKeys).union([sampleRateConverterQuality]) }
    /// Keys that only make sense for video (including the aliases).
    public static var videoKeys: Set<String> {
        Set([pixelFormatType, width, height, videoCodec, videoCleanAperture, videoPixelAspectRatio, videoScalingMode,
             videoColorProperties, "AVVideoCompressionPropertiesKey", "AVVideoDecompressionPropertiesKey",
             allowWideColor, bytesPerRowAlignment, untaggedYCbCrMatrix, appliesPreferredTrackTransform]).union(aliases.keys)
    }

    /// Constant names people type (`kCVPixelBufferPixelFormatTypeKey`) → the key's string value.
    public static let aliases: [String: String] = [
        "kCVPixelBufferPixelFormatTypeKey": pixelFormatType,
        "kCVPixelBufferWidthKey": width,
        "kCVPixelBufferHeightKey": height,
    ]

    public static func canonical(_ key: String) -> String { aliases[key] ?? key }
}

/// A YCbCr → RGB matrix, named by Apple's AVVideoYCbCrMatrix string values.
public enum YCbCrMatrix: String, Sendable, Hashable, CaseIterable {
    case bt601 = "ITU_R_601_4"
    case bt709 = "ITU_R_709_2"
}

/// What a validated video output asks the pipeline for.
public struct VideoOutputRequest: Sendable, Hashable {
    public var pixelFormat: PixelFormat
    public var width: Int?
    public var height: Int?
    /// kCVPixelBufferBytesPerRowAlignmentKey: every plane's bytesPerRow (and offset) is a multiple of it; 1 = none.
    public var bytesPerRowAlignment: Int
    /// AVVideoAllowWideColorKey, as sent (false when absent). trackd never converts primaries or transfer, so the
    /// output keeps the source's colour either way (docs/SETTINGS.md).
    public var allowWideColor: Bool
    /// TrackdUntaggedYCbCrMatrix: the matrix assumed for frames whose stream and container name none; nil (absent):
    /// GStreamer's rule, BT.709 above 576 lines and BT.601 up to 576.
    public var untaggedMatrix: YCbCrMatrix?
    /// Clockwise degrees (0, 90, 180, 270) the frames are turned by before conversion: the track's rotation when
    /// TrackdAppliesPreferredTrackTransform is true (validateVideo's `trackRotation`), else 0. Width and Height are
    /// the turned frame's.
    public var rotation: Int

    /// The alignments kCVPixelBufferBytesPerRowAlignmentKey accepts: powers of two from 1 to 4096 (a page).
    public static let alignments: ClosedRange<Int> = 1...4096

    public init(pixelFormat: PixelFormat, width: Int? = nil, height: Int? = nil, bytesPerRowAlignment: Int = 1,
                allowWideColor: Bool = false, untaggedMatrix: YCbCrMatrix? = nil, rotation: Int = 0) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerRowAlignment = bytesPerRowAlignment
        self.allowWideColor = allowWideColor
        self.untaggedMatrix = untaggedMatrix
        self.rotation = rotation
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
    static let knownVideoKeys: Set<String> = [SettingsKey.pixelFormatType, SettingsKey.width, SettingsKey.height,
                                              SettingsKey.allowWideColor, SettingsKey.bytesPerRowAlignment,
                                              SettingsKey.untaggedYCbCrMatrix, SettingsKey.appliesPreferredTrackTransform,
                                              DecompressionProperties.key]

    /// Validates settings for a video track. `nil` settings mean passthrough and are not passed here.
    /// `trackRotation`: the track's clockwise rotation, the request's `rotation` when the settings apply it (the
    /// worker passes it; a client only validating may leave it 0).
    public static func validateVideo(_ settings: [String: SettingValue], trackRotation: Int32 = 0) throws(TrackError) -> VideoOutputRequest {
        let settings = try canonicalKeys(settings)
        try checkVideoKeys(settings)
        if let properties = settings[DecompressionProperties.key] { try DecompressionProperties.validate(properties) }
        var format = PixelFormat.named("420v")!
        if let value = settings[SettingsKey.pixelFormatType] { format = try pixelFormat(value) }
        let width = try dimension(SettingsKey.width, in: settings)
        let height = try dimension(SettingsKey.height, in: settings)
        if !format.scalable && (width != nil || height != nil) {
            throw TrackError(.unsupportedOutputSettings,
                             "AVAssetReaderTrackOutput does not support scaling to Width/Height with pixel format \(format.code)")
        }
        let alignment = try alignment(settings[SettingsKey.bytesPerRowAlignment])
        let wide = try boolean(SettingsKey.allowWideColor, settings[SettingsKey.allowWideColor])
        let matrix = try untaggedMatrix(settings[SettingsKey.untaggedYCbCrMatrix])
        let turns = try boolean(SettingsKey.appliesPreferredTrackTransform, settings[SettingsKey.appliesPreferredTrackTransform])
        return VideoOutputRequest(pixelFormat: format, width: width, height: height, bytesPerRowAlignment: alignment,
                                  allowWideColor: wide, untaggedMatrix: matrix,
                                  rotation: turns ? ((Int(trackRotation) % 360) + 360) % 360 : 0)
    }

    /// TrackdUntaggedYCbCrMatrix: absent → nil; else one of YCbCrMatrix's string values.
    static func untaggedMatrix(_ value: SettingValue?) throws(TrackError) -> YCbCrMatrix? {
        guard let value else { return nil }
        guard case .string(let text) = value, let matrix = YCbCrMatrix(rawValue: text) else {
            let names = YCbCrMatrix.allCases.map(\.rawValue).joined(separator: " or ")
            throw TrackError(.unsupportedOutputSettings, "\(SettingsKey.untaggedYCbCrMatrix) must be \(names), not \(value)")
        }
        return matrix
    }

    /// kCVPixelBufferBytesPerRowAlignmentKey: absent → 1; else an integer (or integral double), a power of two in
    /// VideoOutputRequest.alignments.
    static func alignment(_ value: SettingValue?) throws(TrackError) -> Int {
        guard let value else { return 1 }
        let range = VideoOutputRequest.alignments
        guard let n = value.intValue, n >= Int64(range.lowerBound), n <= Int64(range.upperBound), n & (n - 1) == 0 else {
            throw TrackError(.unsupportedOutputSettings,
                             "kCVPixelBufferBytesPerRowAlignmentKey must be a power of two from \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
        return Int(n)
    }

    /// AVVideoAllowWideColorKey, TrackdAppliesPreferredTrackTransform: a boolean (or the integer 0 or 1, as an
    /// NSNumber may arrive); absent → false.
    static func boolean(_ key: String, _ value: SettingValue?) throws(TrackError) -> Bool {
        switch value {
        case nil: return false
        case .bool(let b)?: return b
        case .int(let n)? where n == 0 || n == 1: return n == 1
        case let other?:
            throw TrackError(.unsupportedOutputSettings, "\(key) must be a boolean, not \(other)")
        }
    }

    /// The settings with every key under its canonical name (`kCVPixelBufferWidthKey` → `Width`).
    static func canonicalKeys(_ settings: [String: SettingValue]) throws(TrackError) -> [String: SettingValue] {
        var canonical: [String: SettingValue] = [:]
        for key in settings.keys.sorted() {
            let name = SettingsKey.canonical(key)
            // Both spellings of one key: which value wins must not depend on dictionary order.
            guard canonical[name] == nil else {
                throw TrackError(.unsupportedOutputSettings, "Output settings dictionary contains both \(name) and \(key)")
            }
            canonical[name] = settings[key]
        }
        return canonical
    }

    /// Refuses compressed output, audio keys, the video keys trackd does not support and unknown keys, in that order.
    static func checkVideoKeys(_ settings: [String: SettingValue]) throws(TrackError) {
        if settings[SettingsKey.videoCodec] != nil {
            throw TrackError(.unsupportedOutputSettings, "AVAssetReaderOutput does not currently support compressed output")
        }
        if settings.keys.contains(where: SettingsKey.audioKeys.contains) {
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
    }

    /// kCVPixelBufferPixelFormatTypeKey's value: a code or name, or an array of them (the first trackd supports wins).
    static func pixelFormat(_ value: SettingValue) throws(TrackError) -> PixelFormat {
        let candidates: [SettingValue] = if case .array(let list) = value { list } else { [value] }
        guard !candidates.isEmpty else {
            throw TrackError(.unsupportedOutputSettings, "kCVPixelBufferPixelFormatTypeKey is an empty array")
        }
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
            if let f { return f }
        }
        if let unsupported { throw TrackError(.unsupportedOutputSettings, unsupported.message) }
        throw TrackError(.unsupportedOutputSettings,
                         "Unsupported pixel format \(named.joined(separator: ", ")) (see `trackctl read --pixel-format list`)")
    }

    /// Width or Height: nil when absent or 0 (the track's own), otherwise 1 … 16384.
    static func dimension(_ key: String, in settings: [String: SettingValue]) throws(TrackError) -> Int? {
        guard let value = settings[key] else { return nil }
        guard let n = value.intValue else {
            throw TrackError(.unsupportedOutputSettings, "\(key) must be a number, not \(value)")
        }
        guard n >= 0 else { throw TrackError(.unsupportedOutputSettings, "\(key) must not be negative (\(n))") }
        guard n <= 16384 else { throw TrackError(.unsupportedOutputSettings, "\(key) \(n) is larger than 16384") }
        return n == 0 ? nil : Int(n)
    }
}

