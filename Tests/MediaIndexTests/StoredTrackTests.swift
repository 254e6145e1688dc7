import Foundation
import MediaIndex
import TestSupport
import Testing

/// StoredTrack: an MP4 track's stored samples from its tables — their place, times and sync flags, what an edit
/// trims of an audio track, and what a read to the end still needs of a file cut short.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct StoredTrackTests {
    static func stored(_ bytes: [UInt8], trackID: UInt32 = 1) throws -> StoredTrack? {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("storedtrack-\(UUID().uuidString).mp4")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileReadNoPermission) }
        defer { close(fd) }
        return StoredTrack.mp4(fd: fd, trackID: trackID)
    }

    /// Places, decode times, composition offsets and sync flags as the tables list them; demuxer times in ns.
    @Test func samplesAreTheTables() throws {
        var movie = SyntheticMovie(tracks: [SampleTableTests.reordered])
        movie.tracks[0].syncs = [1, 3]
        let file = movie.bytes
        let track = try #require(try Self.stored(file))
        #expect(track.samples.count == 4 && track.isVideo && track.timescale == 1000)
        #expect(track.samples.map(\.size) == [16, 16, 16, 16])
        #expect(zip(track.samples, track.samples.dropFirst()).allSatisfy { $1.offset == $0.offset + 16 })
        #expect(track.samples.map(\.isSync) == [true, false, true, false])
        #expect(track.samples.map(\.decodeTime) == [0, 100, 200, 300])
        let offsets = SampleTableTests.reordered.offsets!.flatMap { Array(repeating: Int64($0.offset), count: Int($0.count)) }
        #expect(track.samples.map(\.compositionOffset) == offsets)
        #expect(track.demuxerTimes(1).decode == 100_000_000 && track.demuxerTimes(1).duration == 100_000_000)
        #expect(track.index(decodeNanoseconds: 200_000_000) == 2 && track.index(decodeNanoseconds: 200_000_001) == nil)
        #expect(track.tail(after: 3) == (4..<4, 0) && track.tail(after: 1).restore == 2..<4)
    }

    /// A file cut inside its third sample: a read that stopped after the first still needs the second; the third
    /// and fourth are lost.
    @Test func aCutFileGivesWhatItHolds() throws {
        let file = SyntheticMovie().bytes
        let track = try #require(try Self.stored(Array(file.prefix(file.count - 24))))  // 1.5 samples of 16 bytes cut
        #expect((0..<4).map(track.isWhole) == [true, true, false, false])
        let tail = track.tail(after: 0)
        #expect(tail.restore == 1..<2 && tail.lost == 2)
    }

    /// Audio with one edit (AAC priming of 1024 ticks; the edit ends 256 ticks into the last of four 1024-tick
    /// packets): the priming packet is trimmed whole at its start, the last one by 768 at its end; the tail after
    /// the third is the fourth (presented before the edit's end).
    @Test func anAudioEditTrims() throws {
        var movie = SyntheticMovie(movieTimescale: 1000)
        movie.tracks[0] = SyntheticTrack(timescale: 48000, handler: "soun", deltas: [(4, 1024)])
        movie.tracks[0].edits = [(duration: 48, mediaTime: 1024, rate: 0x0001_0000)]  // 48 ms = 2304 ticks
        let track = try #require(try Self.stored(movie.bytes))
        #expect(track.trimsAudio && track.editStart == 1024 && track.editEnd == 1024 + 2304)
        #expect(track.trim(0) == (1024, 0) && track.trim(1) == (0, 0) && track.trim(3) == (0, 768))
        #expect(track.presentationTime(0) == -1024)
        #expect(track.tail(after: 2).restore == 3..<4)
    }

    /// A chunk run that claims four billion samples in a table of four: refused at once (not four billion steps).
    @Test func aDamagedRunIsRefusedQuickly() throws {
        var movie = SyntheticMovie()
        movie.tracks[0].replaced["stsc"] = Box.table("stsc", [Box.u32(1) + Box.u32(0xFFFF_FFF0) + Box.u32(1)])
        #expect(try Self.stored(movie.bytes).map(\.samples.count) ?? 4 == 4)
    }
}
