import MediaIndex
import TestSupport
import Testing

/// ContainerIndex on tables built in the test: the times qtdemux 1.22 gives (⌊t × 10⁹ / timescale⌋, minus the
/// edit's start the same way), and a refusal (nil: the parse-only pass decides) for every table it does not
/// reproduce exactly.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SampleTableTests {
    typealias Frame = FrameIndex.Frame
    static let ms: Int64 = 1_000_000

    /// I P B B in decode order (dts 0, 100, 200, 300 ms), shown I B B P: ctts 100, 300, 0, 0.
    static var reordered: SyntheticTrack {
        var track = SyntheticTrack()
        track.offsets = [(1, 100), (1, 300), (2, 0)]
        track.syncs = [1]
        return track
    }

    @Test func constantRateWithoutCompositionOffsets() throws {
        var movie = SyntheticMovie()
        movie.tracks[0].timescale = 30
        movie.tracks[0].deltas = [(3, 1)]
        let frames = try #require(movie.frames())
        #expect(frames == [Frame(presentationTime: 0, duration: 33_333_333, isSync: true, decodePosition: 0),
                           Frame(presentationTime: 33_333_333, duration: 33_333_333, isSync: true, decodePosition: 1),
                           Frame(presentationTime: 66_666_666, duration: 33_333_334, isSync: true, decodePosition: 2)])
        #expect(try framesFromFile(movie.bytes) == frames)
    }

    @Test func bFramesAreReorderedAndShiftedByTheEdit() throws {
        var movie = SyntheticMovie(tracks: [Self.reordered])
        #expect(movie.frames()?.map(\.presentationTime) == [100, 200, 300, 400].map { $0 * Self.ms })
        movie.tracks[0].edits = [(duration: 400, mediaTime: 100, rate: 0x0001_0000)]
        let expected = [Frame(presentationTime: 0, duration: 100 * Self.ms, isSync: true, decodePosition: 0),
                        Frame(presentationTime: 100 * Self.ms, duration: 100 * Self.ms, isSync: false, decodePosition: 2),
                        Frame(presentationTime: 200 * Self.ms, duration: 100 * Self.ms, isSync: false, decodePosition: 3),
                        Frame(presentationTime: 300 * Self.ms, duration: 100 * Self.ms, isSync: false, decodePosition: 1)]
        #expect(movie.frames() == expected)
        #expect(try framesFromFile(movie.bytes) == expected)
        movie.tracks[0].edits = [(duration: 0, mediaTime: 100, rate: 0x0001_0000)]  // no end: the samples' own
        #expect(movie.frames() == expected)
    }

    /// Each time is rounded down on its own, as qtdemux does: a frame's duration is the difference of its rounded
    /// end and start, and the edit's start is rounded before it is subtracted.
    @Test func timesAreRoundedDownLikeQtdemux() throws {
        var movie = SyntheticMovie()
        movie.tracks[0].timescale = 90_000
        movie.tracks[0].deltas = [(3, 3003)]
        movie.tracks[0].offsets = [(3, 6006)]
        movie.tracks[0].edits = [(duration: 0, mediaTime: 1001, rate: 0x0001_0000)]
        let scaled = { (t: Int64) in t * 1_000_000_000 / 90_000 }
        let frames = try #require(movie.frames())
        #expect(frames.map(\.presentationTime) == [6006, 9009, 12012].map { scaled($0) - scaled(1001) })
        #expect(frames.map(\.duration) == [0, 3003, 6006].map { scaled($0 + 3003) - scaled($0) })
        #expect(frames.map(\.duration) == [33_366_666, 33_366_667, 33_366_667])
    }

    @Test func syncSamplesComeFromStss() throws {
        var movie = SyntheticMovie()
        movie.tracks[0].syncs = [1, 3]
        #expect(movie.frames()?.map(\.isSync) == [true, false, true, false])
        movie.tracks[0].syncs = []  // empty: as if absent (qtdemux), every sample is a sync sample
        #expect(movie.frames()?.map(\.isSync) == [true, true, true, true])
        movie.tracks[0].syncs = nil
        #expect(movie.frames()?.map(\.isSync) == [true, true, true, true])
    }

    /// Version 1 boxes (64-bit times in mvhd's kin, 64-bit elst entries), co64 and 64-bit box sizes read the same.
    @Test func sixtyFourBitFormsReadTheSame() throws {
        var movie = SyntheticMovie(tracks: [Self.reordered])
        movie.tracks[0].edits = [(duration: 400, mediaTime: 100, rate: 0x0001_0000)]
        let expected = try #require(movie.frames())
        movie.tracks[0].boxVersion = 1
        movie.tracks[0].elstVersion = 1
        movie.tracks[0].co64 = true
        movie.largeMoov = true
        #expect(movie.frames() == expected)
        #expect(try framesFromFile(movie.bytes) == expected)
        movie.tracks[0].cttsVersion = 1  // signed offsets, all of them non-negative here
        #expect(movie.frames() == expected)
    }

    @Test func theTrackIsChosenByItsID() throws {
        var sound = SyntheticTrack()
        sound.handler = "soun"
        var video = Self.reordered
        video.id = 2
        let movie = SyntheticMovie(tracks: [sound, video])
        #expect(movie.frames(trackID: 2)?.map(\.decodePosition) == [0, 2, 3, 1])
        #expect(try framesFromFile(movie.bytes, trackID: 2)?.count == 4)
        #expect(movie.frames(trackID: 1) == nil)  // not video
        #expect(movie.frames(trackID: 3) == nil)  // no such track
    }

    /// Files that do not start like one qtdemux reads, or whose moov is where the walk does not reach.
    @Test func theFileMustLookLikeAnMP4() throws {
        var movie = SyntheticMovie()
        #expect(try framesFromFile(movie.bytes) != nil)
        movie.first = Box.box("free", [1, 2, 3])
        #expect(try framesFromFile(movie.bytes) != nil)
        movie.first = Box.box("abcd", [])
        #expect(try framesFromFile(movie.bytes) == nil)
        #expect(try framesFromFile([]) == nil)
        #expect(try framesFromFile(Array(movie.bytes.prefix(7))) == nil)
    }
}
