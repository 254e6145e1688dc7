import Foundation
import MediaIndex
import TestSupport
import Testing

/// MatroskaTail on Matroska files built in the test (IntegrationTests' AudioRangesTests and OpusTrimsTests: GStreamer's
/// WebM Opus, whose last block is stored at the Duration, and ffmpeg's MP3 with a DiscardPadding, against ffmpeg).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MatroskaTailTests {
    /// An EBML element: its id, its size as an 8-byte vint, its body.
    static func element(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] {
        id + [0x01] + (0..<7).map { UInt8(truncatingIfNeeded: UInt64(body.count) >> (8 * (6 - UInt64($0)))) } + body
    }

    static func unsigned(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * (7 - UInt64($0)))) } }

    /// A file of one Cluster at `clusterTicks` holding one unlaced block of track 1 at `relative` ticks: a
    /// SimpleBlock, or a BlockGroup with a DiscardPadding of `padding` ns; `before`: top-level elements before Info.
    static func file(scale: UInt64, durationTicks: Double, clusterTicks: UInt64, relative: Int16,
                     payload: [UInt8], padding: Int64? = nil, before: [UInt8] = []) -> [UInt8] {
        let info = element([0x15, 0x49, 0xA9, 0x66], element([0x2A, 0xD7, 0xB1], unsigned(scale))
            + element([0x44, 0x89], unsigned(durationTicks.bitPattern)))
        let r = UInt16(bitPattern: relative)
        let block = [0x81, UInt8(r >> 8), UInt8(r & 0xFF), 0x80] + payload
        let stored = padding.map {
            element([0xA0], element([0xA1], block) + element([0x75, 0xA2], unsigned(UInt64(bitPattern: $0))))
        } ?? element([0xA3], block)
        let cluster = element([0x1F, 0x43, 0xB6, 0x75], element([0xE7], unsigned(clusterTicks)) + stored)
        return element([0x1A, 0x45, 0xDF, 0xA3], element([0x42, 0x82], Array("webm".utf8)))
            + element([0x18, 0x53, 0x80, 0x67], before + info + cluster)
    }

    static func blocks(_ bytes: [UInt8], padded: Bool = false) throws -> [MatroskaTail.Block] {
        var work = MatroskaTail.Work()
        return try blocks(bytes, padded: padded, work: &work)
    }

    /// MatroskaTail's blocks of track 1 of a file of `bytes` (`padded`: its blocks with a DiscardPadding), its walk's
    /// work counted in `work`.
    static func blocks(_ bytes: [UInt8], padded: Bool = false, work: inout MatroskaTail.Work,
                       maxElements: Int = MatroskaTail.maxElements) throws -> [MatroskaTail.Block] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tail-\(UUID().uuidString).mkv").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try blocks(path: path, padded: padded, work: &work, maxElements: maxElements)
    }

    static func blocks(path: String, padded: Bool) throws -> [MatroskaTail.Block] {
        var work = MatroskaTail.Work()
        return try blocks(path: path, padded: padded, work: &work)
    }

    static func blocks(path: String, padded: Bool, work: inout MatroskaTail.Work,
                       maxElements: Int = MatroskaTail.maxElements) throws -> [MatroskaTail.Block] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        return padded ? MatroskaTail.paddedBlocks(fd: fd, trackNumber: 1)
            : MatroskaTail.blocks(fd: fd, trackNumber: 1, work: &work, maxElements: maxElements)
    }

    /// The blocks with a DiscardPadding, wherever they are in the last Cluster (libmp3lame's last block is before the
    /// Duration ffmpeg writes); a negative one (padding at the block's start) is none at its end.
    @Test func paddedBlocksAreFound() throws {
        let payload: [UInt8] = [0xFC, 1, 2, 3, 4]
        func file(_ padding: Int64?) -> [UInt8] {
            Self.file(scale: 1_000_000, durationTicks: 3000, clusterTicks: 2990, relative: 0, payload: payload, padding: padding)
        }
        let bytes = file(20_000)
        let found = try Self.blocks(bytes, padded: true)
        try #require(found.count == 1, "\(found)")
        #expect(found[0].time == 2_990_000_000 && found[0].discardPadding == 20_000)
        #expect(Array(bytes[found[0].offset..<found[0].offset + found[0].size]) == payload)
        #expect(try Self.blocks(file(nil), padded: true).isEmpty, "no DiscardPadding, no padded block")
        #expect(try Self.blocks(file(-20_000), padded: true).isEmpty)
        #expect(try Self.blocks(bytes).isEmpty, "a block before the Duration is not the tail's")
    }

    /// On ffmpeg's libmp3lame file in Matroska: the last block's DiscardPadding is ffprobe's `discard_padding` (frames
    /// at 44.1 kHz, rounded as ffmpeg's demuxer rounds it), on the packet ffprobe lists it on.
    @Test func ffmpegsMP3PaddingIsFfprobes() throws {
        let path = Media.make("tail-mp3.mka", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=3",
                                               "-c:a", "libmp3lame"])
        let skips = try Probe.packets(path, "a:0").filter { ($0.skip?.end ?? 0) > 0 }
        let found = try Self.blocks(path: path, padded: true)
        try #require(found.count == 1 && skips.count == 1, "\(found), ffprobe \(skips.count) packets with padding")
        #expect((found[0].discardPadding * 44100 + 500_000_000) / 1_000_000_000 == skips[0].skip?.end)
        #expect(found[0].time == (skips[0].pts ?? -1) * 1_000_000, "ffprobe's PTS in its 1/1000 time base")
    }

    /// A block stored at the Duration is found, at its time in ns, with its frame's place in the file.
    @Test func aBlockAtTheDurationIsFound() throws {
        let payload: [UInt8] = [0xFC, 1, 2, 3, 4]
        let bytes = Self.file(scale: 1_000_000, durationTicks: 3000, clusterTicks: 3000, relative: 0, payload: payload)
        let found = try Self.blocks(bytes)
        try #require(found.count == 1, "\(found)")
        #expect(found[0].time == 3_000_000_000)
        #expect(Array(bytes[found[0].offset..<found[0].offset + found[0].size]) == payload)
        #expect(try Self.blocks(Self.file(scale: 1_000_000, durationTicks: 3000, clusterTicks: 2990, relative: 0,
                                          payload: payload)).isEmpty, "a block before the Duration is not the tail's")
    }

    /// A Cluster Timestamp just under Int64.max / TimestampScale with a block 32767 ticks after it: the block's time
    /// does not fit in 64 bits, and the block is left out (a hostile file is no trap).
    @Test func aBlockTimePastInt64IsLeftOut() throws {
        let scale: UInt64 = 1_000_000_000
        let bytes = Self.file(scale: scale, durationTicks: 1, clusterTicks: UInt64(Int64.max) / scale - 1,
                              relative: .max, payload: [0xFC, 1])
        #expect(try Self.blocks(bytes).isEmpty)
    }

    /// At a TimestampScale of 1 a Cluster Timestamp may be Int64.max − 1, and a block 32767 ticks after it made
    /// `clusterTicks + relative` overflow — a trap in the worker (fuzz-mkvtail traps on this file without the fix).
    /// The block is left out.
    @Test func aBlockPastInt64AtScaleOneIsLeftOut() throws {
        let bytes = Self.file(scale: 1, durationTicks: 1, clusterTicks: UInt64(Int64.max) - 1, relative: .max, payload: [0xFC, 1])
        #expect(try Self.blocks(bytes).isEmpty)
        let fits = Self.file(scale: 1, durationTicks: 1, clusterTicks: UInt64(Int64.max) - 1, relative: 1, payload: [0xFC, 1])
        #expect(try Self.blocks(fits).map(\.time) == [.max])
    }

    /// A DiscardPadding of Int64.max ns is read as it is, and its 48 kHz samples (MatroskaTailFeeder's clipping
    /// meta) are ⌊(padding × 48000 + 5 × 10⁸) / 10⁹⌋ taken full width: the feeder's Int64 product trapped.
    @Test func aDiscardPaddingPastInt64SamplesIsCountedFullWidth() throws {
        let bytes = Self.file(scale: 1_000_000, durationTicks: 3000, clusterTicks: 3000, relative: 0, payload: [0xFC, 1],
                              padding: .max)
        let found = try Self.blocks(bytes)
        try #require(found.count == 1, "\(found)")
        #expect(found[0].discardPadding == .max)
        #expect(found[0].discardPaddingSamples(rate: 48000) == 442_721_857_769_029)
        var small = found[0]
        small.discardPadding = 3_500_000  // 168 samples at 48 kHz
        #expect(small.discardPaddingSamples(rate: 48000) == 168)
        small.discardPadding = 10_417  // 0.500016 samples: rounded half up
        #expect(small.discardPaddingSamples(rate: 48000) == 1)
    }

    /// A Segment of 100 000 two-byte Void elements before Info and the Cluster: the walk reads their headers in
    /// 4 KiB windows (about 50 reads, not one per element) and finds the tail block; with a bound below the count of
    /// elements it stops at the bound and finds none.
    @Test func manyTinyElementsAreWalkedInWindowsAndBounded() throws {
        let voids = Array([[UInt8]](repeating: [0xEC, 0x80], count: 100_000).joined())
        let bytes = Self.file(scale: 1_000_000, durationTicks: 3000, clusterTicks: 3000, relative: 0, payload: [0xFC, 1],
                              before: voids)
        var work = MatroskaTail.Work()
        #expect(try Self.blocks(bytes, work: &work).count == 1)
        #expect(work.elements == 100_002, "\(work)")  // the Voids, Info, the Cluster
        #expect(work.reads <= voids.count / 4084 + 3 && work.bytesRead <= bytes.count + 12 * work.reads, "\(work)")
        var bounded = MatroskaTail.Work()
        #expect(try Self.blocks(bytes, work: &bounded, maxElements: 50_000).isEmpty)
        #expect(bounded.elements == 50_000 && bounded.reads <= 50_000 * 2 / 4084 + 2, "\(bounded)")
    }
}
