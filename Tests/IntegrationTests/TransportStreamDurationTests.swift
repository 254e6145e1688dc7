import Foundation
import TestSupport
import Testing
import TrackClient

/// MPEG-TS track time ranges and last samples against ffprobe, integers in the stream's time_base (1/90000), on
/// trackd's timeline (ffprobe's less the first PCR, TransportStreamTimesTests): each audio and video track starts at
/// ffprobe's `start_pts` and lasts to the end of its last packet (PTS + ffprobe's packet duration, presentation
/// order); a video track's duration is ffprobe's `duration_ts`, and so is an audio track's when each PES carries one
/// frame (GStreamer's mpegtsmux). ffmpeg's muxer packs several audio frames into a PES, and ffprobe's `duration_ts`
/// is then the last PES's PTS plus one frame (estimated from unparsed PES packets), short of the packets it lists:
/// trackd's is the packets' (PROTOCOL.md §7.2). The last decoded and passthrough sample of each track is ffprobe's
/// last frame/packet, PTS and duration. Files made at test time by ffmpeg (H.264 + AAC, MPEG-2 + MP2) and by
/// GStreamer (x264enc + avenc_aac, mpegtsmux).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TransportStreamDurationTests {
    static let video = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2"]
    static let audio = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"]
    static let files: [String: String] = [
        "ffmpeg-h264-aac": Media.make("tsdur-h264-aac.ts", video + audio + TimescaleTests.x264 + ["-c:a", "aac", "-ac", "2"]),
        "ffmpeg-h264": Media.make("tsdur-h264.ts", video + TimescaleTests.x264),
        "ffmpeg-mpeg2-mp2": Media.make("tsdur-mpeg2-mp2.ts", video + audio + ["-c:v", "mpeg2video", "-c:a", "mp2"]),
        "gstreamer-h264-aac": Media.makeWithGStreamer("tsdur-gst-h264-aac.ts", [
            "videotestsrc", "num-buffers=60", "!", "video/x-raw,format=I420,width=160,height=90,framerate=30/1", "!",
            "x264enc", "bframes=2", "!", "h264parse", "!", "mpegtsmux", "name=m",
            "audiotestsrc", "num-buffers=94", "samplesperbuffer=1024", "!", "audio/x-raw,rate=48000,channels=2", "!",
            "avenc_aac", "!", "aacparse", "!", "m.", "m."]),
    ]
    static let kinds = files.keys.sorted()

    /// ffprobe's view of one stream (v:0, a:0): start_pts, duration_ts, packets (decode order) and decoded frames
    /// (presentation order), integers in the time_base 1/90000.
    struct Stream {
        var startPTS: Int64
        var durationTS: Int64
        var packets: [(pts: Int64, dts: Int64, duration: Int64)]
        var frames: [(pts: Int64, samples: Int64?)]

        /// Where the last packet in presentation order ends: its PTS plus its duration.
        var packetsEnd: Int64 {
            let last = packets.max { ($0.pts, $0.duration) < ($1.pts, $1.duration) }!
            return last.pts + last.duration
        }
    }

    static func probe(_ file: String, _ stream: String) throws -> Stream {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                    "stream=time_base,start_pts,duration_ts:packet=pts,dts,duration:frame=pts,nb_samples",
                                    "-of", "json", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        let info = try #require((json["streams"] as? [[String: Any]])?.first)
        #expect(info["time_base"] as? String == "1/90000", "\(file) \(stream)")
        let int = { (o: [String: Any], k: String) -> Int64? in (o[k] as? NSNumber)?.int64Value }
        let both = json["packets_and_frames"] as? [[String: Any]] ?? []
        let packets = try both.filter { $0["type"] as? String == "packet" }.map {
            (try #require(int($0, "pts")), try #require(int($0, "dts")), try #require(int($0, "duration")))
        }
        let frames = try both.filter { $0["type"] as? String == "frame" }.map { (try #require(int($0, "pts")), int($0, "nb_samples")) }
        try #require(!packets.isEmpty && !frames.isEmpty, "ffprobe listed no packets or frames of \(file) \(stream)")
        return Stream(startPTS: try #require(int(info, "start_pts")), durationTS: try #require(int(info, "duration_ts")),
                      packets: packets, frames: frames)
    }

    /// `value` ticks of 1/90000 s on trackd's timeline for `file` (less the first PCR).
    static func timeline(_ file: String) throws -> (Int64) -> MediaTime {
        let bytes = try #require(FileManager.default.contents(atPath: file))
        let pcr = try #require(TransportStreamTimesTests.firstPCR([UInt8](bytes)))
        return { MediaTime(value: $0 - pcr, timescale: 90000) }
    }

    /// `a` and `b` are the same rational time (cross-multiplied; no float).
    static func same(_ a: MediaTime, _ b: MediaTime) -> Bool {
        a.isNumeric && b.isNumeric && Int128(a.value) * Int128(b.timescale) == Int128(b.value) * Int128(a.timescale)
    }

    /// The `kind` file's ffprobe view of its first `type` stream, trackd's timeline for it, a daemon (the caller
    /// stops it), the file opened on it and its first track of `type`.
    static func open(_ kind: String, _ type: MediaType) throws
        -> (Stream, (Int64) -> MediaTime, Daemon, Asset, AssetTrack) {
        let file = try #require(Self.files[kind])
        let (probe, time) = (try Self.probe(file, type == .video ? "v:0" : "a:0"), try Self.timeline(file))
        let daemon = try Daemon()
        do {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            return (probe, time, daemon, asset, try #require(asset.tracks(withMediaType: type).first))
        } catch {
            daemon.stop()
            throw error
        }
    }

    @Test(arguments: kinds) func videoTrackAndLastFrameAreFfprobes(kind: String) throws {
        let (probe, time, daemon, asset, track) = try Self.open(kind, .video)
        defer { daemon.stop() }
        #expect(track.timeRangeStart == time(probe.startPTS), "\(kind) start")
        #expect(track.duration == MediaTime(value: probe.durationTS, timescale: 90000), "\(kind) duration")
        #expect(probe.durationTS == probe.packetsEnd - probe.startPTS, "\(kind): ffprobe's duration is its packets'")
        // Decoded: every frame, the last one lasting its packet's duration (to the track's end).
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        let lastFrame = try #require(probe.frames.last)
        let lastPacket = try #require(probe.packets.first { $0.pts == lastFrame.pts })
        #expect(decoded.count == probe.frames.count, "\(kind) decoded frames")
        #expect(decoded.last?.presentationTimeStamp == time(lastFrame.pts), "\(kind) last decoded PTS")
        #expect(decoded.last?.duration == MediaTime(value: lastPacket.duration, timescale: 90000), "\(kind) last decoded duration")
        // Passthrough: every packet; the last one (decode order) with ffprobe's PTS, DTS and duration.
        let stored = try TimescaleTests.read(asset, track, nil)
        let last = try #require(probe.packets.last)
        #expect(stored.count == probe.packets.count, "\(kind) passthrough samples")
        #expect(stored.last?.presentationTimeStamp == time(last.pts), "\(kind) last passthrough PTS")
        #expect(stored.last?.decodeTimeStamp == time(last.dts), "\(kind) last passthrough DTS")
        #expect(stored.last?.duration == MediaTime(value: last.duration, timescale: 90000), "\(kind) last passthrough duration")
    }

    @Test(arguments: kinds.filter { $0.contains("aac") || $0.contains("mp2") }) func audioTrackAndLastPacketAreFfprobes(kind: String) throws {
        let (probe, time, daemon, asset, track) = try Self.open(kind, .audio)
        defer { daemon.stop() }
        #expect(track.timeRangeStart == time(probe.startPTS), "\(kind) start")
        #expect(track.duration == MediaTime(value: probe.packetsEnd - probe.startPTS, timescale: 90000), "\(kind) duration")
        // ffprobe's stream duration: its packets' where a PES carries one frame (mpegtsmux), the last PES's PTS plus
        // one frame where ffmpeg's muxer packed several (the documented difference).
        if kind.hasPrefix("gstreamer") {
            #expect(track.duration == MediaTime(value: probe.durationTS, timescale: 90000), "\(kind) duration_ts")
        } else {
            #expect(probe.durationTS < track.duration.value, "\(kind): ffprobe's estimate \(probe.durationTS)")
        }
        // Passthrough: every packet, the last one with ffprobe's PTS and duration.
        let stored = try TimescaleTests.read(asset, track, nil)
        let last = try #require(probe.packets.last)
        #expect(stored.count == probe.packets.count, "\(kind) passthrough samples")
        #expect(stored.last?.presentationTimeStamp == time(last.pts), "\(kind) last passthrough PTS")
        #expect(stored.last?.duration == MediaTime(value: last.duration, timescale: 90000), "\(kind) last passthrough duration")
        // Decoded (at the track's 48 kHz): every sample ffmpeg decodes; the last buffer starts at the sample nearest
        // ffprobe's last frame and ends at the track's end.
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.bitDepth: .int(16),
                                                SettingsKey.isFloat: .bool(false)]
        let decoded = try TimescaleTests.read(asset, track, settings)
        let lastFrame = try #require(probe.frames.last)
        let samples = try probe.frames.map { try #require($0.samples) }
        #expect(decoded.reduce(0) { $0 + $1.numberOfSamples } == Int(samples.reduce(0, +)), "\(kind) decoded samples")
        let decodedLast = try #require(decoded.last)
        let nearest = ((time(lastFrame.pts).value * 48000) + 45000) / 90000
        #expect(decodedLast.presentationTimeStamp == MediaTime(value: nearest, timescale: 48000), "\(kind) last decoded PTS")
        #expect(Self.same(decodedLast.duration, MediaTime(value: last.duration, timescale: 90000)), "\(kind) last decoded duration")
        #expect(decodedLast.duration == MediaTime(value: samples.last!, timescale: 48000), "\(kind) last decoded frames")
    }
}
