// libFuzzer target `settings`: the settings decoder (a CreateOutput's settings dictionary, Codec) and the
// validation both output kinds apply to it (OutputSettings.validateVideo / validateAudio).
// Input: the encoded dictionary (PROTOCOL.md § Settings). Invariants, beyond "never traps":
//  - a decode failure is a `.protocolViolation`; a decoded dictionary re-encodes and decodes to the same one;
//  - validation fails only with `.unsupportedOutputSettings`, gives the same answer twice, and what it accepts
//    is within the documented ranges.
import TrackdProtocol

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        let dictionaries: [[String: SettingValue]] = [
            [:], Fixtures.allSettingValues,
            ["PixelFormatType": .int(0x3432_3076)], ["PixelFormatType": .string("BGRA"), "Width": .int(640), "Height": .int(360)],
            ["PixelFormatType": .array([.string("y420"), .int(0x3432_3066)]), "Width": .double(320)],
            ["AVFormatIDKey": .string("lpcm"), "AVSampleRateKey": .int(48000), "AVNumberOfChannelsKey": .int(2),
             "AVLinearPCMBitDepthKey": .int(32), "AVLinearPCMIsFloatKey": .bool(true), "AVLinearPCMIsNonInterleaved": .int(1)],
            ["AVNumberOfChannelsKey": .int(6),
             "AVChannelLayoutKey": .dictionary(["mChannelLayoutTag": .int(0x0079_0006), "mChannelBitmap": .int(0)])],
            ["AVNumberOfChannelsKey": .int(2), "AVChannelLayoutKey": .array([0x02, 0, 0x65, 0, 0, 0, 0, 0, 0, 0, 0, 0].map { .int($0) })],
        ]
        return dictionaries.map { settingsBytes($0) }
    }
    return 0
}

/// The prefix of a CreateOutput payload (asset 1, track 1, everything, flags 0, hasSettings 1).
let createOutputPrefix: [UInt8] = Array(settingsFrame([:]).dropFirst(Wire.headerSize).dropLast(2))

/// A CreateOutput frame carrying `settings`.
func settingsFrame(_ settings: [String: SettingValue]) -> [UInt8] {
    Codec.frame(.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: settings)), requestID: 1)
}

/// The encoded dictionary alone: the frame without header and prefix.
func settingsBytes(_ settings: [String: SettingValue]) -> [UInt8] {
    Array(settingsFrame(settings).dropFirst(Wire.headerSize + createOutputPrefix.count))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSettings(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let payload = createOutputPrefix + fuzzInput(data, size)
    let settings: [String: SettingValue]
    do {
        guard case .createOutput(let c) = try Codec.decodePayload(type: .createOutput, payload, from: 0, to: payload.count),
              let decoded = c.settings else {
            check(false, "CreateOutput with hasSettings 1 decoded without settings")
            return 0
        }
        settings = decoded
    } catch {
        check(error.knownCode == .protocolViolation, "settings decoding threw \(error)")
        return 0
    }
    let bytes = settingsBytes(settings)
    let again = createOutputPrefix + bytes
    guard case .createOutput(let c)? = try? Codec.decodePayload(type: .createOutput, again, from: 0, to: again.count),
          let reDecoded = c.settings else {
        check(false, "re-encoded settings do not decode")
        return 0
    }
    check(settingsBytes(reDecoded) == bytes, "settings re-encode differently")
    // Settings holding a NaN are not equal to a copy (a second decoding: == on one dictionary's storage would
    // skip the values); those compare by their bytes only (above).
    let copy = try? Codec.decodePayload(type: .createOutput, payload, from: 0, to: payload.count)
    if copy == .createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: settings)) { check(reDecoded == settings, "settings round-trip to a different dictionary") }
    checkVideo(settings)
    checkAudio(settings)
    return 0
}

func checkVideo(_ settings: [String: SettingValue]) {
    let first = Result { () throws(TrackError) in try OutputSettings.validateVideo(settings) }
    let second = Result { () throws(TrackError) in try OutputSettings.validateVideo(settings) }
    check(first == second, "validateVideo answers differently twice")
    switch first {
    case .success(let request):
        check(request.width.map { $0 > 0 && $0 <= 16384 } ?? true, "accepted width \(String(describing: request.width))")
        check(request.height.map { $0 > 0 && $0 <= 16384 } ?? true, "accepted height \(String(describing: request.height))")
        check(request.pixelFormat.scalable || (request.width == nil && request.height == nil), "scaling a non-scalable format")
    case .failure(let error):
        check(error.knownCode == .unsupportedOutputSettings, "validateVideo threw \(error)")
    }
}

func checkAudio(_ settings: [String: SettingValue]) {
    let first = Result { () throws(TrackError) in try OutputSettings.validateAudio(settings) }
    let second = Result { () throws(TrackError) in try OutputSettings.validateAudio(settings) }
    check(first == second, "validateAudio answers differently twice")
    switch first {
    case .success(let r):
        check(r.sampleRate.map { (8000...192_000).contains($0) } ?? true, "accepted sample rate \(String(describing: r.sampleRate))")
        check(r.channels.map { (1...AudioOutputRequest.maxChannels).contains($0) } ?? true, "accepted \(String(describing: r.channels)) channels")
        check([8, 16, 24, 32].contains(r.bitDepth) && (!r.isFloat || r.bitDepth == 32), "accepted depth \(r.bitDepth) float \(r.isFloat)")
        check(!r.isNonInterleaved || (r.channels ?? 0) <= AudioOutputRequest.maxNonInterleavedChannels, "too many planes")
        check(r.channelLayout == nil || r.channels != nil, "a layout without a channel count")
    case .failure(let error):
        check(error.knownCode == .unsupportedOutputSettings, "validateAudio threw \(error)")
    }
}
