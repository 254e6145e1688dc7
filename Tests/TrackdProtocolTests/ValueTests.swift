import TrackdProtocol
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct OutputSettingsTests {
    static func rejected(_ settings: [String: SettingValue]) -> TrackError? {
        do throws(TrackError) {
            let request = try OutputSettings.validateVideo(settings)
            Issue.record("accepted: \(request)")
            return nil
        } catch {
            #expect(error.code == AVErrorCode.unsupportedOutputSettings.rawValue)
            return error
        }
    }

    @Test func defaultIs420v() throws {
        let request = try OutputSettings.validateVideo([:])
        #expect(request == VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!, width: nil, height: nil))
    }

    @Test func pixelFormatAsNumberArrayOrString() throws {
        let bgra = PixelFormat.named("BGRA")!
        let argb = PixelFormat.named(FourCC(rawValue: 0x20))!
        let cases: [(SettingValue, PixelFormat)] = [
            (.int(0x4247_5241), bgra),
            (.int(0x20), argb),
            (.int(0x3432_3066), PixelFormat.named("420f")!),
            (.array([.int(0x4247_5241)]), bgra),
            // The first supported code of the list wins; unsupported ones before it are skipped.
            (.array([.int(0x7878_7878), .int(0x7933_3230), .int(0x20), .int(0x4247_5241)]), argb),
            (.string("BGRA"), bgra),
            (.string("kCVPixelFormatType_32BGRA"), bgra),
            (.string("32ARGB"), argb),
            (.string("0x42475241"), bgra),
            (.array([.string("nope"), .string("y420")]), PixelFormat.named("y420")!),
        ]
        for (value, expected) in cases {
            #expect(try OutputSettings.validateVideo([SettingsKey.pixelFormatType: value]).pixelFormat == expected, "\(value)")
            #expect(try OutputSettings.validateVideo(["kCVPixelBufferPixelFormatTypeKey": value]).pixelFormat == expected, "\(value)")
        }
    }

    @Test func badPixelFormats() {
        #expect(Self.rejected([SettingsKey.pixelFormatType: .int(0x7878_7878)])?.message.hasPrefix("Unsupported pixel format xxxx") == true)
        #expect(Self.rejected([SettingsKey.pixelFormatType: .array([.int(0x7878_7878), .string("abcd")])])?.message
                .hasPrefix("Unsupported pixel format xxxx, abcd") == true)
        #expect(Self.rejected([SettingsKey.pixelFormatType: .array([])])?.message == "kCVPixelBufferPixelFormatTypeKey is an empty array")
        for value: SettingValue in [.bool(true), .double(875_704_438), .int(-1), .int(1 << 32), .array([.array([])]), .dictionary([:])] {
            #expect(Self.rejected([SettingsKey.pixelFormatType: value])?.message
                    .hasPrefix("kCVPixelBufferPixelFormatTypeKey must be a number or an array of numbers") == true, "\(value)")
        }
    }

    /// Formats GStreamer 1.22 cannot produce with CoreVideo's layout are rejected by name, with the reason, however
    /// they are named (code, number, constant), and also when they are the only entries of a list.
    @Test func unsupportedFormatsAreRejectedByName() throws {
        let expected: [(FourCC, String)] = [
            ("v308", "v308 (kCVPixelFormatType_444YpCbCr8) is not supported: GStreamer has no Cr-Y-Cb 8-bit layout (its v308 is Y-Cb-Cr)"),
            ("v408", "v408 (kCVPixelFormatType_4444YpCbCrA8) is not supported: GStreamer has no Cb-Y-Cr-A 8-bit layout"),
            ("r408", "r408 (kCVPixelFormatType_4444YpCbCrA8R) is not supported: GStreamer has no zero-biased (rendering) Y'CbCr layout"),
            ("v410", "v410 (kCVPixelFormatType_444YpCbCr10) is not supported: GStreamer 1.22 has no 10-bit 4:4:4 Cr-Y-Cb layout packed in 32-bit words with the padding bits low"),
            ("x422", "x422 (kCVPixelFormatType_422YpCbCr10BiPlanarVideoRange) is not supported: GStreamer 1.22 has no 10-bit 4:2:2 biplanar layout (P210)"),
            ("x444", "x444 (kCVPixelFormatType_444YpCbCr10BiPlanarVideoRange) is not supported: GStreamer 1.22 has no 10-bit 4:4:4 biplanar layout (P410)"),
        ]
        #expect(expected.map(\.0) == UnsupportedPixelFormat.all.map(\.code))
        for (code, message) in expected {
            let constant = UnsupportedPixelFormat.named(code)!.constantName
            for value: SettingValue in [.int(Int64(code.rawValue)), .string(code.description), .string(constant),
                                        .array([.string("nope"), .int(Int64(code.rawValue)), .int(0x7878_7878)])] {
                #expect(Self.rejected([SettingsKey.pixelFormatType: value])?.message == message, "\(value)")
            }
            #expect(PixelFormat.named(code) == nil)
        }
        // A supported entry later in the list still wins.
        #expect(try OutputSettings.validateVideo([SettingsKey.pixelFormatType: .array([.string("v308"), .string("y408")])])
                .pixelFormat.code == "y408")
    }

    /// The extra CoreVideo formats and their GStreamer twins; Width/Height are refused with the high-bit-depth ones.
    @Test func extraFormatsAndScaling() throws {
        let table: [(FourCC, String, String, Int)] = [
            ("y416", "kCVPixelFormatType_4444AYpCbCr16", "AYUV64", 1),
            ("v216", "kCVPixelFormatType_422YpCbCr16", "v216", 1),
            ("v210", "kCVPixelFormatType_422YpCbCr10", "v210", 1),
            ("b64a", "kCVPixelFormatType_64ARGB", "ARGB64_BE", 1),
            ("x420", "kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange", "P010_10LE", 2),
            ("xf20", "kCVPixelFormatType_420YpCbCr10BiPlanarFullRange", "P010_10LE", 2),
            ("l64r", "kCVPixelFormatType_64RGBALE", "RGBA64_LE", 1),
            ("y408", "kCVPixelFormatType_4444AYpCbCr8", "AYUV", 1),
            ("422v", "kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange", "NV16", 2),
            ("444v", "kCVPixelFormatType_444YpCbCr8BiPlanarVideoRange", "NV24", 2),
            ("L008", "kCVPixelFormatType_OneComponent8", "GRAY8", 1),
            ("L016", "kCVPixelFormatType_OneComponent16", "GRAY16_LE", 1),
        ]
        #expect(FourCC(rawValue: 0x4C30_3038) == "L008")
        for (code, constant, gst, planes) in table {
            let f = try #require(PixelFormat.named(code))
            #expect(f.constantName == constant && f.gstFormat == gst && f.planeCount == planes, "\(code)")
            #expect(PixelFormat.parse(constant) == f && PixelFormat.parse(code.description) == f)
            #expect(try OutputSettings.validateVideo([SettingsKey.pixelFormatType: .int(Int64(code.rawValue))]).pixelFormat == f)
            let scaled: [String: SettingValue] = [SettingsKey.pixelFormatType: .string(code.description), SettingsKey.width: .int(80)]
            if ["y416", "v216", "v210", "b64a"].contains(code) {
                #expect(!f.scalable)
                #expect(Self.rejected(scaled)?.message
                        == "AVAssetReaderTrackOutput does not support scaling to Width/Height with pixel format \(code)")
                #expect(Self.rejected([SettingsKey.pixelFormatType: .string(code.description), SettingsKey.height: .int(46)])?.message
                        == "AVAssetReaderTrackOutput does not support scaling to Width/Height with pixel format \(code)")
                // Width/Height 0 mean the track's size: no scaling.
                #expect(try OutputSettings.validateVideo([SettingsKey.pixelFormatType: .string(code.description),
                                                          SettingsKey.width: .int(0), SettingsKey.height: .int(0)]).pixelFormat == f)
            } else {
                #expect(try OutputSettings.validateVideo(scaled).width == 80)
            }
        }
        #expect(PixelFormat.named("x420")?.range == .video && PixelFormat.named("xf20")?.range == .full)
    }

    @Test func unknownKeysAreNamed() {
        #expect(Self.rejected(["Foo": .int(1)])?.message == "Output settings dictionary contains one or more invalid keys: Foo")
        #expect(Self.rejected(["Zed": .int(1), "Alpha": .int(1), SettingsKey.width: .int(2)])?.message
                == "Output settings dictionary contains one or more invalid keys: Alpha, Zed")
        #expect(Self.rejected(["width": .int(1)])?.message == "Output settings dictionary contains one or more invalid keys: width")
    }

    @Test func unsupportedVideoKeysUseApplesMessages() {
        for key in ["AVVideoCleanApertureKey", "AVVideoPixelAspectRatioKey", "AVVideoScalingModeKey", "AVVideoColorPropertiesKey"] {
            #expect(Self.rejected([key: .dictionary([:])])?.message == "AVAssetReaderTrackOutput does not currently support \(key)")
        }
    }

    @Test func compressedAndAudioSettings() {
        // AVVideoCodecKey wins over every other problem.
        #expect(Self.rejected([SettingsKey.videoCodec: .string("avc1"), "Foo": .int(1), SettingsKey.videoCleanAperture: .int(1)])?.message
                == "AVAssetReaderOutput does not currently support compressed output")
        #expect(Self.rejected([SettingsKey.formatID: .int(0x6C70_636D)])?.message == "Output settings are not compatible with media type vide")
    }

    @Test func dimensions() throws {
        #expect(try OutputSettings.validateVideo([SettingsKey.width: .int(640), SettingsKey.height: .double(360)])
                == VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!, width: 640, height: 360))
        #expect(try OutputSettings.validateVideo(["kCVPixelBufferWidthKey": .int(16384), "kCVPixelBufferHeightKey": .int(0)])
                == VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!, width: 16384, height: nil))
        #expect(Self.rejected([SettingsKey.width: .int(-1)])?.message == "Width must not be negative (-1)")
        #expect(Self.rejected([SettingsKey.height: .int(-1920)])?.message == "Height must not be negative (-1920)")
        #expect(Self.rejected([SettingsKey.width: .int(16385)])?.message == "Width 16385 is larger than 16384")
        #expect(Self.rejected([SettingsKey.width: .double(640.5)])?.message == "Width must be a number, not 640.5")
        #expect(Self.rejected([SettingsKey.height: .string("480")])?.message == "Height must be a number, not \"480\"")
        #expect(Self.rejected([SettingsKey.height: .double(.nan)]) != nil)
    }

    /// Both spellings of one key would make the result depend on dictionary order.
    @Test func aliasAndCanonicalKeyTogether() {
        #expect(Self.rejected([SettingsKey.pixelFormatType: .int(0x4247_5241), "kCVPixelBufferPixelFormatTypeKey": .int(0x20)])?.message
                == "Output settings dictionary contains both PixelFormatType and kCVPixelBufferPixelFormatTypeKey")
        #expect(Self.rejected([SettingsKey.width: .int(2), "kCVPixelBufferWidthKey": .int(2)]) != nil)
    }

    @Test func keysAndAliases() {
        #expect(SettingsKey.pixelFormatType == "PixelFormatType")
        #expect(SettingsKey.width == "Width")
        #expect(SettingsKey.height == "Height")
        #expect(SettingsKey.canonical("kCVPixelBufferPixelFormatTypeKey") == "PixelFormatType")
        #expect(SettingsKey.canonical("kCVPixelBufferWidthKey") == "Width")
        #expect(SettingsKey.canonical("kCVPixelBufferHeightKey") == "Height")
        #expect(SettingsKey.canonical("Other") == "Other")
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct PixelFormatTests {
    @Test func table() {
        let expected: [(UInt32, String, String, Int)] = [
            (0x3432_3076, "kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange", "NV12", 2),
            (0x3432_3066, "kCVPixelFormatType_420YpCbCr8BiPlanarFullRange", "NV12", 2),
            (0x7934_3230, "kCVPixelFormatType_420YpCbCr8Planar", "I420", 3),
            (0x3276_7579, "kCVPixelFormatType_422YpCbCr8", "UYVY", 1),
            (0x7975_7673, "kCVPixelFormatType_422YpCbCr8_yuvs", "YUY2", 1),
            (0x4247_5241, "kCVPixelFormatType_32BGRA", "BGRA", 1),
            (0x0000_0020, "kCVPixelFormatType_32ARGB", "ARGB", 1),
            (0x5247_4241, "kCVPixelFormatType_32RGBA", "RGBA", 1),
            (0x0000_0018, "kCVPixelFormatType_24RGB", "RGB", 1),
            (0x3234_4247, "kCVPixelFormatType_24BGR", "BGR", 1),
            (0x5F52_4750, "kTrackdPixelFormatType_24RGBPlanar", "RGBP", 3),
            (0x5F47_4250, "kTrackdPixelFormatType_24GBRPlanar", "GBR", 3),
            (0x7934_3038, "kCVPixelFormatType_4444AYpCbCr8", "AYUV", 1),
            (0x3432_3276, "kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange", "NV16", 2),
            (0x3434_3476, "kCVPixelFormatType_444YpCbCr8BiPlanarVideoRange", "NV24", 2),
            (0x4C30_3038, "kCVPixelFormatType_OneComponent8", "GRAY8", 1),
            (0x4C30_3136, "kCVPixelFormatType_OneComponent16", "GRAY16_LE", 1),
            (0x7834_3230, "kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange", "P010_10LE", 2),
            (0x7866_3230, "kCVPixelFormatType_420YpCbCr10BiPlanarFullRange", "P010_10LE", 2),
            (0x7632_3130, "kCVPixelFormatType_422YpCbCr10", "v210", 1),
            (0x7632_3136, "kCVPixelFormatType_422YpCbCr16", "v216", 1),
            (0x7934_3136, "kCVPixelFormatType_4444AYpCbCr16", "AYUV64", 1),
            (0x6236_3461, "kCVPixelFormatType_64ARGB", "ARGB64_BE", 1),
            (0x6C36_3472, "kCVPixelFormatType_64RGBALE", "RGBA64_LE", 1),
        ]
        #expect(PixelFormat.all.count == expected.count)
        for (f, e) in zip(PixelFormat.all, expected) {
            #expect(f.code.rawValue == e.0 && f.constantName == e.1 && f.gstFormat == e.2 && f.planeCount == e.3, "\(f.code)")
        }
        #expect(PixelFormat.named("420v")?.range == .video)
        #expect(PixelFormat.named("420f")?.range == .full)
        #expect(Set(PixelFormat.all.map(\.code)).count == PixelFormat.all.count)
    }

    @Test func parse() {
        let cases: [(String, UInt32?)] = [
            ("420v", 0x3432_3076), ("420f", 0x3432_3066), ("y420", 0x7934_3230), ("BGRA", 0x4247_5241),
            ("kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange", 0x3432_3076),
            ("kCVPixelFormatType_32ARGB", 0x20), ("32ARGB", 0x20), ("0x00000020", 0x20), ("0x20", 0x20), ("32", 0x20),
            ("0x34323076", 0x3432_3076), ("875704438", 0x3432_3076), ("0x42475241", 0x4247_5241),
            ("bgra", nil), ("NV12", nil), ("", nil), ("0x", nil), ("0xZZ", nil), ("-1", nil), ("4294967296", nil),
            ("kCVPixelFormatType_32ABGR", nil), ("xxxx", nil),
            ("kCVPixelFormatType_24RGB", 0x18), ("24RGB", 0x18), ("0x00000018", 0x18), ("24", 0x18),
            ("24BG", 0x3234_4247), ("kCVPixelFormatType_24BGR", 0x3234_4247),
            ("_RGP", 0x5F52_4750), ("kTrackdPixelFormatType_24RGBPlanar", 0x5F52_4750), ("RGBP", nil), ("24RG", nil),
            ("_GBP", 0x5F47_4250), ("kTrackdPixelFormatType_24GBRPlanar", 0x5F47_4250), ("gbrp", nil),
        ]
        for (text, code) in cases {
            #expect(PixelFormat.parse(text)?.code.rawValue == code, "\(text)")
        }
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FourCCTests {
    @Test func basics() throws {
        let code: FourCC = "420v"
        #expect(code.rawValue == 0x3432_3076)
        #expect(code.description == "420v")
        let text = { (s: String) in s }  // a String value, so the failable init is chosen over the literal one
        #expect(FourCC(text("png "))?.rawValue == 0x706E_6720)
        #expect(FourCC(rawValue: 0x20).description == "0x00000020")
        #expect(FourCC(rawValue: 0x20).isPrintable == false)
        #expect(FourCC.none.description == "0x00000000")
        #expect(FourCC(rawValue: 0x4142_43FF).description == "0x414243ff")
        #expect(FourCC(text("abc")) == nil)
        #expect(FourCC(text("abcde")) == nil)
        #expect(FourCC(text("")) == nil)
        #expect(FourCC(rawValue: 0x2020_2020).description == "    ")
        var w = ByteWriter()
        w.fourCC(code)
        #expect(w.bytes == [0x76, 0x30, 0x32, 0x34])  // little-endian u32: last character first
        var r = ByteReader([0x76, 0x30, 0x32, 0x34])
        #expect(try r.fourCC() == code)
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MediaTimeTests {
    @Test func nanoseconds() {
        #expect(MediaTime.nanoseconds(1_500_000_000) == MediaTime(value: 1_500_000_000, timescale: 1_000_000_000, flags: 1))
        #expect(MediaTime.nanoseconds(1_500_000_000).seconds == 1.5)
        #expect(MediaTime(value: 3, timescale: 2).nanoseconds == 1_500_000_000)
        #expect(MediaTime(value: 1001, timescale: 30000).nanoseconds == 33_366_666)
        #expect(MediaTime(value: 1, timescale: 3).nanoseconds == 333_333_333)
        #expect(MediaTime(value: -1, timescale: 3).nanoseconds == -333_333_333)  // toward zero
        #expect(MediaTime(value: 7, timescale: 1_000_000_000).nanoseconds == 7)
        #expect(MediaTime.zero.nanoseconds == 0)
        #expect(MediaTime.invalid.nanoseconds == nil)
        #expect(MediaTime.positiveInfinity.nanoseconds == nil)
        #expect(MediaTime(value: 1, timescale: 0).nanoseconds == nil)
        #expect(MediaTime(value: 1, timescale: -1).nanoseconds == nil)
        #expect(MediaTime(value: 1, timescale: 1, flags: MediaTime.flagValid | MediaTime.flagIndefinite).nanoseconds == nil)
    }

    @Test func nanosecondsSaturate() {
        #expect(MediaTime(value: .max, timescale: 1).nanoseconds == .max)
        #expect(MediaTime(value: .min, timescale: 1).nanoseconds == .min)
        #expect(MediaTime(value: .max, timescale: 1000).nanoseconds == .max)
        // The whole seconds fit, the fraction pushes past Int64.max.
        #expect(MediaTime(value: 92_233_720_369, timescale: 10).nanoseconds == .max)
        #expect(MediaTime(value: -92_233_720_369, timescale: 10).nanoseconds == .min)
        #expect(MediaTime(value: .max, timescale: .max).nanoseconds == 4_294_967_298_000_000_000)
    }

    @Test func fromSeconds() {
        #expect(MediaTime(seconds: 1.5) == .nanoseconds(1_500_000_000))
        #expect(MediaTime(seconds: -0.25) == .nanoseconds(-250_000_000))
        #expect(MediaTime(seconds: 0.1).value == 100_000_000)
        #expect(MediaTime(seconds: .nan) == .invalid)
        #expect(MediaTime(seconds: .infinity) == .positiveInfinity)
        #expect(MediaTime(seconds: -.infinity).flags == MediaTime.flagValid | MediaTime.flagNegativeInfinity)
        #expect(MediaTime(seconds: 1e30) == .nanoseconds(.max))
        #expect(MediaTime(seconds: -1e30) == .nanoseconds(.min))
    }

    @Test func flagsAndDescription() {
        #expect(MediaTime.invalid.description == "invalid")
        #expect(MediaTime.positiveInfinity.description == "+inf")
        #expect(MediaTime(value: 3, timescale: 2).description == "3/2")
        #expect(MediaTime.positiveInfinity.seconds == .infinity)
        #expect(MediaTime.invalid.seconds.isNaN)
        #expect(MediaTime.positiveInfinity.flags == 5)
        #expect(MediaTimeRange.everything == MediaTimeRange(start: MediaTime(value: 0, timescale: 1, flags: 1),
                                                             duration: MediaTime(value: 0, timescale: 0, flags: 5)))
        #expect([MediaTime.flagValid, MediaTime.flagHasBeenRounded, MediaTime.flagPositiveInfinity,
                 MediaTime.flagNegativeInfinity, MediaTime.flagIndefinite] == [1, 2, 4, 8, 16])
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ErrorCodeTests {
    @Test func numbersMatchAVFoundation() {
        let codes: [(AVErrorCode, Int32)] = [
            (.unknown, -11800), (.mediaServicesWereReset, -11819), (.decodeFailed, -11821), (.invalidSourceMedia, -11822),
            (.fileFormatNotRecognized, -11828), (.fileFailedToParse, -11829), (.decoderNotFound, -11833),
            (.operationNotSupportedForAsset, -11838), (.operationInterrupted, -11847), (.failedToLoadMediaData, -11849),
            (.undecodableMediaData, -11855), (.unsupportedOutputSettings, -11861), (.formatUnsupported, -11864),
            (.protocolViolation, -11900), (.invalidArgument, -11901), (.limitExceeded, -11902),
        ]
        for (code, value) in codes { #expect(code.rawValue == value, "\(code)") }
        #expect(TrackError(rawCode: -11861, message: "m").knownCode == .unsupportedOutputSettings)
        #expect(TrackError(rawCode: 1, message: "m").knownCode == nil)
    }
}
