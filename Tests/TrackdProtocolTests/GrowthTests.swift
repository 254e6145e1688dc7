import TrackdProtocol
import TestSupport
import Testing

/// How version 2 grows (PROTOCOL.md §2.1): a payload or record of a newer revision (bytes appended) decodes as the
/// fields this revision knows; one of an older revision (appended fields missing) decodes with their defaults; a
/// record size that lies is still a violation.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct GrowthTests {
    /// Every appended field, by the message that carries it: the message, how many bytes shorter its payload was
    /// before the field (the older revision's payload), and what that payload decodes to (the field's default).
    /// A field appended to version 2 gets a row here.
    static let appendedFields: [(field: String, message: Message, olderBy: Int, decodesAs: Message)] = [
        ("Hello.capabilities", .hello(Hello(clientName: "x", capabilities: Capabilities(rawValue: 1 << 63))), 8,
         .hello(Hello(clientName: "x"))),
        ("OutputFinished.samplesLost", .outputFinished(OutputFinished(outputID: 1, status: .completed, samplesLost: 12)), 8,
         .outputFinished(OutputFinished(outputID: 1, status: .completed))),
        ("Status.samplesLost", .status(GoldenTests.status), 8, .status({
            var older = GoldenTests.status
            older.samplesLost = 0
            return older
        }())),
    ]

    @Test(arguments: appendedFields.indices)
    func anOlderRevisionDecodesWithTheDefaults(_ index: Int) throws {
        let (field, message, olderBy, expected) = Self.appendedFields[index]
        let older = Array(payload(of: message).dropLast(olderBy))
        let decoded = try decodeAll(MalformedTests.frame(message.type, older))
        #expect(decoded.first?.message == expected, "\(field)")
        // Part of the field is not its absence: that is a payload cut short.
        MalformedTests.expectViolation(MalformedTests.frame(message.type, Array(payload(of: message).dropLast(olderBy - 1))), "truncated")
    }

    /// `p` with `extra` appended inside the record whose u32 size is at `at` (a newer revision of that record), and
    /// the records enclosing it (their sizes at `enclosing`) grown to match.
    static func grown(_ p: [UInt8], recordAt at: Int, enclosing: [Int] = [], by extra: [UInt8]) -> [UInt8] {
        var p = p
        let end = at + 4 + Int(size(p, at))
        for offset in [at] + enclosing {
            p.replaceSubrange(offset..<offset + 4, with: le32(size(p, offset) + UInt32(extra.count)))
        }
        p.insert(contentsOf: extra, at: end)
        return p
    }

    static func size(_ p: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(p[at + $1]) << (8 * $1) }
    }

    /// The records of three messages: each one's size offset, the sizes of the records around it, and its own size.
    static let records: [(message: Message, recordAt: Int, enclosing: [Int], size: UInt32)] = {
        let sample = Message.sample(Fixtures.sample)
        let opened = Message.assetOpened(MetadataWireTests.example)
        let resolved = Message.framesResolved(outputID: 2, frames: [ResolvedFrame(index: 59, presentationTime: .zero),
                                                                    ResolvedFrame(index: 1, presentationTime: .invalid)])
        return [
            (sample, 84, [], 4), (sample, 93, [], 20), (sample, 117, [], 20),  // colorimetry, the two planes
            (opened, 22, [], 276),  // the track record, and inside it:
            (opened, 26 + 93, [22], 4), (opened, 26 + 129, [22], 64), (opened, 26 + 199, [22], 28),  // colorimetry, segment, item
            (opened, 304, [], 26),  // the asset's metadata item
            (resolved, 6, [], 24), (resolved, 34, [], 24),
        ]
    }()

    @Test(arguments: records.indices)
    func aNewerRecordDecodesAsTheFieldsItKnows(_ index: Int) throws {
        let (message, at, enclosing, size) = Self.records[index]
        let p = payload(of: message)
        #expect(Self.size(p, at) == size, "the record at \(at) of \(message.type)")
        for extra: [UInt8] in [[0], [0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8, 0xF7]] {
            let newer = Self.grown(p, recordAt: at, enclosing: enclosing, by: extra)
            let decoded = try decodeAll(MalformedTests.frame(message.type, newer))
            #expect(decoded.first?.message == message, "\(message.type): the record at \(at) with \(extra.count) bytes appended")
        }
    }

    /// A size smaller than the record's fields, or one that reaches past the bytes there are, is a violation.
    @Test(arguments: records.indices)
    func aSizeThatLiesIsAViolation(_ index: Int) {
        let (message, at, _, size) = Self.records[index]
        var p = payload(of: message)
        p.replaceSubrange(at..<at + 4, with: le32(size - 1))
        MalformedTests.expectViolation(MalformedTests.frame(message.type, p), "ends inside its fields")
        p.replaceSubrange(at..<at + 4, with: le32(UInt32(p.count)))
        MalformedTests.expectViolation(MalformedTests.frame(message.type, p), "truncated")
        p.replaceSubrange(at..<at + 4, with: le32(.max))
        MalformedTests.expectViolation(MalformedTests.frame(message.type, p), "truncated")
    }

    /// Revision 1's track-record fields (preferredTransform, codecConfiguration; 45 bytes in the example) absent:
    /// the identity and no configuration. Part of the matrix is not its absence.
    @Test func aRevision0TrackRecordDecodesWithTheDefaults() throws {
        let p = payload(of: .assetOpened(MetadataWireTests.example))
        let size = Int(Self.size(p, 22))
        func cut(_ n: Int) -> [UInt8] {
            Array(p[..<22]) + le32(UInt32(size - n)) + Array(p[26..<26 + size - n]) + Array(p[(26 + size)...])
        }
        var expected = MetadataWireTests.example
        expected.tracks[0].preferredTransform = .identity
        expected.tracks[0].codecConfiguration = []
        let decoded = try decodeAll(MalformedTests.frame(.assetOpened, cut(45)))
        #expect(decoded.first?.message == .assetOpened(expected))
        MalformedTests.expectViolation(MalformedTests.frame(.assetOpened, cut(44)), "ends inside its fields")
    }

    /// HelloReply's capabilities are not optional: a version-2 worker always sends them.
    @Test func helloReplyCarriesItsCapabilities() {
        let reply = payload(of: .helloReply(HelloReply(version: 2, maxMessageSize: 1, maxFds: 1, workerPID: 1, serverVersion: "",
                                                       capabilities: Capabilities(rawValue: 5))))
        #expect(Array(reply.suffix(8)) == le64(5))
        MalformedTests.expectViolation(MalformedTests.frame(.helloReply, Array(reply.dropLast(8))), "truncated")
    }

    /// §5.3: the worker uses, of the bits a client offers, only those it sends, and announces the requests it accepts.
    @Test func agreedCapabilities() {
        let all = Capabilities(rawValue: .max)
        #expect(Capabilities.agreed(offered: all) == Capabilities.workerSends.union(.workerAccepts))
        #expect(Capabilities.agreed(offered: []) == Capabilities.workerAccepts)
        #expect(Capabilities.workerSends.isDisjoint(with: .workerAccepts))
    }
}
