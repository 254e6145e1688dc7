/// AVVideoDecompressionPropertiesKey (docs/SETTINGS.md): a dictionary of VideoToolbox decompression properties,
/// keyed by their constant names. trackd decodes with GStreamer's software decoders, so it validates the dictionary
/// the way a ported settings dictionary needs (a known key with a value of its type is accepted) and refuses what it
/// cannot do; none of the accepted values changes the decoded frames.
enum DecompressionProperties {
    static let key = "AVVideoDecompressionPropertiesKey"

    /// Properties accepted with a boolean value; none changes what is decoded.
    static let booleans: Set<String> = [
        "kVTDecompressionPropertyKey_RealTime", "kVTDecompressionPropertyKey_MaximizePowerEfficiency",
        "kVTVideoDecoderSpecification_EnableHardwareAcceleratedVideoDecoder",
        "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder",
    ]
    static let threadCount = "kVTDecompressionPropertyKey_ThreadCount"
    static let fieldMode = "kVTDecompressionPropertyKey_FieldMode"
    static let bothFields = "kVTDecompressionProperty_FieldMode_BothFields"
    static let requireHardware = "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder"
    /// Properties that would change what is decoded, which trackd does not do.
    static let unsupported: Set<String> = [
        "kVTDecompressionPropertyKey_ReducedResolutionDecode", "kVTDecompressionPropertyKey_ReducedCoefficientDecode",
        "kVTDecompressionPropertyKey_ReducedFrameDelivery", "kVTDecompressionPropertyKey_OnlyTheseFrames",
        "kVTDecompressionPropertyKey_DeinterlaceMode", "kVTDecompressionPropertyKey_PixelTransferProperties",
    ]

    /// Checks the value of AVVideoDecompressionPropertiesKey, in the order of SETTINGS.md's table.
    static func validate(_ value: SettingValue) throws(TrackError) {
        guard case .dictionary(let properties) = value else { throw fail("\(key) must be a dictionary, not \(value)") }
        let invalid = properties.keys.filter { !booleans.contains($0) && !unsupported.contains($0) && $0 != threadCount && $0 != fieldMode }
        if !invalid.isEmpty { throw fail("\(key) contains one or more invalid keys: \(invalid.sorted().joined(separator: ", "))") }
        for name in properties.keys.sorted() {
            guard let v = properties[name] else { continue }
            if unsupported.contains(name) { throw fail("AVAssetReaderTrackOutput does not currently support \(name)") }
            if booleans.contains(name) {
                guard let on = boolean(v) else { throw fail("\(name) must be a boolean, not \(v)") }
                if name == requireHardware && on {
                    throw fail("\(name) cannot be met: trackd decodes in software")
                }
            } else if name == threadCount {
                guard let n = v.intValue, n >= 0, n <= 256 else { throw fail("\(name) must be a number from 0 to 256, not \(v)") }
            } else if name == fieldMode, v != .string(bothFields) {
                throw fail("\(name) must be \(bothFields) (trackd delivers both fields), not \(v)")
            }
        }
    }

    /// A boolean, or the integer 0 or 1 (as an NSNumber may arrive).
    private static func boolean(_ v: SettingValue) -> Bool? {
        switch v {
        case .bool(let b): b
        case .int(let n) where n == 0 || n == 1: n == 1
        default: nil
        }
    }

    private static func fail(_ message: String) -> TrackError { TrackError(.unsupportedOutputSettings, message) }
}
