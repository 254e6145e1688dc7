import TrackdProtocol
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct RoundTripTests {
    @Test func fixturesCoverEveryMessageType() {
        #expect(Set(Fixtures.messages.map(\.type)) == Set(MessageType.allCases))
    }

    @Test(arguments: Fixtures.messages.indices)
    func roundTrip(_ index: Int) throws {
        let message = Fixtures.messages[index]
        let requestID = UInt32(0x0102_0304 &+ index)
        let bytes = Codec.frame(message, requestID: requestID)

        // The header, byte by byte.
        #expect(bytes.count >= Wire.headerSize)
        #expect(Array(bytes[0..<4]) == le32(UInt32(bytes.count - Wire.headerSize)))
        #expect(Array(bytes[4..<6]) == le16(message.type.rawValue))
        #expect(Array(bytes[6..<8]) == le16(UInt16(message.type.fdCount)))
        #expect(Array(bytes[8..<12]) == le32(requestID))
        #expect(Array(bytes[12..<16]) == [0, 0, 0, 0])

        // Everything fits the default limit.
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        let frame = try #require(try decoder.next())
        #expect(frame.message == message)
        #expect(frame.header == FrameHeader(length: UInt32(bytes.count - Wire.headerSize), type: message.type.rawValue,
                                            fdCount: UInt16(message.type.fdCount), requestID: requestID))
        #expect(decoder.pendingBytes == 0)
        #expect(try decoder.next() == nil)

        // Encoding is deterministic (settings keys are sorted) and a decoded message re-encodes to the same bytes.
        #expect(Codec.frame(frame.message, requestID: requestID) == bytes)
    }

    /// §9 Sample: the colorimetry record (size 4) at 84, planeCount at 92, each plane a record of 4 + 20 bytes, and
    /// frameCount the last u32 after the planes.
    @Test func sampleFrameCountFollowsThePlanes() {
        let payload = Array(Codec.frame(.sample(Fixtures.audioSample), requestID: 1).dropFirst(Wire.headerSize))
        #expect(payload.count == 97 + 24 * 2)
        #expect(Array(payload[84..<88]) == le32(4) && payload[92] == 2 && Array(payload[93..<97]) == le32(20))
        #expect(Array(payload[141...]) == le32(1024))
    }

    /// §9 Sample flag 16: the trim durations follow frameCount (§14.2 "Sample with trims"); the flag is set by the
    /// trims, and without them the payload ends at frameCount.
    @Test func sampleTrimsFollowTheFrameCount() throws {
        let example = GoldenTests.trimmedSample
        #expect(example.flags == 19)
        let bytes = Codec.frame(.sample(example), requestID: 3)
        #expect(bytes.count == Wire.headerSize + 97 + 24 + 32)
        var plain = example
        plain.trims = nil
        plain.flags = 3
        #expect(Codec.frame(.sample(plain), requestID: 3).count == bytes.count - 32)
    }

    /// §8 CreateOutput: `flags` at payload offset 40, before hasSettings; the §14.2 worked example's bytes.
    @Test func createOutputFlagsPrecedeTheSettings() {
        let plain = Array(Codec.frame(.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: nil)),
                                      requestID: 3).dropFirst(Wire.headerSize))
        #expect(plain.count == 42 && plain[40] == 0 && plain[41] == 0)
        let random = Array(Codec.frame(.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: nil,
                                                                  supportsRandomAccess: true)), requestID: 3).dropFirst(Wire.headerSize))
        #expect(random[40] == 1 && random[41] == 0)
        let example = Codec.frame(.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything,
                                                             settings: ["PixelFormatType": .int(0x3432_3076)])), requestID: 3)
        #expect(example.count == 86)
        #expect(Array(example[0..<16]) == [0x46, 0, 0, 0, 0x04, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(example[0x30..<0x40]) == [0, 0, 0, 0, 5, 0, 0, 0, 0, 1, 1, 0, 0x0f, 0, 0x50, 0x69])
        #expect(Array(example[0x40...]) == Array("xelFormatType".utf8) + [1, 0x76, 0x30, 0x32, 0x34, 0, 0, 0, 0])
    }

    /// §9 Sample flags bits.
    @Test func sampleFlagBits() {
        #expect(Sample.flagSync == 1 && Sample.flagHasDecodeTime == 2 && Sample.flagDiscontinuity == 4 && Sample.flagDroppable == 8)
    }

    @Test func fdCounts() {
        for type in MessageType.allCases {
            let expected = [.openAsset, .poolAdded, .image].contains(type) ? 1 : 0
            #expect(type.fdCount == expected, "\(type)")
        }
    }

    @Test func typeNumbers() {
        let numbers: [MessageType: UInt16] = [
            .hello: 0x0001, .openAsset: 0x0002, .closeAsset: 0x0003, .createOutput: 0x0004, .releaseSlots: 0x0005,
            .cancelOutput: 0x0006, .generateImage: 0x0007, .getStatus: 0x0008, .resetOutput: 0x0009,
            .finishOutput: 0x000A, .readFrames: 0x000B, .countFrames: 0x000C, .helloReply: 0x8001,
            .assetOpened: 0x8002, .ack: 0x8003, .outputCreated: 0x8004, .poolAdded: 0x8005, .poolRemoved: 0x8006,
            .sample: 0x8007, .outputFinished: 0x8008, .image: 0x8009, .status: 0x800A, .rangeEnded: 0x800B,
            .framesResolved: 0x800C, .frameCount: 0x800D, .outputStalled: 0x800E, .error: 0x80FF,
        ]
        #expect(numbers.count == MessageType.allCases.count)
        for (type, number) in numbers { #expect(type.rawValue == number) }
    }

    @Test func floatingPointIsCarriedBitExact() throws {
        let values: [Double] = [-0.0, .nan, -.nan, .signalingNaN, .infinity, -.infinity, .leastNonzeroMagnitude,
                                .greatestFiniteMagnitude, Double(bitPattern: 0x7FF8_0000_DEAD_BEEF)]
        for v in values {
            let message = Message.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything,
                                                            settings: ["v": .double(v)]))
            let decoded = try decodeAll(Codec.frame(message, requestID: 1))
            guard case .createOutput(let c) = decoded.first?.message, case .double(let d)? = c.settings?["v"] else {
                Issue.record("no double decoded for \(v)")
                continue
            }
            #expect(d.bitPattern == v.bitPattern)
        }
        var w = ByteWriter()
        w.f64(1.0)
        #expect(w.bytes == [0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
    }

    @Test func primitiveEncodings() {
        var w = ByteWriter()
        w.u16(0x0102)
        w.u32(0x0304_0506)
        w.i32(-2)
        w.i64(-2)
        w.bool(true)
        w.bool(false)
        w.string("é")
        w.blob([9, 8])
        w.fourCC("420v")
        w.time(MediaTime(value: 1001, timescale: 30000))
        #expect(w.bytes == [0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0xFE, 0xFF, 0xFF, 0xFF,
                            0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x00,
                            0x02, 0x00, 0xC3, 0xA9, 0x02, 0x00, 0x00, 0x00, 9, 8,
                            0x76, 0x30, 0x32, 0x34,
                            0xE9, 0x03, 0, 0, 0, 0, 0, 0, 0x30, 0x75, 0, 0, 0x01, 0, 0, 0])
    }

    /// Settings encode as tag bytes 1…6 with u16 counts; a dictionary's keys are sorted.
    @Test func settingsEncoding() {
        let message = Message.createOutput(CreateOutput(
            assetID: 1, trackID: 2, timeRange: .everything,
            settings: ["b": .array([.int(-1), .bool(true)]), "a": .dictionary(["x": .double(0.5), "y": .string("z")])]))
        let p = payload(of: message)
        let settings = Array(p[40...])
        #expect(settings == [
            0,  // flags
            1,  // hasSettings
            2, 0,  // two entries
            1, 0, 0x61, 6, 2, 0,  // "a": dictionary of 2
            1, 0, 0x78, 2, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F,  // "x": 0.5
            1, 0, 0x79, 4, 1, 0, 0x7A,  // "y": "z"
            1, 0, 0x62, 5, 2, 0,  // "b": array of 2
            1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // -1
            3, 1,  // true
        ])
    }

    @Test func longStringsAreCutAtAScalarBoundary() throws {
        for (text, expectedBytes) in [(String(repeating: "a", count: 5000), 4096),
                                      ("a" + String(repeating: "🎬", count: 1100), 4093),
                                      ("ab" + String(repeating: "日", count: 1500), 4094),
                                      (String(repeating: "é", count: 3000), 4096)] {
            let decoded = try decodeAll(Codec.frame(.openAsset(name: text), requestID: 1))
            guard case .openAsset(let name) = decoded.first?.message else {
                Issue.record("not decoded")
                continue
            }
            #expect(name.utf8.count == expectedBytes)
            #expect(text.hasPrefix(name))
        }
    }

    /// The encoder never writes more than the decoder accepts: over-long lists are cut to the limit.
    @Test func overLongListsAreCutToTheLimit() throws {
        let slots = (0..<UInt32(Wire.maxSlotsPerRelease + 10)).map { SlotRef(poolID: 1, slot: $0) }
        let decoded = try decodeAll(Codec.frame(.releaseSlots(outputID: 1, slots: slots), requestID: 1))
        #expect(decoded.first?.message == .releaseSlots(outputID: 1, slots: Array(slots.prefix(Wire.maxSlotsPerRelease))))

        let tracks = (0..<UInt32(Wire.maxTracks + 1)).map(Fixtures.track)
        let opened = try decodeAll(Codec.frame(.assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: tracks)), requestID: 1))
        #expect(opened.first?.message == .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: Array(tracks.prefix(Wire.maxTracks)))))

        let items = (0..<Wire.maxSettingsItems + 5).map { SettingValue.int(Int64($0)) }
        let created = try decodeAll(Codec.frame(.createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything,
                                                                           settings: ["a": .array(items)])), requestID: 1))
        #expect(created.first?.message == .createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything,
                                                                     settings: ["a": .array(Array(items.prefix(Wire.maxSettingsItems)))])))
    }

    /// Unknown media types decode as `other` instead of failing (new kinds may appear).
    @Test func unknownMediaTypeIsOther() throws {
        var p = payload(of: .outputCreated(OutputCreated(outputID: 1, mediaType: .video, format: "420v", width: 1, height: 1, codecConfig: [])))
        p[4] = 200
        let decoded = try decodeAll(rawFrame(type: MessageType.outputCreated.rawValue, payload: p))
        guard case .outputCreated(let o) = decoded.first?.message else { Issue.record("not decoded"); return }
        #expect(o.mediaType == .other)
    }

    /// The track record's bitsPerComponent and chromaSubsampling sit at offsets 70 and 71 (PROTOCOL.md §7.2);
    /// unknown chroma values decode as `unknown`; the detail fields follow the language string.
    @Test func trackRecordDepthAndChroma() throws {
        var p = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [Fixtures.track(1)])))
        // After its u32 size, the record is 128 + n bytes when only the language ("und") is set (no segments, no
        // metadata: two u16 counts), then revision 1's matrix (36) and empty codecConfiguration (4), then the asset's
        // metadata count.
        #expect(p.count == 26 + 128 + 3 + 40 + 2 && Array(p[22..<26]) == le32(128 + 3 + 40))
        #expect(p[26 + 70] == 10 && p[26 + 71] == 1)
        p[26 + 71] = 200
        let decoded = try decodeAll(rawFrame(type: MessageType.assetOpened.rawValue, payload: p))
        guard case .assetOpened(let o) = decoded.first?.message else { Issue.record("not decoded"); return }
        #expect(o.tracks.first?.chromaSubsampling == .unknown && o.tracks.first?.bitsPerComponent == 10)
        #expect(o.tracks.first?.rotation == -90)
        // After "und": profile "", level "", then parNumerator at 26 + 76 + 5 + 4 (two empty strings).
        let details = TrackDescription(id: 1, mediaType: .video, codec: "avc1", language: "und", profile: "high",
                                       level: "4", pixelAspectRatio: PixelAspectRatio(numerator: 16, denominator: 11),
                                       colorimetry: Colorimetry(range: 1, matrix: 6, primaries: 6, transfer: 6), bitRate: 5_000_000)
        let q = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [details])))
        let par = 26 + 76 + 5 + 6 + 3  // language "und", profile "high", level "4", each after its u16 length
        #expect(Array(q[par..<par + 8]) == [16, 0, 0, 0, 11, 0, 0, 0])
        #expect(Array(q[par + 8..<par + 16]) == le32(4) + [1, 6, 6, 6])  // the colorimetry record
    }

    /// naturalTimeScale (i32) and minFrameDuration (time) end the record, after channelLayout (PROTOCOL.md §7.2):
    /// 30000 and 1001/30000 valid, after the record's 104 + 3 bytes.
    @Test func trackRecordTimescale() throws {
        let p = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [Fixtures.track(1)])))
        let at = 26 + 104 + 3
        #expect(Array(p[at..<at + 20]) == [0x30, 0x75, 0, 0, 0xE9, 0x03, 0, 0, 0, 0, 0, 0, 0x30, 0x75, 0, 0, 1, 0, 0, 0])
        let decoded = try decodeAll(rawFrame(type: MessageType.assetOpened.rawValue, payload: p))
        guard case .assetOpened(let o) = decoded.first?.message else { Issue.record("not decoded"); return }
        #expect(o.tracks.first?.naturalTimeScale == 30000)
        #expect(o.tracks.first?.minFrameDuration == MediaTime(value: 1001, timescale: 30000))
        // A record cut before them (and the segment and metadata counts after them) is short, not a track without
        // a timescale.
        #expect(throws: TrackError.self) { try decodeAll(rawFrame(type: MessageType.assetOpened.rawValue, payload: Array(p.dropLast(20 + 6)))) }
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct StreamingTests {
    static let stream: [UInt8] = Fixtures.messages.enumerated().flatMap { i, m in Codec.frame(m, requestID: UInt32(i + 1)) }

    static func check(_ frames: [(header: FrameHeader, message: Message)]) {
        #expect(frames.count == Fixtures.messages.count)
        for (i, frame) in frames.enumerated() where i < Fixtures.messages.count {
            #expect(frame.message == Fixtures.messages[i])
            #expect(frame.header.requestID == UInt32(i + 1))
        }
    }

    @Test func oneByteAtATime() throws {
        var decoder = FrameDecoder()
        var frames: [(header: FrameHeader, message: Message)] = []
        for byte in Self.stream {
            decoder.feed(CollectionOfOne(byte))
            while let frame = try decoder.next() { frames.append(frame) }
        }
        Self.check(frames)
        #expect(decoder.pendingBytes == 0)
    }

    @Test func allFramesInOneChunk() throws {
        var decoder = FrameDecoder()
        decoder.feed(Self.stream)
        var frames: [(header: FrameHeader, message: Message)] = []
        while let frame = try decoder.next() { frames.append(frame) }
        Self.check(frames)
        #expect(decoder.pendingBytes == 0)
    }

    @Test func randomChunks() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<20 {
            var decoder = FrameDecoder()
            var frames: [(header: FrameHeader, message: Message)] = []
            var at = 0
            while at < Self.stream.count {
                let n = min(Self.stream.count - at, Int.random(in: 1...70_000, using: &rng))
                decoder.feed(Self.stream[at..<at + n])
                at += n
                // Sometimes take only one frame before feeding more, so the buffer carries partial frames.
                if Bool.random(using: &rng) {
                    if let frame = try decoder.next() { frames.append(frame) }
                } else {
                    while let frame = try decoder.next() { frames.append(frame) }
                }
            }
            while let frame = try decoder.next() { frames.append(frame) }
            Self.check(frames)
        }
    }

    /// Long streams with the buffer compacted along the way (> 64 KiB consumed).
    @Test func longStreamStaysInOrder() throws {
        var decoder = FrameDecoder()
        var expected: UInt32 = 0
        var sent: UInt32 = 0
        for round in 0..<50 {
            var chunk: [UInt8] = []
            for _ in 0..<(200 + round) {
                var s = Fixtures.sample
                s.slot.slot = sent
                chunk += Codec.frame(.sample(s), requestID: sent)
                sent += 1
            }
            // Split the chunk in the middle of a frame.
            let cut = chunk.count / 2 + 3
            decoder.feed(chunk[..<cut])
            while let frame = try decoder.next() {
                guard case .sample(let s) = frame.message else { Issue.record("not a sample"); return }
                #expect(frame.header.requestID == expected && s.slot.slot == expected)
                expected += 1
            }
            decoder.feed(chunk[cut...])
            while let frame = try decoder.next() {
                guard case .sample(let s) = frame.message else { Issue.record("not a sample"); return }
                #expect(frame.header.requestID == expected && s.slot.slot == expected)
                expected += 1
            }
        }
        #expect(expected == sent)
        #expect(decoder.pendingBytes == 0)
    }

    @Test func partialFrameIsNotAnError() throws {
        let bytes = Codec.frame(.hello(Hello(clientName: "x")), requestID: 1)
        for n in 0..<bytes.count {
            var decoder = FrameDecoder()
            decoder.feed(bytes[..<n])
            #expect(try decoder.next() == nil)
            #expect(decoder.pendingBytes == n)
        }
    }
}
