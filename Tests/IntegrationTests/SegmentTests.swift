import Foundation
import TestSupport
import Testing
import TrackClient

/// Track segments (PROTOCOL.md §7.6) of ffmpeg-made files, compared with the elst, mvhd and mdhd boxes read here from
/// the file: B-frames (an edit at media time 1024), audio delayed by `-itsoffset 0.5` with `-c copy` (an empty edit,
/// then one of duration 0), and Matroska (no edit list: the track's range onto itself). `trackctl tracks --json
/// --asset` shows the same.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SegmentTests {
    struct RawTrack {
        var id: UInt32 = 0
        var mediaTimescale: Int64 = 0
        var mediaDuration: Int64 = 0
        var edits: [(duration: Int64, mediaTime: Int64)] = []
    }

    static func be(_ b: ArraySlice<UInt8>, _ at: Int, _ n: Int) -> Int64 {
        b.dropFirst(at).prefix(n).reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The boxes of one level: (type, body).
    static func boxes(_ b: ArraySlice<UInt8>) -> [(String, ArraySlice<UInt8>)] {
        var out: [(String, ArraySlice<UInt8>)] = []
        var at = b.startIndex
        while b.endIndex - at >= 8 {
            let size = Int(be(b, at - b.startIndex, 4))
            guard size >= 8, size <= b.endIndex - at else { break }
            out.append((String(decoding: b[at + 4..<at + 8], as: UTF8.self), b[at + 8..<at + size]))
            at += size
        }
        return out
    }

    /// mvhd's timescale and each trak's tkhd id, mdhd timescale and duration, elst entries (version 0, as ffmpeg
    /// writes short files).
    static func rawEdits(_ file: String) throws -> (movieTimescale: Int64, tracks: [RawTrack]) {
        let bytes = try #require(FileManager.default.contents(atPath: file)).map { $0 }
        let moov = try #require(boxes(bytes[...]).first { $0.0 == "moov" }?.1)
        var movieTimescale: Int64 = 0, tracks: [RawTrack] = []
        for (type, body) in boxes(moov) {
            if type == "mvhd" { movieTimescale = be(body, 12, 4) }
            guard type == "trak" else { continue }
            var track = RawTrack()
            for (inner, b) in boxes(body) {
                if inner == "tkhd" { track.id = UInt32(be(b, 12, 4)) }
                if inner == "edts", let elst = boxes(b).first(where: { $0.0 == "elst" })?.1 {
                    #expect(elst.first == 0, "elst version 0")
                    track.edits = (0..<Int(be(elst, 4, 4))).map { i in
                        (be(elst, 8 + 12 * i, 4), Int64(Int32(truncatingIfNeeded: be(elst, 12 + 12 * i, 4))))
                    }
                }
                if inner == "mdia", let mdhd = boxes(b).first(where: { $0.0 == "mdhd" })?.1 {
                    track.mediaTimescale = be(mdhd, 12, 4)
                    track.mediaDuration = be(mdhd, 16, 4)
                }
            }
            tracks.append(track)
        }
        return (movieTimescale, tracks)
    }

    /// §7.6's rule for rate-1 edits, from the raw values.
    static func expected(_ track: RawTrack, movieTimescale: Int64) -> [TrackSegment] {
        let movie = Int32(movieTimescale), media = Int32(track.mediaTimescale)
        var cursor: Int64 = 0
        return track.edits.map { edit in
            var duration = edit.duration
            var source = (duration * track.mediaTimescale + movieTimescale / 2) / movieTimescale
            if duration == 0 && edit.mediaTime >= 0 {
                source = track.mediaDuration - edit.mediaTime
                duration = (source * movieTimescale + track.mediaTimescale / 2) / track.mediaTimescale
            }
            defer { cursor += duration }
            let target = MediaTimeRange(start: MediaTime(value: cursor, timescale: movie), duration: MediaTime(value: duration, timescale: movie))
            let start = edit.mediaTime == -1 ? MediaTime.invalid : MediaTime(value: edit.mediaTime, timescale: media)
            return TrackSegment(source: MediaTimeRange(start: start, duration: MediaTime(value: source, timescale: media)), target: target)
        }
    }

    @Test(arguments: ["mp4", "mov", "delayed"]) func mp4SegmentsAreTheEditList(kind: String) throws {
        let file = try #require(kind == "delayed" ? MetadataTests.delayed : MetadataTests.files[kind])
        let raw = try Self.rawEdits(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(asset.tracks.count == raw.tracks.count)
        for track in asset.tracks {
            let edits = try #require(raw.tracks.first { $0.id == track.trackID })
            #expect(!edits.edits.isEmpty, "ffmpeg wrote no edit list for track \(track.trackID)")
            #expect(track.segments == Self.expected(edits, movieTimescale: raw.movieTimescale), "track \(track.trackID)")
        }
        // B-frames: the video's one edit starts at the composition delay (media time > 0).
        let video = try #require(asset.tracks(withMediaType: .video).first)
        #expect(video.segments.count == 1 && (video.segments.first?.source.start.value ?? 0) > 0)
        if kind == "delayed" {
            let audio = try #require(asset.tracks(withMediaType: .audio).first)
            #expect(audio.segments.count == 2 && audio.segments[0].isEmpty && !audio.segments[1].isEmpty)
            // The empty edit is the delay less the AAC priming ffmpeg leaves to the edit (1024 of 44100).
            #expect(audio.segments[0].target == MediaTimeRange(start: MediaTime(value: 0, timescale: 1000),
                                                               duration: MediaTime(value: 476, timescale: 1000)))
        }
    }

    /// No edit list (Matroska): one segment, the track's range onto itself; trackctl's JSON says the same.
    @Test func matroskaTracksMapOntoThemselves() throws {
        let file = try #require(MetadataTests.files["mkv"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        for track in asset.tracks {
            let range = MediaTimeRange(start: track.timeRangeStart, duration: track.duration)
            #expect(track.segments == [TrackSegment(source: range, target: range)], "track \(track.trackID)")
        }
        let r = try daemon.trackctl(["tracks", "--json", "--asset", file])
        #expect(r.status == 0, "trackctl: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let tracks = try #require(json["tracks"] as? [[String: Any]])
        #expect((json["metadata"] as? [[String: Any]])?.count == asset.metadata.count)
        for (t, track) in zip(tracks, asset.tracks) {
            let segments = try #require(t["segments"] as? [[String: Any]])
            let target = (segments.first?["target"] as? [String: Any])?["duration"] as? [String: Any]
            #expect((target?["value"] as? NSNumber)?.int64Value == track.duration.value)
            #expect((target?["timescale"] as? NSNumber)?.int32Value == track.duration.timescale)
            #expect((t["metadata"] as? [[String: Any]])?.count == track.metadata.count)
        }
        let text = try daemon.trackctl(["tracks", file])
        #expect(text.text.contains("asset: mkv/Title (title) = My Title"), "\(text.text)")
        #expect(text.text.contains("track 2: mkvtag/HANDLER_NAME = Sound Handler X"), "\(text.text)")
    }
}
