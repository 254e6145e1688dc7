// Linear PCM output settings: what an audio output asks for, and their validation (docs/PROTOCOL.md §10.4–10.5).

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
        try checkAudioKeys(settings)
        var request = AudioOutputRequest()
        try readChannels(settings, into: &request)
        try readSampleFormat(settings, into: &request)
        try checkTimePitchAlgorithm(settings[SettingsKey.audioTimePitchAlgorithm])
        return request
    }

    /// The values of Apple's `AVAudioTimePitchAlgorithm` constants, sorted.
    public static let timePitchAlgorithms = ["LowQualityZeroLatency", "Spectral", "TimeDomain", "Varispeed"]

    /// TrackdAudioTimePitchAlgorithm: absent, or one of `timePitchAlgorithms`. It chooses how audio read at a rate
    /// other than 1 is stretched; trackd reads at rate 1 only, where every algorithm delivers the samples unchanged,
    /// so a valid name is accepted and changes nothing.
    static func checkTimePitchAlgorithm(_ value: SettingValue?) throws(TrackError) {
        guard let value else { return }
        guard case .string(let name) = value, timePitchAlgorithms.contains(name) else {
            let names = timePitchAlgorithms.dropLast().joined(separator: ", ") + " or " + timePitchAlgorithms.last!
            throw fail("\(SettingsKey.audioTimePitchAlgorithm) must be \(names), not \(value)")
        }
    }

    private static func fail(_ message: String) -> TrackError { TrackError(.unsupportedOutputSettings, message) }

    /// Refuses compressed output, video keys, the converter quality, encoder keys and unknown keys, in that order.
    static func checkAudioKeys(_ settings: [String: SettingValue]) throws(TrackError) {
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
    static func readChannels(_ settings: [String: SettingValue], into request: inout AudioOutputRequest) throws(TrackError) {
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

    /// AVLinearPCMIsFloatKey with AVLinearPCMBitDepthKey, AVLinearPCMIsBigEndianKey and AVLinearPCMIsNonInterleaved.
    static func readSampleFormat(_ settings: [String: SettingValue], into request: inout AudioOutputRequest) throws(TrackError) {
        func flag(_ key: String) throws(TrackError) -> Bool? {
            switch settings[key] {
            case nil: return nil
            case .bool(let b): return b
            case .int(let n) where n == 0 || n == 1: return n == 1
            case let value?: throw fail("\(key) must be a boolean, not \(value)")
            }
        }
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
