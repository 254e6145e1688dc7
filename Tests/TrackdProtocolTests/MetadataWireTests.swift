import TrackdProtocol
import TestSupport
import Testing

/// AssetOpened's metadata and the track record's segments and metadata (PROTOCOL.md §7.5, §7.6): the limits and
/// how the encoder cuts what passes them (GoldenTests checks §14.2's bytes of `example`).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MetadataWireTests {
    static let example: AssetOpened = {
        let t = { (v: Int64, ts: Int32) in MediaTime(value: v, timescale: ts) }
        let track = TrackDescription(
            id: 1, mediaType: .video, codec: "avc1", width: 64, height: 48, nominalFrameRate: 30, duration: t(30720, 15360),
            timeRangeStart: t(0, 15360), depth: 24, bitsPerComponent: 8, chromaSubsampling: .yuv420, language: "eng",
            pixelAspectRatio: PixelAspectRatio(numerator: 1, denominator: 1),
            colorimetry: Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1), naturalTimeScale: 15360,
            minFrameDuration: t(512, 15360),
            segments: [TrackSegment(source: MediaTimeRange(start: t(1024, 15360), duration: t(30720, 15360)),
                                    target: MediaTimeRange(start: t(0, 1000), duration: t(2000, 1000)))],
            metadata: [MetadataItem(keySpace: "hdlr", key: "name", value: "VideoHandler")],
            preferredTransform: DisplayMatrix(values: [0, 0x1_0000, 0, -0x1_0000, 0, 0, 48 << 16, 0, 0x4000_0000]),
            codecConfiguration: [0x01, 0x64, 0x00, 0x1E, 0xFF])
        return AssetOpened(assetID: 1, duration: t(2000, 1000), tracks: [track],
                           metadata: [MetadataItem(keySpace: "itsk", key: "©nam", commonKey: "title", value: "Clip")])
    }()

    @Test func identifierAndSegmentKind() {
        #expect(Self.example.tracks[0].segments[0].isEmpty == false)
        #expect(Self.example.metadata[0].identifier == "itsk/©nam")
    }

    @Test func anEmptyEditHasAnInvalidSourceStart() throws {
        let empty = TrackSegment.empty(target: MediaTimeRange(start: .zero, duration: MediaTime(value: 500, timescale: 1000)),
                                       sourceDuration: MediaTime(value: 22050, timescale: 44100))
        var opened = Self.example
        opened.tracks[0].segments = [empty]
        let decoded = try decodeAll(Codec.frame(.assetOpened(opened), requestID: 2))
        guard case .assetOpened(let back)? = decoded.first?.message else { Issue.record("not AssetOpened"); return }
        #expect(back.tracks[0].segments == [empty] && back.tracks[0].segments[0].isEmpty)
    }

    /// Strings are cut at a scalar boundary to 255 (keys) and 1024 (values) bytes; lists to 64 items/segments.
    @Test func theEncoderCutsToTheLimits() throws {
        let longValue = String(repeating: "é", count: 600)  // 1200 bytes
        let longKey = String(repeating: "k", count: 300)
        var opened = Self.example
        opened.metadata = (0..<100).map { MetadataItem(keySpace: "mkvtag", key: $0 == 0 ? longKey : "K\($0)", value: longValue) }
        opened.tracks[0].segments = Array(repeating: Self.example.tracks[0].segments[0], count: 70)
        let decoded = try decodeAll(Codec.frame(.assetOpened(opened), requestID: 2))
        guard case .assetOpened(let back)? = decoded.first?.message else { Issue.record("not AssetOpened"); return }
        #expect(back.metadata.count == Wire.maxMetadataItems && back.tracks[0].segments.count == Wire.maxSegments)
        #expect(back.metadata[0].key.utf8.count == 255 && back.metadata[0].value == String(repeating: "é", count: 512))
    }

    @Test func theDecoderRefusesWhatPassesTheLimits() {
        var p = payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [])))
        p.removeLast(2)
        let count = UInt16(Wire.maxMetadataItems + 1)
        #expect(decodeError(MalformedTests.frame(.assetOpened, p + [UInt8(count & 0xFF), UInt8(count >> 8)]))?.message
            .contains("exceeds") == true)
        // One item whose value is 1025 bytes.
        let item: [UInt8] = [1, 0, 0x61] + [0, 0] + [0, 0] + [0x01, 0x04] + Array(repeating: 0x61, count: 1025)
        #expect(decodeError(MalformedTests.frame(.assetOpened, p + [1, 0] + le32(UInt32(item.count)) + item))?.message
            .contains("metadata.value") == true)
    }

    /// §7.5: the budget binds the worker only; a receiver accepts an AssetOpened whose items take more.
    @Test func aReceiverAcceptsMetadataOverTheBudget() throws {
        let item = MetadataItem(keySpace: "mkvtag", key: "K", value: String(repeating: "v", count: 1024))
        let opened = AssetOpened(assetID: 1, duration: .zero, tracks: [], metadata: Array(repeating: item, count: 40))
        #expect(40 * item.encodedSize > Wire.maxMetadataBytes)
        #expect(try decodeAll(Codec.frame(.assetOpened(opened), requestID: 2)).first?.message == .assetOpened(opened))
    }

    /// The worker's bound: asset items, then each track's segments and items, while they fit in maxMetadataBytes.
    @Test func boundingKeepsWhatFitsInOrder() {
        var opened = Self.example
        let item = MetadataItem(keySpace: "mkvtag", key: "K", value: String(repeating: "v", count: 1000))
        opened.metadata = Array(repeating: item, count: 20)  // 20 × 1019 bytes (each record: a u32 size and 1015)
        opened.tracks[0].metadata = Array(repeating: item, count: 20)
        let bounded = opened.boundingMetadata()
        #expect(item.encodedSize == 1019 && payload(of: .assetOpened(AssetOpened(assetID: 1, duration: .zero, tracks: [], metadata: [item]))).count == 24 + 1019)
        #expect(bounded.metadata.count == 20 && bounded.tracks[0].segments.count == 1)
        let left = Wire.maxMetadataBytes - 20 * 1019 - TrackSegment.encodedSize
        #expect(bounded.tracks[0].metadata.count == left / 1019)
        #expect(opened.boundingMetadata(to: 2038).metadata.count == 2)
    }
}
