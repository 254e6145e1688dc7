import Foundation
import TestSupport
import Testing
import TrackClient

/// Elementary video streams (ffmpeg's `-f h264` and `-f hevc`, Annex B, and `-f mpeg2video`) carry no timestamps at all: ffprobe lists
/// their packets with no PTS or DTS, each lasting one frame at the rate the stream states (`r_frame_rate`, the SPS's),
/// and states no stream duration. trackd's rule (PROTOCOL.md §7.1, §7.2): its parser times every frame by that rate,
/// and the track's timescale is the rate's numerator, one frame its denominator; the track starts at 0 and lasts its
/// frames, `(count × den, num)`, as does the asset (in nanoseconds), and frame k is decoded at `(k × den, num)`, the
/// last one lasting one frame to the track's end — not the demuxer's duration, an estimate from the byte rate that
/// ends before the last frame.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ElementaryStreamTimingTests {
    static let files: [String: String] = [
        "h264": Media.make("es.h264", MPEGStreamDurationTests.video + TimescaleTests.x264 + ["-f", "h264"]),
        "hevc": Media.make("es.hevc", MPEGStreamDurationTests.video
            + ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p", "-f", "hevc"]),
        "mpeg2": Media.make("es.m2v", MPEGStreamDurationTests.video + ["-c:v", "mpeg2video", "-f", "mpeg2video"]),
    ]

    /// ffprobe's view of the stream: its frame rate, and each packet's duration in the time_base with whether it has
    /// a PTS.
    static func probe(_ file: String) throws -> (rate: (num: Int64, den: Int64), timeBase: (num: Int64, den: Int64),
                                                   packets: [(hasPTS: Bool, duration: Int64)]) {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                    "stream=r_frame_rate,time_base:packet=pts,duration", "-of", "json", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        let info = try #require((json["streams"] as? [[String: Any]])?.first)
        let fraction = { (text: String?) throws -> (Int64, Int64) in
            let parts = try #require(text).split(separator: "/").compactMap { Int64($0) }
            try #require(parts.count == 2 && parts[0] > 0 && parts[1] > 0, "\(String(describing: text))")
            return (parts[0], parts[1])
        }
        let packets = try (json["packets"] as? [[String: Any]] ?? []).map {
            ($0["pts"] != nil, try #require(($0["duration"] as? NSNumber)?.int64Value))
        }
        try #require(!packets.isEmpty, "ffprobe listed no packets of \(file)")
        return (try fraction(info["r_frame_rate"] as? String), try fraction(info["time_base"] as? String), packets)
    }

    @Test(arguments: files.keys.sorted()) func framesAreTimedByTheStatedRate(kind: String) throws {
        let file = try #require(Self.files[kind])
        let probe = try Self.probe(file)
        #expect(probe.packets.allSatisfy { !$0.hasPTS }, "\(kind): ffprobe lists no timestamps")
        // Every packet lasts one frame at the stated rate (duration × tb == den / num, cross-multiplied).
        for p in probe.packets {
            #expect(p.duration * probe.timeBase.num * probe.rate.num == probe.timeBase.den * probe.rate.den, "\(kind) packet duration")
        }
        let count = Int64(probe.packets.count)
        let frames = { (n: Int64) in MediaTime(value: n * probe.rate.den, timescale: Int32(probe.rate.num)) }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        #expect(track.naturalTimeScale == Int32(probe.rate.num), "\(kind) timescale")
        #expect(track.timeRangeStart == frames(0), "\(kind) start")
        #expect(track.duration == frames(count), "\(kind) duration")
        #expect(asset.duration == .nanoseconds(count * probe.rate.den * 1_000_000_000 / probe.rate.num), "\(kind) asset duration")
        #expect(track.minFrameDuration == frames(1), "\(kind) minFrameDuration")
        // Decoded: frame k at k frames, each one frame long; the last one ends at the track's end.
        let decoded = try TimescaleTests.read(asset, track, TimescaleTests.y420)
        #expect(decoded.count == probe.packets.count, "\(kind) decoded frames")
        #expect(decoded.map(\.presentationTimeStamp) == (0..<count).map(frames), "\(kind) decoded PTS")
        #expect(decoded.allSatisfy { $0.duration == frames(1) }, "\(kind) decoded durations")
        // Passthrough: every packet, none with a presentation time (the stream has none).
        let stored = try TimescaleTests.read(asset, track, nil)
        #expect(stored.count == probe.packets.count, "\(kind) passthrough samples")
        #expect(stored.allSatisfy { !$0.presentationTimeStamp.isValid && $0.duration == frames(1) }, "\(kind) passthrough times")
    }
}
