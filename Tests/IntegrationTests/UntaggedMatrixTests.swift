import TestSupport
import Testing
import TrackClient

/// TrackdUntaggedYCbCrMatrix end to end (real trackd, real GStreamer): the YCbCr matrix assumed for video that
/// names none. Each choice is compared per pixel with ffmpeg's conversion given the same matrix
/// (`-vf scale=in_color_matrix=bt601|bt709`), within RGBFormatTests' bound — at most 6 code values per component,
/// 2.0 on average per frame (GStreamer 1.22's videoconvert works in 8-bit fixed point; libswscale within 1) —
/// while the other matrix differs by far more (asserted, so the comparison can tell the two apart). The source is
/// untagged 4:4:4 (`Media.untaggedHD`, 1280×720: GStreamer would assume BT.709 there, ffmpeg BT.601), so chroma
/// upsampling does not enter the comparison. A stream that names its matrix keeps it.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct UntaggedMatrixTests {
    static let (w, h) = (1280, 720)
    static let frames = 3
    /// Untagged 4:4:4 HD: x264 writes no colour description unless asked.
    static let untaggedHD: String = Media.make("untagged-hd-444.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=10:duration=0.3",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p",
    ])
    /// The same picture tagged BT.709 (matrix, primaries, transfer, video range).
    static let taggedHD: String = Media.make("tagged-hd-444.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=10:duration=0.3",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p",
        "-color_range", "tv", "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
    ])

    /// The decoded samples of `file`'s video track in `code` with these extra settings.
    func decode(_ file: String, _ code: FourCC, _ extra: [String: SettingValue]) throws -> [SampleBuffer] {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        var settings: [String: SettingValue] = [SettingsKey.pixelFormatType: .int(Int64(code.rawValue))]
        settings.merge(extra) { $1 }
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let sample = try output.copyNextSampleBuffer() { samples.append(sample) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(samples.count == Self.frames)
        return samples
    }

    func rgb(_ file: String, _ matrix: YCbCrMatrix?) throws -> [[UInt8]] {
        let extra: [String: SettingValue] = matrix.map { [SettingsKey.untaggedYCbCrMatrix: .string($0.rawValue)] } ?? [:]
        return try decode(file, FourCC(rawValue: 0x18), extra).map { $0.packedBytes() }
    }

    /// ffmpeg's rgb24 of `file` converted with `matrix` (bt601 / bt709), video range in.
    func ffmpeg(_ file: String, _ matrix: String) throws -> [[UInt8]] {
        try Oracle.rawFrames(file, ["-vf", "scale=in_color_matrix=\(matrix):in_range=tv,format=rgb24"],
                             frameSize: Self.w * Self.h * 3)
    }

    /// (largest, mean) difference per component, over every frame.
    static func difference(_ ours: [[UInt8]], _ theirs: [[UInt8]]) -> (worst: Int, mean: Double) {
        var worst = 0, sum = 0, count = 0
        for (a, b) in zip(ours, theirs) {
            for (x, y) in zip(a, b) {
                let d = abs(Int(x) - Int(y))
                worst = max(worst, d)
                sum += d
                count += 1
            }
        }
        return (worst, Double(sum) / Double(max(1, count)))
    }

    func expectMatches(_ ours: [[UInt8]], ffmpegMatrix: String, other: String, file: String) throws {
        let same = try ffmpeg(file, ffmpegMatrix), different = try ffmpeg(file, other)
        #expect(ours.count == same.count && ours.allSatisfy { $0.count == Self.w * Self.h * 3 })
        let close = Self.difference(ours, same), far = Self.difference(ours, different)
        #expect(close.worst <= RGBFormatTests.tolerance && close.mean <= RGBFormatTests.meanTolerance,
                "differs from ffmpeg's \(ffmpegMatrix) by up to \(close.worst), mean \(close.mean)")
        #expect(far.worst >= 20, "as close to ffmpeg's \(other) (\(far.worst)): the test cannot tell the matrices apart")
    }

    @Test func bt601MatchesFFmpegsBT601() throws {
        try expectMatches(try rgb(Self.untaggedHD, .bt601), ffmpegMatrix: "bt601", other: "bt709", file: Self.untaggedHD)
    }

    @Test func bt709MatchesFFmpegsBT709() throws {
        try expectMatches(try rgb(Self.untaggedHD, .bt709), ffmpegMatrix: "bt709", other: "bt601", file: Self.untaggedHD)
    }

    /// Absent: GStreamer's rule, BT.709 above 576 lines — the same bytes as asking for BT.709.
    @Test func absentIsBT709ForHD() throws {
        #expect(try rgb(Self.untaggedHD, nil) == rgb(Self.untaggedHD, .bt709))
    }

    /// A YCbCr Sample's colorimetry names the matrix its pixels were given (H.273: 6 BT.601, 1 BT.709).
    @Test func yCbCrSamplesNameTheMatrix() throws {
        let y420: FourCC = "y420"
        for (matrix, code) in [(YCbCrMatrix.bt601, UInt8(6)), (.bt709, 1)] {
            let samples = try decode(Self.untaggedHD, y420, [SettingsKey.untaggedYCbCrMatrix: .string(matrix.rawValue)])
            #expect(samples.allSatisfy { $0.colorimetry.matrix == code }, "\(matrix): \(samples.map(\.colorimetry))")
        }
    }

    /// A stream that names its matrix keeps it: BT.709-tagged video asked for BT.601 converts as BT.709.
    @Test func taggedVideoKeepsItsMatrix() throws {
        try expectMatches(try rgb(Self.taggedHD, .bt601), ffmpegMatrix: "bt709", other: "bt601", file: Self.taggedHD)
    }

    @Test func otherValuesAreRefused() {
        #expect(throws: TrackError(.unsupportedOutputSettings,
                                   "TrackdUntaggedYCbCrMatrix must be ITU_R_601_4 or ITU_R_709_2, not \"601\"")) {
            try OutputSettings.validateVideo([SettingsKey.untaggedYCbCrMatrix: .string("601")])
        }
    }
}
