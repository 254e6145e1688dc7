import MediaIndex
import TestSupport
import Testing

/// Tables ContainerIndex must refuse (nil: the parse-only pass builds the index): those qtdemux reads differently
/// and those that do not fit in their boxes or their file.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct RefusedTablesTests {
    static let rate1: UInt32 = 0x0001_0000

    /// Each case changes one thing in a valid four-sample track.
    static let notReproduced: [(String, @Sendable (inout SyntheticMovie) -> Void)] = [
        ("two edits", { $0.tracks[0].edits = [(200, 0, rate1), (200, 200, rate1)] }),
        ("an empty edit", { $0.tracks[0].edits = [(100, -1, rate1)] }),
        ("a rate of 2", { $0.tracks[0].edits = [(200, 0, 0x0002_0000)] }),
        ("an edit ending before the last sample", { $0.tracks[0].edits = [(300, 0, rate1)] }),
        ("samples before the edit", { $0.tracks[0].edits = [(0, 150, rate1)] }),
        ("an edts without elst", { $0.tracks[0].edits = []; $0.tracks[0].replaced["elst"] = Box.box("free", []) }),
        ("a negative composition offset", { $0.tracks[0].offsets = [(1, 100), (1, -100), (2, 0)]; $0.tracks[0].cttsVersion = 1 }),
        ("stts short of the samples", { $0.tracks[0].sampleCount = 5 }),
        ("stts past the samples", { $0.tracks[0].sampleCount = 3 }),
        ("ctts short of the samples", { $0.tracks[0].offsets = [(3, 0)] }),
        ("ctts past the samples", { $0.tracks[0].offsets = [(5, 0)] }),
        ("no samples", { $0.tracks[0].deltas = [] }),
        ("a sound track", { $0.tracks[0].handler = "soun" }),
        ("a media timescale of 0", { $0.tracks[0].timescale = 0 }),
        ("a movie timescale of 0", { $0.movieTimescale = 0 }),
        ("a fragmented file", { $0.extra = [Box.box("mvex", Box.full("trex", [UInt8](repeating: 0, count: 20)))] }),
        ("more samples than qtdemux indexes", {
            $0.tracks[0].deltas = [(UInt32(ContainerIndex.maxSamples) + 1, 1)]
            $0.tracks[0].sampleSize = 1
        }),
    ]

    @Test func theStartingPointIsRead() {
        #expect(SyntheticMovie().frames()?.count == 4)
        var edited = SyntheticMovie()
        edited.tracks[0].edits = [(400, 0, Self.rate1)]
        #expect(edited.frames()?.count == 4)
    }

    @Test(arguments: notReproduced.map(\.0))
    func tablesQtdemuxReadsDifferentlyAreRefused(_ name: String) throws {
        var movie = SyntheticMovie()
        Self.notReproduced.first { $0.0 == name }!.1(&movie)
        #expect(movie.frames() == nil, "\(name)")
    }

    /// A table whose entry count claims one entry more than its box holds.
    @Test(arguments: ["stts", "ctts", "stss", "stsz", "stsc", "stco", "elst"])
    func aTableLongerThanItsBoxIsRefused(_ type: String) throws {
        var movie = SyntheticMovie()
        movie.tracks[0].offsets = [(4, 0)]
        movie.tracks[0].syncs = [1]
        movie.tracks[0].edits = [(400, 0, Self.rate1)]
        #expect(movie.frames() != nil)
        let entries: [String: [UInt8]] = [
            "stts": Box.u32(4) + Box.u32(100), "ctts": Box.u32(4) + Box.u32(0), "stss": Box.u32(1),
            "stsc": Box.u32(1) + Box.u32(4) + Box.u32(1), "stco": Box.u32(100),
            "elst": Box.u32(400) + Box.u32(0) + Box.u32(Self.rate1),
        ]
        if type == "stsz" {  // per-sample sizes: four announced, three there
            movie.tracks[0].replaced["stsz"] = Box.full("stsz", Box.u32(0) + Box.u32(4) + Box.u32(16) + Box.u32(16) + Box.u32(16))
        } else {
            movie.tracks[0].replaced[type] = Box.full(type, Box.u32(2) + entries[type]!)
        }
        #expect(movie.frames() == nil, "\(type)")
    }

    /// Sample data the file does not have (a recorder that stopped): the tables list more than the file holds.
    @Test func sampleDataPastTheEndOfTheFileIsRefused() throws {
        var movie = SyntheticMovie()
        let (file, body) = movie.layout
        #expect(ContainerIndex.frames(movie: body[...], fileSize: UInt64(file.count), trackID: 1) != nil)
        #expect(ContainerIndex.frames(movie: body[...], fileSize: UInt64(file.count - 1), trackID: 1) == nil)
        movie.tracks[0].replaced["stsc"] = Box.table("stsc", [Box.u32(2) + Box.u32(4) + Box.u32(1)])  // no chunk 1
        #expect(movie.frames() == nil)
        movie.tracks[0].replaced["stsc"] = Box.table("stsc", [Box.u32(1) + Box.u32(3) + Box.u32(1)])  // 3 of 4 samples
        #expect(movie.frames() == nil)
    }

    /// Every cut of the file — in the ftyp, the moov or the samples — and every cut of the moov's body is refused.
    @Test func everyCutIsRefused() throws {
        var movie = SyntheticMovie(tracks: [SampleTableTests.reordered])
        movie.tracks[0].edits = [(400, 100, Self.rate1)]
        let (file, body) = movie.layout
        #expect(try framesFromFile(file) != nil)
        for cut in 0..<file.count {
            #expect(try framesFromFile(Array(file.prefix(cut))) == nil, "file cut at \(cut)")
        }
        for cut in 0..<body.count {
            #expect(ContainerIndex.frames(movie: body.prefix(cut), fileSize: UInt64(file.count), trackID: 1) == nil,
                    "moov cut at \(cut)")
        }
    }

    /// A box whose size runs past its parent ends the walk of that level, and the whole table is refused.
    @Test func aBoxLargerThanItsParentIsRefused() throws {
        let movie = SyntheticMovie()
        var body = movie.layout.moovBody
        let trak = try #require(Self.find("trak", in: body)) - 4
        let size = Int(body[trak]) << 24 | Int(body[trak + 1]) << 16 | Int(body[trak + 2]) << 8 | Int(body[trak + 3])
        body.replaceSubrange(trak..<trak + 4, with: Box.u32(UInt32(size + 1)))
        #expect(ContainerIndex.frames(movie: body[...], fileSize: UInt64(movie.bytes.count), trackID: 1) == nil)
        body.replaceSubrange(trak..<trak + 4, with: Box.u32(7))  // smaller than its own header
        #expect(ContainerIndex.frames(movie: body[...], fileSize: UInt64(movie.bytes.count), trackID: 1) == nil)
    }

    static func find(_ type: String, in bytes: [UInt8]) -> Int? {
        let needle = Array(type.utf8)
        return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
