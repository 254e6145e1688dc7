import TrackdProtocol
import TestSupport
import Testing

/// §10.4 / §10.5: linear PCM output settings, every rule and its message.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct AudioSettingsTests {
    static func rejected(_ settings: [String: SettingValue]) -> String? {
        do throws(TrackError) {
            let request = try OutputSettings.validateAudio(settings)
            Issue.record("accepted: \(request)")
            return nil
        } catch {
            #expect(error.code == AVErrorCode.unsupportedOutputSettings.rawValue)
            return error.message
        }
    }

    static let lpcm: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D)]

    static func with(_ extra: [String: SettingValue]) -> [String: SettingValue] { lpcm.merging(extra) { $1 } }

    @Test func defaultsAreTheTracksRateAndChannelsAsS16LEInterleaved() throws {
        let expected = AudioOutputRequest(sampleRate: nil, channels: nil, bitDepth: 16, isFloat: false, isBigEndian: false,
                                          isNonInterleaved: false)
        #expect(try OutputSettings.validateAudio([:]) == expected)
        #expect(try OutputSettings.validateAudio(Self.lpcm) == expected)
        #expect(try OutputSettings.validateAudio([SettingsKey.formatID: .string("lpcm")]) == expected)
        #expect(expected.gstFormat == "S16LE")
    }

    @Test func fullDictionary() throws {
        let r = try OutputSettings.validateAudio(Self.with([
            SettingsKey.sampleRate: .double(22050), SettingsKey.numberOfChannels: .int(1),
            SettingsKey.bitDepth: .int(32), SettingsKey.isFloat: .bool(true), SettingsKey.isBigEndian: .bool(true),
            SettingsKey.isNonInterleaved: .bool(true),
        ]))
        #expect(r == AudioOutputRequest(sampleRate: 22050, channels: 1, bitDepth: 32, isFloat: true, isBigEndian: true,
                                        isNonInterleaved: true))
        #expect(r.gstFormat == "F32BE")
        let formats = [(8, false, "S8"), (16, true, "S16BE"), (24, false, "S24LE"), (32, false, "S32LE")]
        for (depth, big, name) in formats {
            let request = try OutputSettings.validateAudio(Self.with([
                SettingsKey.bitDepth: .int(Int64(depth)), SettingsKey.isFloat: .bool(false), SettingsKey.isBigEndian: .bool(big)]))
            #expect(request.gstFormat == name)
            #expect(request.bytesPerSample == depth / 8)
        }
    }

    @Test func formatMustBeLinearPCM() {
        let compressed = "AVAssetReaderOutput does not currently support compressed output"
        #expect(Self.rejected([SettingsKey.formatID: .int(0x6161_6320)]) == compressed)  // 'aac '
        #expect(Self.rejected([SettingsKey.formatID: .string("aac ")]) == compressed)
        #expect(Self.rejected([SettingsKey.formatID: .bool(true)]) == compressed)
        #expect(Self.rejected(Self.with(["AVVideoCodecKey": .string("avc1")])) == compressed)
    }

    @Test func mediaTypeMismatch() {
        #expect(Self.rejected(Self.with([SettingsKey.pixelFormatType: .int(0x4247_5241)]))
                == "Output settings are not compatible with media type soun")
        #expect(Self.rejected(["kCVPixelBufferWidthKey": .int(2)]) == "Output settings are not compatible with media type soun")
        // And the other way round: audio keys on a video track.
        for key in [SettingsKey.formatID, SettingsKey.sampleRate, SettingsKey.isNonInterleaved] {
            do throws(TrackError) {
                _ = try OutputSettings.validateVideo([key: .int(1)])
                Issue.record("accepted \(key) on video")
            } catch {
                #expect(error.message == "Output settings are not compatible with media type vide")
            }
        }
    }

    @Test func unsupportedAndInvalidKeys() {
        #expect(Self.rejected(Self.with([SettingsKey.sampleRateConverterQuality: .int(127)]))
                == "AVAssetReaderOutput does not support AVSampleRateConverterAudioQualityKey")
        #expect(Self.rejected(Self.with(["AVEncoderBitRateKey": .int(128000), "AVEncoderAudioQualityKey": .int(1)]))
                == "The following keys are not allowed when format ID is 'lpcm': AVEncoderAudioQualityKey, AVEncoderBitRateKey")
        #expect(Self.rejected(Self.with(["Zebra": .int(1), "Apple": .int(2)]))
                == "Output settings dictionary contains one or more invalid keys: Apple, Zebra")
    }

    @Test func sampleRateAndChannels() {
        for bad: SettingValue in [.int(7999), .int(192_001), .double(44100.5), .string("44100")] {
            #expect(Self.rejected(Self.with([SettingsKey.sampleRate: bad]))
                    == "AVSampleRateKey must be a whole number of Hz between 8000 and 192000, not \(bad)")
        }
        #expect((try? OutputSettings.validateAudio(Self.with([SettingsKey.sampleRate: .int(8000)])))?.sampleRate == 8000)
        #expect((try? OutputSettings.validateAudio(Self.with([SettingsKey.sampleRate: .int(192_000)])))?.sampleRate == 192_000)
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(0)]))
                == "AVNumberOfChannelsKey must be greater than 0, not 0")
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(-2)]))
                == "AVNumberOfChannelsKey must be greater than 0, not -2")
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(9)]))
                == "AVNumberOfChannelsKey 9 is more than trackd supports (8)")
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(6), SettingsKey.isNonInterleaved: .bool(true)]))
                == "AVLinearPCMIsNonInterleaved output has one plane per channel; trackd supports at most 4, not 6")
    }

    @Test func channelLayout() throws {
        // kAudioChannelLayoutTag_Stereo = (101 << 16) | 2, as AudioChannelLayout bytes (little-endian) and as a dictionary.
        let stereoTag: UInt32 = (101 << 16) | 2
        let data = SettingValue.array((0..<12).map { i in .int(i < 4 ? Int64((stereoTag >> (8 * UInt32(i))) & 0xFF) : 0) })
        #expect(try OutputSettings.validateAudio(Self.with([SettingsKey.numberOfChannels: .int(2), SettingsKey.channelLayout: data]))
                .channels == 2)
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(1), SettingsKey.channelLayout: data]))
                == "The number of channels in AVChannelLayoutKey (2) does not match AVNumberOfChannelsKey (1)")
        let bitmap = SettingValue.dictionary(["mChannelLayoutTag": .int(0x10000), "mChannelBitmap": .int(0b111)])
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(2), SettingsKey.channelLayout: bitmap]))
                == "The number of channels in AVChannelLayoutKey (3) does not match AVNumberOfChannelsKey (2)")
        let descriptions = SettingValue.dictionary(["mChannelLayoutTag": .int(0),
                                                    "mChannelDescriptions": .array([.dictionary(["mChannelLabel": .int(3)])])])
        #expect(try OutputSettings.validateAudio(Self.with([SettingsKey.numberOfChannels: .int(1), SettingsKey.channelLayout: descriptions]))
                .channels == 1)
        #expect(Self.rejected(Self.with([SettingsKey.channelLayout: bitmap])) == "AVChannelLayoutKey requires AVNumberOfChannelsKey")
        #expect(Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(2), SettingsKey.channelLayout: .string("stereo")]))
                == "AVChannelLayoutKey must be an AudioChannelLayout (data as an array of bytes, or a dictionary), not \"stereo\"")
    }

    /// The speakers of a layout, in order, from each of its encodings; what cannot be applied is rejected by name.
    @Test func channelLayoutOrder() throws {
        func speakers(_ layout: SettingValue, _ channels: Int) throws -> [ChannelLayout.Speaker]? {
            try OutputSettings.validateAudio(Self.with([SettingsKey.numberOfChannels: .int(Int64(channels)),
                                                        SettingsKey.channelLayout: layout])).channelLayout?.speakers
        }
        func tag(_ id: UInt32, _ n: UInt32) -> SettingValue { .dictionary(["mChannelLayoutTag": .int(Int64(id << 16 | n))]) }
        #expect(try speakers(tag(123, 6), 6) == [.left, .center, .right, .leftSurround, .rightSurround, .lfe])  // MPEG_5_1_C
        #expect(try speakers(tag(121, 6), 6) == [.left, .right, .center, .lfe, .leftSurround, .rightSurround])  // MPEG_5_1_A
        #expect(try speakers(tag(100, 1), 1) == [.mono])
        #expect(try speakers(tag(147, 3), 3) == nil, "DiscreteInOrder: no order imposed")
        // Bytes: UseChannelBitmap with L, C, LFE set — bit order.
        let bitmap: [UInt8] = [0, 0, 1, 0, 0b1101, 0, 0, 0, 0, 0, 0, 0]
        #expect(try speakers(.array(bitmap.map { .int(Int64($0)) }), 3) == [.left, .center, .lfe])
        // Bytes: two descriptions, labels 2 and 1 (20 bytes each: label, flags, 3 coordinates).
        var data: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]
        for label: UInt8 in [2, 1] { data += [label, 0, 0, 0] + [UInt8](repeating: 0, count: 16) }
        #expect(try speakers(.array(data.map { .int(Int64($0)) }), 2) == [.right, .left])
        func message(_ layout: SettingValue, _ channels: Int) -> String? {
            Self.rejected(Self.with([SettingsKey.numberOfChannels: .int(Int64(channels)), SettingsKey.channelLayout: layout]))
        }
        #expect(message(tag(104, 2), 2)
                == "AVChannelLayoutKey: kAudioChannelLayoutTag_MidSide (0x00680002) is not supported: mid/side needs matrixing, not a channel order")
        #expect(message(tag(200, 2), 2) == "AVChannelLayoutKey: layout tag 0x00C80002 is not supported")
        #expect(message(tag(123, 5), 5) == "AVChannelLayoutKey: kAudioChannelLayoutTag_MPEG_5_1_C (0x007B0005) has 6 channels, not 5")
        #expect(message(.dictionary(["mChannelLayoutTag": .int(0x10000), "mChannelBitmap": .int(1 << 20 | 1)]), 2)
                == "AVChannelLayoutKey: channel bitmap 0x100001 has bits trackd does not know (it applies bits 0–17)")
        let twice = SettingValue.dictionary(["mChannelLayoutTag": .int(0), "mChannelDescriptions": .array([.int(42), .int(1)])])
        #expect(message(twice, 2) == "AVChannelLayoutKey: the mono label (42) only makes sense for a single channel")
    }

    @Test func bitDepthAndFloat() {
        let together = "AVLinearPCMIsFloatKey and AVLinearPCMBitDepthKey must be specified together"
        #expect(Self.rejected(Self.with([SettingsKey.bitDepth: .int(16)])) == together)
        #expect(Self.rejected(Self.with([SettingsKey.isFloat: .bool(false)])) == together)
        #expect(Self.rejected(Self.with([SettingsKey.bitDepth: .int(12), SettingsKey.isFloat: .bool(false)]))
                == "AVLinearPCMBitDepthKey must be 8, 16, 24 or 32, not 12")
        #expect(Self.rejected(Self.with([SettingsKey.bitDepth: .int(16), SettingsKey.isFloat: .bool(true)]))
                == "AVLinearPCMBitDepthKey must be 32 when AVLinearPCMIsFloatKey is YES, not 16")
        #expect(Self.rejected(Self.with([SettingsKey.isBigEndian: .string("yes")]))
                == "AVLinearPCMIsBigEndianKey must be a boolean, not \"yes\"")
        #expect(Self.rejected(Self.with([SettingsKey.isNonInterleaved: .int(2)]))
                == "AVLinearPCMIsNonInterleaved must be a boolean, not 2")
    }

    /// TrackdAudioTimePitchAlgorithm (audioTimePitchAlgorithm): Apple's four names are accepted and change nothing
    /// (trackd reads at rate 1); anything else is refused with a message naming the four; on video it is an audio key.
    @Test func timePitchAlgorithm() throws {
        for name in ["Spectral", "TimeDomain", "Varispeed", "LowQualityZeroLatency"] {
            #expect(try OutputSettings.validateAudio(Self.with([SettingsKey.audioTimePitchAlgorithm: .string(name)]))
                    == OutputSettings.validateAudio(Self.lpcm))
        }
        let names = "LowQualityZeroLatency, Spectral, TimeDomain or Varispeed"
        #expect(Self.rejected(Self.with([SettingsKey.audioTimePitchAlgorithm: .string("spectral")]))
                == "TrackdAudioTimePitchAlgorithm must be \(names), not \"spectral\"")
        #expect(Self.rejected(Self.with([SettingsKey.audioTimePitchAlgorithm: .int(1)]))
                == "TrackdAudioTimePitchAlgorithm must be \(names), not 1")
        do throws(TrackError) {
            _ = try OutputSettings.validateVideo([SettingsKey.audioTimePitchAlgorithm: .string("Spectral")])
            Issue.record("accepted on video")
        } catch {
            #expect(error.message == "Output settings are not compatible with media type vide")
        }
    }
}
