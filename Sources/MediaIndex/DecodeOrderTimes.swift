import MediaVocabulary

/// AVI stores one time per chunk: its decode time (the chunk's number × scale/rate; GStreamer's avidemux gives it as
/// every sample's DTS, and as the PTS of key frames only). A stream without B-pictures presents its pictures in
/// decode order, so there the decode time is the presentation time and the track's frames can be indexed from it; a
/// stream with B-pictures stores no presentation times at all (ffprobe prints `pts=N/A`), and is not indexed
/// (docs/PROTOCOL.md §7.2).
public enum DecodeOrderTimes {
    /// Whether a stored sample holds a bidirectionally predicted picture: H.264 (`avc1`/`avc3`) a slice whose
    /// slice_type is B (1 or 6); MPEG-4 Part 2 (`mp4v`) a VOP whose vop_coding_type is B (2). `framing`: how the
    /// H.264 sample's NAL units are delimited (its caps' stream-format; h264parse gives AVI's Annex B stream in
    /// `avc` form, where a 4-byte length of 256–511 starts with the bytes of a start code, 00 00 01, so the bytes
    /// cannot tell). nil: a codec this does not read, H.264 without a framing, or no picture found — its decode time
    /// is not taken for a presentation time.
    public static func isBidirectional(_ bytes: [UInt8], codec: FourCC, framing: H264Pictures.Framing?) -> Bool? {
        switch codec.description {
        case "avc1", "avc3": return framing.flatMap { h264IsBidirectional(bytes, framing: $0) }
        case "mp4v": return mpeg4IsBidirectional(bytes)
        default: return nil
        }
    }

    /// The first slice's slice_type (after first_mb_in_slice, both ue(v)); nil without a slice.
    static func h264IsBidirectional(_ bytes: [UInt8], framing: H264Pictures.Framing) -> Bool? {
        guard let unit = h264FirstSlice(bytes, framing: framing) else { return nil }
        var reader = RBSPReader(unit.dropFirst())
        guard reader.ue() != nil, let type = reader.ue() else { return nil }
        return type % 5 == 1
    }

    /// NAL units each after a big-endian length of `size` bytes; the last one may be cut short (only a unit's first
    /// bytes are read).
    static func lengthPrefixedUnits(_ bytes: [UInt8], size: Int) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var i = 0
        while i + size < bytes.count {
            let length = bytes[i..<i + size].reduce(0) { $0 << 8 | Int($1) }
            guard length > 0 else { break }
            units.append(bytes[i + size..<min(i + size + length, bytes.count)])
            i += size + length
        }
        return units
    }

    /// The first VOP's coding type: the two bits after its start code 00 00 01 B6; nil without a VOP.
    static func mpeg4IsBidirectional(_ bytes: [UInt8]) -> Bool? {
        var i = 0
        while i + 4 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1, bytes[i + 3] == 0xB6 { return bytes[i + 4] >> 6 == 2 }
            i += 1
        }
        return nil
    }

    /// Whether a key frame's sample opens an open GOP, one whose pictures may refer to the GOP before: H.264 (`avc1`,
    /// `avc3`) a picture that is not IDR (its first slice's NAL unit type is 1: x264's `open-gop=1` recovery point),
    /// MPEG-4 Part 2 (`mp4v`) a GOV header with closed_gov 0 (mpeg4OpensGOV). nil: another codec, H.264 without a
    /// framing (as isBidirectional), or no picture.
    public static func opensGOP(_ bytes: [UInt8], codec: FourCC, framing: H264Pictures.Framing?) -> Bool? {
        switch codec.description {
        case "avc1", "avc3": return framing.flatMap { h264IsNonIDR(bytes, framing: $0) }
        case "mp4v": return mpeg4OpensGOV(bytes)
        default: return nil
        }
    }

    /// Whether the first slice is of a non-IDR picture (NAL unit type 1, not 5); nil without a slice.
    static func h264IsNonIDR(_ bytes: [UInt8], framing: H264Pictures.Framing) -> Bool? {
        h264FirstSlice(bytes, framing: framing)?.first.map { $0 & 0x1F == 1 }
    }

    /// The first coded slice NAL unit (type 1 or 5).
    static func h264FirstSlice(_ bytes: [UInt8], framing: H264Pictures.Framing) -> ArraySlice<UInt8>? {
        let units = switch framing {
        case .annexB: H264Pictures.annexBUnits(bytes)
        case .lengthPrefixed(let size): lengthPrefixedUnits(bytes, size: size)
        }
        return units.first { unit in
            unit.first.map { [1, 5].contains($0 & 0x1F) } == true
        }
    }

    /// Whether an MPEG-4 Part 2 sample opens an open GOP: its GOV header (start code 00 00 01 B3, before the first
    /// VOP) has closed_gov, the bit after the 18-bit time_code, 0. nil without a GOV header.
    public static func mpeg4OpensGOV(_ bytes: [UInt8]) -> Bool? {
        var i = 0
        while i + 6 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                if bytes[i + 3] == 0xB3 { return bytes[i + 6] & 0x20 == 0 }
                if bytes[i + 3] == 0xB6 { return nil }
            }
            i += 1
        }
        return nil
    }
}
