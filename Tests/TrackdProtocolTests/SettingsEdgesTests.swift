import TrackdProtocol
import TestSupport
import Testing

/// AVVideoAllowWideColorKey and kCVPixelBufferBytesPerRowAlignmentKey (Apple parity, issue #13), and the one rule
/// for printing a double in messages (docs/PROTOCOL.md §10.3, "How values are printed").
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SettingsEdgesTests {
    static let v420 = PixelFormat.named("420v")!

    @Test func bytesPerRowAlignmentIsAPowerOfTwoUpTo4096() throws {
        for n: Int64 in [1, 2, 16, 64, 256, 4096] {
            let request = try OutputSettings.validateVideo([SettingsKey.bytesPerRowAlignment: .int(n)])
            #expect(request == VideoOutputRequest(pixelFormat: Self.v420, bytesPerRowAlignment: Int(n)))
        }
        #expect(try OutputSettings.validateVideo([SettingsKey.bytesPerRowAlignment: .double(64)]).bytesPerRowAlignment == 64)
        #expect(try OutputSettings.validateVideo([:]).bytesPerRowAlignment == 1)
        for bad: SettingValue in [.int(0), .int(-64), .int(48), .int(8192), .double(64.5), .string("64"), .bool(true)] {
            #expect(OutputSettingsTests.rejected([SettingsKey.bytesPerRowAlignment: bad])?.message
                    == "kCVPixelBufferBytesPerRowAlignmentKey must be a power of two from 1 to 4096, not \(bad)")
        }
        #expect(OutputSettingsTests.rejected([SettingsKey.bytesPerRowAlignment: .int(3)])?.message
                == "kCVPixelBufferBytesPerRowAlignmentKey must be a power of two from 1 to 4096, not 3")
    }

    @Test func allowWideColorIsABoolean() throws {
        #expect(try OutputSettings.validateVideo([SettingsKey.allowWideColor: .bool(true)]).allowWideColor)
        #expect(try !OutputSettings.validateVideo([SettingsKey.allowWideColor: .bool(false)]).allowWideColor)
        #expect(try OutputSettings.validateVideo([SettingsKey.allowWideColor: .int(1)]).allowWideColor)
        #expect(try !OutputSettings.validateVideo([:]).allowWideColor)
        #expect(OutputSettingsTests.rejected([SettingsKey.allowWideColor: .string("YES")])?.message
                == "AVVideoAllowWideColorKey must be a boolean, not \"YES\"")
        #expect(OutputSettingsTests.rejected([SettingsKey.allowWideColor: .int(2)])?.message
                == "AVVideoAllowWideColorKey must be a boolean, not 2")
    }

    /// Both keys are video keys: on an audio track they are refused as such.
    @Test func theNewKeysAreVideoKeys() {
        for key in [SettingsKey.allowWideColor, SettingsKey.bytesPerRowAlignment] {
            #expect(SettingsKey.videoKeys.contains(key))
            do {
                _ = try OutputSettings.validateAudio([key: .int(1)])
                Issue.record("\(key) accepted on an audio track")
            } catch {
                #expect(error.message == "Output settings are not compatible with media type soun")
            }
        }
        // Validated after the dimensions (§10.3 rows 13 and 14): a bad Width is reported first.
        #expect(OutputSettingsTests.rejected([SettingsKey.width: .int(-1), SettingsKey.bytesPerRowAlignment: .int(3)])?.message
                == "Width must not be negative (-1)")
    }

    @Test func doublesArePrintedByOneRule() {
        let cases: [(Double, String)] = [
            (1.0, "1.0"), (0.5, "0.5"), (44100.0, "44100.0"), (44100.5, "44100.5"), (-0.0, "-0.0"),
            (0.0001, "0.0001"), (0.00001, "1e-05"), (1e15, "1000000000000000.0"), (9_007_199_254_740_992.0, "9007199254740992.0"),
            (1e16, "1e+16"), (123_456_789_012_345_678.0, "1.2345678901234568e+17"), (1.0 / 3, "0.3333333333333333"),
            (.nan, "nan"), (.infinity, "inf"), (-.infinity, "-inf"),
        ]
        for (value, text) in cases {
            #expect(SettingValue.format(value) == text)
            #expect(SettingValue.double(value).description == text)
        }
        // In messages: an integral double keeps its ".0".
        #expect(OutputSettingsTests.rejected([SettingsKey.width: .double(640.5)])?.message == "Width must be a number, not 640.5")
        do {
            _ = try OutputSettings.validateAudio([SettingsKey.numberOfChannels: .double(0)])
            Issue.record("0.0 channels accepted")
        } catch {
            #expect(error.message == "AVNumberOfChannelsKey must be greater than 0, not 0.0")
        }
    }
}
