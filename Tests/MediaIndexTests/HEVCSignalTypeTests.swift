import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// VideoSignalType from an HEVC configuration: the VUI's video signal type of its first base-layer SPS (H.265
/// 7.3.2.2.1, E.2.1), from SPSs written bit by bit through every branch of the syntax before the VUI and from x265's
/// own, in an `hvcC` record and as Annex B; and libavcodec's HEVC rule (the SPS decides all four fields). The
/// integration tests (HEVCColourTests) compare x265 files in MP4, Matroska and MPEG-TS against ffprobe.
@Suite(.timeLimit(.minutes(TestLimits.minutes))) struct HEVCSignalTypeTests {
    typealias BitWriter = H264PicturesTests.BitWriter

    /// Which optional parts of the SPS are there.
    struct Shape {
        var subLayers = 0, chroma444 = false, window = false, allOrderings = true, scalingLists = false
        var pcm = false, predictedSets = false, longTerm = false, aspect = false
        /// nil: no VUI; .some(nil): a VUI without a signal type.
        var signal: VideoSignalType?? = .some(VideoSignalType(fullRange: true, description: .init(primaries: 9, transfer: 16, matrix: 9)))

        static let everyBranch: [Shape] = [
            Shape(),
            Shape(subLayers: 2, chroma444: true, window: true, allOrderings: false, scalingLists: true, pcm: true,
                  predictedSets: true, longTerm: true, aspect: true),
            Shape(subLayers: 6, allOrderings: true, predictedSets: true,
                  signal: .some(VideoSignalType(fullRange: false, description: .init(primaries: 6, transfer: 6, matrix: 6)))),
            Shape(scalingLists: true, signal: .some(VideoSignalType(fullRange: true))),
            Shape(window: true, signal: .some(nil)),
            Shape(pcm: true, signal: nil),
        ]
    }

    /// The SPS NAL unit of `shape` (two header bytes: type 33, layer 0, temporal id 1).
    static func sps(_ shape: Shape, layer: UInt8 = 0) -> [UInt8] {
        var w = BitWriter()
        w.u(0, 4); w.u(UInt64(shape.subLayers), 3); w.u(1, 1)
        profileTierLevel(&w, subLayers: shape.subLayers)
        w.ue(0); w.ue(shape.chroma444 ? 3 : 1)
        if shape.chroma444 { w.u(0, 1) }
        w.ue(160); w.ue(96); w.u(shape.window ? 1 : 0, 1)
        if shape.window { for v: UInt64 in [0, 1, 2, 3] { w.ue(v) } }
        w.ue(2); w.ue(2); w.ue(4); w.u(shape.allOrderings ? 1 : 0, 1)  // 10-bit, 8-bit POC LSBs
        for _ in (shape.allOrderings ? 0 : shape.subLayers)...shape.subLayers { w.ue(4); w.ue(2); w.ue(0) }
        for v: UInt64 in [0, 1, 0, 3, 1, 1] { w.ue(v) }
        w.u(shape.scalingLists ? 1 : 0, 1)
        if shape.scalingLists { w.u(1, 1); scalingListData(&w) }
        w.u(1, 1); w.u(1, 1); w.u(shape.pcm ? 1 : 0, 1)  // amp, sample_adaptive_offset
        if shape.pcm { w.u(7, 4); w.u(7, 4); w.ue(0); w.ue(1); w.u(0, 1) }
        shortTermSets(&w, predicted: shape.predictedSets)
        w.u(shape.longTerm ? 1 : 0, 1)
        if shape.longTerm { w.ue(2); w.u(0xA5, 8); w.u(1, 1); w.u(0x5A, 8); w.u(0, 1) }
        w.u(1, 1); w.u(0, 1); w.u(shape.signal == nil ? 0 : 1, 1)  // temporal MVP, strong intra smoothing, VUI
        if let signal = shape.signal { vui(&w, signal, aspect: shape.aspect) }
        var nal = w.nal(header: 33 << 1 | layer >> 5)
        nal.insert(layer << 3 | 1, at: 1)
        return nal
    }

    static func profileTierLevel(_ w: inout BitWriter, subLayers: Int) {
        w.u(0x0160_0000, 32); w.u(0x0090_0000, 32); w.u(0x0000_005D, 32)  // Main, level 3.1
        for i in 0..<subLayers { w.u(i == 0 ? 1 : 0, 1); w.u(1, 1) }  // a profile for the first, a level for each
        if subLayers > 0 { for _ in subLayers..<8 { w.u(0, 2) } }
        for i in 0..<subLayers {
            if i == 0 { w.u(0x0160_0000, 32); w.u(0x0090_0000, 32); w.u(0x00_0000, 24) }
            w.u(0x5A, 8)
        }
    }

    /// Every size and matrix, alternating a prediction from another matrix and coded coefficients.
    static func scalingListData(_ w: inout BitWriter) {
        for size in 0..<4 {
            for matrix in stride(from: 0, to: 6, by: size == 3 ? 3 : 1) {
                guard (size + matrix) % 2 == 1 else { w.u(0, 1); w.ue(UInt64(matrix > 0 ? 1 : 0)); continue }
                w.u(1, 1)
                if size > 1 { w.se(-3) }
                for i in 0..<min(64, 1 << (4 + 2 * size)) { w.se(i % 3 == 0 ? 2 : -1) }
            }
        }
    }

    /// One explicit set (S0 −1, −3; S1 +1), or that and two sets predicted from the one before: ΔRPS +1 gives S0 −2,
    /// S1 +1, +2 — three pictures, the 0 of −1 + 1 not among them — so the third has four flag pairs; ΔRPS −2 then,
    /// one picture left out by its flags.
    static func shortTermSets(_ w: inout BitWriter, predicted: Bool) {
        w.ue(predicted ? 3 : 1)
        w.ue(2); w.ue(1)
        w.ue(0); w.u(1, 1); w.ue(1); w.u(0, 1); w.ue(0); w.u(1, 1)
        guard predicted else { return }
        w.u(1, 1); w.u(0, 1); w.ue(0)  // predicted, ΔRPS +1
        for _ in 0..<4 { w.u(1, 1) }
        w.u(1, 1); w.u(1, 1); w.ue(1)  // predicted, ΔRPS −2
        w.u(0, 1); w.u(0, 1)  // not used, not kept
        for _ in 0..<3 { w.u(1, 1) }
    }

    static func vui(_ w: inout BitWriter, _ signal: VideoSignalType?, aspect: Bool) {
        w.u(aspect ? 1 : 0, 1)
        if aspect { w.u(255, 8); w.u(4, 16); w.u(3, 16) }
        w.u(1, 1); w.u(0, 1)  // overscan_info_present_flag, overscan_appropriate_flag
        w.u(signal == nil ? 0 : 1, 1)
        guard let signal else { w.u(0, 1); return }
        w.u(5, 3); w.u(signal.fullRange ? 1 : 0, 1); w.u(signal.description == nil ? 0 : 1, 1)
        if let d = signal.description { w.u(UInt64(d.primaries), 8); w.u(UInt64(d.transfer), 8); w.u(UInt64(d.matrix), 8) }
        w.u(0, 1)  // chroma_loc_info_present_flag
    }

    /// An `hvcC` record holding `nals` in arrays by type (VPS, SPS, PPS order as given).
    static func hvcC(_ nals: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 0x5D, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F]
        out.append(UInt8(nals.count))
        for nal in nals { out += [0x80 | (nal.first ?? 0) >> 1 & 0x3F, 0, 1, UInt8(nal.count >> 8), UInt8(nal.count & 0xFF)] + nal }
        return out
    }

    static let vps: [UInt8] = hex("40010c01ffff01600000030090000003000003001e959809")
    static let pps: [UInt8] = hex("4401c172b46240")
    /// x265's SPS (ffmpeg -c:v libx265 -x265-params range=full:colorprim=bt709:transfer=bt709:colormatrix=bt709).
    static let x265Full709 = hex("42010101600000030090000003000003001ea0142061f265959a4932bc05b80808082000000300200000030321")
    /// x265's SPS with range=full alone.
    static let x265FullOnly = hex("42010101600000030090000003000003001ea0142061f265959a4932bc05b02000000300200000030321")

    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map {
            UInt8(text.dropFirst($0).prefix(2), radix: 16)!
        }
    }

    @Test func readsX265sSPS() {
        let bt709 = VideoSignalType(fullRange: true, description: .init(primaries: 1, transfer: 1, matrix: 1))
        #expect(VideoSignalType(hevcConfiguration: Self.hvcC([Self.vps, Self.x265Full709, Self.pps])) == bt709)
        #expect(VideoSignalType(hevcConfiguration: Self.hvcC([Self.vps, Self.x265FullOnly, Self.pps])) == VideoSignalType(fullRange: true))
        let annexB = [0, 0, 0, 1] + Self.vps + [0, 0, 1] + Self.x265Full709 + [0, 0, 1] + Self.pps
        #expect(VideoSignalType(hevcConfiguration: annexB) == bt709)
    }

    @Test func readsTheSignalTypeThroughEveryBranch() {
        for (i, shape) in Shape.everyBranch.enumerated() {
            let expected = shape.signal.map { $0 ?? VideoSignalType(fullRange: false) } ?? VideoSignalType(fullRange: false)
            let sps = Self.sps(shape)
            #expect(VideoSignalType(hevcConfiguration: Self.hvcC([Self.vps, sps, Self.pps])) == expected, "shape \(i)")
            #expect(VideoSignalType(hevcConfiguration: [0, 0, 1] + Self.pps + [0, 0, 1] + sps) == expected, "shape \(i), Annex B")
        }
    }

    /// Only the base layer's SPS counts: an SPS of layer 1 first is passed over.
    @Test func anSPSOfAnotherLayerIsPassedOver() {
        let other = Self.sps(Shape(signal: .some(VideoSignalType(fullRange: false))), layer: 1)
        let base = Self.sps(Shape())
        #expect(VideoSignalType(hevcConfiguration: Self.hvcC([other, base])) == Shape().signal!)
        #expect(VideoSignalType(hevcConfiguration: Self.hvcC([other])) == nil)
    }

    /// Every prefix of each SPS, and of the record around it, is read without a fault, and none that is cut short
    /// claims a colour other than the whole SPS's; hostile records (counts past their bytes, no SPS) state nothing.
    @Test func aTruncatedConfigurationStatesNothingElse() {
        for (i, shape) in Shape.everyBranch.enumerated() {
            let sps = Self.sps(shape), record = Self.hvcC([Self.vps, sps])
            let whole = VideoSignalType(hevcConfiguration: record)
            #expect(whole != nil)
            for length in 0..<sps.count {
                let cut = Array(sps.prefix(length))
                let read = VideoSignalType(hevcConfiguration: Self.hvcC([Self.vps, cut]))
                #expect(read == nil || read == whole, "shape \(i), \(length) bytes of the SPS")
                let annexB = VideoSignalType(hevcConfiguration: [0, 0, 1] + cut)
                #expect(annexB == nil || annexB == whole, "shape \(i), \(length) bytes, Annex B")
            }
            for length in 0..<record.count {
                #expect(VideoSignalType(hevcConfiguration: Array(record.prefix(length))) == nil, "shape \(i), \(length) bytes")
            }
        }
        #expect(VideoSignalType(hevcConfiguration: Self.hvcC([Self.vps, Self.pps])) == nil)
        #expect(VideoSignalType(hevcConfiguration: Array(Self.hvcC([]).prefix(22)) + [255, 0xA1, 0xFF, 0xFF, 0, 9]) == nil)
        #expect(VideoSignalType(hevcConfiguration: [0, 0, 1, 0x42, 0x01]) == nil)
    }

    /// libavcodec's HEVC rule puts the SPS in the container's place (a stream that states nothing is video range,
    /// unspecified colour); its H.264 rule only over it; other codecs keep the container's.
    @Test func theStreamsColourReplacesTheContainers() {
        let container = Colorimetry(range: 2, matrix: 5, primaries: 5, transfer: 6)
        let plain = Self.hvcC([Self.sps(Shape(signal: nil))])
        #expect(VideoSignalType.colour(of: "hvc1", configuration: plain, over: container) == Colorimetry(range: 1))
        let full709 = Self.hvcC([Self.x265Full709])
        #expect(VideoSignalType.colour(of: "hev1", configuration: full709, over: container) == Colorimetry(range: 2, matrix: 1, primaries: 1, transfer: 1))
        #expect(VideoSignalType.colour(of: "hvc1", configuration: [1, 2, 3], over: container) == container)
        #expect(VideoSignalType.colour(of: "vp09", configuration: full709, over: container) == container)
        let avcC = H264PicturesTests.avcC(sps: H264PicturesTests.sps(high: true, vui: true, restriction: false))
        #expect(VideoSignalType.colour(of: "avc1", configuration: avcC, over: container) == Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1))
    }
}
