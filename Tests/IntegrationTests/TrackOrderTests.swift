import Foundation
import TestSupport
import Testing
import TrackClient

/// Tracks are listed in ascending track-id order, as AVAsset lists them — whatever order the demuxer exposes them
/// in. A file with a video track and two AAC tracks (ids 1, 2, 3) was listed as 1, 3, 2 on some opens: parsebin
/// adds the two audio pads in whichever order their parsers are ready.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct TrackOrderTests {
    /// Video, then 44.1 kHz AAC, then 22.05 kHz AAC: track ids 1, 2, 3 in a MOV or an MP4.
    static func file(_ ext: String) -> String {
        Media.make("three-tracks.\(ext)", [
            "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=22050:duration=1",
            "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac",
        ])
    }
    static let containers = ["mov", "mp4"]

    /// ffprobe's stream ids (the container's track ids), in ffprobe's stream order, with each stream's sample rate
    /// (0 for video) to tell the two audio tracks apart.
    func probe(_ file: String) throws -> [(id: UInt32, sampleRate: UInt32)] {
        let r = try run("ffprobe", ["-v", "error", "-show_entries", "stream=id,sample_rate", "-of", "json", file])
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
        let streams = try #require(json?["streams"] as? [[String: Any]])
        return try streams.map { s in
            let hex = try #require(s["id"] as? String)  // "0x1"
            let id = try #require(UInt32(hex.dropFirst(2), radix: 16))
            return (id, (s["sample_rate"] as? String).flatMap { UInt32($0) } ?? 0)
        }
    }

    /// Every open discovers (no description cache), several times, as the order the demuxer exposes pads varies.
    @Test(arguments: containers) func clientsListTracksInIDOrder(container: String) throws {
        let file = Self.file(container)
        let oracle = try probe(file)
        #expect(oracle.map(\.id) == [1, 2, 3], "ffprobe: \(oracle)")
        let daemon = try Daemon(extraArgs: ["--index-cache-bytes", "0"])
        defer { daemon.stop() }
        for attempt in 0..<6 {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let tracks = asset.tracks.map { (id: $0.trackID, sampleRate: $0.sampleRate) }
            #expect(tracks.map(\.id) == oracle.map(\.id), "TrackClient, open \(attempt): \(tracks)")
            #expect(tracks.map(\.sampleRate) == oracle.map(\.sampleRate), "TrackClient, open \(attempt): \(tracks)")
            #expect(asset.tracks(withMediaType: .audio).map(\.trackID) == [2, 3])

            let r = try daemon.trackctl(["tracks", file, "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let array = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
            let listed = array.map { (id: ($0["id"] as? Int).map(UInt32.init), sampleRate: ($0["sampleRate"] as? Int) ?? 0) }
            #expect(listed.map(\.id) == oracle.map { Optional($0.id) }, "trackctl --json, open \(attempt): \(listed)")
            #expect(listed.map { UInt32($0.sampleRate) } == oracle.map(\.sampleRate), "trackctl --json, open \(attempt)")

            let table = try daemon.trackctl(["tracks", file])
            let ids = table.text.split(separator: "\n").compactMap { line in
                line.split(separator: " ").first.flatMap { UInt32($0) }
            }
            #expect(ids == [1, 2, 3], "trackctl tracks, open \(attempt): \(table.text)")
        }
    }

    /// A description from the daemon's cache is in track-id order too: the second open of an unchanged file is
    /// answered from the cache.
    @Test(arguments: containers) func cachedDescriptionIsInIDOrder(container: String) throws {
        let file = Self.file(container)
        let daemon = try Daemon()
        defer { daemon.stop() }
        for attempt in 0..<3 {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            #expect(asset.tracks.map(\.trackID) == [1, 2, 3], "open \(attempt)")
        }
        #expect(daemon.events("asset-from-cache").count == 2, "the later opens use the cache: \(daemon.log)")
    }

    /// An MPEG-TS and an MPEG-PS with video and two audio tracks: the ids are ffprobe's (PID; PES start code), each
    /// id the same track on every open. The PS's two MP2 tracks were numbered by parsebin's pad order, which differs
    /// from run to run, so track 3 was one audio stream on some opens and the other on the rest.
    static let streams = ["ts", "mpg"]

    @Test(arguments: streams) func transportAndProgramStreamIDsAreFFprobes(container: String) throws {
        let file = Media.make("three-tracks-\(container).\(container)", [
            "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=22050:duration=1",
            "-map", "0", "-map", "1", "-map", "2", "-c:a", "mp2",
        ] + (container == "mpg" ? ["-c:v", "mpeg2video", "-f", "mpeg"] : ["-c:v", "libx264", "-preset", "veryfast"]))
        let oracle = try probe(file).sorted { $0.id < $1.id }
        #expect(oracle.count == 3 && Set(oracle.map(\.id)).count == 3, "ffprobe: \(oracle)")
        let daemon = try Daemon(extraArgs: ["--index-cache-bytes", "0"])
        defer { daemon.stop() }
        for attempt in 0..<6 {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let tracks = asset.tracks.map { (id: $0.trackID, sampleRate: $0.sampleRate) }
            #expect(tracks.map(\.id) == oracle.map(\.id), "open \(attempt): \(tracks), ffprobe \(oracle)")
            #expect(tracks.map(\.sampleRate) == oracle.map(\.sampleRate), "open \(attempt): \(tracks), ffprobe \(oracle)")
        }
    }

    /// Containers whose streams ffprobe gives no id (Ogg, AVI): tracks are numbered from 1 in ffprobe's stream order —
    /// an Ogg's streams in the order of their first pages, an AVI's in its header's — the same on every open, whatever
    /// order parsebin exposes their pads in. Two tracks of one kind tell apart by their rate and channels (ffprobe's).
    /// Two Vorbis tracks in an Ogg swapped ids between opens (pad order); an Ogg serial number whose hex has only
    /// decimal digits (ffmpeg's `-serial_offset 0x12345678`: 12345678 read as a decimal number) named its track
    /// by that number, and one with a letter (0x1234567a) by pad order.
    static let numbered: [String: [String]] = [
        "vorbis.ogg": ["-map", "0", "-map", "1", "-c:a", "libvorbis"],
        "opus-decimal-serials.ogg": ["-map", "0", "-map", "1", "-ac:a:1", "2", "-c:a", "libopus", "-fflags", "+bitexact",
                                     "-serial_offset", String(0x12345678)],
        "opus-hex-serials.ogg": ["-map", "1", "-map", "0", "-ac:a:0", "2", "-c:a", "libopus", "-fflags", "+bitexact",
                                 "-serial_offset", String(0x12345679)],
        "mp3.avi": ["-map", "2", "-map", "0", "-map", "1", "-c:v", "mpeg4", "-c:a", "libmp3lame"],
        "pcm.avi": ["-map", "1", "-map", "0", "-c:a", "pcm_s16le"],
    ]

    @Test(arguments: numbered.keys.sorted()) func numberedTracksAreInFFprobesOrder(name: String) throws {
        let file = Media.make("numbered-\(name)", [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=\(name.hasPrefix("opus") ? 48000 : 22050):duration=1",
            "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1",
        ] + (Self.numbered[name] ?? []))
        let r = try run("ffprobe", ["-v", "error", "-show_entries", "stream=index,sample_rate,channels", "-of", "json", file])
        let streams = try #require((try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])?["streams"] as? [[String: Any]])
        let oracle = streams.map { s in
            ((s["sample_rate"] as? String).flatMap { UInt32($0) } ?? 0, (s["channels"] as? Int).map(UInt32.init) ?? 0)
        }
        #expect(oracle.count >= 2 && Set(oracle.map { "\($0)" }).count == oracle.count, "ffprobe: \(oracle)")
        let daemon = try Daemon(extraArgs: ["--index-cache-bytes", "0"])
        defer { daemon.stop() }
        for attempt in 0..<6 {
            let asset = try Asset(path: file, socketPath: daemon.socketPath)
            let tracks = asset.tracks.map { (id: $0.trackID, rate: $0.sampleRate, channels: $0.channelCount) }
            #expect(tracks.map(\.id) == Array(1...UInt32(oracle.count)), "\(name) open \(attempt): \(tracks)")
            #expect(tracks.map { "\($0.rate)/\($0.channels)" } == oracle.map { "\($0.0)/\($0.1)" },
                    "\(name) open \(attempt): \(tracks), ffprobe \(oracle)")
        }
    }
}
