/// Stored H.264 access units (ISO/IEC 14496-10), read only as far as needed to know which ones no other picture
/// refers to: a picture whose slices all have `nal_ref_idc` 0 can be left out of a decode without changing any other
/// picture — what libav's `skip_frame = AVDISCARD_NONREF` does. trackd leaves such pictures out when they are decoded
/// only on the way to others (ReadFrames, a range or reset starting mid-GOP) and are not delivered themselves.
///
/// One more condition, for libav's sake: every sequence parameter set seen must declare the stream's reordering
/// (`bitstream_restriction_flag` with `max_num_reorder_frames`, in the VUI). Without it libav guesses its reorder
/// delay from the pictures it sees and drops a picture that arrives "out of order" for that guess; leaving out
/// B-frames changes what it sees, so a delivered B-frame could be lost. x264 (and so ffmpeg's libx264) always
/// declares it except in intra-only profiles.
///
/// Written here rather than taken from GStreamer's codecparsers library (gsth264parser.h) because its headers ship
/// only in libgstreamer-plugins-bad1.0-dev, which on Debian 12 pulls in 177 packages (libopencv-dev among them):
/// this reads the NAL unit headers and the SPS up to one VUI flag. Tested by H264PicturesTests (every branch of the
/// SPS syntax it walks, every truncation, x264's own SPS) and the libFuzzer target `h264`.
public struct H264Pictures: Sendable, Equatable {
    /// How NAL units are delimited in a stored sample.
    public enum Framing: Sendable, Equatable {
        /// ISO BMFF / Matroska `avc1`/`avc3`: each NAL unit after its size, a big-endian integer of 1, 2 or 4 bytes.
        case lengthPrefixed(Int)
        /// MPEG-TS, raw .h264: start codes (00 00 01 or 00 00 00 01), Annex B.
        case annexB
    }

    public let framing: Framing
    /// Whether every SPS seen so far declares the reordering (and at least one was seen).
    public private(set) var reorderDeclared: Bool
    /// The largest `max_num_reorder_frames` the SPSs seen declare; nil unless `reorderDeclared`: the frames a
    /// decoder holds back before it outputs one (libav's `has_b_frames`, the delay of its decode times).
    public private(set) var reorderFrames: Int?
    private var spsSeen: Bool

    /// From a decoder configuration record (`avcC`, GStreamer's `codec_data` for stream-format avc/avc3): the NAL
    /// length size and its SPSs. nil when the record is malformed.
    public init?(avcC record: [UInt8]) {
        guard record.count >= 7, record[0] == 1 else { return nil }
        let lengthSize = Int(record[4] & 3) + 1
        guard lengthSize != 3 else { return nil }
        self.init(framing: .lengthPrefixed(lengthSize))
        var at = 6
        let count = Int(record[5] & 0x1F)
        for _ in 0..<count {
            guard at + 2 <= record.count else { return nil }
            let size = Int(record[at]) << 8 | Int(record[at + 1])
            guard size > 0, at + 2 + size <= record.count else { return nil }
            see(nal: record[(at + 2)..<(at + 2 + size)])
            at += 2 + size
        }
    }

    /// Annex B (stream-format byte-stream): the SPSs come in the stream.
    public init(framing: Framing) {
        self.framing = framing
        reorderDeclared = false
        spsSeen = false
    }

    /// Reads one stored access unit: learns from its SPSs, and tells whether it is a picture nothing refers to —
    /// it has a slice (NAL types 1–5), every slice has `nal_ref_idc` 0, there is no extension NAL unit (SVC/MVC,
    /// types 14, 20, 21: their pictures follow other rules) and the reordering is declared. False on anything
    /// malformed: a sample it cannot read is decoded.
    public mutating func isDisposable(_ unit: [UInt8]) -> Bool {
        var slices = 0, referenced = false, other = false
        let complete = forEachNAL(in: unit) { nal in
            guard let header = nal.first else { return }
            let type = header & 0x1F
            switch type {
            case 1...5:
                slices += 1
                if header & 0x60 != 0 { referenced = true }
            case 7:
                see(nal: nal)
            case 14, 20, 21:
                other = true
            default:
                break
            }
        }
        return complete && slices > 0 && !referenced && !other && reorderDeclared
    }

    /// Calls `body` with each NAL unit (header byte first); false when the unit's framing is broken.
    public func forEachNAL(in unit: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) -> Bool {
        switch framing {
        case .lengthPrefixed(let size):
            var at = 0
            while at < unit.count {
                guard at + size <= unit.count else { return false }
                let length = unit[at..<(at + size)].reduce(0) { $0 << 8 | Int($1) }
                at += size
                guard length > 0, length <= unit.count - at else { return false }
                body(unit[at..<(at + length)])
                at += length
            }
            return true
        case .annexB:
            for nal in Self.annexBUnits(unit) { body(nal) }
            return true
        }
    }

    /// The NAL units between Annex B start codes (trailing zero bytes of the next start code trimmed).
    static func annexBUnits(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var starts: [Int] = []  // the index after each 00 00 01
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                starts.append(i + 3)
                i += 3
            } else {
                i += 1
            }
        }
        return starts.enumerated().map { n, start in
            var end = n + 1 < starts.count ? starts[n + 1] - 3 : bytes.count
            while end > start, bytes[end - 1] == 0 { end -= 1 }
            return bytes[start..<end]
        }
    }

    private mutating func see(nal: ArraySlice<UInt8>) {
        guard nal.first.map({ $0 & 0x1F }) == 7 else { return }
        let frames = Self.spsReorderFrames(nal) ?? nil
        reorderDeclared = (spsSeen ? reorderDeclared : true) && frames != nil
        reorderFrames = reorderDeclared ? max(reorderFrames ?? 0, frames ?? 0) : nil
        spsSeen = true
    }

    /// Whether a sequence parameter set NAL unit (header byte first) has VUI `bitstream_restriction_flag` set; nil
    /// when it is malformed or ends early.
    static func spsDeclaresReorder(_ nal: ArraySlice<UInt8>) -> Bool? {
        spsReorderFrames(nal).map { $0 != nil }
    }

    /// The SPS's `max_num_reorder_frames` (.some(nil): no `bitstream_restriction_flag`); nil when it is malformed
    /// or ends early.
    static func spsReorderFrames(_ nal: ArraySlice<UInt8>) -> Int?? {
        guard var r = vuiOfSPS(nal) else { return nil }
        guard let vui = r.bits(1) else { return nil }
        return vui == 1 ? r.vuiReorderFrames() : .some(nil)
    }

    /// A reader of a sequence parameter set NAL unit (header byte first) standing at `vui_parameters_present_flag`
    /// (7.3.2.1.1); nil when the SPS is malformed or ends before it.
    static func vuiOfSPS(_ nal: ArraySlice<UInt8>) -> RBSPReader? {
        var r = RBSPReader(nal.dropFirst())
        guard let profile = r.bits(8), r.bits(16) != nil, r.ue() != nil else { return nil }  // constraints, level, id
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let chroma = r.ue() else { return nil }
            if chroma == 3 { guard r.bits(1) != nil else { return nil } }  // separate_colour_plane_flag
            guard r.ue() != nil, r.ue() != nil, r.bits(1) != nil, let scaling = r.bits(1) else { return nil }
            if scaling == 1 {
                for list in 0..<(chroma == 3 ? 12 : 8) {
                    guard let present = r.bits(1) else { return nil }
                    if present == 1 { guard r.skipScalingList(list < 6 ? 16 : 64) else { return nil } }
                }
            }
        }
        guard r.ue() != nil, let pocType = r.ue() else { return nil }  // log2_max_frame_num_minus4
        switch pocType {
        case 0:
            guard r.ue() != nil else { return nil }
        case 1:
            guard r.bits(1) != nil, r.se() != nil, r.se() != nil, let cycle = r.ue(), cycle <= 255 else { return nil }
            for _ in 0..<cycle { guard r.se() != nil else { return nil } }
        default:
            break
        }
        // max_num_ref_frames, gaps_in_frame_num_value_allowed_flag, pic_width_in_mbs_minus1, pic_height_in_map_units_minus1
        guard r.ue() != nil, r.bits(1) != nil, r.ue() != nil, r.ue() != nil, let frameMbsOnly = r.bits(1) else { return nil }
        if frameMbsOnly == 0 { guard r.bits(1) != nil else { return nil } }
        guard r.bits(1) != nil, let cropping = r.bits(1) else { return nil }  // direct_8x8_inference_flag
        if cropping == 1 { for _ in 0..<4 { guard r.ue() != nil else { return nil } } }
        return r
    }
}

/// Bits of a NAL unit's payload with its emulation prevention bytes (00 00 03) removed, most significant first.
struct RBSPReader {
    private var bytes: [UInt8] = []
    private var bit = 0

    /// A stream without emulation prevention (MPEG-4 Part 2): its bytes as they are.
    init(unescaped payload: ArraySlice<UInt8>) {
        bytes = Array(payload)
    }

    init(_ payload: ArraySlice<UInt8>) {
        var zeros = 0
        bytes.reserveCapacity(payload.count)
        for byte in payload {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            bytes.append(byte)
        }
    }

    /// The next `n` (≤ 32) bits as an unsigned number; nil past the end.
    mutating func bits(_ n: Int) -> UInt32? {
        guard bit + n <= bytes.count * 8 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<n {
            value = value << 1 | UInt32(bytes[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
            bit += 1
        }
        return value
    }

    /// An unsigned Exp-Golomb number (ue(v)); nil past the end or over 32 leading zeros.
    mutating func ue() -> UInt32? {
        var zeros = 0
        while true {
            guard let b = bits(1) else { return nil }
            if b == 1 { break }
            zeros += 1
            guard zeros < 32 else { return nil }
        }
        guard let rest = bits(zeros) else { return nil }
        return (UInt32(1) << zeros) - 1 + rest
    }

    /// A signed Exp-Golomb number (se(v)).
    mutating func se() -> Int64? {
        guard let k = ue() else { return nil }
        return k & 1 == 1 ? Int64(k / 2) + 1 : -Int64(k / 2)
    }

    /// scaling_list(): its delta_scale values until next_scale becomes 0.
    mutating func skipScalingList(_ size: Int) -> Bool {
        var last: Int64 = 8, next: Int64 = 8
        for _ in 0..<size where next != 0 {
            guard let delta = se() else { return false }
            next = (last + delta + 256) % 256
            last = next == 0 ? last : next
        }
        return true
    }

    /// The VUI up to `max_num_reorder_frames` (E.1.1): .some(nil) without `bitstream_restriction_flag`; nil when
    /// it ends early.
    mutating func vuiReorderFrames() -> Int?? {
        guard vuiSignalType() != nil else { return nil }
        guard let chromaLoc = bits(1) else { return nil }
        if chromaLoc == 1 { guard ue() != nil, ue() != nil else { return nil } }
        guard let timing = bits(1) else { return nil }
        if timing == 1 { guard bits(32) != nil, bits(32) != nil, bits(1) != nil else { return nil } }
        guard let nalHRD = bits(1) else { return nil }
        if nalHRD == 1 { guard skipHRD() else { return nil } }
        guard let vclHRD = bits(1) else { return nil }
        if vclHRD == 1 { guard skipHRD() else { return nil } }
        if nalHRD == 1 || vclHRD == 1 { guard bits(1) != nil else { return nil } }  // low_delay_hrd_flag
        guard bits(1) != nil, let restriction = bits(1) else { return nil }  // pic_struct_present_flag
        guard restriction == 1 else { return .some(nil) }
        // motion_vectors_over_pic_boundaries_flag, max_bytes_per_pic_denom, max_bits_per_mb_denom, the two
        // log2_max_mv_length values, then max_num_reorder_frames.
        guard bits(1) != nil, ue() != nil, ue() != nil, ue() != nil, ue() != nil, let frames = ue() else { return nil }
        return .some(Int(frames))
    }

    /// The VUI from its start through the video signal type (E.1.1: aspect ratio, overscan, then
    /// `video_signal_type_present_flag` and what it guards); nil when it ends early. The outer optional is the
    /// reading, the inner one whether the signal type is present.
    mutating func vuiSignalType() -> VideoSignalType?? {
        guard let aspect = bits(1) else { return nil }
        if aspect == 1 {
            guard let idc = bits(8) else { return nil }
            if idc == 255 { guard bits(32) != nil else { return nil } }  // sar_width, sar_height
        }
        guard let overscan = bits(1) else { return nil }
        if overscan == 1 { guard bits(1) != nil else { return nil } }
        guard let signal = bits(1) else { return nil }
        guard signal == 1 else { return .some(nil) }
        guard bits(3) != nil, let full = bits(1), let described = bits(1) else { return nil }  // video_format
        var type = VideoSignalType(fullRange: full == 1)
        if described == 1 {
            guard let primaries = bits(8), let transfer = bits(8), let matrix = bits(8) else { return nil }
            type.description = .init(primaries: UInt8(primaries), transfer: UInt8(transfer), matrix: UInt8(matrix))
        }
        return type
    }

    /// hrd_parameters() (E.1.2).
    private mutating func skipHRD() -> Bool {
        guard let count = ue(), count < 32, bits(8) != nil else { return false }  // cpb_cnt_minus1, the two scales
        for _ in 0...count { guard ue() != nil, ue() != nil, bits(1) != nil else { return false } }
        return bits(20) != nil  // four 5-bit lengths and delays
    }
}
