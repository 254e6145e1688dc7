import TrackdProtocol
import TestSupport
import Testing

/// The one rule for printing a double in messages (docs/PROTOCOL.md §10.3, "How values are printed"; issue #13).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SettingsEdgesTests {
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
