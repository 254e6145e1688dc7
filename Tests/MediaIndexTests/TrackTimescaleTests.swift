import Foundation
import MediaIndex
import TestSupport
import Testing
import MediaVocabulary

/// TrackTimescale on container headers built in the test (ffmpeg-made files are compared with ffprobe by
/// IntegrationTests' TimescaleTests).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TrackTimescaleTests {
    static func clocks(_ bytes: [UInt8]) throws -> [TrackTimescale.Clock] {
        try reading(bytes) { TrackTimescale.read(fd: $0) }
    }

    /// The container the bytes are, by TrackTimescale.container(fd:).
    static func container(_ bytes: [UInt8]) throws -> TrackTimescale.Container {
        try reading(bytes) { TrackTimescale.container(fd: $0) }
    }

    /// `body` on a descriptor of a temporary file holding `bytes`.
    static func reading<T>(_ bytes: [UInt8], _ body: (Int32) -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("timescale-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileReadNoPermission) }
        defer { close(fd) }
        return body(fd)
    }

    /// Each trak's mdhd timescale by tkhd track_ID; a video track's smallest stts delta.
    @Test func mp4TimescalesPerTrack() throws {
        var movie = SyntheticMovie()
        movie.tracks[0].timescale = 15360
        movie.tracks[0].deltas = [(2, 512), (1, 256), (1, 1024)]
        movie.tracks[0].edits = [(duration: 1000, mediaTime: 1024, rate: 0x0001_0000)]
        var audio = SyntheticTrack()
        audio.id = 2
        audio.timescale = 48000
        audio.handler = "soun"
        movie.tracks.append(audio)
        let clocks = try Self.clocks(movie.bytes)
        #expect(clocks.count == 2)
        #expect(clocks.first { $0.id == 1 } == TrackTimescale.Clock(id: 1, kind: .video, grid: TimeGrid(timescale: 15360, offset: 1024)!,
                                                                   minFrameDuration: 256))
        #expect(clocks.first { $0.id == 2 }?.grid == TimeGrid(timescale: 48000))
        #expect(clocks.first { $0.id == 2 }?.minFrameDuration == nil)
    }

    static func ebml(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] {
        precondition(body.count < 127)
        return id + [0x80 | UInt8(body.count)] + body
    }

    /// Segment/Info/TimestampScale, in a Segment of unknown size; absent → 1,000,000 ns (1/1000).
    @Test func matroskaTimestampScale() throws {
        let header = Self.ebml([0x1A, 0x45, 0xDF, 0xA3], Self.ebml([0x42, 0x82], Array("webm".utf8)))
        let unknownSegment: [UInt8] = [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        let seekHead = Self.ebml([0x11, 0x4D, 0x9B, 0x74], [0xEC, 0x81, 0x00])
        let info = Self.ebml([0x15, 0x49, 0xA9, 0x66], Self.ebml([0x2A, 0xD7, 0xB1], [0x01, 0x86, 0xA0]))  // 100000 ns
        let cluster = Self.ebml([0x1F, 0x43, 0xB6, 0x75], [0xE7, 0x81, 0x00])
        let filler = [UInt8](repeating: 0, count: 64)
        let clocks = try Self.clocks(header + unknownSegment + seekHead + info + cluster + filler)
        #expect(clocks == [TrackTimescale.Clock(id: nil, kind: .any, grid: TimeGrid(timescale: 10_000)!)])
        let plain = Self.ebml([0x15, 0x49, 0xA9, 0x66], Self.ebml([0x44, 0x89], [0x40, 0x8F, 0x40, 0, 0, 0, 0, 0]))
        let defaults = try Self.clocks(header + unknownSegment + plain + cluster + filler)
        #expect(defaults.first?.grid == TimeGrid(timescale: 1000))
        // A Cluster before any Info: nothing is claimed (nanoseconds).
        #expect(try Self.clocks(header + unknownSegment + cluster + info + filler).isEmpty)
    }

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + le32(UInt32(body.count)) + body }
    static func list(_ type: String, _ body: [UInt8]) -> [UInt8] { chunk("LIST", Array(type.utf8) + body) }
    static func strh(_ type: String, scale: UInt32, rate: UInt32) -> [UInt8] {
        chunk("strh", Array(type.utf8) + [UInt8](repeating: 0, count: 16) + le32(scale) + le32(rate) + [UInt8](repeating: 0, count: 24))
    }

    /// hdrl's strl lists: each video stream's rate/scale (reduced), in order; audio streams are left out.
    @Test func aviStreamHeaders() throws {
        let hdrl = Self.list("hdrl", Self.chunk("avih", [UInt8](repeating: 0, count: 56))
            + Self.list("strl", Self.strh("auds", scale: 4, rate: 176_400))
            + Self.list("strl", Self.strh("vids", scale: 1001, rate: 30000))
            + Self.list("strl", Self.strh("vids", scale: 2, rate: 50)))
        let file = Self.chunk("RIFF", Array("AVI ".utf8) + hdrl + Self.list("movi", []))
        let clocks = try Self.clocks(file)
        #expect(clocks == [TrackTimescale.Clock(id: nil, kind: .video, ordinal: 0, grid: TimeGrid(timescale: 30000, tick: 1001)!,
                                                minFrameDuration: 1001),
                           TrackTimescale.Clock(id: nil, kind: .video, ordinal: 1, grid: TimeGrid(timescale: 25)!,
                                                minFrameDuration: 1)])
    }

    /// MPEG-TS: 90 kHz; anything unknown: no clock.
    @Test func transportStreamAndUnknown() throws {
        var ts = [UInt8](repeating: 0xFF, count: 188 * 6)
        for i in 0..<6 { ts[188 * i] = 0x47 }
        #expect(try Self.clocks(ts).first?.grid == TimeGrid(timescale: 90_000))
        #expect(try Self.clocks(Array("this is not a container at all".utf8)).isEmpty)
    }

    /// MPEG-PS (a pack header first): 90 kHz for every track; an elementary stream of start codes (Annex B H.264 or
    /// HEVC, MPEG video): no clock. Both, and MPEG-TS, span their packets; an MP4 whose first box has a 64-bit size
    /// (size field 1, like a start code) is still an MP4.
    @Test func programAndElementaryStreams() throws {
        let pad = [UInt8](repeating: 0xFF, count: 64)
        let pack: [UInt8] = [0, 0, 1, 0xBA, 0x44, 0, 4, 0, 4, 1, 1, 0x89, 0xC3, 0xF8] + pad
        #expect(try Self.container(pack) == .programStream)
        #expect(try Self.clocks(pack) == [TrackTimescale.Clock(id: nil, kind: .any, grid: TimeGrid(timescale: 90_000)!)])
        for stream: [UInt8] in [[0, 0, 0, 1, 0x67, 0x64, 0, 0x0C], [0, 0, 0, 1, 0x40, 0x01, 0x0C, 0x01], [0, 0, 1, 0xB3, 0x0A, 0]] {
            #expect(try Self.container(stream + pad) == .elementaryStream, "\(stream)")
            #expect(try Self.clocks(stream + pad).isEmpty, "\(stream)")
        }
        #expect(try Self.container([0, 0, 0, 1] + Array("ftyp".utf8) + pad) == .mp4)
        let spanning: [TrackTimescale.Container] = [.transportStream, .programStream, .elementaryStream]
        for kind: TrackTimescale.Container in [.mp4, .matroska, .transportStream, .programStream, .elementaryStream, .avi, .other] {
            #expect(kind.spansPackets == spanning.contains(kind), "\(kind)")
        }
    }
}
