import MediaVocabulary

/// The colour a video stream states about itself: the VUI's video signal type — `video_full_range_flag` and, when
/// `colour_description_present_flag` is set, `colour_primaries`, `transfer_characteristics` and
/// `matrix_coefficients` (H.273 code points) — read from the first SPS of the codec configuration: H.264's
/// (ISO/IEC 14496-10 E.1.1) and HEVC's (ITU-T H.265 E.2.1) share this part of the syntax. h264parse names a
/// colorimetry only when the colour description is present, and GStreamer 1.22's qtdemux drops the full-range bit
/// of an MP4 `colr` box, so a full-range stream would otherwise be described as unknown or video range.
public struct VideoSignalType: Sendable, Equatable {
    public var fullRange: Bool
    /// The colour description; nil when the SPS has none.
    public var description: Description?

    public struct Description: Sendable, Equatable {
        public var primaries: UInt8
        public var transfer: UInt8
        public var matrix: UInt8

        public init(primaries: UInt8, transfer: UInt8, matrix: UInt8) {
            self.primaries = primaries
            self.transfer = transfer
            self.matrix = matrix
        }
    }

    public init(fullRange: Bool, description: Description? = nil) {
        self.fullRange = fullRange
        self.description = description
    }

    /// The signal type of the first SPS of an `avcC` record; nil when the record or its SPS is malformed or the
    /// SPS has no VUI signal type.
    public init?(avcC record: [UInt8]) {
        guard record.count >= 8, record[0] == 1, record[5] & 0x1F > 0 else { return nil }
        let size = Int(record[6]) << 8 | Int(record[7])
        guard size > 0, 8 + size <= record.count, record[8] & 0x1F == 7,
              var r = H264Pictures.vuiOfSPS(record[8..<(8 + size)]), r.bits(1) == 1,
              let read = r.vuiSignalType(), let type = read else { return nil }
        self = type
    }

    /// `container` (the demuxer's colorimetry) with what the stream states put over it, field by field — libavcodec's
    /// H.264 rule, so the description is ffprobe's: a signal type sets the range; a colour description sets the
    /// matrix, primaries and transfer.
    public func applied(to container: Colorimetry) -> Colorimetry {
        var c = container
        c.range = fullRange ? 2 : 1
        if let d = description {
            c.primaries = d.primaries
            c.transfer = d.transfer
            c.matrix = d.matrix
        }
        return c
    }

    /// What libavcodec's HEVC decoder makes of a stream whose SPS it read: the SPS decides all four fields, whatever
    /// the container says — its signal type the range (video range without one), its colour description the other
    /// three (2, unspecified, without one).
    public var wholeColorimetry: Colorimetry {
        Colorimetry(range: fullRange ? 2 : 1, matrix: description?.matrix ?? 2, primaries: description?.primaries ?? 2,
                    transfer: description?.transfer ?? 2)
    }

    /// A track's colorimetry: `container`'s with the colour its stream states, by libavcodec's rule for the codec
    /// (`applied(to:)` for H.264 `avc1`/`avc3` with an `avcC`; `wholeColorimetry` for HEVC `hvc1`/`hev1` with
    /// an `hvcC` or Annex B parameter sets); `container`'s for other codecs and unreadable configurations. Code
    /// points that state no colour (reserved, unassigned) are unspecified (`Colorimetry.normalized`), as libavcodec
    /// reads them.
    public static func colour(of codec: FourCC, configuration: [UInt8], over container: Colorimetry) -> Colorimetry {
        let colour = switch codec {
        case "avc1", "avc3": VideoSignalType(avcC: configuration)?.applied(to: container) ?? container
        case "hvc1", "hev1": VideoSignalType(hevcConfiguration: configuration)?.wholeColorimetry ?? container
        default: container
        }
        return colour.normalized
    }
}
