import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// Which AVI samples are presented in decode order (DecodeOrderTimes): a B-picture never is.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecodeOrderTimesTests {
    /// MPEG-4 Part 2: vop_coding_type, the two bits after 00 00 01 B6 (I 0, P 1, B 2, S 3).
    @Test func mpeg4VOPTypes() {
        let vop = { (type: UInt8) -> [UInt8] in [0, 0, 1, 0xB6, type << 6 | 0x10, 0x22] }
        #expect(DecodeOrderTimes.isBidirectional(vop(1), codec: "mp4v", framing: nil) == false)
        #expect(DecodeOrderTimes.isBidirectional([0, 0, 1, 0xB3, 9] + vop(2), codec: "mp4v", framing: nil) == true)
        #expect(DecodeOrderTimes.isBidirectional([0, 0, 1, 0xB3, 9], codec: "mp4v", framing: nil) == nil)
    }

    /// MPEG-4 Part 2 GOV header (00 00 01 B3): closed_gov is the bit after the 18-bit time_code (bit 2 of its third
    /// byte); a sample without a GOV before its VOP says nothing.
    @Test func mpeg4GOVs() {
        let gov = { (closed: Bool) -> [UInt8] in [0, 0, 1, 0xB3, 0x00, 0x08, closed ? 0x20 : 0x00, 0x40] }
        let vop: [UInt8] = [0, 0, 1, 0xB6, 0x10, 0x22, 0x00]
        #expect(DecodeOrderTimes.mpeg4OpensGOV(gov(false) + vop) == true)
        #expect(DecodeOrderTimes.mpeg4OpensGOV(gov(true) + vop) == false)
        #expect(DecodeOrderTimes.mpeg4OpensGOV(vop + gov(false)) == nil)
    }

    /// H.264: the first slice's slice_type (P 0/5, B 1/6), length-prefixed or Annex B as the caps say; without a
    /// framing, or another codec, nothing is read.
    @Test func h264SliceTypes() {
        // first_mb_in_slice ue 0 = "1", slice_type ue: 0 = "1", 1 = "010", 6 = "00111".
        let p: [UInt8] = [0x41, 0b1100_0000], b: [UInt8] = [0x01, 0b1010_0000], b6: [UInt8] = [0x01, 0b1001_1100]
        let prefixed = { (nal: [UInt8]) -> [UInt8] in [0, 0, 0, UInt8(nal.count)] + nal }
        let avc = H264Pictures.Framing.lengthPrefixed(4)
        #expect(DecodeOrderTimes.isBidirectional(prefixed(p), codec: "avc1", framing: avc) == false)
        let delimited = prefixed([0x09, 0xF0]) + prefixed(b)
        #expect(DecodeOrderTimes.isBidirectional(delimited, codec: "avc1", framing: avc) == true)
        #expect(DecodeOrderTimes.isBidirectional([0, 0, 0, 1] + b6, codec: "avc1", framing: .annexB) == true)
        #expect(DecodeOrderTimes.isBidirectional([0, 2] + b6, codec: "avc1", framing: .lengthPrefixed(2)) == true)
        #expect(DecodeOrderTimes.isBidirectional(prefixed(p), codec: "avc1", framing: nil) == nil)
        #expect(DecodeOrderTimes.isBidirectional(prefixed(p), codec: "hvc1", framing: avc) == nil)
    }

    /// A NAL unit of 256–511 bytes after its 4-byte length starts with 00 00 01, an Annex B start code: the caps'
    /// framing, not the bytes, tells them apart (a 449-byte B-picture of x264 at 160×120 was once read as Annex B,
    /// found no slice, and its AVI range was delivered one frame late).
    @Test func lengthThatLooksLikeAStartCode() {
        let b6: [UInt8] = [0x01, 0b1001_1100] + [UInt8](repeating: 0x55, count: 445 - 2)
        let p: [UInt8] = [0x41, 0b1100_0000] + [UInt8](repeating: 0x55, count: 300 - 2)
        let avc = H264Pictures.Framing.lengthPrefixed(4)
        let prefixed = { (nal: [UInt8]) -> [UInt8] in [0, 0, UInt8(nal.count >> 8), UInt8(nal.count & 0xFF)] + nal }
        #expect(prefixed(b6).starts(with: [0, 0, 1]))
        #expect(DecodeOrderTimes.isBidirectional(prefixed(b6), codec: "avc1", framing: avc) == true)
        #expect(DecodeOrderTimes.isBidirectional(prefixed(p), codec: "avc1", framing: avc) == false)
        let recovery: [UInt8] = [0x61, 0b1000_1000] + [UInt8](repeating: 0x55, count: 400 - 2)
        #expect(DecodeOrderTimes.opensGOP(prefixed(recovery), codec: "avc1", framing: avc) == true)
    }

    /// H.264 key frames open an open GOP when their picture is not IDR (the first slice's NAL unit type 1, not 5),
    /// whatever comes before it (access unit delimiter, SEI); MPEG-4 Part 2 by its GOV header; other codecs: nil.
    @Test func openGOPKeyFrames() {
        // I slice: first_mb_in_slice ue 0 = "1", slice_type ue 7 = "0001000".
        let idr: [UInt8] = [0x65, 0b1000_1000, 0], recovery: [UInt8] = [0x61, 0b1000_1000, 0]
        let sei: [UInt8] = [0x06, 0x06, 0x01, 0x80]
        let prefixed = { (nal: [UInt8]) -> [UInt8] in [0, 0, 0, UInt8(nal.count)] + nal }
        let avc = H264Pictures.Framing.lengthPrefixed(4)
        #expect(DecodeOrderTimes.opensGOP(prefixed(sei) + prefixed(recovery), codec: "avc1", framing: avc) == true)
        #expect(DecodeOrderTimes.opensGOP(prefixed(sei) + prefixed(idr), codec: "avc1", framing: avc) == false)
        let annexB: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 1] + recovery
        #expect(DecodeOrderTimes.opensGOP(annexB, codec: "avc1", framing: .annexB) == true)
        #expect(DecodeOrderTimes.opensGOP(prefixed(sei), codec: "avc1", framing: avc) == nil)
        let gov: [UInt8] = [0, 0, 1, 0xB3, 0x00, 0x08, 0x00, 0x40, 0, 0, 1, 0xB6, 0x10]
        #expect(DecodeOrderTimes.opensGOP(gov, codec: "mp4v", framing: nil) == true)
        #expect(DecodeOrderTimes.opensGOP(prefixed(recovery), codec: "hvc1", framing: avc) == nil)
    }
}
