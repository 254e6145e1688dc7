import MediaIndex
import TestSupport
import Testing

/// H264Pictures: which stored H.264 access units no other picture refers to, and whether the SPS declares the
/// reordering (without it nothing is disposable). Sequence parameter sets are written here bit by bit (Exp-Golomb,
/// emulation prevention), so that each branch of the syntax is exercised; the integration tests read x264's.
@Suite(.timeLimit(.minutes(TestLimits.minutes))) struct H264PicturesTests {
    /// Bits, most significant first, as a NAL unit payload (emulation prevention added by `nal`).
    struct BitWriter {
        var bits: [Bool] = []
        mutating func u(_ value: UInt64, _ n: Int) { for i in (0..<n).reversed() { bits.append(value >> UInt64(i) & 1 == 1) } }
        mutating func ue(_ value: UInt64) {
            let v = value + 1
            let length = 64 - v.leadingZeroBitCount
            u(0, length - 1)
            u(v, length)
        }
        mutating func se(_ value: Int64) { ue(value > 0 ? UInt64(2 * value - 1) : UInt64(-2 * value)) }
        /// The NAL unit: header byte, payload with rbsp_trailing_bits, emulation prevention bytes inserted.
        func nal(header: UInt8) -> [UInt8] {
            var all = bits + [true]
            while all.count % 8 != 0 { all.append(false) }
            var payload: [UInt8] = []
            for i in stride(from: 0, to: all.count, by: 8) {
                payload.append(all[i..<(i + 8)].reduce(0) { $0 << 1 | ($1 ? 1 : 0) })
            }
            var out: [UInt8] = [header], zeros = 0
            for byte in payload {
                if zeros >= 2, byte <= 3 {
                    out.append(3)
                    zeros = 0
                }
                out.append(byte)
                zeros = byte == 0 ? zeros + 1 : 0
            }
            return out
        }
    }

    /// An SPS: High profile with scaling lists and POC type 1 when `high`, else Baseline; a VUI with timing and a
    /// NAL HRD when `vui`, then bitstream_restriction_flag = `restriction`.
    static func sps(high: Bool, vui: Bool, restriction: Bool) -> [UInt8] { spsAndFlag(high: high, vui: vui, restriction: restriction).nal }

    /// The SPS, and the payload bit at which its bitstream_restriction_flag is (0 without a VUI).
    static func spsAndFlag(high: Bool, vui: Bool, restriction: Bool) -> (nal: [UInt8], flagBit: Int) {
        var w = BitWriter(), flagBit = 0
        w.u(high ? 100 : 66, 8); w.u(0, 8); w.u(40, 8); w.ue(0)
        if high {
            w.ue(1); w.ue(0); w.ue(0); w.u(0, 1); w.u(1, 1)  // 4:2:0, 8-bit, scaling matrix present
            for list in 0..<8 {
                w.u(UInt64(list % 2), 1)
                if list % 2 == 1 { for _ in 0..<(list < 6 ? 16 : 64) { w.se(-3) } }
            }
        }
        w.ue(4)  // log2_max_frame_num_minus4
        if high {
            w.ue(1); w.u(0, 1); w.se(-2); w.se(1); w.ue(2); w.se(5); w.se(-7)  // POC type 1, a cycle of two
        } else {
            w.ue(0); w.ue(4)
        }
        w.ue(4); w.u(0, 1); w.ue(119); w.ue(67); w.u(1, 1); w.u(1, 1)  // refs, gaps, 1920x1088, frame_mbs_only, 8x8
        w.u(1, 1); w.ue(0); w.ue(0); w.ue(0); w.ue(4)  // cropping to 1080
        w.u(vui ? 1 : 0, 1)
        if vui {
            w.u(1, 1); w.u(255, 8); w.u(1, 16); w.u(1, 16)  // aspect ratio: extended SAR 1:1
            w.u(0, 1)  // overscan
            w.u(1, 1); w.u(5, 3); w.u(0, 1); w.u(1, 1); w.u(1, 8); w.u(1, 8); w.u(1, 8)  // signal type, BT.709
            w.u(0, 1)  // chroma location
            w.u(1, 1); w.u(1, 32); w.u(60, 32); w.u(1, 1)  // timing
            w.u(1, 1); w.ue(1); w.u(4, 4); w.u(3, 4)  // NAL HRD, two CPBs
            for _ in 0..<2 { w.ue(2000); w.ue(3000); w.u(0, 1) }
            w.u(23, 5); w.u(23, 5); w.u(23, 5); w.u(24, 5)
            w.u(0, 1)  // VCL HRD
            w.u(0, 1); w.u(0, 1)  // low_delay_hrd_flag, pic_struct_present_flag
            flagBit = w.bits.count
            w.u(restriction ? 1 : 0, 1)
            if restriction { w.u(1, 1); w.ue(0); w.ue(0); w.ue(16); w.ue(16); w.ue(2); w.ue(4) }
        }
        return (w.nal(header: 0x67), flagBit)
    }

    static func avcC(sps: [UInt8]) -> [UInt8] {
        [1, 100, 0, 40, 0xFF, 0xE1, UInt8(sps.count >> 8), UInt8(sps.count & 0xFF)] + sps + [1, 0, 4, 0x68, 0xEE, 0x3C, 0x80]
    }

    /// A slice NAL unit: `type` (1 or 5), `refIdc` in bits 5–6, a few payload bytes.
    static func slice(type: UInt8, refIdc: UInt8) -> [UInt8] { [refIdc << 5 | type, 0x88, 0x84, 0x21, 0xA0] }

    static func lengthPrefixed(_ nals: [[UInt8]]) -> [UInt8] {
        nals.flatMap { [UInt8(0), 0, UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
    }

    /// The avcC of an ffmpeg libx264 64x48 clip (`-bf 2`): x264 declares the reordering.
    @Test func readsX264sSPS() throws {
        let record: [UInt8] = [0x01, 0x64, 0x00, 0x0A, 0xFF, 0xE1, 0x00, 0x18, 0x67, 0x64, 0x00, 0x0A, 0xAC, 0xD9, 0x44,
                               0x7B, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x22,
                               0x59, 0x60, 0x01, 0x00, 0x06, 0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0, 0xFD, 0xF8, 0xF8, 0x00]
        let pictures = try #require(H264Pictures(avcC: record))
        #expect(pictures.framing == .lengthPrefixed(4))
        #expect(pictures.reorderDeclared && pictures.reorderFrames == 2)
    }

    @Test func readsTheRestrictionFlagThroughEveryBranch() {
        for high in [false, true] {
            #expect(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: high, vui: true, restriction: true)))?.reorderDeclared == true)
            // max_num_reorder_frames 2: libav's decoder delay, that of the decode times it gives Matroska packets.
            #expect(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: high, vui: true, restriction: true)))?.reorderFrames == 2)
            #expect(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: high, vui: true, restriction: false)))?.reorderFrames == nil)
            #expect(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: high, vui: true, restriction: false)))?.reorderDeclared == false)
            #expect(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: high, vui: false, restriction: false)))?.reorderDeclared == false)
        }
    }

    /// Every prefix of an SPS is read without a fault; one that ends before the flag declares nothing (emulation
    /// prevention bytes only move the flag later in the NAL unit, so a prefix of header + flagBit / 8 bytes cannot
    /// hold it).
    @Test func aTruncatedSPSDeclaresNothing() {
        let (sps, flagBit) = Self.spsAndFlag(high: true, vui: true, restriction: true)
        for length in 1..<sps.count {
            let declared = H264Pictures(avcC: Self.avcC(sps: Array(sps.prefix(length))))?.reorderDeclared
            if length <= 1 + flagBit / 8 { #expect(declared != true, "\(length) bytes") }
        }
        #expect(H264Pictures(avcC: Self.avcC(sps: sps))?.reorderDeclared == true)
    }

    @Test func nonReferencePicturesAreDisposableOnlyWhenTheReorderingIsDeclared() throws {
        var declared = try #require(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: true, vui: true, restriction: true))))
        let sei: [UInt8] = [0x06, 0x05, 0x01, 0x00, 0x80]
        let r1 = declared.isDisposable(Self.lengthPrefixed([sei, Self.slice(type: 1, refIdc: 0)]))
        #expect(r1)
        let r2 = declared.isDisposable(Self.lengthPrefixed([Self.slice(type: 1, refIdc: 0), Self.slice(type: 1, refIdc: 0)]))
        #expect(r2)
        let r3 = declared.isDisposable(Self.lengthPrefixed([Self.slice(type: 1, refIdc: 2)]))
        #expect(!r3)
        let r4 = declared.isDisposable(Self.lengthPrefixed([Self.slice(type: 1, refIdc: 0), Self.slice(type: 1, refIdc: 1)]))
        #expect(!r4)
        let r5 = declared.isDisposable(Self.lengthPrefixed([Self.slice(type: 5, refIdc: 3)]))
        #expect(!r5)
        let r6 = declared.isDisposable(Self.lengthPrefixed([sei]))  // no picture
        #expect(!r6)
        let r7 = declared.isDisposable(Self.lengthPrefixed([[0x0E, 0x80], Self.slice(type: 1, refIdc: 0)]))  // SVC prefix
        #expect(!r7)
        var broken = Self.lengthPrefixed([Self.slice(type: 1, refIdc: 0)])
        broken[3] += 1  // a NAL unit longer than the sample
        let r8 = declared.isDisposable(broken)
        #expect(!r8)

        var undeclared = try #require(H264Pictures(avcC: Self.avcC(sps: Self.sps(high: true, vui: true, restriction: false))))
        let r9 = undeclared.isDisposable(Self.lengthPrefixed([Self.slice(type: 1, refIdc: 0)]))
        #expect(!r9)
        // An in-band SPS without the declaration (avc3) makes nothing disposable from then on.
        let afterSPS = declared.isDisposable(Self.lengthPrefixed([Self.sps(high: false, vui: false, restriction: false),
                                                                 Self.slice(type: 1, refIdc: 0)]))
        #expect(!afterSPS)
        #expect(!declared.reorderDeclared)
    }

    @Test func annexBStreamsLearnTheirSPSInBand() {
        var pictures = H264Pictures(framing: .annexB)
        let start: [UInt8] = [0, 0, 0, 1]
        let b = start + Self.slice(type: 1, refIdc: 0) + [0]  // a trailing zero before the next start code
        let r10 = pictures.isDisposable(b)  // no SPS seen yet
        #expect(!r10)
        let idr = start + Self.sps(high: true, vui: true, restriction: true) + [0, 0, 1] + [0x68, 0xEE, 0x3C, 0x80]
            + start + Self.slice(type: 5, refIdc: 3)
        let r11 = pictures.isDisposable(idr)
        #expect(!r11)
        #expect(pictures.reorderDeclared)
        let r12 = pictures.isDisposable(b)
        #expect(r12)
        let r13 = pictures.isDisposable([0, 0, 1] + Self.slice(type: 1, refIdc: 0))
        #expect(r13)
    }

    @Test func malformedRecordsAreRefused() {
        #expect(H264Pictures(avcC: []) == nil)
        #expect(H264Pictures(avcC: [0, 100, 0, 40, 0xFF, 0xE1, 0, 4]) == nil)  // version 0
        #expect(H264Pictures(avcC: [1, 100, 0, 40, 0xFE, 0xE1, 0, 4]) == nil)  // 3-byte lengths
        #expect(H264Pictures(avcC: [1, 100, 0, 40, 0xFF, 0xE1, 0, 40, 0x67]) == nil)  // SPS past the end
    }
}
