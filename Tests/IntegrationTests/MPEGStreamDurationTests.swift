import Foundation
import TestSupport
import Testing
import TrackClient

/// MPEG-TS and MPEG-PS track time ranges, last samples and asset durations against ffprobe, integers in the stream's
/// time_base (1/90000), on trackd's timeline (ffprobe's less the first PCR of a TS, TransportStreamTimesTests, or the
/// first pack's SCR of a PS, 0 in these files): each audio and video track starts at ffprobe's `start_pts` and lasts
/// to the end of its last packet (PTS + ffprobe's packet duration, presentation order); a video track's duration is
/// ffprobe's `duration_ts`, and so is an audio track's where ffprobe's is its packets' (one frame per PES, and ffmpeg's
/// MP2 in a PS). Where ffmpeg's TS muxer packs several audio frames into a PES, and for AC-3 in a VOB, ffprobe's
/// `duration_ts` is an estimate short of the packets it lists: trackd's is the packets' (PROTOCOL.md §7.2). The last
/// decoded and passthrough sample of each track is ffprobe's last frame/packet, PTS and duration; the asset lasts
/// until its longest track ends. Files made at test time by ffmpeg (TS: H.264 + AAC, H.264, MPEG-2 + MP2; PS:
/// MPEG-2 + MP2 with `-f mpeg`, MPEG-2 + AC-3 with `-f vob`) and by GStreamer (x264enc + avenc_aac in mpegtsmux,
/// x264enc + avenc_mp2 in mpegpsmux).
///
/// ffmpeg's PS video (MPEG-2, several pictures to a PES, a PTS only on the first) is timed as ffmpeg times it
/// (MPEGVideoTimes); ffprobe itself leaves a few packets without a PTS, its last one among them, so its
/// `duration_ts` is one frame short of the packets: trackd places each such packet one frame after its DTS, as
/// ffmpeg places every other packet of the stream, and spans them all (PROTOCOL.md §7.2).
///
/// Every decoded frame is ffmpeg's (`-f framemd5`), from the first: in GStreamer's PS, mpegpsdemux starts its
/// segment at 0.384 s (the first PTS its scan finds), which cost the decoded video its first 11 frames and the MP2
/// track (stored and decoded) its first 5 before trackd widened it (StartSegment).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MPEGStreamDurationTests {
    static let video = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2"]
    static let audio = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"]
    static let gstVideo = ["videotestsrc", "num-buffers=60", "!", "video/x-raw,format=I420,width=160,height=90,framerate=30/1", "!",
                           "x264enc", "bframes=2", "!", "h264parse", "!"]
    static let gstAudio = ["audiotestsrc", "num-buffers=94", "samplesperbuffer=1024", "!", "audio/x-raw,rate=48000,channels=2", "!"]
    static let files: [String: String] = [
        "ts-ffmpeg-h264-aac": Media.make("tsdur-h264-aac.ts", video + audio + TimescaleTests.x264 + ["-c:a", "aac", "-ac", "2"]),
        "ts-ffmpeg-h264": Media.make("tsdur-h264.ts", video + TimescaleTests.x264),
        "ts-ffmpeg-mpeg2-mp2": Media.make("tsdur-mpeg2-mp2.ts", video + audio + ["-c:v", "mpeg2video", "-c:a", "mp2"]),
        "ts-gstreamer-h264-aac": Media.makeWithGStreamer("tsdur-gst-h264-aac.ts", gstVideo + ["mpegtsmux", "name=m"]
            + gstAudio + ["avenc_aac", "!", "aacparse", "!", "m.", "m."]),
        "ps-ffmpeg-mpeg2-mp2": Media.make("psdur-mpeg2-mp2.mpg", video + audio + ["-c:v", "mpeg2video", "-c:a", "mp2", "-f", "mpeg"]),
        "ps-ffmpeg-mpeg2-ac3": Media.make("psdur-mpeg2-ac3.vob", video + audio + ["-c:v", "mpeg2video", "-c:a", "ac3", "-f", "vob"]),
        "ps-gstreamer-h264-mp2": Media.makeWithGStreamer("psdur-gst-h264-mp2.mpg", gstVideo + ["mpegpsmux", "name=m"]
            + gstAudio + ["avenc_mp2", "!", "mpegaudioparse", "!", "m.", "m."]),
    ]
    static let kinds = files.keys.sorted()
    /// The files with audio.
    static let audioKinds = kinds.filter { !$0.hasSuffix("h264") }

    /// ffprobe's view of one stream (v:0, a:0): start_pts, duration_ts, packets (decode order) and decoded frames
    /// (presentation order), integers in the time_base 1/90000; a PTS ffprobe does not state is nil.
    struct Stream {
        var startPTS: Int64
        var durationTS: Int64
        var packets: [(pts: Int64?, dts: Int64, duration: Int64)]
        var frames: [(pts: Int64?, samples: Int64?)]

        /// Each packet's presentation time: ffprobe's, else its DTS plus its duration — where ffmpeg puts every
        /// other packet of these streams, which have no B-pictures (its MPEG-2: PTS one frame after DTS).
        var placed: [Int64] { packets.map { $0.pts ?? $0.dts + $0.duration } }

        /// Where the last packet in presentation order ends: its (placed) PTS plus its duration.
        var packetsEnd: Int64 { zip(placed, packets).map { $0 + $1.duration }.max()! }

        /// The same over the packets ffprobe states a PTS for: where its `duration_ts` ends.
        var timedPacketsEnd: Int64 { packets.compactMap { p in p.pts.map { $0 + p.duration } }.max()! }
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
            (int($0, "pts"), try #require(int($0, "dts")), try #require(int($0, "duration")))
        }
        let frames = both.filter { $0["type"] as? String == "frame" }.map { (int($0, "pts"), int($0, "nb_samples")) }
        try #require(!packets.isEmpty && !frames.isEmpty, "ffprobe listed no packets or frames of \(file) \(stream)")
        return Stream(startPTS: try #require(int(info, "start_pts")), durationTS: try #require(int(info, "duration_ts")),
                      packets: packets, frames: frames)
    }

    /// Where the demuxer starts `file`'s timeline, in 1/90000 s: a TS's first PCR, a PS's first SCR.
    static func origin(_ file: String) throws -> Int64 {
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: file)))
        return try #require(file.hasSuffix(".ts") ? TransportStreamTimesTests.firstPCR(bytes) : ProgramStream.firstSCR(bytes), "\(file)")
    }

    /// `value` ticks of 1/90000 s on trackd's timeline for `file`.
    static func timeline(_ file: String) throws -> (Int64) -> MediaTime {
        let origin = try Self.origin(file)
        return { MediaTime(value: $0 - origin, timescale: 90000) }
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
        let file = try #require(Self.files[kind])
        #expect(track.naturalTimeScale == 90000, "\(kind) timescale")
        #expect(track.timeRangeStart == time(probe.startPTS), "\(kind) start")
        #expect(track.duration == MediaTime(value: probe.packetsEnd - probe.startPTS, timescale: 90000), "\(kind) duration")
        // ffprobe's duration is its timed packets': all of them but in ffmpeg's PS, where it leaves a few packets
        // without a PTS, the last one among them (one frame short of trackd's).
        #expect(probe.durationTS == probe.timedPacketsEnd - probe.startPTS, "\(kind): ffprobe's duration is its packets'")
        #expect(probe.packets.contains { $0.pts == nil } == kind.hasPrefix("ps-ffmpeg"), "\(kind): packets ffprobe leaves untimed")
        #expect(probe.packets.last?.pts == nil || !kind.hasPrefix("ps-ffmpeg"), "\(kind): ffprobe's last packet")
        // Decoded: every frame, ffmpeg's bytes, each at its packet's PTS (presentation order), the last one lasting
        // its packet's duration (to the track's end).
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        let lastPacket = try #require(zip(probe.placed, probe.packets).max { $0.0 < $1.0 }?.1)
        #expect(decoded.count == probe.frames.count, "\(kind) decoded frames")
        let md5 = try Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
        #expect(decoded.map { md5Hex($0.packedBytes()) } == md5, "\(kind) bytes")
        #expect(decoded.map(\.presentationTimeStamp) == probe.placed.sorted().map(time), "\(kind) decoded PTS")
        // ReadFrames: frames by index, out of order, from the frame index those times make.
        let indices = [md5.count - 1, 0, md5.count / 2]
        let frames = try asset.frames(atIndices: indices.map(UInt64.init), track: track, outputSettings: TimescaleTests.y420)
        #expect(frames.map { md5Hex($0.sample.packedBytes()) } == indices.map { md5[$0] }, "\(kind) ReadFrames")
        #expect(decoded.last?.duration == MediaTime(value: lastPacket.duration, timescale: 90000), "\(kind) last decoded duration")
        // Passthrough: every packet at its PTS; the last one (decode order) with ffprobe's DTS and duration.
        let stored = try TimescaleTests.read(asset, track, nil)
        let last = try #require(probe.packets.last)
        #expect(stored.count == probe.packets.count, "\(kind) passthrough samples")
        #expect(stored.map(\.presentationTimeStamp) == probe.placed.map(time), "\(kind) passthrough PTS")
        #expect(stored.last?.decodeTimeStamp == time(last.dts), "\(kind) last passthrough DTS")
        #expect(stored.last?.duration == MediaTime(value: last.duration, timescale: 90000), "\(kind) last passthrough duration")
    }

    @Test(arguments: audioKinds) func audioTrackAndLastPacketAreFfprobes(kind: String) throws {
        let (probe, time, daemon, asset, track) = try Self.open(kind, .audio)
        defer { daemon.stop() }
        #expect(track.naturalTimeScale == 90000, "\(kind) timescale")
        #expect(track.timeRangeStart == time(probe.startPTS), "\(kind) start")
        #expect(track.duration == MediaTime(value: probe.packetsEnd - probe.startPTS, timescale: 90000), "\(kind) duration")
        // ffprobe's stream duration: its packets' where a PES carries one frame (GStreamer's muxer) and for ffmpeg's
        // MP2 in a PS; an estimate short of them where ffmpeg's TS muxer packed several frames into a PES (the last
        // PES's PTS plus one frame) and for AC-3 in a VOB (the documented difference).
        if kind.contains("gstreamer") || kind == "ps-ffmpeg-mpeg2-mp2" {
            #expect(track.duration == MediaTime(value: probe.durationTS, timescale: 90000), "\(kind) duration_ts")
        } else {
            #expect(probe.durationTS < track.duration.value, "\(kind): ffprobe's estimate \(probe.durationTS)")
        }
        // Passthrough: every packet, the last one with ffprobe's PTS and duration.
        let stored = try TimescaleTests.read(asset, track, nil)
        let last = try #require(probe.packets.last)
        #expect(stored.count == probe.packets.count, "\(kind) passthrough samples")
        #expect(stored.last?.presentationTimeStamp == time(try #require(last.pts)), "\(kind) last passthrough PTS")
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
        let nearest = ((time(try #require(lastFrame.pts)).value * 48000) + 45000) / 90000
        #expect(decodedLast.presentationTimeStamp == MediaTime(value: nearest, timescale: 48000), "\(kind) last decoded PTS")
        #expect(Self.same(decodedLast.duration, MediaTime(value: last.duration, timescale: 90000)), "\(kind) last decoded duration")
        #expect(decodedLast.duration == MediaTime(value: samples.last!, timescale: 48000), "\(kind) last decoded frames")
    }

    /// The asset's duration (AssetOpened, nanoseconds) is where its longest track ends, AVAsset's rule: the latest
    /// `timeRangeStart + duration` of its tracks, here the latest end of ffprobe's packets of any stream on trackd's
    /// timeline — not the demuxer's estimate.
    @Test(arguments: kinds) func assetLastsUntilItsLongestTrackEnds(kind: String) throws {
        let file = try #require(Self.files[kind])
        let time = try Self.timeline(file)
        let exact = kind.hasSuffix("h264") ? ["v:0"] : ["v:0", "a:0"]
        let latest = try exact.map { try Self.probe(file, $0).packetsEnd }.max()!
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(asset.tracks.count == (kind.hasSuffix("h264") ? 1 : 2), "\(kind) tracks")
        #expect(asset.tracks.allSatisfy { $0.timeRangeStart.timescale == 90000 && $0.duration.timescale == 90000 }, "\(kind)")
        let end = try #require(asset.tracks.map { $0.timeRangeStart.value + $0.duration.value }.max())
        #expect(MediaTime(value: end, timescale: 90000) == time(latest), "\(kind) latest end")
        // The end tick in GStreamer's nanoseconds: ⌊ticks × 10⁹ / 90000⌋ (PROTOCOL.md §7.1).
        #expect(asset.duration == MediaTime(value: end * 1_000_000_000 / 90000, timescale: 1_000_000_000), "\(kind) asset duration")
    }
}
