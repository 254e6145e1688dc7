import Foundation
import TestSupport
import Testing
import TrackClient

/// Times in the track's own timescale (PROTOCOL.md §7.1), compared with ffprobe as integers in the stream's
/// time_base: every decoded and passthrough Sample's PTS/DTS (and durations where ffprobe's is the frame interval),
/// the track's timescale, start and duration; and requested times resolved on the same grid — ReadFrames and
/// CreateOutput at frame k's exact time give frame k. Files muxed by ffmpeg at test time.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TimescaleTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=1"]
    static let x264 = ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p"]
    /// 24 frames: 12 at 1/30 s, then 12 about 0.1 s apart (and one of 0.533 s).
    static let vfr = ["-vf", "setpts='if(lt(N,12),N/30,if(eq(N,12),12/30+0.533,12/30+0.533+(N-12)*0.1))/TB'",
                      "-frames:v", "24", "-fps_mode", "vfr"]

    static let files: [String: String] = [
        "mp4": Media.make("ts-x264.mp4", source + x264),
        "mov": Media.make("ts-x264.mov", source + x264),
        "mkv": Media.make("ts-x264.mkv", source + x264),
        "webm-vp8": Media.make("ts-vp8.webm", source + ["-c:v", "libvpx", "-b:v", "300k"]),
        "webm-vp9": Media.make("ts-vp9.webm", source + ["-c:v", "libvpx-vp9", "-b:v", "0", "-crf", "40", "-g", "12"]),
        "avi": Media.make("ts-mpeg4.avi", source + ["-c:v", "mpeg4", "-g", "12"]),
        "vfr-mp4": Media.make("ts-vfr.mp4", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=3"] + vfr + x264),
        "vfr-mkv": Media.make("ts-vfr.mkv", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=3"] + vfr + x264),
        // Matroska whose first timestamp is not 0: its times are the container's (MatroskaClock).
        "mkv-offset": Media.make("ts-offset.mkv", source + x264 + ["-output_ts_offset", "0.5"]),
        "mkv-remux": Media.make("ts-remux.mkv", ["-i", Media.clip, "-c", "copy"]),  // video from 21 ms, AAC priming at 0
        "mkv-gst": Media.makeWithGStreamer("ts-offset-gst.mkv", [
            "videotestsrc", "num-buffers=30", "timestamp-offset=500000000", "!",
            "video/x-raw,width=160,height=90,framerate=30/1", "!", "x264enc", "bframes=2", "!", "h264parse", "!", "matroskamux"]),
    ]
    static let kinds = files.keys.sorted()
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    /// ffprobe's view of the first video stream, integers in its time_base (num/den).
    struct Probe {
        var timeBase: (num: Int64, den: Int64)
        var startPTS: Int64?
        var durationTS: Int64?
        /// Stored packets in decode order: pts, dts (nil: N/A), duration.
        var packets: [(pts: Int64?, dts: Int64?, duration: Int64?)]
        /// Decoded frames in presentation order.
        var frames: [Int64]

        /// A time in the stream's time_base as (value, timescale): ffprobe's n × num/den s.
        func time(_ n: Int64) -> MediaTime { MediaTime(value: n * timeBase.num, timescale: Int32(timeBase.den)) }
    }

    static func probe(_ file: String) throws -> Probe {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                    "stream=time_base,start_pts,duration_ts:packet=pts,dts,duration:frame=pts",
                                    "-of", "json", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        let base = try #require((stream["time_base"] as? String)?.split(separator: "/").compactMap { Int64($0) })
        let int = { (o: [String: Any], k: String) -> Int64? in (o[k] as? NSNumber)?.int64Value }
        // Packets and frames both asked for come interleaved, in one list, each with its "type".
        let both = json["packets_and_frames"] as? [[String: Any]] ?? []
        let packets = both.filter { $0["type"] as? String == "packet" }.map { (int($0, "pts"), int($0, "dts"), int($0, "duration")) }
        let frames = both.filter { $0["type"] as? String == "frame" }.compactMap { int($0, "pts") }
        #expect(!packets.isEmpty && !frames.isEmpty, "ffprobe listed no packets or frames of \(file)")
        return Probe(timeBase: (base[0], base[1]), startPTS: int(stream, "start_pts"), durationTS: int(stream, "duration_ts"),
                     packets: packets, frames: frames)
    }

    /// The `kind` file's ffprobe view, a daemon (the caller stops it), the file opened on it and its video track.
    static func open(_ kind: String) throws -> (Probe, Daemon, Asset, AssetTrack) {
        let file = try #require(Self.files[kind])
        let probe = try Self.probe(file)
        let daemon = try Daemon()
        do {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            return (probe, daemon, asset, try #require(asset.tracks(withMediaType: .video).first))
        } catch {
            daemon.stop()
            throw error
        }
    }

    /// Every sample of `track` (decoded with `settings`, or passthrough for nil) over `range`.
    static func read(_ asset: Asset, _ track: AssetTrack, _ settings: [String: SettingValue]?,
                     range: MediaTimeRange = .everything) throws -> [SampleBuffer] {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(range)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        var samples: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { samples.append(s) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return samples
    }

    /// The track's timescale and range: naturalTimeScale is ffprobe's time_base, start and duration are its
    /// start_pts and duration_ts (where ffprobe states them), and every frame's PTS is ffprobe's as an integer.
    @Test(arguments: kinds) func decodedTimesAreTheContainers(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        #expect(Int64(track.naturalTimeScale) == probe.timeBase.den, "\(kind): \(track.naturalTimeScale) vs \(probe.timeBase)")
        if let start = probe.startPTS { #expect(track.timeRangeStart == probe.time(start), "\(kind) start") }
        // ffprobe's stream duration of an MP4 with an edit list is not the track's when the frame rate varies (1.9 s
        // for a track whose edit lasts 2.034 s): compared where the frame rate is constant.
        if let duration = probe.durationTS, !kind.hasPrefix("vfr") {
            #expect(track.duration == probe.time(duration), "\(kind) duration")
        }
        #expect(track.minFrameDuration.isNumeric && track.minFrameDuration.timescale == track.naturalTimeScale, "\(kind)")
        let samples = try Self.read(asset, track, Self.y420)
        #expect(samples.map(\.presentationTimeStamp) == probe.frames.map(probe.time), "\(kind) decoded PTS")
        for s in samples where s.decodeTimeStamp.isValid {
            #expect(s.decodeTimeStamp.timescale == track.naturalTimeScale, "\(kind) decoded DTS \(s.decodeTimeStamp)")
        }
        // Durations: the interval to the next frame, where the stream is CFR and the container's frame duration is
        // that interval (Matroska's 33 ms blocks at 0, 33, 67 ms are not; decoded durations as display intervals, and
        // the VFR ones, are the frame-selection rule's of #13).
        if !kind.hasPrefix("vfr") && !kind.contains("mkv") && !kind.contains("webm") {
            for (s, (pts, next)) in zip(samples, zip(probe.frames, probe.frames.dropFirst())) {
                #expect(s.duration == probe.time(next - pts), "\(kind) decoded duration at \(pts)")
            }
        }
    }

    /// Decoded durations are display intervals (#13's frame-selection rule, PROTOCOL.md §7.1): each frame's duration
    /// is the next frame's PTS − its own, ffprobe's integers in the time_base (`-show_frames`), and the last one's
    /// lasts until the track's end — also where the frame rate varies (a VFR MP4 with B-frames, whose frames last
    /// 1/30, 0.533 and 0.1 s; the same stream in Matroska, whose block durations are nominal) and where Matroska's
    /// block durations (33 ms at 0, 33, 67 ms) overlap the next frame.
    @Test(arguments: ["vfr-mp4", "vfr-mkv", "mp4", "mkv", "webm-vp9", "mkv-offset", "mkv-remux", "mkv-gst"])
    func decodedDurationsAreDisplayIntervals(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let samples = try Self.read(asset, track, Self.y420)
        try #require(samples.count == probe.frames.count, "\(kind): \(samples.count) frames, ffprobe \(probe.frames.count)")
        try #require(track.duration.timescale == track.naturalTimeScale && track.timeRangeStart.timescale == track.naturalTimeScale)
        let trackEnd = track.timeRangeStart.value + track.duration.value  // in ticks of the time_base (1/den)
        let ends = probe.frames.dropFirst().map { $0 * probe.timeBase.num } + [trackEnd]
        for (s, (pts, end)) in zip(samples, zip(probe.frames, ends)) {
            let expected = MediaTime(value: end - pts * probe.timeBase.num, timescale: Int32(probe.timeBase.den))
            #expect(s.duration == expected, "\(kind) decoded duration of the frame at \(pts)")
        }
        if kind.hasPrefix("vfr") {  // the file is what it is meant to be: a frame of 0.533 s among ones of 1/30 s
            #expect(samples.contains { abs($0.duration.seconds - 0.533) < 0.002 }, "\(kind): \(samples.map(\.duration))")
        }
    }

    /// A Matroska track ends at its last packet's end (PROTOCOL.md §7.2, §8), also where its first timestamp is not 0
    /// (Info/Duration is the segment's, from 0): `timeRangeStart + duration` is the last frame's pts + duration
    /// (ffprobe's `-show_frames`, the latest in presentation order) and the audio track's the last packet's
    /// (`-show_packets`), integers in the stream's time_base; the video's nominalFrameRate is its frames per that span.
    @Test(arguments: ["mkv-offset", "mkv-remux", "mkv-gst"]) func matroskaTracksEndAtTheirLastPacket(kind: String) throws {
        let file = try #require(Self.files[kind])
        /// The stream's time_base denominator (its numerator is 1 in Matroska), and the entries' (pts, duration).
        func probe(_ stream: String, _ entry: String, _ duration: String) throws -> (den: Int64, times: [(Int64, Int64)]) {
            let r = try run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                        "stream=time_base:\(entry)=pts,\(duration)", "-of", "json", file])
            #expect(r.status == 0, "ffprobe: \(r.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
            let base = try #require(((json["streams"] as? [[String: Any]])?.first?["time_base"] as? String)?.split(separator: "/"))
            try #require(base.first == "1", "\(kind) \(stream): time_base \(base)")
            let list = json[entry == "frame" ? "frames" : "packets"] as? [[String: Any]] ?? []
            let int = { (o: [String: Any], k: String) -> Int64? in (o[k] as? NSNumber)?.int64Value }
            return (try #require(Int64(base[1])), list.compactMap { o in int(o, "pts").map { ($0, int(o, duration) ?? 0) } })
        }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        var checked = [(MediaType, String)]([(.video, "v:0")])
        if kind == "mkv-remux" { checked.append((.audio, "a:0")) }
        for (type, stream) in checked {
            let track = try #require(asset.tracks(withMediaType: type).first, "\(kind): no \(type) track")
            let (den, times) = type == .video ? try probe(stream, "frame", "pkt_duration") : try probe(stream, "packet", "duration")
            let last = try #require(times.max { $0.0 < $1.0 }, "\(kind) \(stream): ffprobe listed none")
            try #require(track.timeRangeStart.timescale == Int32(den) && track.duration.timescale == Int32(den),
                         "\(kind) \(stream): \(track.timeRangeStart), \(track.duration) vs 1/\(den)")
            #expect(track.timeRangeStart.value + track.duration.value == last.0 + last.1,
                    "\(kind) \(stream): \(track.timeRangeStart) + \(track.duration) vs ffprobe's last \(last) in 1/\(den)")
            if type == .video {
                let rate = Double(times.count) * Double(den) / Double(track.duration.value)
                #expect(abs(Double(track.nominalFrameRate) - rate) < 1e-3, "\(kind): \(track.nominalFrameRate) fps, \(times.count) frames")
            }
        }
        if kind == "mkv-offset" {  // the file is what it is meant to be: its first frame at 0.5 s
            #expect(asset.tracks(withMediaType: .video).first?.timeRangeStart == MediaTime(value: 500, timescale: 1000))
        }
    }

    /// Passthrough: every stored sample's PTS, DTS (where the container stores one) and duration equal ffprobe's
    /// packets', as integers in the time_base.
    @Test(arguments: kinds) func passthroughTimesAreTheContainers(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let samples = try Self.read(asset, track, nil)
        try #require(samples.count == probe.packets.count, "\(kind): \(samples.count) samples, ffprobe \(probe.packets.count)")
        let storesDTS = !kind.contains("mkv") && !kind.contains("webm")  // Matroska stores no DTS (ffmpeg guesses it)
        for (i, (s, p)) in zip(samples, probe.packets).enumerated() {
            // avidemux 1.22 gives a passthrough mpeg4 sample no PTS except on key frames (the passthrough rule's, in
            // #13): its DTS is checked, which AVI stores and which is the PTS there.
            if kind != "avi" || s.presentationTimeStamp.isValid {
                #expect(s.presentationTimeStamp == p.pts.map(probe.time), "\(kind) packet \(i) pts")
            }
            if storesDTS, let dts = p.dts { #expect(s.decodeTimeStamp == probe.time(dts), "\(kind) packet \(i) dts") }
            // The stored duration: the stts delta (the next DTS − this one; ffprobe 5.1 prints 512 for every packet of
            // the VFR MP4, whose stts has 8192 and 1536) where DTS is stored, else Matroska's block duration.
            let next = i + 1 < probe.packets.count ? probe.packets[i + 1].dts : nil
            if storesDTS, let dts = p.dts, let next {
                #expect(s.duration == probe.time(next - dts), "\(kind) packet \(i) duration")
            } else if let duration = p.duration, duration > 0 {
                #expect(s.duration == probe.time(duration), "\(kind) packet \(i) duration")
            }
        }
    }

    /// ReadFrames at each frame's exact ffprobe time (value/den in the time_base) returns that frame, and so do the
    /// same time in seconds (a Double, rounded by TrackClient to the track's grid) and ffprobe's pts_time to the
    /// microsecond (0.033333: frame 1's tick written in microseconds, §7.1). AVI (MPEG-4 without B-pictures) is indexed
    /// at its decode times, the only ones it stores (PROTOCOL.md §7.2).
    @Test(arguments: kinds) func readFramesAtEachFramesTime(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let times = probe.frames.map(probe.time)
        let exact = try asset.frames(at: times, track: track, outputSettings: Self.y420)
        #expect(exact.map(\.index) == Array(0..<UInt64(times.count)), "\(kind)")
        #expect(exact.map(\.sample.presentationTimeStamp) == times, "\(kind)")
        let seconds = try asset.frames(at: times.map { track.time(seconds: $0.seconds) }, track: track, outputSettings: Self.y420)
        #expect(seconds.map(\.index) == Array(0..<UInt64(times.count)), "\(kind) seconds")
        let micro = times.map { MediaTime(value: Int64(($0.seconds * 1e6).rounded()), timescale: 1_000_000) }
        let printed = try asset.frames(at: micro, track: track, outputSettings: Self.y420)
        #expect(printed.map(\.index) == Array(0..<UInt64(times.count)), "\(kind) microseconds")
    }

    /// CreateOutput ranges on frame boundaries: a range ending at frame k's exact time ends with frame k − 1 (k of
    /// the form 3n + 2, where 30 fps times in nanoseconds round up and named frame k too); one starting at frame k's
    /// time starts at frame k (2/30 s: frame 2, where frame 1 came first before), and GenerateImage at that time shows
    /// frame k. Starts are checked on MP4, MOV and AVI from frame 2: Matroska's 33 ms block durations overlap the
    /// next frame, and a range starting at frame 1 of an H.264 MP4 delivers nothing — both the frame-selection
    /// rule's (#13, its own helper).
    @Test(arguments: kinds) func rangesOnFrameBoundaries(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let times = probe.frames.map(probe.time)
        for k in [1, 2, 5, 8, 11] where k < times.count {
            let samples = try Self.read(asset, track, Self.y420, range: MediaTimeRange(start: .zero, duration: times[k]))
            #expect(samples.map(\.presentationTimeStamp) == Array(times[..<k]), "\(kind) range ending at frame \(k)")
        }
        for k in [0, 1, 2, 3, 5, times.count / 2] where k + 1 < times.count {
            let range = MediaTimeRange(start: times[k], duration: MediaTime(value: 1, timescale: track.naturalTimeScale))
            let samples = try Self.read(asset, track, Self.y420, range: range)
            #expect(samples.map(\.presentationTimeStamp) == [times[k]], "\(kind) range at frame \(k)")
            let image = try asset.generateImage(track: track, at: times[k])
            #expect(image.actualTime == times[k], "\(kind) image at frame \(k)")
        }
    }

    /// A requested time between two frames' times names the frame shown then — the earlier one — on every grid, the
    /// coarse one of an AVI (1/30: one tick a frame) too, where rounding to the nearest tick named the next frame
    /// (PROTOCOL.md §7.1): at 0.6 of the way from frame k to k + 1 (in nanoseconds, and 0.52 s from a Double, as the
    /// Python client sends it) ReadFrames gives frame k (ffmpeg's framemd5 of it), GenerateImage frame k's time, and
    /// a range from there to 0.6 past frame k + 2 frames k … k + 2 (its start inclusive, its end exclusive); a range
    /// from frame k's exact time to frame k + 2's starts with frame k and ends before k + 2.
    @Test(arguments: ["avi", "mp4", "mov"]) func timesBetweenFramesNameTheFrameShown(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let md5s = try Oracle.frameMD5(try #require(Self.files[kind]), pixFmt: "yuv420p").map(\.md5)
        let times = probe.frames.map(probe.time)
        try #require(md5s.count == times.count && times.count == 30, "\(kind): \(md5s.count) md5s, \(times.count) frames")
        /// 0.6 of the way from frame k's time to k + 1's, in nanoseconds (rounded down).
        let between = { (k: Int) -> MediaTime in
            let (a, b) = (Int128(probe.frames[k]), Int128(probe.frames[k + 1]))
            let units = (4 * a + 6 * b) * Int128(probe.timeBase.num) * 1_000_000_000 / (10 * Int128(probe.timeBase.den))
            return .nanoseconds(Int64(units))
        }
        let ks = [0, 2, 14, 15, 26]
        let requested = ks.map(between) + [MediaTime(seconds: 0.52)]
        let expected = ks + [15]  // 0.52 s: frame 15 is shown from 0.5 s, frame 16 from 0.5333 s
        let frames = try asset.frames(at: requested, track: track, outputSettings: Self.y420)
        #expect(frames.map(\.index) == expected.map(UInt64.init), "\(kind) ReadFrames at \(requested)")
        #expect(frames.map { md5Hex($0.sample.packedBytes()) } == expected.map { md5s[$0] }, "\(kind) ReadFrames pixels")
        #expect(frames.map(\.sample.presentationTimeStamp) == expected.map { times[$0] }, "\(kind) ReadFrames times")
        for (t, k) in zip(requested, expected) {
            let image = try asset.generateImage(track: track, at: t)
            #expect(image.actualTime == times[k], "\(kind) image at \(t): \(image.actualTime)")
        }
        for k in [2, 14, 25] {
            let start = between(k), end = between(k + 2)
            let mid = try Self.read(asset, track, Self.y420, range: MediaTimeRange(start: start, duration: .nanoseconds(end.value - start.value)))
            #expect(mid.map { md5Hex($0.packedBytes()) } == Array(md5s[k...k + 2]), "\(kind) range from \(start) to \(end)")
            #expect(mid.map(\.presentationTimeStamp) == Array(times[k...k + 2]), "\(kind) range from \(start) to \(end)")
            let onFrames = MediaTimeRange(start: times[k], duration: MediaTime(value: (probe.frames[k + 2] - probe.frames[k]) * probe.timeBase.num,
                                                                                timescale: Int32(probe.timeBase.den)))
            let exact = try Self.read(asset, track, Self.y420, range: onFrames)
            #expect(exact.map(\.presentationTimeStamp) == Array(times[k..<k + 2]), "\(kind) range \(onFrames)")
        }
    }

    /// A time range lying wholly before the track's first frame delivers nothing (AVAssetReader's rule: nothing is
    /// displayed before it), decoded and passthrough: Matroska whose first frame is at 0.5 s, and MPEG-TS (whose
    /// first frame is later than 0 on the track's timeline). A range ending one tick after the first frame's time
    /// delivers that frame.
    @Test(arguments: ["mkv-offset", "mkv-gst", "ts"]) func aRangeBeforeTheFirstFrameIsEmpty(kind: String) throws {
        let file = try #require(kind == "ts" ? Media.make("ts-clip.ts", ["-i", Media.clip, "-c", "copy"]) : Self.files[kind])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let first = try #require(Self.read(asset, track, Self.y420).first?.presentationTimeStamp)
        try #require(first.value > 0, "\(kind): the first frame is at \(first)")
        for settings in [Self.y420, nil] {
            let before = try Self.read(asset, track, settings, range: MediaTimeRange(start: .zero, duration: first))
            #expect(before.isEmpty, "\(kind) \(settings == nil ? "passthrough" : "decoded"): \(before.map(\.presentationTimeStamp))")
            let tick = MediaTime(value: first.value + 1, timescale: first.timescale)
            let through = try Self.read(asset, track, settings, range: MediaTimeRange(start: .zero, duration: tick))
            #expect(through.map(\.presentationTimeStamp).contains(first), "\(kind) \(settings == nil ? "passthrough" : "decoded")")
        }
    }

    /// trackctl takes rational times exactly (`N/D`), prints each sample's exact time in --json, and a track's
    /// timescale (ffprobe's time_base) and minimum frame duration in `tracks`.
    @Test func trackctlTakesRationalTimes() throws {
        let file = try #require(Self.files["mp4"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        func samples(_ args: [String]) throws -> [[String: Any]] {
            let r = try daemon.trackctl(args + ["--json"])
            #expect(r.status == 0, "\(args): \(r.stderr)")
            return try r.text.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }
        let frames = try samples(["frames", file, "--at", "1/30,2/30,512/15360,0.1"])
        #expect(frames.map { $0["index"] as? Int } == [1, 2, 1, 3])
        #expect(frames.map { $0["ptsValue"] as? Int } == [512, 1024, 512, 1536])
        #expect(frames.allSatisfy { $0["timescale"] as? Int == 15360 })
        let range = try samples(["read", file, "--start", "2/30", "--duration", "1/30"])
        #expect(range.map { $0["ptsValue"] as? Int } == [1024])
        let ranges = try samples(["read", file, "--ranges", "1001/30030-1/10,5/30-"])
        #expect(ranges.prefix(3).map { $0["ptsValue"] as? Int } == [512, 1024, 2560])
        let tracks = try daemon.trackctl(["tracks", file, "--json"])
        let described = try #require(try JSONSerialization.jsonObject(with: tracks.stdout) as? [[String: Any]])
        #expect(described.first?["timescale"] as? Int == 15360 && described.first?["minFrameDuration"] as? String == "512/15360")
        #expect(try daemon.trackctl(["tracks", file]).text.contains("time base 1/15360"))
        let bad = try daemon.trackctl(["frames", file, "--at", "1/0"])
        #expect(bad.status == 2 && bad.stderr.contains("--at takes seconds ≥ 0 or N/D, not 1/0"), "\(bad.stderr)")
    }

    /// reset(forReadingTimeRanges:) takes its ranges on the same grid: ranges of one tick at frames 5 and 8's exact
    /// times deliver exactly those frames.
    @Test(arguments: ["mp4", "mov", "avi"]) func resetRangesOnTheGrid(kind: String) throws {
        let (probe, daemon, asset, track) = try Self.open(kind)
        defer { daemon.stop() }
        let times = probe.frames.map(probe.time)
        let tick = MediaTime(value: 1, timescale: track.naturalTimeScale)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.y420)
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(MediaTimeRange(start: times[2], duration: tick))
        #expect(try reader.startReading())
        var first: [MediaTime] = []
        while let s = try output.copyNextSampleBuffer() { first.append(s.presentationTimeStamp) }
        #expect(first == [times[2]], "\(kind)")
        try output.reset(forReadingTimeRanges: [MediaTimeRange(start: times[5], duration: tick),
                                                MediaTimeRange(start: times[8], duration: tick)])
        var got: [MediaTime] = []
        while let s = try output.copyNextSampleBuffer() { got.append(s.presentationTimeStamp) }
        #expect(got == [times[5], times[8]], "\(kind)")
        output.markConfigurationAsFinal()
    }

    /// Audio: passthrough samples in the track's timescale (the mdhd's, ffprobe's time_base; every PTS one of
    /// ffprobe's packet pts), decoded ones in the output's sample rate, contiguous.
    @Test func audioTimesAreOnTheirGrids() throws {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=time_base:packet=pts",
                                    "-of", "csv=p=0", Media.clip])
        let lines = r.text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces.union(.init(charactersIn: ","))) }
        let base = try #require(lines.first { $0.contains("/") }?.split(separator: "/").compactMap { Int32($0) })
        let packetPTS = Set(lines.filter { !$0.contains("/") }.compactMap { Int64($0) })
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(track.naturalTimeScale == base[1] && base[0] == 1)
        let stored = try Self.read(asset, track, nil)
        #expect(!stored.isEmpty && stored.allSatisfy { $0.presentationTimeStamp.timescale == base[1] })
        #expect(stored.allSatisfy { packetPTS.contains($0.presentationTimeStamp.value) },
                "\(stored.prefix(4).map(\.presentationTimeStamp)) vs ffprobe's \(packetPTS.sorted().prefix(4))")
        let pcm: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.sampleRate: .int(22050)]
        let decoded = try Self.read(asset, track, pcm)
        #expect(decoded.allSatisfy { $0.presentationTimeStamp.timescale == 22050 && $0.duration.timescale == 22050 })
        for (a, b) in zip(decoded, decoded.dropFirst()) {
            #expect(a.presentationTimeStamp.value + a.duration.value == b.presentationTimeStamp.value, "gap at \(a.presentationTimeStamp)")
        }
    }
}
