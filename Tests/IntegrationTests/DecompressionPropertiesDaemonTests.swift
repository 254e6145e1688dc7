import Foundation
import TestSupport
import Testing
import TrackClient

/// AVVideoDecompressionPropertiesKey through a real daemon (docs/SETTINGS.md): an accepted dictionary opens the
/// output and changes nothing that is decoded — every frame ffmpeg's (`-f framemd5`), also of interlaced video with
/// FieldMode BothFields (both fields, woven, are what trackd delivers), and ThreadCount leaves the decoder's threads
/// to the worker — while a refused one gets −11861 from the worker naming the property, the same on every attempt,
/// and the connection goes on reading.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct DecompressionPropertiesDaemonTests {
    static let key = "AVVideoDecompressionPropertiesKey"
    static let bothFields = SettingValue.string("kVTDecompressionProperty_FieldMode_BothFields")
    /// Every accepted property, as a ported dictionary may hold them.
    static let ported = SettingValue.dictionary([
        "kVTDecompressionPropertyKey_RealTime": .bool(true),
        "kVTDecompressionPropertyKey_ThreadCount": .int(1),
        "kVTDecompressionPropertyKey_MaximizePowerEfficiency": .int(0),
        "kVTVideoDecoderSpecification_EnableHardwareAcceleratedVideoDecoder": .bool(true),
        "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder": .bool(false),
        "kVTDecompressionPropertyKey_FieldMode": bothFields,
    ])
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420"), key: ported]

    /// Interlaced video (top field first), each frame two fields: MPEG-2 in a PS and x264's interlaced H.264 in MP4.
    static let interlaced = [
        Media.make("interlaced-mpeg2.mpg", ["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=25:duration=1",
                                            "-c:v", "mpeg2video", "-flags", "+ilme+ildct", "-top", "1", "-f", "mpeg"]),
        Media.make("interlaced-h264.mp4", ["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=25:duration=1",
                                           "-c:v", "libx264", "-preset", "veryfast", "-flags", "+ilme+ildct",
                                           "-x264-params", "interlaced=1:tff=1", "-pix_fmt", "yuv420p"]),
    ]

    /// Reads every frame of the first video track of `file` with `settings`: the frames' md5s and times.
    static func read(_ daemon: Daemon, _ file: String, _ settings: [String: SettingValue]) throws
        -> (md5: [String], pts: [MediaTime]) {
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), "\(String(describing: reader.error))")
        var md5: [String] = [], pts: [MediaTime] = []
        while let sample = try output.copyNextSampleBuffer() {
            md5.append(md5Hex(sample.packedBytes()))
            pts.append(sample.presentationTimeStamp)
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return (md5, pts)
    }

    /// The clip with every accepted property: ffmpeg's frames at the times a read without them gives; ThreadCount 1
    /// changes no thread count (a lone decode still takes one per CPU, DecoderThreadsTests).
    @Test func aPortedDictionaryDecodesFfmpegsFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let with = try Self.read(daemon, Media.clip, Self.y420)
        #expect(with.md5 == (try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")).map(\.md5))
        let without = try Self.read(daemon, Media.clip, [SettingsKey.pixelFormatType: .string("y420")])
        #expect(with.pts == without.pts && with.pts.count == 60)
        // The first read's record (the lone decode: the second one's may count the first worker, still ending).
        let first = try #require(daemon.events("decoder-threads").first, "\(daemon.log)")
        #expect(first.int("others") == 0 && first.int("threads") == first.int("cpus"), "\(daemon.log)")
    }

    /// FieldMode BothFields on interlaced video: one frame per coded frame (ffprobe's count, not one per field),
    /// both fields woven as ffmpeg weaves them.
    @Test(arguments: interlaced) func bothFieldsAreFfmpegsWovenFrames(_ file: String) throws {
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=field_order",
                                        "-of", "csv=p=0", file])
        // (csv: "tt", and in a PS a comma for the side data after it)
        try #require(probe.text.split(separator: ",").first?.trimmingCharacters(in: .whitespacesAndNewlines) == "tt",
                     "not interlaced: \(probe.text)")
        let oracle = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        try #require(oracle.count == 25, "ffmpeg decodes \(oracle.count) frames")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let settings: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420"),
                                                Self.key: .dictionary(["kVTDecompressionPropertyKey_FieldMode": Self.bothFields])]
        #expect(try Self.read(daemon, file, settings).md5 == oracle)
    }

    /// Refused dictionaries and the message each gets (the property it names in it).
    static let refused: [(SettingValue, String)] = [
        (.int(1), "AVVideoDecompressionPropertiesKey must be a dictionary, not 1"),
        (.dictionary(["kVTDecompressionPropertyKey_Frobnicate": .bool(true), "kVTDecompressionPropertyKey_RealTime": .bool(true)]),
         "AVVideoDecompressionPropertiesKey contains one or more invalid keys: kVTDecompressionPropertyKey_Frobnicate"),
        (.dictionary(["kVTDecompressionPropertyKey_OnlyTheseFrames": .int(1)]),
         "AVAssetReaderTrackOutput does not currently support kVTDecompressionPropertyKey_OnlyTheseFrames"),
        (.dictionary(["kVTDecompressionPropertyKey_RealTime": .int(2)]), "kVTDecompressionPropertyKey_RealTime must be a boolean, not 2"),
        (.dictionary(["kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder": .int(1)]),
         "kVTVideoDecoderSpecification_RequireHardwareAcceleratedVideoDecoder cannot be met: trackd decodes in software"),
        (.dictionary(["kVTDecompressionPropertyKey_ThreadCount": .int(257)]),
         "kVTDecompressionPropertyKey_ThreadCount must be a number from 0 to 256, not 257"),
        (.dictionary(["kVTDecompressionPropertyKey_FieldMode": .string("kVTDecompressionProperty_FieldMode_TopFieldOnly")]),
         "kVTDecompressionPropertyKey_FieldMode must be kVTDecompressionProperty_FieldMode_BothFields (trackd delivers both fields), not \"kVTDecompressionProperty_FieldMode_TopFieldOnly\""),
    ]

    /// A client that skips TrackClient's check (RawClient) gets the worker's −11861 for each refused dictionary, in
    /// CreateOutput and ReadFrames, three times each on one connection; then that connection reads the whole clip with
    /// the ported dictionary, every frame.
    @Test func refusedPropertiesFailTheSameEveryTimeAndTheConnectionGoesOn() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip)
        let video = try #require(asset.tracks.first { $0.mediaType == .video })
        for (value, message) in Self.refused {
            let settings: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420"), Self.key: value]
            for attempt in 1...3 {
                let created = try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: video.id,
                                                                         timeRange: .everything, settings: settings)))
                #expect(created == .error(TrackError(.unsupportedOutputSettings, message)), "CreateOutput #\(attempt): \(created)")
                let frames = try raw.request(.readFrames(ReadFrames(assetID: asset.assetID, trackID: video.id,
                                                                    frames: [.index(0)], settings: settings)))
                #expect(frames == .error(TrackError(.unsupportedOutputSettings, message)), "ReadFrames #\(attempt): \(frames)")
            }
        }
        let created = try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: video.id,
                                                                 timeRange: .everything, settings: Self.y420)))
        guard case .outputCreated(let output) = created else { Issue.record("expected OutputCreated, got \(created)"); return }
        var samples = 0
        loop: while true {
            let frame = try raw.socket.receive()
            switch frame.message {
            case .sample(let sample):
                samples += 1
                try raw.socket.send(.releaseSlots(outputID: output.outputID, slots: [sample.slot]), requestID: 0)
            case .outputFinished(let finished):
                #expect(finished.status == .completed, "\(finished)")
                break loop
            case .poolAdded, .poolRemoved, .rangeEnded: continue
            default: Issue.record("unexpected \(frame.message)")
            }
        }
        #expect(samples == 60)
        guard case .status(let status) = try raw.request(.getStatus) else { Issue.record("no status"); return }
        #expect(status.workerCrashes == 0)
    }
}
