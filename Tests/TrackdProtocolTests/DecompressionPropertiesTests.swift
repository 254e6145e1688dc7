import TrackdProtocol
import TestSupport
import Testing

/// AVVideoDecompressionPropertiesKey (SETTINGS.md): a ported dictionary passes; each rule of the table has its
/// message, naming the key.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecompressionPropertiesTests {
    static func with(_ properties: SettingValue) -> [String: SettingValue] {
        ["PixelFormatType": .string("420v"), "AVVideoDecompressionPropertiesKey": properties]
    }

    @Test func aPortedDictionaryIsAccepted() throws {
        let request = try OutputSettings.validateVideo(Self.with(.dictionary([
            "kVTDecompressionPropertyKey_RealTime": .bool(true),
            "kVTDecompressionPropertyKey_ThreadCount": .int(4),
            "kVTDecompressionPropertyKey_MaximizePowerEfficiency": .int(0),
            "kVTVideoDecoderSpecification_EnableHardwareAcceleratedVideoDecoder": .bool(true),
            "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder": .bool(false),
            "kVTDecompressionPropertyKey_FieldMode": .string("kVTDecompressionProperty_FieldMode_BothFields"),
        ])))
        // The properties change nothing that is decoded: the same request as without them.
        #expect(request == (try OutputSettings.validateVideo(["PixelFormatType": .string("420v")])))
        #expect(try OutputSettings.validateVideo(Self.with(.dictionary([:]))) == request)
    }

    @Test(arguments: [
        (SettingValue.int(1), "AVVideoDecompressionPropertiesKey must be a dictionary, not 1"),
        (.dictionary(["Zed": .int(1), "Alpha": .bool(true), "kVTDecompressionPropertyKey_RealTime": .bool(true)]),
         "AVVideoDecompressionPropertiesKey contains one or more invalid keys: Alpha, Zed"),
        (.dictionary(["kVTDecompressionPropertyKey_ReducedResolutionDecode": .dictionary([:])]),
         "AVAssetReaderTrackOutput does not currently support kVTDecompressionPropertyKey_ReducedResolutionDecode"),
        (.dictionary(["kVTDecompressionPropertyKey_RealTime": .string("yes")]),
         "kVTDecompressionPropertyKey_RealTime must be a boolean, not \"yes\""),
        (.dictionary(["kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder": .bool(true)]),
         "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder cannot be met: trackd decodes in software"),
        (.dictionary(["kVTDecompressionPropertyKey_ThreadCount": .int(-1)]),
         "kVTDecompressionPropertyKey_ThreadCount must be a number from 0 to 256, not -1"),
        (.dictionary(["kVTDecompressionPropertyKey_FieldMode": .string("kVTDecompressionProperty_FieldMode_TopFieldOnly")]),
         "kVTDecompressionPropertyKey_FieldMode must be kVTDecompressionProperty_FieldMode_BothFields (trackd delivers both fields), not \"kVTDecompressionProperty_FieldMode_TopFieldOnly\""),
    ])
    func eachRuleHasItsMessage(_ value: SettingValue, _ message: String) {
        #expect(OutputSettingsTests.rejected(Self.with(value))?.message == message)
    }

    /// Still a video key: on an audio track the dictionary is refused as before.
    @Test func onAnAudioTrackItIsAVideoKey() {
        do throws(TrackError) {
            _ = try OutputSettings.validateAudio(["AVVideoDecompressionPropertiesKey": .dictionary([:])])
            Issue.record("accepted")
        } catch {
            #expect(error.code == AVErrorCode.unsupportedOutputSettings.rawValue)
        }
    }
}
