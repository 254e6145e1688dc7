import CGStreamer
@testable import GstBridge
import MediaVocabulary
import TrackdProtocol
import TestSupport
import Testing

/// SyncStartGate's decisions, sample by sample (no GStreamer: its samples are any values), and GatedStart's use of it
/// on real GstSamples: a passthrough range starts at the sync sample presented at or before its start (for audio,
/// where every packet is one, at the packet at or before it) and delivers, in decode order, that sample and every one
/// after it.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SyncStartGateTests {
    /// A stored sample: its name, PTS and DTS (ns; nil: unknown) and whether it is a sync sample.
    typealias Packet = (name: String, pts: Int64?, dts: Int64?, sync: Bool)

    /// What the gate lets out for each packet in turn (one list per packet), then at the end (`flush`).
    static func run(start: Int64, _ packets: [Packet]) -> (each: [[String]], flushed: [String]) {
        var gate = SyncStartGate<String>(start: start)
        let each = packets.map { gate.admit($0.name, pts: $0.pts, dts: $0.dts, sync: $0.sync) }
        return (each, gate.flush())
    }

    /// A GOP decoded in order I0 P3 B1 B2 P6 B4 B5 (PTS in ms × 10⁶, DTS one frame earlier), then the next GOP I7.
    static let gop: [Packet] = [
        ("I0", 10, 0, true), ("P3", 40, 10, false), ("B1", 20, 20, false), ("B2", 30, 30, false),
        ("P6", 70, 40, false), ("B4", 50, 50, false), ("B5", 60, 60, false), ("I7", 80, 70, true),
    ].map { ($0.0, $0.1 * 1_000_000, $0.2 * 1_000_000, $0.3) }

    @Test func aRangeMidGOPStartsAtItsKeyFrameAndKeepsDecodeOrder() {
        // Start at 35 ms (B2 shows until 40): held from I0 until B4, the first decoded after the start.
        let (each, flushed) = Self.run(start: 35_000_000, Self.gop)
        #expect(each.prefix(4).allSatisfy { $0.isEmpty }, "\(each)")
        #expect(each[4] == ["I0", "P3", "B1", "B2", "P6"], "P6 decodes at 40 ms, after the start: \(each[4])")
        #expect(each.dropFirst(5) == [["B4"], ["B5"], ["I7"]])
        #expect(flushed.isEmpty, "nothing is held once the start is passed")
    }

    @Test func aKeyFrameExactlyAtTheStartIsWhereTheRangeStarts() {
        let (each, _) = Self.run(start: 80_000_000, Self.gop)
        #expect(each.prefix(7).allSatisfy { $0.isEmpty }, "the first GOP is forgotten: \(each)")
        #expect(each[7].isEmpty, "I7 at the start is held until a sample shows the start passed")
        let (later, flushed) = Self.run(start: 80_000_000, Self.gop + [("P8", 90_000_000, 80_000_000, false)])
        #expect(later[8].isEmpty, "P8 decodes at the start, not after it")
        #expect(flushed == ["I7", "P8"], "the end of the stream lets out the run held")
    }

    @Test func aLaterKeyFrameAtOrBeforeTheStartForgetsTheEarlierRun() {
        let next: [Packet] = [("P9", 100_000_000, 80_000_000, false), ("P10", 110_000_000, 90_000_000, false),
                              ("P11", 120_000_000, 100_000_000, false)]
        let (each, _) = Self.run(start: 95_000_000, Self.gop + next)
        #expect(each.prefix(10).allSatisfy { $0.isEmpty }, "\(each)")
        #expect(each[10] == ["I7", "P9", "P10", "P11"], "I0's GOP never comes out: \(each[10])")
    }

    @Test func aKeyFramePresentedAfterTheStartOpensTheGate() {
        // No DTS at all (the gate then goes by PTS): a key frame shown after the start passes it.
        let packets: [Packet] = [("K1", 10, nil, true), ("D2", 20, nil, false), ("K3", 30, nil, true), ("D4", 40, nil, false)]
        let (each, _) = Self.run(start: 25, packets)
        #expect(each == [[], [], ["K1", "D2", "K3"], ["D4"]], "\(each)")
    }

    @Test func samplesBeforeAnyKeyFrameAreDropped() {
        let packets: [Packet] = [("D1", 10, 10, false), ("D2", 20, 20, false), ("K3", 30, 30, true), ("D4", 40, 40, false),
                                 ("D5", 50, 50, false)]
        let (each, _) = Self.run(start: 45, packets)
        #expect(each == [[], [], [], [], ["K3", "D4", "D5"]], "\(each)")
        // A non-key sample decoded after the start with no key frame held: it alone opens the gate.
        let (open, _) = Self.run(start: 15, packets)
        #expect(open == [[], ["D2"], ["K3"], ["D4"], ["D5"]], "\(open)")
    }

    @Test func untimedSamplesGoWithTheRunBeforeThemOrAreDropped() {
        let packets: [Packet] = [("U0", nil, nil, false), ("K1", 10, 10, true), ("U2", nil, nil, false),
                                 ("S3", nil, nil, true), ("D4", 40, 40, false), ("U5", nil, nil, false)]
        let (each, flushed) = Self.run(start: 30, packets)
        #expect(each == [[], [], [], [], ["K1", "U2", "S3", "D4"], ["U5"]], "\(each)")
        #expect(flushed.isEmpty)
        // The stream ends before a timed sample passes the start: the run held, untimed ones included.
        let (_, atEnd) = Self.run(start: 30, Array(packets.prefix(4)))
        #expect(atEnd == ["K1", "U2", "S3"], "\(atEnd)")
    }

    @Test func aStartBeforeTheFirstSampleLetsEverythingThrough() {
        let (each, flushed) = Self.run(start: 5_000_000, Self.gop)
        #expect(each == Self.gop.map { [$0.name] }, "\(each)")
        #expect(flushed.isEmpty)
    }

    @Test func anEndOfStreamWithNothingPassedFlushesWhatIsHeldOrNothing() {
        var empty = SyncStartGate<String>(start: 50)
        #expect(empty.flush().isEmpty, "no sample at all")
        let (none, nothing) = Self.run(start: 50, [("D1", 10, 10, false), ("D2", 20, 20, false)])
        #expect(none == [[], []] && nothing.isEmpty, "no key frame before the start: nothing held, nothing out")
        var gate = SyncStartGate<String>(start: 50)
        _ = gate.admit("K1", pts: 10, dts: 10, sync: true)
        #expect(gate.flush() == ["K1"])
        #expect(gate.flush().isEmpty, "a flush empties the gate")
    }

    @Test func audioStartsAtThePacketAtOrBeforeTheStart() {
        // Every audio packet is a sync sample; 20 ms packets, PTS = DTS.
        let packets: [Packet] = (0..<6).map { ("A\($0)", Int64($0) * 20, Int64($0) * 20, true) }
        #expect(Self.run(start: 50, packets).each == [[], [], [], ["A2", "A3"], ["A4"], ["A5"]], "inside A2")
        #expect(Self.run(start: 60, packets).each == [[], [], [], [], ["A3", "A4"], ["A5"]], "at A3's start")
        #expect(Self.run(start: 100, packets).flushed == ["A5"], "inside the last packet: it comes at the end")
    }

    // MARK: GatedStart, on real GstSamples

    /// A GstSample of `name`'s bytes at `pts` (ms), decoding at the same time.
    static func sample(_ name: String, ms: Int64) throws -> PulledSample {
        let made = try #require(GstRef<GstSampleObject>.holding(Array(name.utf8), caps: nil))
        let plane = PlaneLayout(offset: 0, bytesPerRow: UInt32(name.utf8.count), rowBytes: UInt32(name.utf8.count), height: 1)
        let layout = SampleLayout(format: "test", width: 0, height: 0, planes: [plane])
        return PulledSample(made, layout: layout, copy: .bytes, timing: (.nanoseconds(ms * 1_000_000), .nanoseconds(20_000_000)),
                            decode: .nanoseconds(ms * 1_000_000))
    }

    /// Each admitted packet's name, with what was queued ahead of the next pull; then what the end flushes.
    static func names(_ gated: GatedStart, _ packets: [PulledSample], audio: Bool) -> (out: [String], flushed: [String]) {
        func name(_ s: PulledSample) -> String { String(decoding: s.leadingBytes(s.size), as: UTF8.self) }
        var out: [String] = []
        for p in packets {
            if case .sample(let s) = gated.admit(p, isAudio: audio) { out.append(name(s)) }
            while let next = gated.queued() { out.append(name(next)) }
        }
        var flushed = gated.flush().map { [name($0)] } ?? []
        while let next = gated.queued() { flushed.append(name(next)) }
        return (out, flushed)
    }

    @Test func gatedStartAfterASeekGatesAudioOnly() throws {
        try Gst.initialize()
        let packets = try (0..<5).map { try Self.sample("A\($0)", ms: Int64($0) * 20) }
        let gated = GatedStart()
        gated.arm(start: 50_000_000, audioOnly: true)
        #expect(Self.names(gated, packets, audio: true) == (["A2", "A3", "A4"], []))
        gated.arm(start: 50_000_000, audioOnly: true)
        #expect(Self.names(gated, packets, audio: false) == (["A0", "A1", "A2", "A3", "A4"], []),
                "a video track's samples pass: its seek found the key unit")
        gated.arm(start: 50_000_000)
        #expect(Self.names(gated, packets, audio: true) == (["A2", "A3", "A4"], []), "read from the beginning: audio")
        gated.arm(start: 90_000_000, audioOnly: true)
        #expect(Self.names(gated, packets, audio: true) == ([], ["A4"]), "the start inside the last packet")
        gated.arm(start: nil, audioOnly: true)
        #expect(Self.names(gated, packets, audio: true).out.count == 5, "a range from the track's start is not gated")
    }
}
