import MediaIndex
import TestSupport
import Testing

/// OggLastPacket on Ogg pages built in the test (IntegrationTests' OpusTrimsTests: GStreamer's Opus with 2.5 ms
/// frames, whose last packet oggdemux never pushes, against ffprobe).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct OggLastPacketTests {
    /// A page of `packets` (lacing: 255s then the rest; `open`: the last one continues on the next page; `first`:
    /// its stream's first page, BOS).
    static func page(serial: UInt32, granule: Int64, continued: Bool = false, _ packets: [[UInt8]],
                     open: Bool = false, first: Bool = false) -> [UInt8] {
        var lacing: [UInt8] = []
        for (i, p) in packets.enumerated() {
            lacing += [UInt8](repeating: 255, count: p.count / 255)
            if !(open && i == packets.count - 1) { lacing.append(UInt8(p.count % 255)) }
        }
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        return Array("OggS".utf8) + [0, (continued ? 1 : 0) | (first ? 2 : 0)] + le(UInt64(bitPattern: granule), 8) + le(UInt64(serial), 4)
            + le(0, 4) + le(0, 4) + [UInt8(lacing.count)] + lacing + packets.flatMap { $0 }
    }

    static func bytes(_ n: Int, _ v: UInt8) -> [UInt8] { [UInt8](repeating: v, count: n) }

    /// The streams' serial numbers in the order of their first pages, up to the first page that is no BOS; none
    /// when the bytes do not start with a page.
    @Test func streamSerialsInTheOrderOfTheirFirstPages() {
        let heads = Self.page(serial: 0x1234_567A, granule: 0, [Self.bytes(19, 1)], first: true)
            + Self.page(serial: 0x1234_5678, granule: 0, [Self.bytes(30, 2)], first: true)
            + Self.page(serial: 3, granule: 0, [Self.bytes(30, 3)], first: true)
        let file = heads + Self.page(serial: 0x1234_5678, granule: 0, [Self.bytes(40, 4)])
            + Self.page(serial: 9, granule: 0, [Self.bytes(5, 5)], first: true)  // a later chain's
        #expect(OggLastPacket.streamSerials(head: file) == [0x1234_567A, 0x1234_5678, 3])
        #expect(OggLastPacket.streamSerials(head: Array(heads.dropLast(5))) == [0x1234_567A, 0x1234_5678])  // cut short
        #expect(OggLastPacket.streamSerials(head: [0x11] + file).isEmpty)
    }

    @Test func lastPacketOfTheLastPage() {
        let file = [0x11, 0x22] + Self.page(serial: 7, granule: 960, [Self.bytes(20, 1), Self.bytes(30, 2)])
            + Self.page(serial: 7, granule: 96_312, [Self.bytes(21, 3), Self.bytes(20, 4)])
        let last = OggLastPacket.lastPacket(tail: file)
        #expect(last?.packet == Self.bytes(20, 4) && last?.granule == 96_312)
        // Another stream's page after it: the stream asked for, or the last page's.
        let other = file + Self.page(serial: 9, granule: 5, [Self.bytes(3, 9)])
        #expect(OggLastPacket.lastPacket(tail: other, serial: 7)?.packet == Self.bytes(20, 4))
        #expect(OggLastPacket.lastPacket(tail: other)?.packet == Self.bytes(3, 9))
        #expect(OggLastPacket.lastPacket(tail: other, serial: 8) == nil)
    }

    /// A packet of 300 bytes laced over two pages (255 on the first, 45 continued), one of exactly 255 bytes (a
    /// 0 lacing value ends it).
    @Test func packetsAcrossPagesAndOf255Bytes() {
        let big = (0..<300).map { UInt8($0 % 251) }
        let file = Self.page(serial: 1, granule: 100, [Self.bytes(10, 1), Array(big.prefix(255))], open: true)
            + Self.page(serial: 1, granule: 200, continued: true, [Array(big.dropFirst(255))])
        #expect(OggLastPacket.lastPacket(tail: file)?.packet == big)
        #expect(OggLastPacket.lastPacket(tail: Self.page(serial: 1, granule: 1, [Self.bytes(255, 5)]))?.packet == Self.bytes(255, 5))
        // Its first part not in the bytes read: no packet (not a part of one).
        #expect(OggLastPacket.lastPacket(tail: Self.page(serial: 1, granule: 200, continued: true, [Array(big.dropFirst(255))])) == nil)
    }

    /// A file cut short: the last whole page's packet; nothing when no page is whole; a false capture pattern.
    @Test func truncations() {
        let file = Self.page(serial: 7, granule: 960, [Self.bytes(20, 1)]) + Self.page(serial: 7, granule: 1920, [Self.bytes(40, 2)])
        for cut in 1..<40 {
            #expect(OggLastPacket.lastPacket(tail: Array(file.dropLast(cut)))?.packet == Self.bytes(20, 1), "cut \(cut)")
        }
        for cut in 0..<48 { #expect(OggLastPacket.lastPacket(tail: Array(file.prefix(cut))) == nil, "first \(cut)") }
        #expect(OggLastPacket.lastPacket(tail: Array("OggS".utf8) + Self.bytes(40, 0xFF)) == nil)
        #expect(OggLastPacket.lastPacket(tail: []) == nil)
    }
}
