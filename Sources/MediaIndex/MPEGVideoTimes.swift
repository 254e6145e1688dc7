/// MPEG-1/2 video in an MPEG-PS carries a PTS only in the PES header of a packet that a picture starts in, and a
/// muxer that packs several small pictures into one PES (ffmpeg's `-f mpeg` and `-f vob`) leaves the others without
/// one; mpegvideoparse gives the first picture starting in such a PES its PTS and the others neither PTS nor DTS.
/// ffmpeg's demuxer times those pictures itself (libavformat's compute_pkt_fields: each packet's DTS is the one
/// before plus that one's duration, and without B-pictures its PTS is its DTS). This gives the untimed pictures the
/// same times, from the stored ones, in decode order:
/// - a DTS: the previous picture's DTS plus its duration (as ffmpeg);
/// - a PTS from the picture header's `temporal_reference`, the picture's place in display order within its group of
///   pictures (GOP): the latest picture of the same group that has a time, plus the difference of their temporal
///   references in frame durations (without B-pictures, the previous picture's PTS plus one frame: ffmpeg's); the
///   first pictures of a group before any timed one are placed after the group before it, whose pictures all
///   precede them in display order.
/// A picture met before any time (after a seek, the stream's first PES without a PTS) stays untimed, and so does
/// one without a duration; a sample whose bytes hold no picture header keeps the times it has. Times and durations are nanoseconds (GStreamer's).
public struct MPEGVideoTimes: Sendable {
    /// What a sample's picture header says: `temporalReference` (10 bits, display order within the group, modulo
    /// 1024), whether a group-of-pictures header (00 00 01 B8) comes before the picture in the sample, and whether
    /// its `picture_coding_type` is I (1): a picture decoded without another, a sync sample.
    public struct Picture: Equatable, Sendable {
        public var temporalReference: Int
        public var startsGroup: Bool
        public var isIntra = false
    }

    /// The latest picture of the current group with a presentation time: that time and its temporal reference.
    private var anchor: (pts: Int64, temporalReference: Int)?
    /// Where the current group's pictures end in display order so far (the latest PTS + duration), nil unknown.
    private var groupEnd: Int64?
    /// Where the previous picture ends in decode order (its DTS plus its duration), nil unknown.
    private var decodeEnd: Int64?

    public init() {}

    /// Forgets every time (a flush: the next samples come from elsewhere in the stream).
    public mutating func reset() { self = MPEGVideoTimes() }

    /// The sample's presentation and decode times (ns): its own where it has them, else placed as above (nil: not
    /// known). `bytes`: the sample's first bytes, up to and including its picture header.
    public mutating func times(pts: Int64?, dts: Int64?, duration: Int64?, bytes: [UInt8]) -> (pts: Int64?, dts: Int64?) {
        let duration = duration.flatMap { $0 > 0 ? $0 : nil }
        let decode = dts ?? (pts == nil ? decodeEnd : nil)
        decodeEnd = if let decode, let duration { Self.sum(decode, duration) } else { nil }
        guard let picture = Self.picture(in: bytes) else { return (pts, decode) }
        if picture.startsGroup {
            // The new group is shown after every picture of the one before: its temporal reference 0 starts there.
            anchor = groupEnd.map { ($0, 0) }
        }
        var presentation = pts
        if presentation == nil, let anchor, let duration {
            let frames = Int64(Self.distance(from: anchor.temporalReference, to: picture.temporalReference))
            let (offset, overflow) = frames.multipliedReportingOverflow(by: duration)
            presentation = overflow ? nil : Self.sum(anchor.pts, offset)
        }
        if let presentation {
            anchor = (presentation, picture.temporalReference)
            if let duration, let end = Self.sum(presentation, duration) { groupEnd = max(groupEnd ?? .min, end) }
        }
        return (presentation, decode)
    }

    /// `a + b`, nil when it overflows (a hostile stream's times).
    static func sum(_ a: Int64, _ b: Int64) -> Int64? {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : total
    }

    /// `to − from` for temporal references modulo 1024, in −512 ..< 512.
    static func distance(from: Int, to: Int) -> Int {
        let d = ((to - from) % 1024 + 1024) % 1024
        return d >= 512 ? d - 1024 : d
    }

    /// The first picture header (00 00 01 00) in `bytes`, and whether a group header (00 00 01 B8) precedes it; nil
    /// when there is none (or it is cut short before its temporal_reference).
    public static func picture(in bytes: [UInt8]) -> Picture? {
        var startsGroup = false
        var i = 0
        while i + 5 < bytes.count {
            guard bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 else { i += 1; continue }
            switch bytes[i + 3] {
            case 0xB8: startsGroup = true
            case 0x00: return Picture(temporalReference: Int(bytes[i + 4]) << 2 | Int(bytes[i + 5]) >> 6, startsGroup: startsGroup,
                                      isIntra: (bytes[i + 5] >> 3) & 7 == 1)
            default: break
            }
            i += 4
        }
        return nil
    }
}
