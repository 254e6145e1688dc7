import Foundation
import TestSupport
import Testing
import TrackClient

/// Damaged input is never silent (PROTOCOL.md §12.5): every frame the decoder makes is delivered, as ffmpeg's
/// default error concealment gives them, and the stored samples that made nothing — cut off by the file's end or
/// made nothing of by the decoder — are counted in OutputFinished, in Status and in the daemon's log.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct LostSamplesTests {
    /// A 60-frame H.264 MP4 (keyframes at 0 and 30) and a copy whose second keyframe is overwritten with random
    /// bytes after its first `intact` bytes (its length prefix; `5`: also the NAL header byte).
    static func damagedH264(intact: Int) throws -> (whole: String, damaged: String) {
        let whole = Media.make("lost-h264.mp4", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
                                                 "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p"])
        let keyframes = try Probe.packets(whole, "v:0").filter(\.keyframe)
        try #require(keyframes.count == 2, "keyframes: \(keyframes.count)")
        let second = keyframes[1]
        var bytes = try #require(FileManager.default.contents(atPath: whole))
        var random = SplitMix64(seed: 7)
        let start = Int(try #require(second.position))
        for i in start + intact..<start + second.size { bytes[i] = UInt8.random(in: 0...255, using: &random) }
        let damaged = Media.dir + "/lost-h264-\(intact).mp4"
        try bytes.write(to: URL(fileURLWithPath: damaged))
        return (whole, damaged)
    }

    /// One read (of `range`; nil: all of it) of the first track of `type`: its samples and the output's lost count;
    /// the session's Status after it.
    static func read(_ daemon: Daemon, _ file: String, _ type: MediaType, _ settings: [String: SettingValue]?,
                     range: MediaTimeRange? = nil) throws -> (samples: [SampleBuffer], lost: UInt64, status: StatusReport) {
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: type).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        if let range { try reader.setTimeRange(range) }
        try reader.add(output)
        #expect(try reader.startReading(), "\(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { samples.append(s) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return (samples, output.samplesLost, try asset.serverStatus())
    }

    /// ffmpeg decodes some of the 60 pictures (59 when only the damaged keyframe is lost; fewer when its slice
    /// header is garbage and the pictures after it have no reference): trackd delivers the same frames, byte for
    /// byte, and counts the rest as lost — in OutputFinished, Status and the log. Passthrough loses nothing: the
    /// stored samples are all there.
    @Test(arguments: [4, 5]) func damagedH264DeliversWhatFFmpegDecodesAndCountsTheRest(_ intact: Int) throws {
        let (_, file) = try Self.damagedH264(intact: intact)
        let daemon = try Daemon(allowedWarnings: ["avdec_h264", "libav"])
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        try #require(oracle.count < 60, "ffmpeg decodes every picture of the damaged file: nothing is tested")
        let decoded = try Self.read(daemon, file, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.samples.count == oracle.count, "\(decoded.samples.count) frames, ffmpeg \(oracle.count)")
        #expect(decoded.samples.map { md5Hex($0.packedBytes()) } == oracle.map(\.md5), "frames differ from ffmpeg's")
        #expect(decoded.lost == UInt64(60 - oracle.count), "lost \(decoded.lost), ffmpeg decoded \(oracle.count) of 60")
        #expect(decoded.status.samplesLost == decoded.lost, "Status: \(decoded.status.samplesLost)")
        let line = "stored samples lost (0 not in the file, \(60 - oracle.count) undecodable)"
        #expect(waitUntil(timeout: .seconds(10)) { daemon.log.contains(line) }, "the log lacks \"\(line)\":\n\(daemon.log)")
        print("damaged H.264 (\(intact) bytes intact): ffmpeg \(oracle.count) frames, trackd \(decoded.samples.count), lost \(decoded.lost)")
        let stored = try Self.read(daemon, file, .video, nil)
        #expect(stored.samples.count == 60 && stored.lost == 0, "passthrough: \(stored.samples.count), lost \(stored.lost)")
    }

    /// The undamaged file loses nothing, decoded or not.
    @Test func anIntactFileLosesNothing() throws {
        let (whole, _) = try Self.damagedH264(intact: 4)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let decoded = try Self.read(daemon, whole, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.samples.count == 60 && decoded.lost == 0 && decoded.status.samplesLost == 0,
                "\(decoded.samples.count) frames, lost \(decoded.lost), Status \(decoded.status.samplesLost)")
    }

    /// A faststart MP4 cut short: decoded, ffmpeg's frames (StoredSamplesTests checks their bytes); passthrough,
    /// every sample the file holds whole. Either way the samples the sample tables list and the read did not
    /// deliver are counted lost: delivered + lost = the whole file's samples.
    @Test(arguments: [30, 50, 75]) func aTruncatedMP4CountsWhatItLacks(_ percent: Int) throws {
        let whole = StoredSamplesTests.fourSeconds
        let listed = (video: try Probe.packets(whole, "v:0").count, audio: try Probe.packets(whole, "a:0").count)
        let bytes = try #require(FileManager.default.contents(atPath: whole))
        let file = Media.dir + "/lost-cut-\(percent).mp4"
        try bytes.prefix(bytes.count * percent / 100).write(to: URL(fileURLWithPath: file))
        let daemon = try Daemon(allowedWarnings: ["avdec_h264", "libav", "qtdemux"])
        defer { daemon.stop() }
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p", extra: ["-vsync", "passthrough"])
        let decoded = try Self.read(daemon, file, .video, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(decoded.samples.count == oracle.count, "\(percent)%: \(decoded.samples.count) frames, ffmpeg \(oracle.count)")
        #expect(decoded.lost > 0 && decoded.samples.count + Int(decoded.lost) == listed.video,
                "\(percent)%: \(decoded.samples.count) frames + \(decoded.lost) lost, \(listed.video) listed")
        #expect(decoded.status.samplesLost == decoded.lost, "\(percent)% Status: \(decoded.status.samplesLost)")
        Self.expectLogged(decoded.lost, daemon, "\(percent)% decoded")
        print("cut at \(percent)%: ffmpeg \(oracle.count) frames, trackd \(decoded.samples.count), lost \(decoded.lost) of \(listed.video)")
        for (type, count) in [(MediaType.video, listed.video), (.audio, listed.audio)] {
            let stored = try Self.read(daemon, file, type, nil)
            #expect(stored.lost > 0 && stored.samples.count + Int(stored.lost) == count,
                    "\(percent)% \(type): \(stored.samples.count) samples + \(stored.lost) lost, \(count) listed")
            #expect(stored.status.samplesLost == stored.lost, "\(percent)% \(type) Status: \(stored.status.samplesLost)")
            Self.expectLogged(stored.lost, daemon, "\(percent)% \(type)")
        }
    }

    /// The daemon's log has a line counting `lost` stored samples, split into the two causes (PROTOCOL.md §12.5).
    private static func expectLogged(_ lost: UInt64, _ daemon: Daemon, _ what: String) {
        let logged = waitUntil(timeout: .seconds(10)) {
            daemon.log.split(separator: "\n").contains { line in
                guard let r = line.range(of: ": \(lost) stored samples lost (") else { return false }
                let causes = line[r.upperBound...].split(whereSeparator: { !$0.isNumber }).compactMap { UInt64($0) }
                return causes.count == 2 && causes[0] + causes[1] == lost
            }
        }
        #expect(logged, "\(what): the log lacks a line counting \(lost) lost samples:\n\(daemon.log)")
    }
}
