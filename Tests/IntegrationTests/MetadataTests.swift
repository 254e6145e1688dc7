import Foundation
import TestSupport
import Testing
import TrackClient

/// Asset and track metadata (PROTOCOL.md §7.5) and segments (§7.6) of files ffmpeg makes with `-metadata` and edit
/// lists, compared with ffprobe's tags (`-show_format -show_streams`) and with the elst boxes read here.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MetadataTests {
    static let tagged = ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30:duration=1",
                         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1",
                         "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-c:a", "aac",
                         "-metadata", "title=My Title", "-metadata", "comment=A comment", "-metadata", "artist=Ann Artist",
                         "-metadata", "creation_time=2021-03-04T05:06:07Z", "-metadata", "location=+48.8577+002.2950/",
                         "-metadata", "date=2020", "-metadata", "genre=Test", "-metadata:s:v:0", "language=ger",
                         "-metadata:s:a:0", "handler_name=Sound Handler X"]
    static let files: [String: String] = [
        "mp4": Media.make("meta.mp4", tagged), "mov": Media.make("meta.mov", tagged), "mkv": Media.make("meta.mkv", tagged),
        // QuickTime metadata (meta/keys/ilst, key space mdta), as Apple's cameras write make and model.
        "mdta": Media.make("meta-mdta.mov", tagged + ["-movflags", "use_metadata_tags", "-metadata", "com.apple.quicktime.make=Acme",
                                                      "-metadata", "com.apple.quicktime.model=Cam 1"]),
    ]
    /// The MP4 again with its audio delayed by 0.5 s (`-c copy`): an empty edit, then an edit of duration 0.
    static let delayed: String = Media.make("meta-delayed.mp4", ["-i", files["mp4"]!, "-itsoffset", "0.5", "-i", files["mp4"]!,
                                                                 "-map", "0:v", "-map", "1:a", "-c", "copy"])

    /// ffprobe's tags: the format's, then each stream's (by index).
    static func probeTags(_ file: String) throws -> (format: [String: String], streams: [[String: String]]) {
        let r = try run("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let format = (json["format"] as? [String: Any])?["tags"] as? [String: String] ?? [:]
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { $0["tags"] as? [String: String] ?? [:] }
        return (format, streams)
    }

    /// Where trackd reports what ffprobe calls `key` (PROTOCOL.md §7.5's table), nil for the tags trackd does not
    /// report (ftyp's brands, stsd's vendor, ffprobe's language-suffixed copy of an MP4's location); a tag this does
    /// not know maps to a key space no item has, so it fails the comparison.
    static func location(_ kind: String, stream: Bool, _ key: String) -> (String, String)? {
        switch (kind, stream, key) {
        case (_, _, "major_brand"), (_, _, "minor_version"), (_, _, "compatible_brands"), (_, true, "vendor_id"),
             ("mp4", false, "location-eng"): return nil
        case ("mkv", false, "title"): return ("mkv", "Title")
        case ("mkv", false, "creation_time"): return ("mkv", "DateUTC")
        case ("mkv", true, "language"): return ("mkv", "Language")
        case ("mkv", true, "title"): return ("mkv", "Name")
        case ("mkv", _, _): return ("mkvtag", key)
        case ("mdta", false, "creation_time"): return ("mvhd", "creationTime")
        case ("mdta", false, "location-eng"): return ("udta", "loci")  // ffmpeg writes a loci box too
        case ("mdta", false, _): return ("mdta", key)
        case (_, false, "creation_time"): return ("mvhd", "creationTime")
        case (_, true, "creation_time"): return ("mdhd", "creationTime")
        case (_, true, "language"): return ("mdhd", "language")
        case (_, true, "handler_name"): return ("hdlr", "name")
        case (_, true, "encoder"): return ("stsd", "compressorName")
        case ("mp4", false, "location"): return ("udta", "loci")
        case (_, false, "location"): return ("udta", "©xyz")
        default:
            let atoms = ["title": "©nam", "artist": "©ART", "comment": "©cmt", "encoder": kind == "mov" ? "©swr" : "©too",
                         "date": "©day", "genre": "©gen"]
            return atoms[key].map { (kind == "mov" ? "udta" : "itsk", $0) } ?? ("not in §7.5", key)
        }
    }

    /// Items trackd reports that ffprobe shows under no key (or leaves out): Matroska's muxing and writing apps, a
    /// MOV's ©des (ffprobe folds it into `comment`), a Matroska track's "und" language, the mdta copy of the
    /// creation time (ffprobe shows one creation_time, the mvhd's, with the same value).
    static func isExtra(_ item: MetadataItem) -> Bool {
        [("mkv", "MuxingApp"), ("mkv", "WritingApp"), ("udta", "©des"), ("mdta", "creation_time")]
            .contains { $0 == (item.keySpace, item.key) }
            || (item.identifier == "mkv/Language" && item.value == "und")
    }

    /// ffprobe prints dates with microseconds: "2021-03-04T05:06:07.000000Z".
    static func normalized(_ value: String) -> String {
        value.replacingOccurrences(of: #"\.0+Z$"#, with: "Z", options: .regularExpression)
    }

    /// Every ffprobe tag is the item its §7.5 row names, with the same value; every item is one of ffprobe's tags
    /// (or a documented extra).
    static func compare(_ kind: String, stream: Bool, probe: [String: String], items: [MetadataItem], _ what: String) {
        for (key, value) in probe {
            guard let (space, itemKey) = location(kind, stream: stream, key) else { continue }
            let found = items.filter { $0.keySpace == space && $0.key == itemKey }.map { normalized($0.value) }
            #expect(found == [normalized(value)], "\(kind) \(what): ffprobe's \(key) = \(value), trackd's \(space)/\(itemKey): \(found)")
        }
        for item in items where !isExtra(item) {
            let key = probe.keys.first { location(kind, stream: stream, $0).map { $0 == (item.keySpace, item.key) } ?? false }
            #expect(key != nil, "\(kind) \(what): trackd's \(item) is none of ffprobe's tags \(probe)")
        }
    }

    @Test(arguments: ["mp4", "mov", "mkv", "mdta"]) func tagsMatchFFprobe(kind: String) throws {
        let file = try #require(Self.files[kind])
        let probe = try Self.probeTags(file)
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(probe.format["title"] == "My Title" && probe.streams.count == 2 && asset.tracks.count == 2)
        Self.compare(kind, stream: false, probe: probe.format, items: asset.metadata, "asset")
        for (i, track) in asset.tracks.enumerated() where i < probe.streams.count {
            Self.compare(kind, stream: true, probe: probe.streams[i], items: track.metadata, "track \(track.trackID)")
        }
        // AVFoundation's common keys.
        if kind != "mdta" {  // ffmpeg's mdta keys are its own names ("title"), not com.apple.quicktime.*
            #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "title").map(\.value) == ["My Title"])
            #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "artist").map(\.value) == ["Ann Artist"])
        }
        #expect(asset.creationDate.map(Self.normalized) == "2021-03-04T05:06:07Z")
        if kind == "mdta" {
            #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "make").map(\.value) == ["Acme"])
            #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "model").map(\.value) == ["Cam 1"])
        }
        if kind != "mkv" {  // Matroska's LOCATION is a plain tag (no common key)
            #expect(MetadataItem.items(asset.metadata, withCommonKey: "location").map(\.value) == ["+48.8577+002.2950/"])
        }
        let video = try #require(asset.tracks(withMediaType: .video).first)
        #expect(MetadataItem.items(video.commonMetadata, withCommonKey: "language").map(\.value) == ["ger"])
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        let handler = kind == "mkv" ? ("mkvtag", "HANDLER_NAME") : ("hdlr", "name")
        #expect(MetadataItem.items(audio.metadata, withKey: handler.1, keySpace: handler.0).map(\.value) == ["Sound Handler X"])
        // Opened again, the description comes from the daemon's cache, metadata and segments included.
        let again = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(again.metadata == asset.metadata)
        #expect(again.tracks.map(\.metadata) == asset.tracks.map(\.metadata) && again.tracks.map(\.segments) == asset.tracks.map(\.segments))
        #expect(daemon.events("asset-from-cache").count == 1, "\(daemon.log)")
    }

    /// The asset tags of FLAC (VORBIS_COMMENT), WAV and AVI (RIFF INFO) and MP3 (ID3v2.4), read by trackd from the
    /// file's bytes, against ffprobe's format tags; AVFoundation's common keys for title, artist and software.
    @Test(arguments: ["flac", "wav", "mp3", "avi"]) func tagFormatsMatchFFprobe(kind: String) throws {
        let input = kind == "avi" ? ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.5", "-c:v", "mpeg4"]
            : ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=0.5"]
        let file = Media.make("meta-tags.\(kind)", input + ["-metadata", "title=Tïtle 1", "-metadata", "artist=Ann Artist",
            "-metadata", "comment=A comment", "-metadata", "date=2020", "-metadata", "album=An Album",
            "-metadata", "copyright=Someone", "-metadata", "genre=Test"])
        let probe = try Self.probeTags(file)
        #expect(probe.format["title"] == "Tïtle 1" && probe.format.count >= 7, "\(probe.format)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let keys: [String: String] = switch kind {
        case "flac": ["comment": "DESCRIPTION"]
        case "mp3": ["title": "TIT2", "artist": "TPE1", "date": "TDRC", "album": "TALB", "copyright": "TCOP",
                     "encoder": "TSSE", "genre": "TCON"]  // comment: ffmpeg's TXXX "comment"
        default: ["title": "INAM", "artist": "IART", "comment": "ICMT", "date": "ICRD", "album": "IPRD", "product": "IPRD",
                  "copyright": "ICOP", "encoder": "ISFT", "software": "ISFT", "genre": "IGNR"]
        }
        let space = ["flac": "vorbis", "mp3": "id3"][kind] ?? "riffinfo"
        for (key, value) in probe.format {
            let found = asset.metadata.filter { $0.keySpace == space && $0.key == (keys[key] ?? key) }.map(\.value)
            #expect(found == [value], "\(kind): ffprobe's \(key) = \(value), trackd's \(space)/\(keys[key] ?? key): \(found)")
        }
        let extra = asset.metadata.filter { item in
            item.identifier != "vorbis/vendor" && !probe.format.keys.contains { (keys[$0] ?? $0) == item.key }
        }
        #expect(extra.isEmpty && asset.metadata.allSatisfy { $0.keySpace == space }, "\(kind): \(asset.metadata)")
        #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "title").map(\.value) == ["Tïtle 1"])
        #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "artist").map(\.value) == ["Ann Artist"])
        #expect(MetadataItem.items(asset.commonMetadata, withCommonKey: "software").map(\.value).allSatisfy { $0.hasPrefix("Lavf") })
        #expect(asset.tracks.allSatisfy { $0.metadata.isEmpty })
    }

    /// MPEG-TS: the service provider and name of the SDT against ffprobe's program tags (ffmpeg writes `title` as the
    /// service name, with DVB's UTF-8 selector for non-ASCII text).
    @Test func transportStreamServiceNames() throws {
        let file = Media.make("meta-tags.ts", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=0.5", "-c:v", "mpeg2video",
                                               "-metadata", "title=Tïtle 1", "-metadata", "service_provider=A Provider"])
        let r = try run("ffprobe", ["-v", "error", "-show_programs", "-of", "json", file])
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let tags = try #require(((json["programs"] as? [[String: Any]])?.first?["tags"]) as? [String: String])
        #expect(tags == ["service_name": "Tïtle 1", "service_provider": "A Provider"], "\(tags)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        #expect(asset.metadata == tags.sorted { $0.key > $1.key }.map { tag in
            MetadataItem(keySpace: "mpegts", key: tag.key, commonKey: tag.key == "service_name" ? "title" : "publisher", value: tag.value)
        }, "\(asset.metadata)")
    }
}

