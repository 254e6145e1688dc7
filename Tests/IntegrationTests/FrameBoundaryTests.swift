import Foundation
import TestSupport
import Testing
import TrackClient

/// One rule for the frame displayed at t (issue #13): a frame is displayed from its PTS until the next frame's, and a
/// range [s, e) delivers every frame displayed at some time in it. Decoded ranges (CreateOutput), resets
/// (ResetOutput), ReadFrames and GenerateImage must agree on every frame-boundary case, on files ffmpeg made (MP4
/// with B-frames, Matroska and WebM, whose block durations overlap the next frame's PTS), checked against ffprobe's
/// integer pts in the stream's time_base and ffmpeg's decode of each frame. Requests are exact rationals in that
/// time_base.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FrameBoundaryTests {
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .string("y420")]

    static let sources: [String: [String]] = [
        "mp4": ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "10", "-pix_fmt", "yuv420p"],
        "mkv": ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "10", "-pix_fmt", "yuv420p"],
        "webm": ["-c:v", "libvpx", "-b:v", "300k", "-g", "10", "-deadline", "realtime", "-cpu-used", "8"],
    ]

    /// 160x120, 30 fps, 40 frames, GOP 10.
    static func media(_ ext: String) -> String {
        Media.make("boundaries.\(ext)", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-frames:v", "40"]
                   + sources[ext]!)
    }

    /// The stream's time_base and every frame's integer pts (presentation order), from ffprobe; ffmpeg's md5 of
    /// each frame as yuv420p.
    struct Oracle {
        let num: Int64, den: Int64
        let pts: [Int64]
        let md5: [String]

        init(_ file: String) throws {
            let base = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base",
                                           "-of", "csv=p=0", file])
            let parts = base.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").compactMap { Int64($0) }
            try #require(parts.count == 2, "time_base: \(base.text)")
            (num, den) = (parts[0], parts[1])
            let frames = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts",
                                             "-of", "csv=p=0", file])
            pts = frames.text.split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .init(charactersIn: ", "))) }
            md5 = try TestSupport.Oracle.frameMD5(file, pixFmt: "yuv420p").map(\.md5)
            try #require(pts.count == 40 && md5.count == 40 && pts == pts.sorted())
        }

        /// `ticks` of the time_base as an exact MediaTime.
        func time(_ ticks: Int64) -> MediaTime { MediaTime(value: ticks * num, timescale: Int32(den)) }

        /// A delivered time in ticks (exact: a tick is far longer than the nanosecond a time may be rounded by).
        func ticks(_ t: MediaTime) -> Int64 {
            let ns = Int128(t.nanoseconds!)
            let perTick = Int128(num) * 1_000_000_000
            return Int64((ns * Int128(den) + perTick / 2) / perTick)
        }

        /// The oracle's answer: the frames displayed at some time in [start, end) (end nil: to the last frame).
        func expected(_ start: Int64, _ end: Int64?) -> [Int] {
            (0..<pts.count).filter { k in
                let until = k + 1 < pts.count ? pts[k + 1] : Int64.max
                return until > start && (end.map { pts[k] < $0 } ?? true)
            }
        }
    }

    /// A case: start and end in ticks (end nil: +infinity).
    struct Case: CustomStringConvertible {
        let start: Int64, end: Int64?
        var description: String { "[\(start), \(end.map(String.init) ?? "∞")) ticks" }
    }

    /// Ends at, just before and just after frames 0–3 and 25 (mid-GOP) from the start; starts at each of those
    /// frames' exact PTS and half-way into it, with ends at the next frame's PTS, a tick after it, and +infinity.
    static func cases(_ o: Oracle) -> [Case] {
        let frames = [0, 1, 2, 3, 25]
        var cases: [Case] = []
        for f in frames where f > 0 {
            for delta: Int64 in [-1, 0, 1] { cases.append(Case(start: 0, end: o.pts[f] + delta)) }
        }
        cases.append(Case(start: 0, end: 1))
        for f in frames {
            for start in [o.pts[f], (o.pts[f] + o.pts[f + 1]) / 2] {
                cases += [Case(start: start, end: o.pts[f + 1]), Case(start: start, end: o.pts[f + 1] + 1),
                          Case(start: start, end: nil)]
            }
        }
        return cases
    }

    func range(_ c: Case, _ o: Oracle) -> MediaTimeRange {
        MediaTimeRange(start: o.time(c.start), duration: c.end.map { o.time($0 - c.start) } ?? .positiveInfinity)
    }

    /// Frame numbers of delivered samples (by their PTS), with their bytes and durations checked.
    func frames(_ samples: [SampleBuffer], _ o: Oracle, _ what: String) -> [Int] {
        samples.map { s in
            let t = o.ticks(s.presentationTimeStamp)
            guard let k = o.pts.firstIndex(of: t) else {
                Issue.record("\(what): a sample at \(t) ticks, which is no frame's pts")
                return -1
            }
            #expect(md5Hex(s.packedBytes()) == o.md5[k], "\(what): frame \(k)'s bytes")
            // Displayed until the next frame: its duration is that interval (the last frame's is the container's).
            if k + 1 < o.pts.count {
                #expect(o.ticks(s.duration) == o.pts[k + 1] - o.pts[k], "\(what): frame \(k)'s duration")
            }
            return k
        }
    }

    func drain(_ output: AssetReaderTrackOutput) throws -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while let s = try output.copyNextSampleBuffer() { samples.append(s) }
        return samples
    }

    @Test(arguments: ["mp4", "mkv", "webm"])
    func rangesResetsFramesAndImagesAgree(_ ext: String) throws {
        let file = Self.media(ext)
        let o = try Oracle(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        // One random-access output for every reset.
        let resets = try AssetReaderTrackOutput(track: track, outputSettings: Self.y420)
        try resets.setSupportsRandomAccess(true)
        let resetReader = AssetReader(asset: asset)
        try resetReader.add(resets)
        try resetReader.setTimeRange(MediaTimeRange(start: .zero, duration: o.time(1)))
        #expect(try resetReader.startReading())
        #expect(frames(try drain(resets), o, "\(ext) initial range") == [0])

        for c in Self.cases(o) {
            let want = o.expected(c.start, c.end)
            let what = "\(ext) \(c)"
            // CreateOutput with the range.
            let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.y420)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            try reader.setTimeRange(range(c, o))
            #expect(try reader.startReading())
            #expect(frames(try drain(output), o, "\(what) CreateOutput") == want, "\(what) CreateOutput")
            #expect(reader.status == .completed, "\(what)")
            // ResetOutput with the same range.
            try resets.reset(forReadingTimeRanges: [range(c, o)])
            #expect(frames(try drain(resets), o, "\(what) reset") == want, "\(what) reset")
            // ReadFrames and GenerateImage at the start name the range's first frame; ReadFrames a tick before the end
            // names its last.
            let first = try asset.frames(at: [o.time(c.start)], track: track, outputSettings: Self.y420)
            #expect(first.map { Int($0.index) } == [want[0]], "\(what) ReadFrames at the start")
            #expect(frames(first.map(\.sample), o, "\(what) ReadFrames") == [want[0]])
            if let end = c.end {
                let last = try asset.frames(at: [o.time(end - 1)], track: track, outputSettings: Self.y420)
                #expect(last.map { Int($0.index) } == [want[want.count - 1]], "\(what) ReadFrames before the end")
            }
            let image = try asset.generateImage(track: track, at: o.time(c.start))
            #expect(o.ticks(image.actualTime) == o.pts[want[0]], "\(what) GenerateImage")
        }
        resets.markConfigurationAsFinal()
        #expect(resetReader.status == .completed)
    }
}
