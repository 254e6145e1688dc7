import Foundation
import TestSupport
import Testing
import TrackClient

/// The supervisor's frame-index cache (docs/ARCHITECTURE.md "Frame index"): a track's index is built once per file
/// and shared by every worker of the same uid, kept on disk across restarts, and invalidated by a change to the file.
/// The workers' log lines tell a built index from a cached one; the frames are checked against ffmpeg each time.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FrameIndexCacheTests {
    static let y420: [String: SettingValue] = [SettingsKey.pixelFormatType: .int(Int64(FourCC("y420").rawValue))]
    static let wanted = [45, 3, 17]

    /// A private copy of the clip (the tests change its mtime, or key the cache by its inode), removed by `done`.
    static func copy(_ name: String) throws -> String {
        let path = Env.tempDir("indexcache") + "/" + name
        try FileManager.default.copyItem(atPath: Media.clip, toPath: path)
        return path
    }

    static func done(_ copy: String) {
        try? FileManager.default.removeItem(atPath: (copy as NSString).deletingLastPathComponent)
    }

    /// One client (its own connection, so its own worker) reading `wanted` frames; checks them against ffmpeg.
    static func readFrames(_ daemon: Daemon, _ file: String) throws {
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let frames = try asset.frames(atIndices: wanted.map(UInt64.init), track: track, outputSettings: y420)
        let md5 = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        #expect(frames.map { Int($0.index) } == wanted)
        for (frame, index) in zip(frames, wanted) {
            #expect(md5Hex(frame.sample.packedBytes()) == md5[index].md5, "frame \(index) bytes")
        }
    }

    /// The disk cache's frame-index files (its other entries are file descriptions).
    static func indexFiles(in cache: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: cache + "/index").filter { $0.hasSuffix(".idx") }
            .map { cache + "/index/" + $0 }
            .filter { path in
                let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
                return bytes.count >= 4 && (0...(bytes.count - 4)).contains { bytes[$0..<$0 + 4].elementsEqual(Array("TKFI".utf8)) }
            }
    }

    /// A first daemon using `cache` reads frames of `file`; returns the index file it wrote on disk.
    static func cachedIndex(of file: String, in cache: String) throws -> String {
        do {
            let first = try Daemon(env: ["CACHE_DIRECTORY": cache])
            defer { first.stop() }
            try readFrames(first, file)
        }
        return try #require(try indexFiles(in: cache).first)
    }

    /// How many of the workers' `frame-index` records of track 1 have `source` (`cache`, `sample-tables`,
    /// `parse-pass`; `made`: either of the last two). Where an index came from is in these records only: no reply or
    /// counter carries it. A worker writes the record before it answers the request that needed the index.
    static func count(_ daemon: Daemon, _ source: String) -> Int {
        daemon.events("frame-index") { $0["track"] == "1" && (source == "made" ? $0["source"] != "cache" : $0["source"] == source) }
            .count
    }

    /// With warm workers (the uid is given to the worker's index channel at hand-off) and cold ones.
    @Test(arguments: [[], ["--no-warm-worker"]])
    func secondClientGetsTheIndexFromTheCache(args: [String]) throws {
        let daemon = try Daemon(extraArgs: args)
        defer { daemon.stop() }
        let file = try Self.copy("shared.mp4")
        defer { Self.done(file) }
        try Self.readFrames(daemon, file)
        #expect(Self.count(daemon, "made") == 1)
        #expect(Self.count(daemon, "sample-tables") == 1)  // an MP4: no parse-only pass
        #expect(Self.count(daemon, "cache") == 0)
        try Self.readFrames(daemon, file)  // another Asset: another connection, another worker
        try Self.readFrames(daemon, file)
        #expect(Self.count(daemon, "made") == 1, "\(daemon.log)")
        #expect(Self.count(daemon, "cache") == 2)
    }

    @Test func restartedDaemonReadsTheDiskCopyAndAChangedFileIsIndexedAgain() throws {
        let cache = Env.tempDir("indexcache-dir-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let file = try Self.copy("restart.mp4")
        defer { Self.done(file) }
        do {
            let first = try Daemon(env: ["CACHE_DIRECTORY": cache])
            defer { first.stop() }
            try Self.readFrames(first, file)
            #expect(Self.count(first, "made") == 1)
        }
        #expect(try Self.indexFiles(in: cache).count == 1)  // (next to the file's description)
        let second = try Daemon(env: ["CACHE_DIRECTORY": cache])
        defer { second.stop() }
        try Self.readFrames(second, file)
        #expect(Self.count(second, "made") == 0, "\(second.log)")
        #expect(Self.count(second, "cache") == 1)
        // A new mtime is a new key: the index is built again (and cached again).
        let later = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: file)
        try Self.readFrames(second, file)
        #expect(Self.count(second, "made") == 1)
        try Self.readFrames(second, file)
        #expect(Self.count(second, "cache") == 2)
    }

    @Test func corruptedDiskCopyIsIgnoredAndRebuilt() throws {
        let cache = Env.tempDir("indexcache-dir-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let file = try Self.copy("corrupt.mp4")
        defer { Self.done(file) }
        let path = try Self.cachedIndex(of: file, in: cache)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        // Swap two frames' decode positions' low bytes at the end: the key still matches, the blob does not decode.
        bytes[bytes.count - 5] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: path))
        let second = try Daemon(env: ["CACHE_DIRECTORY": cache])
        defer { second.stop() }
        try Self.readFrames(second, file)
        #expect(Self.count(second, "made") == 1, "\(second.log)")
        #expect(Self.count(second, "cache") == 0)
        let rewritten = try #require(FileManager.default.contents(atPath: path))
        #expect(rewritten != bytes, "the rebuilt index replaced the corrupted copy")
    }

    /// An index whose times are not the demuxer's (planted in the disk cache: every frame 1 ms late) makes the
    /// sample filter keep back what the wanted frames need. The worker notices the missing frames at the end of the
    /// range, decodes it again with every sample, and the frames are still exact.
    @Test func indexWithWrongTimesFallsBackToWholeRanges() throws {
        let cache = Env.tempDir("indexcache-dir-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let file = try Self.copy("shifted.mp4")
        defer { Self.done(file) }
        let path = try Self.cachedIndex(of: file, in: cache)
        var bytes = [UInt8](try #require(FileManager.default.contents(atPath: path)))
        let blob = try #require((0...(bytes.count - 4)).first { bytes[$0..<$0 + 4].elementsEqual(Array("TKFI".utf8)) })
        let count = (0..<8).reduce(0) { $0 | Int(bytes[blob + 8 + $1]) << (8 * $1) }
        #expect(count == 60)
        for i in 0..<count {  // each frame: pts (i64 LE), duration, decode position, flags — 21 bytes
            let at = blob + 16 + i * 21
            var pts = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
            pts += 1_000_000
            for b in 0..<8 { bytes[at + b] = UInt8(truncatingIfNeeded: pts >> (8 * UInt64(b))) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let second = try Daemon(env: ["CACHE_DIRECTORY": cache])
        defer { second.stop() }
        try Self.readFrames(second, file)
        #expect(Self.count(second, "cache") == 1, "\(second.log)")
        #expect(!second.events("range-decoded-again").isEmpty, "\(second.log)")
        // A decoded range read by the same index matches no frame: it is read again by the decoder's clipping.
        let asset = try Asset(path: file, socketPath: second.socketPath)
        let output = try AssetReaderTrackOutput(track: try #require(asset.tracks(withMediaType: .video).first),
                                                outputSettings: Self.y420)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        // Half-way into frame 10 up to frame 15's PTS: frames 10 … 14.
        try reader.setTimeRange(MediaTimeRange(start: MediaTime(value: 21, timescale: 60), duration: MediaTime(value: 9, timescale: 60)))
        #expect(try reader.startReading())
        var got: [String] = []
        while let s = try output.copyNextSampleBuffer() { got.append(md5Hex(s.packedBytes())) }
        #expect(got == Array(try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")[10..<15].map(\.md5)))
        #expect(!second.events("frame-index-mismatch").isEmpty, "\(second.log)")
    }

    @Test func unwritableDirectoryMeansMemoryOnly() throws {
        let daemon = try Daemon(env: ["CACHE_DIRECTORY": "/proc/trackd-cannot-be-here"])
        defer { daemon.stop() }
        let file = try Self.copy("memory.mp4")
        defer { Self.done(file) }
        try Self.readFrames(daemon, file)
        try Self.readFrames(daemon, file)
        // (Logged before the supervisor accepts its first connection.)
        #expect(daemon.events("index-cache-in-memory-only").count == 1, "\(daemon.log)")
        #expect(Self.count(daemon, "made") == 1)
        #expect(Self.count(daemon, "cache") == 1)
    }

    @Test func noCacheWithZeroBytes() throws {
        let daemon = try Daemon(extraArgs: ["--index-cache-bytes", "0"])
        defer { daemon.stop() }
        let file = try Self.copy("nocache.mp4")
        defer { Self.done(file) }
        try Self.readFrames(daemon, file)
        try Self.readFrames(daemon, file)
        #expect(Self.count(daemon, "made") == 2)
        #expect(Self.count(daemon, "cache") == 0)
    }
}

/// What opening a file finds (duration, track records) is kept by the same cache, under the file's key with track
/// id 0: a later open of the unchanged file by the same uid skips the discovery pipeline and answers the same.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct AssetDescriptionCacheTests {
    static func opened(_ daemon: Daemon, _ file: String) throws -> AssetOpened {
        let raw = try RawClient(socketPath: daemon.socketPath)
        return try raw.openAsset(file)
    }

    /// Cache hits of asset descriptions: in the workers' `asset-from-cache` records only (the reply is the same
    /// either way, which the tests check), each written before the open is answered.
    static func cached(_ daemon: Daemon) -> Int {
        daemon.events("asset-from-cache").count
    }

    @Test func reopeningAFileSkipsDiscoveryAndAnswersTheSame() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let file = try FrameIndexCacheTests.copy("described.mp4")
        defer { FrameIndexCacheTests.done(file) }
        let first = try Self.opened(daemon, file)
        #expect(Self.cached(daemon) == 0)
        let second = try Self.opened(daemon, file)
        #expect(Self.cached(daemon) == 1, "\(daemon.log)")
        #expect(second == first)
        #expect(first.tracks.count == 2 && first.duration.isNumeric)
        // Changed (its mtime): discovered again.
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        _ = try Self.opened(daemon, file)
        #expect(Self.cached(daemon) == 1)
        // The frames still come from the cached description's tracks.
        try FrameIndexCacheTests.readFrames(daemon, file)
    }

    /// A file with a subtitle track is discovered every time: discovery does not wait for a subtitle track's data,
    /// so its language tag may come too late, and such a description must not be kept for later opens.
    @Test func filesWithSubtitlesAreNotKept() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let srt = Env.tempDir("subtitles") + "/cues.srt"
        try Data("1\n00:00:00,500 --> 00:00:00,900\nhello\n".utf8).write(to: URL(fileURLWithPath: srt))
        let file = Media.make("subtitled.mp4", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=1", "-i", srt,
                                                "-map", "0", "-map", "1", "-c:v", "libx264", "-c:s", "mov_text"])
        let first = try Self.opened(daemon, file)
        #expect(first.tracks.contains { $0.mediaType == .subtitle })
        #expect(try Self.opened(daemon, file) == first)
        #expect(Self.cached(daemon) == 0, "\(daemon.log)")
    }

    /// A description that is well framed but does not decode (planted on disk) is a miss: the file is discovered
    /// again and the copy replaced.
    @Test func undecodableDescriptionIsDiscoveredAgain() throws {
        let cache = Env.tempDir("indexcache-dir-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let file = try FrameIndexCacheTests.copy("baddescription.mp4")
        defer { FrameIndexCacheTests.done(file) }
        let expected: AssetOpened
        do {
            let first = try Daemon(env: ["CACHE_DIRECTORY": cache])
            defer { first.stop() }
            expected = try Self.opened(first, file)
        }
        let dir = cache + "/index/"
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".idx") }
        var planted = 0
        for name in names {
            var bytes = [UInt8](try #require(FileManager.default.contents(atPath: dir + name)))
            guard let at = (0...(bytes.count - 4)).first(where: { bytes[$0..<$0 + 4].elementsEqual(Array("TKAD".utf8)) })
            else { continue }
            for i in (at + 16)..<bytes.count { bytes[i] = 0xEE }  // the payload: garbage, the framing intact
            try Data(bytes).write(to: URL(fileURLWithPath: dir + name))
            planted += 1
        }
        #expect(planted == 1)
        let second = try Daemon(env: ["CACHE_DIRECTORY": cache])
        defer { second.stop() }
        #expect(try Self.opened(second, file) == expected)
        #expect(Self.cached(second) == 0)
        #expect(try Self.opened(second, file) == expected)
        #expect(Self.cached(second) == 1, "the rediscovered description replaced the bad one")
    }
}
