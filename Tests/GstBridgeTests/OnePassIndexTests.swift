import Foundation
import GstBridge
import MediaIndex
import Synchronization
import TestSupport
import Testing
import TrackdProtocol

/// An MPEG-TS's or MPEG-PS's tracks indexed by one pass over the file (FrameIndex.buildAll, StoredSamplesPass) must be
/// what a pass per track gives (FrameIndex.build), the stored samples that pass pulls those of a one-track passthrough
/// read (bytes included), and ffprobe's packets: integer PTS and DTS in the stream's time base (1/90000, less the
/// first PCR of a TS or the first pack's SCR of a PS), durations, key flags, and the sizes of the audio frames and of
/// MPEG-2 pictures (H.264 is delivered length-prefixed, not in ffprobe's Annex B: its bytes are compared with
/// ffmpeg's by PassthroughCompletenessTests.h264InMPEGTS). ffmpeg's PS states a PTS only for the first picture of
/// each PES, and ffprobe leaves the others without one: those pictures' times (MPEGVideoTimes) are, together with
/// the stated ones, the presentation times of the frames ffmpeg decodes.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct OnePassIndexTests {
    /// ffmpeg: 2 s of H.264 with B-frames, AAC at 48 kHz and MP2 at 44.1 kHz (durations that are no whole tick).
    static let ffmpegTS = Media.make("onepass-h264-aac-mp2.ts", [
        "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100:duration=2",
        "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-bf", "2", "-g", "15",
        "-c:a:0", "aac", "-c:a:1", "mp2",
    ])
    /// GStreamer: H.264 with B-frames, MP2 at 48 kHz and `secondAudio` (an encoder and its parser) at 44.1 kHz into
    /// `mux`.
    static func gstreamerFile(_ name: String, secondAudio: [String], mux: String) -> String {
        Media.makeWithGStreamer(name, [
            "videotestsrc", "num-buffers=60", "!", "video/x-raw,width=160,height=120,framerate=30/1", "!", "x264enc",
            "bframes=2", "key-int-max=15", "!", "h264parse", "!", "mux.",
            "audiotestsrc", "num-buffers=80", "samplesperbuffer=1152", "!", "audio/x-raw,rate=48000", "!", "avenc_mp2",
            "!", "mpegaudioparse", "!", "mux.",
            "audiotestsrc", "num-buffers=70", "samplesperbuffer=1152", "freq=660", "!", "audio/x-raw,rate=44100", "!",
        ] + secondAudio + ["!", "mux.", mux, "name=mux"])
    }
    /// GStreamer's mpegtsmux: the second audio track AAC.
    static let gstreamerTS = gstreamerFile("onepass-gst.ts", secondAudio: ["avenc_aac", "!", "aacparse"], mux: "mpegtsmux")
    /// ffmpeg's `-f mpeg`: MPEG-2 video with B-frames (several pictures to a PES) and two MP2 tracks, at 48 and
    /// 44.1 kHz.
    static let ffmpegPS = Media.make("onepass-mpeg2-mp2-mp2.mpg", [
        "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
        "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100:duration=2",
        "-map", "0", "-map", "1", "-map", "2", "-c:v", "mpeg2video", "-bf", "2", "-g", "15", "-c:a", "mp2", "-f", "mpeg",
    ])
    /// GStreamer's mpegpsmux: the second audio track MP2 too.
    static let gstreamerPS = gstreamerFile("onepass-gst.mpg", secondAudio: ["avenc_mp2", "!", "mpegaudioparse"], mux: "mpegpsmux")
    static let files = [ffmpegTS, gstreamerTS, ffmpegPS, gstreamerPS]

    /// Where GStreamer starts `path`'s timeline, in 90 kHz ticks: a TS's first PCR, a PS's first SCR.
    static func origin(_ path: String) throws -> Int64 {
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: path)))
        return try #require(path.hasSuffix(".ts") ? TransportStream.firstPCR(bytes) : ProgramStream.firstSCR(bytes), "\(path)")
    }

    /// Times compared with ffprobe's: 90 kHz ticks (rounded from GStreamer's ⌊ticks × 10⁵ / 9⌋ ns, which gives them
    /// back exactly). The duration is the sample's own nanoseconds: an audio
    /// frame's is no whole tick (1024 samples at 44.1 kHz are 2089.79… ticks; ffprobe says 2089, GStreamer
    /// 23219954 ns), so it matches ffprobe's when it lies within one tick of it (`sameTick`).
    static func ticks(_ time: MediaTime) -> Int64? { time.nanoseconds.map { ($0 * 9 + 50_000) / 100_000 } }

    /// `ns` within one 90 kHz tick of `ticks` (|ns × 9/10⁵ − ticks| < 1, in integers).
    static func sameTick(_ ns: Int64?, _ ticks: Int64?) -> Bool {
        guard let ns, let ticks else { return ns == nil && ticks == nil }
        return abs(ns * 9 - ticks * 100_000) < 100_000
    }

    /// Every stored sample of each track from one pass (by track id), and the tracks it found.
    static func onePass(_ path: String, _ ids: [UInt32]) throws -> ([UInt32: [PulledSample]], Set<UInt32>?) {
        let pulled = Mutex<[UInt32: [PulledSample]]>([:])
        let found = try FrameIndex.forEachStoredSample(source: try Fixtures.source(path), trackIDs: ids) { id, s in
            pulled.withLock { $0[id, default: []].append(s) }
        }
        return (pulled.withLock { $0 }, found)
    }

    /// The tracks discovery finds (id, media type), in id order.
    static func tracks(_ path: String) throws -> [(id: UInt32, type: MediaType)] {
        try Fixtures.source(path).discover().tracks.map { ($0.id, $0.mediaType) }.sorted { $0.id < $1.id }
    }

    @Test(arguments: files)
    func onePassIsAPassPerTrack(_ path: String) throws {
        let ids = try Self.tracks(path).map(\.id)
        #expect(ids.count == 3, "\(path): \(ids)")
        let together = FrameIndex.buildAll(source: try Fixtures.source(path), trackIDs: ids)
        #expect(Set(together.keys) == Set(ids), "\(path): every track indexed by the one pass")
        for id in ids {
            let alone = try FrameIndex.build(source: try Fixtures.source(path), trackID: id)
            #expect(together[id]?.frames == alone.frames, "\(path) track \(id): \(together[id]?.frames.count ?? 0) vs \(alone.frames.count) frames")
        }
    }

    /// A track the file does not have is left out (`build` then says why), and the others are indexed all the same.
    @Test func aTrackTheFileLacksIsLeftOut() throws {
        let ids = try Self.tracks(Self.ffmpegTS).map(\.id)
        let together = FrameIndex.buildAll(source: try Fixtures.source(Self.ffmpegTS), trackIDs: ids + [4000])
        #expect(Set(together.keys) == Set(ids))
        #expect(throws: TrackError.self) { try FrameIndex.build(source: try Fixtures.source(Self.ffmpegTS), trackID: 4000) }
    }

    /// Each track's samples from the one pass are a one-track passthrough read's: times, flags, bytes.
    @Test(arguments: files)
    func onePassSamplesAreAPassPerTrack(_ path: String) throws {
        let ids = try Self.tracks(path).map(\.id)
        let (together, found) = try Self.onePass(path, ids)
        #expect(found == Set(ids))
        for id in ids {
            let alone = try pullAll(try TrackPipeline(source: try Fixtures.source(path), trackID: id, mode: .passthrough,
                                                      timeRange: .everything))
            let mine = together[id] ?? []
            #expect(mine.count == alone.count && !alone.isEmpty, "\(path) track \(id): \(mine.count) vs \(alone.count) samples")
            for (i, (a, b)) in zip(mine, alone).enumerated() {
                let same = a.presentationTime == b.presentationTime && a.decodeTime == b.decodeTime && a.duration == b.duration
                    && a.isSync == b.isSync && a.format == b.format && a.bytes == b.bytes
                if !same { Issue.record("\(path) track \(id) sample \(i) differs from the one-track read"); break }
            }
        }
    }

    @Test(arguments: files)
    func onePassSamplesAreFfprobesPackets(_ path: String) throws {
        let tracks = try Self.tracks(path)
        let origin = try Self.origin(path)
        let (pulled, found) = try Self.onePass(path, tracks.map(\.id))
        #expect(found == Set(tracks.map(\.id)))
        var ordinals: [MediaType: Int] = [:]
        for (id, type) in tracks {
            let stream = "\(type == .video ? "v" : "a"):\(ordinals[type, default: 0])"
            ordinals[type, default: 0] += 1
            #expect(try Probe.timeBase(path, stream) == (1, 90000))
            let expected = try Probe.packets(path, stream)
            let got = pulled[id] ?? []
            #expect(got.count == expected.count && !got.isEmpty, "\(path) \(stream): \(got.count) samples, ffprobe \(expected.count)")
            for (i, (g, e)) in zip(got, expected).enumerated() {
                let ok = (e.pts == nil || Self.ticks(g.presentationTime) == e.pts.map { $0 - origin })
                    && Self.ticks(g.decodeTime) == (e.dts ?? e.pts).map { $0 - origin }
                    && Self.sameTick(g.duration.nanoseconds, e.duration) && g.isSync == e.keyframe
                    && (isH264(g) || g.size == e.size)
                if !ok {
                    Issue.record("\(path) \(stream) packet \(i): pts \(String(describing: Self.ticks(g.presentationTime))) dts \(String(describing: Self.ticks(g.decodeTime))) \(g.duration) \(g.size) B sync \(g.isSync) vs ffprobe \(String(describing: e.pts)) \(String(describing: e.dts)) \(String(describing: e.duration)) \(e.size) B \(e.keyframe) (origin \(origin))")
                    break
                }
            }
            // The packets ffprobe leaves untimed (ffmpeg's PS video): every packet's PTS, together, is a frame ffmpeg
            // decodes, each once.
            guard expected.contains(where: { $0.pts == nil }) else { continue }
            let decoded = try Probe.frames(path, stream).map { $0.pts.map { $0 - origin } }
            #expect(got.map { Self.ticks($0.presentationTime) }.sorted { ($0 ?? .min) < ($1 ?? .min) }
                        == decoded.sorted { ($0 ?? .min) < ($1 ?? .min) }, "\(path) \(stream): PTS of the untimed packets")
        }
    }

    /// H.264 is delivered length-prefixed (avc), not as ffprobe's Annex B bytes.
    private func isH264(_ sample: PulledSample) -> Bool { ["avc1", "avc3"].contains(sample.format) }
}
