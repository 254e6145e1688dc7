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
    public static let sampleRate = "AVSampleRateKey"
    public static let numberOfChannels = "AVNumberOfChannelsKey"
    public static let channelLayout = "AVChannelLayoutKey"
    public static let bitDepth = "AVLinearPCMBitDepthKey"
    public static let isFloat = "AVLinearPCMIsFloatKey"
    public static let isBigEndian = "AVLinearPCMIsBigEndianKey"
    public static let isNonInterleaved = "AVLinearPCMIsNonInterleaved"
    public static let sampleRateConverterQuality = "AVSampleRateConverterAudioQualityKey"
    /// Encoder keys: audio keys, but not for linear PCM.
    public static let encoderKeys: Set<String> = [
        "AVEncoderAudioQualityKey", "AVEncoderAudioQualityForVBRKey", "AVEncoderBitRateKey",
        "AVEncoderBitRatePerChannelKey", "AVEncoderBitRateStrategyKey", "AVEncoderBitDepthHintKey",
        "AVSampleRateConverterAlgorithmKey",
    ]
    public static let linearPCMKeys: Set<String> = [
        formatID, sampleRate, numberOfChannels, channelLayout, bitDepth, isFloat, isBigEndian, isNonInterleaved,
    ]
    /// Keys that only make sense for audio (an audio dictionary on a video track is rejected by them).
    public static var audioKeys: Set<String> { linearPCMKeys.union(encoderKeys).union([sampleRateConverterQuality]) }
    /// Keys that only make sense for video (including the aliases).
    public static var videoKeys: Set<String> {
        Set([pixelFormatType, width, height, videoCodec, videoCleanAperture, videoPixelAspectRatio, videoScalingMode,
             videoColorProperties, "AVVideoCompressionPropertiesKey", "AVVideoDecompressionPropertiesKey",
             "AVVideoAllowWideColorKey", "kCVPixelBufferBytesPerRowAlignmentKey"]).union(aliases.keys)
    }

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
        let settings = try checkVideoKeys(settings)
        var format = PixelFormat.named("420v")!
        if let value = settings[SettingsKey.pixelFormatType] { format = try pixelFormat(value) }
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

    /// The settings under their canonical key names, after refusing compressed output, audio keys, the keys
    /// AVAssetReaderTrackOutput does not support and unknown keys.
    private static func checkVideoKeys(_ settings: [String: SettingValue]) throws(TrackError) -> [String: SettingValue] {
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
        return settings
    }

    /// The first supported format of kCVPixelBufferPixelFormatTypeKey's value (a format or a list of them).
    private static func pixelFormat(_ value: SettingValue) throws(TrackError) -> PixelFormat {
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
        return chosen
    }
}

/// What a validated linear PCM audio output asks the pipeline for. nil rate/channels: the track's own.
public struct AudioOutputRequest: Sendable, Hashable {
    public var sampleRate: Int?
    public var channels: Int?
    /// 8, 16, 24 (packed, 3 bytes) or 32.
    public var bitDepth: Int
    /// 32-bit IEEE float; otherwise signed integer.
    public var isFloat: Bool
    public var isBigEndian: Bool
    public var isNonInterleaved: Bool
    /// AVChannelLayoutKey: the speaker of each output channel, in order (nil: GStreamer's default order).
    public var channelLayout: ChannelLayout?

    public init(sampleRate: Int? = nil, channels: Int? = nil, bitDepth: Int = 16, isFloat: Bool = false,
                isBigEndian: Bool = false, isNonInterleaved: Bool = false, channelLayout: ChannelLayout? = nil) {
        self.channelLayout = channelLayout
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitDepth = bitDepth
        self.isFloat = isFloat
        self.isBigEndian = isBigEndian
        self.isNonInterleaved = isNonInterleaved
    }

    public var bytesPerSample: Int { bitDepth / 8 }

    /// The GStreamer audio format with exactly this memory layout (S24LE/S24BE are packed 3-byte samples).
    public var gstFormat: String {
        if isFloat { return isBigEndian ? "F32BE" : "F32LE" }
        if bitDepth == 8 { return "S8" }
        return "S\(bitDepth)" + (isBigEndian ? "BE" : "LE")
    }

    /// The most channels trackd produces, and the most a non-interleaved output can have (one plane per channel,
    /// and a Sample carries at most Wire.maxPlanes planes).
    public static let maxChannels = 8
    public static var maxNonInterleavedChannels: Int { Wire.maxPlanes }
}

extension OutputSettings {
    /// Validates settings for an audio track (decoded linear PCM). Messages use Apple's wording where it has one.
    public static func validateAudio(_ settings: [String: SettingValue]) throws(TrackError) -> AudioOutputRequest {
        func fail(_ message: String) -> TrackError { TrackError(.unsupportedOutputSettings, message) }
        try checkAudioKeys(settings)
        func flag(_ key: String) throws(TrackError) -> Bool? {
            switch settings[key] {
            case nil: return nil
            case .bool(let b): return b
            case .int(let n) where n == 0 || n == 1: return n == 1
            case let value?: throw fail("\(key) must be a boolean, not \(value)")
            }
        }
        var request = AudioOutputRequest()
        try readChannels(settings, into: &request)
        let isFloat = try flag(SettingsKey.isFloat)
        let depthValue = settings[SettingsKey.bitDepth]
        if (isFloat == nil) != (depthValue == nil) {
            throw fail("AVLinearPCMIsFloatKey and AVLinearPCMBitDepthKey must be specified together")
        }
        if let depthValue, let isFloat {
            guard let depth = depthValue.intValue, [8, 16, 24, 32].contains(depth) else {
                throw fail("AVLinearPCMBitDepthKey must be 8, 16, 24 or 32, not \(depthValue)")
            }
            if isFloat && depth != 32 {
                throw fail("AVLinearPCMBitDepthKey must be 32 when AVLinearPCMIsFloatKey is YES, not \(depth)")
            }
            request.bitDepth = Int(depth)
            request.isFloat = isFloat
        }
        request.isBigEndian = try flag(SettingsKey.isBigEndian) ?? false
        request.isNonInterleaved = try flag(SettingsKey.isNonInterleaved) ?? false
        if request.isNonInterleaved, let channels = request.channels, channels > AudioOutputRequest.maxNonInterleavedChannels {
            throw fail("AVLinearPCMIsNonInterleaved output has one plane per channel; trackd supports at most \(AudioOutputRequest.maxNonInterleavedChannels), not \(channels)")
        }
        return request
    }

    /// Refuses compressed output, video keys, the encoder's keys and unknown keys.
    private static func checkAudioKeys(_ settings: [String: SettingValue]) throws(TrackError) {
        func fail(_ message: String) -> TrackError { TrackError(.unsupportedOutputSettings, message) }
        if settings[SettingsKey.videoCodec] != nil {
            throw fail("AVAssetReaderOutput does not currently support compressed output")
        }
        if let format = settings[SettingsKey.formatID] {
            let isLPCM: Bool = switch format {
            case .int(let n): n == 0x6C70_636D
            case .string(let s): s == "lpcm"
            default: false
            }
            guard isLPCM else { throw fail("AVAssetReaderOutput does not currently support compressed output") }
        }
        if settings.keys.contains(where: SettingsKey.videoKeys.contains) {
            throw fail("Output settings are not compatible with media type soun")
        }
        if settings[SettingsKey.sampleRateConverterQuality] != nil {
            throw fail("AVAssetReaderOutput does not support AVSampleRateConverterAudioQualityKey")
        }
        let encoder = settings.keys.filter(SettingsKey.encoderKeys.contains).sorted()
        if !encoder.isEmpty {
            throw fail("The following keys are not allowed when format ID is 'lpcm': \(encoder.joined(separator: ", "))")
        }
        let unknown = settings.keys.filter { !SettingsKey.linearPCMKeys.contains($0) }.sorted()
        if !unknown.isEmpty {
            throw fail("Output settings dictionary contains one or more invalid keys: \(unknown.joined(separator: ", "))")
        }
    }

    /// AVSampleRateKey, AVNumberOfChannelsKey and AVChannelLayoutKey.
    private static func readChannels(_ settings: [String: SettingValue],
                                     into request: inout AudioOutputRequest) throws(TrackError) {
        func fail(_ message: String) -> TrackError { TrackError(.unsupportedOutputSettings, message) }
        if let value = settings[SettingsKey.sampleRate] {
            guard let n = value.intValue, n >= 8000, n <= 192_000 else {
                throw fail("AVSampleRateKey must be a whole number of Hz between 8000 and 192000, not \(value)")
            }
            request.sampleRate = Int(n)
        }
        if let value = settings[SettingsKey.numberOfChannels] {
            guard let n = value.intValue, n > 0 else {
                throw fail("AVNumberOfChannelsKey must be greater than 0, not \(value)")
            }
            guard n <= AudioOutputRequest.maxChannels else {
                throw fail("AVNumberOfChannelsKey \(n) is more than trackd supports (\(AudioOutputRequest.maxChannels))")
            }
            request.channels = Int(n)
        }
        if let layout = settings[SettingsKey.channelLayout] {
            guard let count = channelCount(ofLayout: layout) else {
                throw fail("AVChannelLayoutKey must be an AudioChannelLayout (data as an array of bytes, or a dictionary), not \(layout)")
            }
            guard let channels = request.channels else {
                throw fail("AVChannelLayoutKey requires AVNumberOfChannelsKey")
            }
            guard count == channels else {
                throw fail("The number of channels in AVChannelLayoutKey (\(count)) does not match AVNumberOfChannelsKey (\(channels))")
            }
            request.channelLayout = try ChannelLayout.parse(layout)
        }
    }

    /// The channel count an AudioChannelLayout describes, or nil when the value is not a layout.
    /// Data (an array of byte values): the C struct, little-endian — mChannelLayoutTag, mChannelBitmap,
    /// mNumberChannelDescriptions (u32 each), then 20 bytes per description. Dictionary: the same fields by name
    /// (`mChannelLayoutTag`, `mChannelBitmap`, `mChannelDescriptions` as an array).
    /// Tag 0 (UseChannelDescriptions): the number of descriptions; 0x10000 (UseChannelBitmap): the bits set in
    /// the bitmap; any other tag: its low 16 bits.
    static func channelCount(ofLayout value: SettingValue) -> Int? {
        func count(tag: UInt32, bitmap: UInt32, descriptions: Int) -> Int {
            switch tag {
            case 0: descriptions
            case 0x10000: bitmap.nonzeroBitCount
            default: Int(tag & 0xFFFF)
            }
        }
        switch value {
        case .array(let items):
            var bytes: [UInt8] = []
            for item in items {
                guard case .int(let b) = item, (0...255).contains(b) else { return nil }
                bytes.append(UInt8(b))
            }
            guard bytes.count >= 12 else { return nil }
            func u32(_ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[i + $1]) << (8 * $1) } }
            let n = Int(u32(8))
            guard bytes.count >= 12 + 20 * n else { return nil }
            return count(tag: u32(0), bitmap: u32(4), descriptions: n)
        case .dictionary(let d):
            guard let tag = d["mChannelLayoutTag"]?.intValue, tag >= 0, tag <= Int64(UInt32.max) else { return nil }
            let bitmap = d["mChannelBitmap"]?.intValue ?? 0
            guard bitmap >= 0, bitmap <= Int64(UInt32.max) else { return nil }
            var descriptions = 0
            if let list = d["mChannelDescriptions"] {
                guard case .array(let a) = list else { return nil }
                descriptions = a.count
            }
            return count(tag: UInt32(tag), bitmap: UInt32(bitmap), descriptions: descriptions)
        default:
            return nil
        }
    }
}
