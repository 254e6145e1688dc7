/// The first sequence parameter set of an HEVC stream (ITU-T H.265), read as far as its VUI's video signal type
/// (VideoSignalType): from an `hvcC` decoder configuration record (ISO/IEC 14496-15 8.3.3.1 — MP4's `hvcC` box,
/// Matroska's CodecPrivate, GStreamer's `codec_data` for stream-format hvc1/hev1, which h265parse also builds for
/// an MPEG-TS stream) or from Annex B bytes (a first access unit). Configurations that start with a start code are
/// Annex B, all others `hvcC` — libavcodec's test. Only an SPS of the base layer (`nuh_layer_id` 0) is read: other
/// layers' SPSs have another syntax. Every read is bounded by the bytes given; counts the syntax limits (sub-layers,
/// reference picture sets, long-term pictures) are checked against the limits the standard sets.
/// Tested by HEVCSignalTypeTests (every branch, every truncation, x265's SPS) and the libFuzzer target `h264`.
enum HEVCParameterSets {
    static let spsType: UInt8 = 33

    /// The first base-layer SPS NAL unit (its two header bytes first), or nil.
    static func firstSPS(_ configuration: [UInt8]) -> ArraySlice<UInt8>? {
        let c = configuration
        if c.count >= 3, c[0] == 0, c[1] == 0, c[2] <= 1 {
            return H264Pictures.annexBUnits(c).first(where: isBaseSPS)
        }
        guard c.count >= 23 else { return nil }
        var at = 23
        for _ in 0..<Int(c[22]) {  // numOfArrays: each a NAL unit type, a count, then units after 16-bit sizes
            guard at + 3 <= c.count else { return nil }
            let count = Int(c[at + 1]) << 8 | Int(c[at + 2])
            at += 3
            for _ in 0..<count {
                guard at + 2 <= c.count else { return nil }
                let size = Int(c[at]) << 8 | Int(c[at + 1])
                guard at + 2 + size <= c.count else { return nil }
                let nal = c[(at + 2)..<(at + 2 + size)]
                if isBaseSPS(nal) { return nal }
                at += 2 + size
            }
        }
        return nil
    }

    /// nal_unit_header() (7.3.1.2): type 33 and layer 0.
    static func isBaseSPS(_ nal: ArraySlice<UInt8>) -> Bool {
        guard nal.count > 2 else { return false }
        let b0 = nal[nal.startIndex], b1 = nal[nal.startIndex + 1]
        return (b0 >> 1) & 0x3F == spsType && (b0 & 1) == 0 && b1 >> 3 == 0
    }

    /// A reader of a base-layer SPS NAL unit (header first) standing at the start of vui_parameters() (7.3.2.2.1):
    /// .some(nil) when the SPS has no VUI; nil when it is malformed or ends early.
    static func vuiOfSPS(_ nal: ArraySlice<UInt8>) -> RBSPReader?? {
        guard isBaseSPS(nal) else { return nil }
        var r = RBSPReader(nal.dropFirst(2))
        // sps_video_parameter_set_id, sps_max_sub_layers_minus1 (0…6), sps_temporal_id_nesting_flag
        guard r.bits(4) != nil, let subLayers = r.bits(3), subLayers <= 6, r.bits(1) != nil,
              r.skipProfileTierLevel(subLayers: Int(subLayers)),
              r.ue() != nil, let chroma = r.ue(), chroma <= 3 else { return nil }  // sps_seq_parameter_set_id
        if chroma == 3 { guard r.bits(1) != nil else { return nil } }  // separate_colour_plane_flag
        guard r.ue() != nil, r.ue() != nil, let window = r.bits(1) else { return nil }  // width, height
        if window == 1 { for _ in 0..<4 { guard r.ue() != nil else { return nil } } }  // conf_win offsets
        // bit_depth_luma_minus8, bit_depth_chroma_minus8, log2_max_pic_order_cnt_lsb_minus4 (0…12)
        guard r.ue() != nil, r.ue() != nil, let pocBits = r.ue(), pocBits <= 12, let ordering = r.bits(1) else { return nil }
        for _ in (ordering == 1 ? 0 : subLayers)...subLayers {  // max_dec_pic_buffering, num_reorder, latency
            guard r.ue() != nil, r.ue() != nil, r.ue() != nil else { return nil }
        }
        // the coding and transform block sizes, max_transform_hierarchy_depth_inter/intra
        for _ in 0..<6 { guard r.ue() != nil else { return nil } }
        guard let scaling = r.bits(1) else { return nil }
        if scaling == 1 {
            guard let present = r.bits(1) else { return nil }  // sps_scaling_list_data_present_flag
            if present == 1 { guard r.skipScalingListData() else { return nil } }
        }
        guard r.bits(1) != nil, r.bits(1) != nil, let pcm = r.bits(1) else { return nil }  // amp, sample_adaptive_offset
        if pcm == 1 { guard r.bits(8) != nil, r.ue() != nil, r.ue() != nil, r.bits(1) != nil else { return nil } }
        guard let sets = r.ue(), sets <= 64, r.skipShortTermRefPicSets(Int(sets)), let longTerm = r.bits(1) else { return nil }
        if longTerm == 1 {
            guard let count = r.ue(), count <= 32 else { return nil }  // num_long_term_ref_pics_sps
            for _ in 0..<count {  // lt_ref_pic_poc_lsb_sps, used_by_curr_pic_lt_sps_flag
                guard r.bits(Int(pocBits) + 4) != nil, r.bits(1) != nil else { return nil }
            }
        }
        // sps_temporal_mvp_enabled_flag, strong_intra_smoothing_enabled_flag, vui_parameters_present_flag
        guard r.bits(1) != nil, r.bits(1) != nil, let vui = r.bits(1) else { return nil }
        return vui == 1 ? r : .some(nil)
    }
}

extension VideoSignalType {
    /// The colour the first base-layer SPS of an HEVC configuration (`hvcC`, or Annex B) states: its VUI's signal
    /// type, or video range with no colour description when the SPS has no VUI or no signal type (libavcodec reads
    /// such an SPS so). nil when there is no SPS or it is malformed.
    public init?(hevcConfiguration configuration: [UInt8]) {
        guard let sps = HEVCParameterSets.firstSPS(configuration), let vui = HEVCParameterSets.vuiOfSPS(sps) else {
            return nil
        }
        guard var r = vui else {
            self.init(fullRange: false)
            return
        }
        guard let read = r.vuiSignalType() else { return nil }
        self = read ?? VideoSignalType(fullRange: false)
    }
}

extension RBSPReader {
    /// profile_tier_level(1, sps_max_sub_layers_minus1) (7.3.3): the general profile, tier and level (96 bits),
    /// then each sub-layer's presence flags and what they announce (88 bits of profile, 8 of level).
    mutating func skipProfileTierLevel(subLayers: Int) -> Bool {
        guard bits(32) != nil, bits(32) != nil, bits(32) != nil else { return false }
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<subLayers {
            guard let profile = bits(1), let level = bits(1) else { return false }
            present.append((profile == 1, level == 1))
        }
        if subLayers > 0 { for _ in subLayers..<8 { guard bits(2) != nil else { return false } } }  // reserved_zero_2bits
        for layer in present {
            if layer.profile { guard bits(32) != nil, bits(32) != nil, bits(24) != nil else { return false } }
            if layer.level { guard bits(8) != nil else { return false } }
        }
        return true
    }

    /// scaling_list_data() (7.3.4): per size and matrix a prediction mode, then a reference delta or the
    /// coefficients (a DC coefficient first for 16×16 and 32×32).
    mutating func skipScalingListData() -> Bool {
        for size in 0..<4 {
            for _ in stride(from: 0, to: 6, by: size == 3 ? 3 : 1) {
                guard let mode = bits(1) else { return false }
                if mode == 0 {
                    guard ue() != nil else { return false }  // scaling_list_pred_matrix_id_delta
                    continue
                }
                if size > 1 { guard se() != nil else { return false } }  // scaling_list_dc_coef_minus8
                for _ in 0..<min(64, 1 << (4 + 2 * size)) { guard se() != nil else { return false } }
            }
        }
        return true
    }

    /// The SPS's `count` st_ref_pic_set() (7.3.7). A set predicted from the one before it has one flag pair per
    /// picture of that set plus one, so each set's pictures are derived as the standard does (7-61, 7-62) — the
    /// delta POCs before (S0) and after (S1) the current picture — to know how many bits the next one has. At most
    /// 16 pictures a set (libavcodec's limit, the largest DPB).
    mutating func skipShortTermRefPicSets(_ count: Int) -> Bool {
        var before: [Int] = [], after: [Int] = []  // the previous set's DeltaPocS0 and DeltaPocS1
        for index in 0..<count {
            guard let predicted = index == 0 ? 0 : bits(1) else { return false }  // inter_ref_pic_set_prediction_flag
            if predicted == 1 {
                guard let set = predictedSet(before: before, after: after) else { return false }
                (before, after) = set
                continue
            }
            guard let negative = ue(), let positive = ue(), negative <= 16, positive <= 16, negative + positive <= 16 else { return false }
            var poc = 0
            before = []
            for _ in 0..<negative {  // delta_poc_s0_minus1, used_by_curr_pic_s0_flag
                guard let delta = ue(), bits(1) != nil else { return false }
                poc -= Int(delta) + 1
                before.append(poc)
            }
            poc = 0
            after = []
            for _ in 0..<positive {
                guard let delta = ue(), bits(1) != nil else { return false }
                poc += Int(delta) + 1
                after.append(poc)
            }
        }
        return true
    }

    /// A set predicted from the reference set (`before`, `after`): delta_rps_sign, abs_delta_rps_minus1, then per
    /// reference picture and the reference picture itself used_by_curr_pic_flag and, when 0, use_delta_flag.
    private mutating func predictedSet(before: [Int], after: [Int]) -> (before: [Int], after: [Int])? {
        guard let sign = bits(1), let magnitude = ue(), magnitude < 1 << 15 else { return nil }
        let deltaRPS = (sign == 1 ? -1 : 1) * (Int(magnitude) + 1)
        var use: [Bool] = []
        for _ in 0...(before.count + after.count) {
            guard let used = bits(1) else { return nil }
            if used == 1 {
                use.append(true)
            } else {
                guard let delta = bits(1) else { return nil }
                use.append(delta == 1)
            }
        }
        let own = use[before.count + after.count]  // the reference picture itself
        var s0: [Int] = [], s1: [Int] = []
        for j in after.indices.reversed() where after[j] + deltaRPS < 0 && use[before.count + j] { s0.append(after[j] + deltaRPS) }
        if deltaRPS < 0 && own { s0.append(deltaRPS) }
        for j in before.indices where before[j] + deltaRPS < 0 && use[j] { s0.append(before[j] + deltaRPS) }
        for j in before.indices.reversed() where before[j] + deltaRPS > 0 && use[j] { s1.append(before[j] + deltaRPS) }
        if deltaRPS > 0 && own { s1.append(deltaRPS) }
        for j in after.indices where after[j] + deltaRPS > 0 && use[before.count + j] { s1.append(after[j] + deltaRPS) }
        return s0.count + s1.count <= 16 ? (s0, s1) : nil
    }
}
