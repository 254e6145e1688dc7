import TrackdProtocol
import TestSupport
import Testing

/// Every malformed input is a `.protocolViolation` TrackError — never a trap, never a silently wrong message.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MalformedTests {
    static func expectViolation(_ bytes: [UInt8], _ fragment: String, maxMessageSize: UInt32 = Wire.maxMessageSizeCeiling,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        guard let error = decodeError(bytes, maxMessageSize: maxMessageSize) else {
            Issue.record("decoded without error; expected \"\(fragment)\"", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == AVErrorCode.protocolViolation.rawValue, sourceLocation: sourceLocation)
        #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    }

    /// `payload` under `type`'s header, with the type's descriptor count.
    static func frame(_ type: MessageType, _ payload: [UInt8]) -> [UInt8] {
        rawFrame(type: type.rawValue, payload: payload, fdCount: UInt16(type.fdCount))
    }

    /// Everything before hasSettings (flags 0 included).
    static let createPrefix: [UInt8] = Array(payload(of: .createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: nil))).dropLast())

    @Test func createOutputFlagsAndResetOutputCounts() {
        var prefix = Self.createPrefix
        for bits: UInt8 in [2, 0x80, 0xFF] {
            prefix[40] = bits
            Self.expectViolation(Self.frame(.createOutput, prefix + [0]), "createOutput.flags: unknown bits")
        }
        Self.expectViolation(Self.frame(.resetOutput, le32(1) + le16(0)), "at least one range")
        Self.expectViolation(Self.frame(.releaseSlots, le32(1) + le16(0)), "releaseSlots.count: 0; at least one slot is required")
        Self.expectViolation(Self.frame(.resetOutput, le32(1) + le16(UInt16(Wire.maxResetRanges + 1))), "exceeds")
        // Two ranges announced, one present.
        let one = Array(payload(of: .resetOutput(outputID: 1, ranges: [.everything])))
        Self.expectViolation(Self.frame(.resetOutput, le32(1) + le16(2) + one.dropFirst(6)), "resetOutput")
    }

    /// A CreateOutput whose settings dictionary body is `body` (after the hasSettings byte).
    static func createOutput(settings body: [UInt8]) -> [UInt8] {
        frame(.createOutput, createPrefix + [1] + body)
    }

    static func string(_ bytes: [UInt8]) -> [UInt8] { le16(UInt16(bytes.count)) + bytes }

    // ── Header ──────────────────────────────────────────────────────────────────────────────────────────────

    @Test func oversizedLengthIsRejectedFromTheHeaderAlone() {
        for limit: UInt32 in [16, 4096, Wire.defaultMaxMessageSize, Wire.maxMessageSizeCeiling] {
            // Only the header has arrived: the decoder must not wait for a payload it will never accept.
            Self.expectViolation(rawFrame(type: 1, payload: [], length: limit + 1), "exceeds the limit", maxMessageSize: limit)
        }
        Self.expectViolation(rawFrame(type: 1, payload: [], length: .max), "exceeds the limit")
    }

    @Test func lengthAtTheLimitIsAccepted() throws {
        let bytes = Codec.frame(.hello(Hello(clientName: "abc")), requestID: 1)
        let length = UInt32(bytes.count - Wire.headerSize)
        #expect(try decodeAll(bytes, maxMessageSize: length).count == 1)
        Self.expectViolation(bytes, "exceeds the limit", maxMessageSize: length - 1)
    }

    @Test func unknownType() {
        for type: UInt16 in [0x0000, 0x000D, 0x00FF, 0x8000, 0x800F, 0x80FE, 0xFFFF, 0x0101] {
            Self.expectViolation(rawFrame(type: type, payload: []), "unknown message type")
        }
    }

    @Test func reservedFieldMustBeZero() {
        for reserved: UInt32 in [1, 0x100, 0x1_0000, 0x8000_0000] {
            Self.expectViolation(rawFrame(type: MessageType.getStatus.rawValue, payload: [], reserved: reserved), "reserved")
        }
    }

    @Test func descriptorCountMustMatchTheType() {
        for type in MessageType.allCases {
            for count: UInt16 in [0, 1, 2, 0xFFFF] where Int(count) != type.fdCount {
                let p = payload(of: Fixtures.messages.first { $0.type == type }!)
                Self.expectViolation(rawFrame(type: type.rawValue, payload: p, fdCount: count), "descriptors")
            }
        }
    }

    @Test func shortBuffersDoNotTrap() {
        // Public entry points given bounds past the end of the array throw instead of trapping.
        #expect(throws: TrackError.self) { try FrameHeader.decode([1, 2, 3], at: 0) }
        #expect(throws: TrackError.self) { try FrameHeader.decode([UInt8](repeating: 0, count: 16), at: 8) }
        #expect(throws: TrackError.self) { try Codec.decodePayload(type: .closeAsset, [1, 2], from: 0, to: 4) }
        #expect(throws: TrackError.self) { try Codec.decodePayload(type: .closeAsset, [1, 2, 3, 4], from: 3, to: 2) }
        var r = ByteReader([1, 2], from: -5, to: 100)
        #expect(throws: TrackError.self) { try r.u32() }
    }

    // ── Payload length ─────────────────────────────────────────────────────────────────────────────────────

    /// Every fixture cut short by any number of bytes (with the header's length matching) is "truncated" — unless
    /// the cut is where an older revision's payload ends (GrowthTests).
    @Test func everyTruncationIsRejected() {
        for message in Fixtures.messages {
            let p = payload(of: message)
            // Large payloads: test the cuts near both ends and a stride through the middle.
            let cuts = p.count <= 600 ? Array(0..<p.count) : Array(0..<300) + Array(stride(from: 300, to: p.count - 300, by: 97)) + Array(p.count - 300..<p.count)
            let older = Set(GrowthTests.appendedFields.filter { $0.message.type == message.type }.map { p.count - $0.olderBy })
            for n in cuts where !older.contains(n) {
                Self.expectViolation(Self.frame(message.type, Array(p[..<n])), "truncated")
            }
        }
    }

    /// PROTOCOL.md §2.1: bytes after the fields a receiver knows are fields a later revision appended, and are
    /// ignored — in a payload, and inside a record (its size says where it ends).
    @Test func appendedBytesAreIgnored() throws {
        for message in Fixtures.messages {
            for extra: [UInt8] in [[0], [0xFF, 1, 2, 3, 4, 5, 6, 7, 8]] {
                let decoded = try decodeAll(Self.frame(message.type, payload(of: message) + extra))
                #expect(decoded.count == 1 && decoded.first?.message == message, "\(message.type) + \(extra.count) bytes")
            }
        }
    }

    @Test func countsLargerThanTheItemsPresent() {
        // ReleaseSlots says 3 slots, carries 2.
        Self.expectViolation(Self.frame(.releaseSlots, le32(1) + le16(3) + le32(1) + le32(0) + le32(1) + le32(1)), "truncated")
        // AssetOpened says 2 tracks, carries 1.
        var opened = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [Fixtures.track(1)])))
        opened[20] = 2
        Self.expectViolation(Self.frame(.assetOpened, opened), "truncated")
        // Sample says 3 planes, carries 2.
        var sample = payload(of: .sample(Fixtures.sample))
        sample[92] = 3
        Self.expectViolation(Self.frame(.sample, sample), "truncated")
        // A blob or string whose length runs past the payload.
        Self.expectViolation(Self.frame(.openAsset, le16(10) + [0x61, 0x62]), "truncated")
        var created = payload(of: .outputCreated(OutputCreated(outputID: 1, mediaType: .video, format: "avc1", width: 1, height: 1, codecConfig: [1, 2])))
        created[17] = 3
        Self.expectViolation(Self.frame(.outputCreated, created), "truncated")
    }

    @Test func countsAboveTheLimits() {
        Self.expectViolation(Self.frame(.releaseSlots, le32(1) + le16(UInt16(Wire.maxSlotsPerRelease + 1))), "exceeds")
        Self.expectViolation(Self.frame(.framesResolved, le32(1) + le16(UInt16(Wire.maxFrameRequests + 1))), "framesResolved.count: count 1025 exceeds 1024")
        Self.expectViolation(Self.frame(.assetOpened, le32(1) + Array(repeating: 0, count: 16) + le16(UInt16(Wire.maxTracks + 1))), "exceeds")
        var sample = payload(of: .sample(Fixtures.sample))
        sample[92] = UInt8(Wire.maxPlanes + 1)
        Self.expectViolation(Self.frame(.sample, sample), "exceeds")
        let oc = le32(1) + [1] + le32(0) + le32(0) + le32(0)
        Self.expectViolation(Self.frame(.outputCreated, oc + le32(UInt32(Wire.maxCodecConfig + 1))), "exceeds")
        Self.expectViolation(Self.frame(.outputCreated, oc + le32(.max)), "exceeds")
        Self.expectViolation(Self.frame(.openAsset, le16(UInt16(Wire.maxString + 1)) + Array(repeating: 0x61, count: Wire.maxString + 1)), "exceeds")
        Self.expectViolation(Self.frame(.openAsset, le16(.max)), "exceeds")
        Self.expectViolation(Self.createOutput(settings: le16(UInt16(Wire.maxSettingsItems + 1))), "exceeds")
        Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string([0x61]) + [5] + le16(UInt16(Wire.maxSettingsItems + 1))), "exceeds")
    }

    // ── Field values ───────────────────────────────────────────────────────────────────────────────────────

    @Test func booleansMustBeZeroOrOne() {
        // TrackDescription.hasAlpha: offset 22 (tracks) + 4 (the record's size) + 69.
        var opened = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [Fixtures.track(1)])))
        #expect(opened[26 + 69] == 0)
        for v: UInt8 in [2, 0x80, 0xFF] {
            opened[26 + 69] = v
            Self.expectViolation(Self.frame(.assetOpened, opened), "neither 0 nor 1")
            // Settings boolean.
            Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string([0x62]) + [3, v]), "neither 0 nor 1")
            // CreateOutput.hasSettings.
            Self.expectViolation(Self.frame(.createOutput, Self.createPrefix + [v]), "neither 0 nor 1")
        }
    }

    @Test func invalidUTF8IsRejected() {
        let bad: [[UInt8]] = [
            [0x80],  // lone continuation byte
            [0xC0, 0xAF],  // overlong "/"
            [0xE0, 0x80, 0xAF],  // overlong
            [0xED, 0xA0, 0x80],  // UTF-16 surrogate
            [0xE2, 0x82],  // truncated sequence
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xFF], [0xFE],
            [0x61, 0x62, 0xC3],  // valid prefix, cut mid-scalar
        ]
        for bytes in bad {
            Self.expectViolation(Self.frame(.openAsset, Self.string(bytes)), "UTF-8")
            Self.expectViolation(Self.frame(.error, le32(0) + Self.string(bytes)), "UTF-8")
            Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string(bytes) + [1] + le64(0)), "UTF-8")
            Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string([0x6B]) + [4] + Self.string(bytes)), "UTF-8")
        }
        // NUL is valid UTF-8 and travels unchanged.
        #expect(decodeError(Self.frame(.openAsset, Self.string([0x61, 0x00, 0x62]))) == nil)
    }

    @Test func helloMagic() {
        var hello = payload(of: .hello(Hello(clientName: "x")))
        #expect(Array(hello[0..<4]) == Array("TRKD".utf8))
        hello[0] = 0x74  // "tRKD"
        Self.expectViolation(Self.frame(.hello, hello), "magic")
        var reply = payload(of: .helloReply(HelloReply(version: 1, maxMessageSize: 1, maxFds: 1, workerPID: 1, serverVersion: "")))
        reply[3] = 0
        Self.expectViolation(Self.frame(.helloReply, reply), "magic")
        // Big-endian magic is wrong too.
        Self.expectViolation(Self.frame(.hello, Array("DKRT".utf8) + Array(hello[4...])), "magic")
    }

    @Test func outputFinishedStatus() {
        for status: UInt8 in [0, 1, 5, 0xFF] {
            Self.expectViolation(Self.frame(.outputFinished, le32(1) + [status] + le32(0) + le16(0)), "status")
        }
        for status: UInt8 in [2, 3, 4] {
            #expect(decodeError(Self.frame(.outputFinished, le32(1) + [status] + le32(0) + le16(0))) == nil)
        }
    }

    // ── Settings ───────────────────────────────────────────────────────────────────────────────────────────

    @Test func unknownSettingsTag() {
        for tag: UInt8 in [0, 7, 0xFF] {
            Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string([0x6B]) + [tag]), "unknown value tag")
        }
    }

    @Test func duplicateKeys() {
        let entry = Self.string([0x6B]) + [1] + le64(1)
        Self.expectViolation(Self.createOutput(settings: le16(2) + entry + entry), "appears twice")
        // In a nested dictionary too.
        Self.expectViolation(Self.createOutput(settings: le16(1) + Self.string([0x64]) + [6] + le16(2) + entry + entry), "appears twice")
        // Keys are compared as Unicode text: "é" precomposed and decomposed are the same key.
        let precomposed = Self.string([0xC3, 0xA9]) + [1] + le64(1)
        let decomposed = Self.string([0x65, 0xCC, 0x81]) + [1] + le64(2)
        Self.expectViolation(Self.createOutput(settings: le16(2) + precomposed + decomposed), "appears twice")
        // The same key in two different dictionaries is fine.
        let twoDicts = le16(2) + Self.string([0x61]) + [6] + le16(1) + entry + Self.string([0x62]) + [6] + le16(1) + entry
        #expect(decodeError(Self.createOutput(settings: twoDicts)) == nil)
    }

    /// A container nested `depth` levels deep, counting the top-level dictionary as 1.
    static func nested(depth: Int, innermostArray: Bool, leaf: [UInt8]) -> [UInt8] {
        // Build from the inside out: the innermost container holds `leaf` (a tagged value) or nothing.
        var value: [UInt8] = innermostArray ? [5] + le16(leaf.isEmpty ? 0 : 1) + leaf
                                            : [6] + le16(leaf.isEmpty ? 0 : 1) + (leaf.isEmpty ? [] : Self.string([0x6B]) + leaf)
        for level in stride(from: depth - 1, through: 2, by: -1) {
            value = level % 2 == 0 ? [5] + le16(1) + value : [6] + le16(1) + Self.string([0x6B]) + value
        }
        return le16(1) + Self.string([0x74]) + value  // the top-level dictionary, depth 1
    }

    @Test func settingsDepthLimit() throws {
        let leaf: [UInt8] = [1] + le64(7)
        for innermostArray in [false, true] {
            for leafBytes in [[], leaf] {
                for depth in 2...Wire.maxSettingsDepth {
                    #expect(decodeError(Self.createOutput(settings: Self.nested(depth: depth, innermostArray: innermostArray, leaf: leafBytes))) == nil,
                            "depth \(depth)")
                }
                Self.expectViolation(Self.createOutput(settings: Self.nested(depth: Wire.maxSettingsDepth + 1, innermostArray: innermostArray, leaf: leafBytes)),
                                     "nesting deeper")
            }
        }
        // Only dictionaries, only arrays.
        func chain(_ tag: UInt8, _ depth: Int) -> [UInt8] {
            var value: [UInt8] = [tag] + le16(0)
            for _ in 2..<depth { value = tag == 5 ? [5] + le16(1) + value : [6] + le16(1) + Self.string([0x6B]) + value }
            return le16(1) + Self.string([0x74]) + value
        }
        for tag: UInt8 in [5, 6] {
            #expect(decodeError(Self.createOutput(settings: chain(tag, Wire.maxSettingsDepth))) == nil)
            Self.expectViolation(Self.createOutput(settings: chain(tag, Wire.maxSettingsDepth + 1)), "nesting deeper")
        }
        // Built in Swift: `n` containers counting the top-level dictionary. The encoder does not enforce the
        // limit, so a too-deep dictionary is rejected by the receiver.
        func dictionaries(_ n: Int) -> Message {
            var v = SettingValue.int(1)
            for _ in 1..<n { v = .dictionary(["k": v]) }
            return .createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: ["t": v]))
        }
        #expect(try decodeAll(Codec.frame(dictionaries(Wire.maxSettingsDepth), requestID: 1)).first?.message
                == dictionaries(Wire.maxSettingsDepth))
        Self.expectViolation(Codec.frame(dictionaries(Wire.maxSettingsDepth + 1), requestID: 1), "nesting deeper")
    }

    /// A hostile frame of 100,000 nested arrays is rejected at the limit, without deep recursion.
    @Test func deepNestingDoesNotRecurse() {
        var body = le16(1) + Self.string([0x74])
        for _ in 0..<100_000 { body += [5] + le16(1) }
        Self.expectViolation(Self.createOutput(settings: body), "nesting deeper")
    }

    // ── Random mutation ────────────────────────────────────────────────────────────────────────────────────

    /// 20,000 mutated frames from a seeded PRNG: the decoder either yields messages or throws a protocol
    /// violation. Anything it yields re-encodes and decodes again to the same bytes.
    @Test func randomMutations() {
        var rng = SplitMix64(seed: 0x7472_6163_6B64)
        let frames = Fixtures.messages.filter { $0.type != .outputCreated && $0.type != .assetOpened || payload(of: $0).count < 30_000 }
            .map { Codec.frame($0, requestID: 9) }
        var decodedCount = 0
        var violationCount = 0
        for _ in 0..<20_000 {
            var bytes = frames.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                if bytes.isEmpty { bytes = frames.randomElement(using: &rng)! }
                switch Int.random(in: 0..<9, using: &rng) {
                case 0:  // flip a bit
                    let i = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                case 1:  // random byte
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                case 2:  // interesting byte in the payload
                    if bytes.count > Wire.headerSize {
                        bytes[Int.random(in: Wire.headerSize..<bytes.count, using: &rng)] = [0, 1, 2, 0x7F, 0x80, 0xFF].randomElement(using: &rng)!
                    }
                case 3:  // truncate
                    bytes.removeLast(Int.random(in: 0...min(bytes.count, 64), using: &rng))
                case 4:  // insert random bytes
                    let i = Int.random(in: 0...bytes.count, using: &rng)
                    bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: i)
                case 5:  // delete a range
                    if !bytes.isEmpty {
                        let i = Int.random(in: 0..<bytes.count, using: &rng)
                        bytes.removeSubrange(i..<min(bytes.count, i + Int.random(in: 1...8, using: &rng)))
                    }
                case 6:  // make the header length agree with the (mutated) payload
                    if bytes.count >= Wire.headerSize {
                        bytes.replaceSubrange(0..<4, with: le32(UInt32(bytes.count - Wire.headerSize)))
                    }
                case 7:  // random type with the right fd count
                    if bytes.count >= Wire.headerSize {
                        let type = MessageType.allCases.randomElement(using: &rng)!
                        bytes.replaceSubrange(4..<8, with: le16(type.rawValue) + le16(UInt16(type.fdCount)))
                    }
                default:  // splice the start of another frame
                    let other = frames.randomElement(using: &rng)!
                    bytes += other.prefix(Int.random(in: 0...other.count, using: &rng))
                }
            }
            var decoder = FrameDecoder(maxMessageSize: Wire.maxMessageSizeCeiling)
            decoder.feed(bytes)
            var decoded: [(header: FrameHeader, message: Message)] = []
            do throws(TrackError) {
                while let frame = try decoder.next() { decoded.append(frame) }
            } catch {
                violationCount += 1
                #expect(error.code == AVErrorCode.protocolViolation.rawValue)
            }
            for frame in decoded {
                decodedCount += 1
                let again = Codec.frame(frame.message, requestID: frame.header.requestID)
                var redecoder = FrameDecoder(maxMessageSize: Wire.maxMessageSizeCeiling)
                redecoder.feed(again)
                let m = try? redecoder.next()
                #expect(m != nil)
                if let m { #expect(Codec.frame(m.message, requestID: m.header.requestID) == again) }
            }
        }
        // Both outcomes happen (the mutations are neither all harmless nor all fatal).
        #expect(decodedCount > 1000)
        #expect(violationCount > 1000)
    }
}
