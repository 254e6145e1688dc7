/// MPEG-1/2 video in an MPEG-PS carries a PTS only in the PES header of a packet that a picture starts in, and a
/// muxer that packs several small pictures into one PES (ffmpeg's `-f mpeg` and `-f vob`) leaves the others without
/// one; mpegvideoparse gives the first picture starting in such a PES its PTS and DTS, and the others no PTS and a
/// DTS of its own (the previous one's plus its duration), which is not ffmpeg's where the rate varies.
/// ffmpeg times those pictures itself (libavformat's compute_pkt_fields, then the decoder's reordering), and this
/// gives the untimed pictures the same times, in decode order, from the pictures around them:
/// - Where the stream reorders (MPEG-1; MPEG-2 unless its sequence extension sets `low_delay`), an I- or P-picture
///   is shown when the next I- or P-picture is decoded: its PTS is that picture's DTS, so it is held until that
///   picture comes (`take` returns it then, with the pictures held behind it), or the stream ends (`finish`: where
///   the next picture's DTS would be, one frame after the last picture in display order). Its DTS is the PTS of the
///   I- or P-picture before it when that one's PES stated it, else where the previous picture's decoding ends: that
///   picture's DTS plus a frame (after an I- or P-picture, the duration of the one before it, as ffmpeg's).
/// - A B-picture, and every picture of a `low_delay` stream, is shown when it is decoded: PTS and DTS where the
///   previous picture's decoding ends (after a B-picture, its PTS plus its duration).
/// A picture with a PTS of its own keeps its times. What there is nothing to place from keeps what it came with:
/// after a seek, the pictures before the first time a PES states (an I- or P-picture among them is still shown at
/// the next one's DTS when that is known), and what follows a picture without a duration. A sample whose bytes hold
/// no picture header keeps its times (held behind an untimed picture, so that the order stays). Times and durations
/// are nanoseconds (GStreamer's).
public struct MPEGVideoTimes: Sendable {
    /// What a sample's bytes say: its picture header's `picture_coding_type` (1 I, 2 P, 3 B, 4 D: MPEG-1's DC
    /// pictures), and the `low_delay` flag of a sequence extension before it in the sample (nil: none there).
    public struct Picture: Equatable, Sendable {
        public var codingType: Int
        public var lowDelay: Bool?
        /// An I-picture: decoded without another, a sync sample.
        public var isIntra: Bool { codingType == 1 }
        /// A B-picture: shown when it is decoded (never a reference).
        public var isBidirectional: Bool { codingType == 3 }
    }

    /// A sample's presentation and decode times (ns; nil: not known).
    public struct Times: Equatable, Sendable {
        public var pts: Int64?
        public var dts: Int64?
        public init(pts: Int64?, dts: Int64?) {
            self.pts = pts
            self.dts = dts
        }
    }

    /// What `take` decides. The caller keeps the samples held, in the order they came: it holds the sample taken when
    /// `current` is nil (else that sample goes now, with those times, after the released ones), then sends the first
    /// `released.count` samples it holds, with these times.
    public struct Step: Equatable, Sendable {
        public var released: [Times]
        public var current: Times?
        public init(released: [Times], current: Times?) {
            self.released = released
            self.current = current
        }
    }

    /// The latest sequence extension's `low_delay`: the stream does not reorder.
    private var lowDelay = false
    /// Where the previous picture's decoding ends: the next untimed picture's DTS (ffmpeg's `cur_dts`).
    private var decodeEnd: Int64?
    /// The duration of the latest I- or P-picture (ffmpeg's `last_IP_duration`).
    private var referenceDuration: Int64?
    /// The PTS the latest I- or P-picture's PES stated (nil: it had none; ffmpeg's `last_IP_pts`).
    private var referencePTS: Int64?
    /// The samples held, in decode order: an untimed I- or P-picture (its DTS; its PTS not known yet) and what came
    /// after it (their times known).
    private var held: [Times] = []

    public init() {}

    /// Forgets every time and what is held (a flush: the next samples come from elsewhere in the stream; the held
    /// ones are discarded). Whether the stream reorders is kept.
    public mutating func reset() { self = MPEGVideoTimes(lowDelay: lowDelay) }

    private init(lowDelay: Bool) { self.lowDelay = lowDelay }

    /// The next sample in decode order, with the times and duration it has (ns) and its first bytes (up to and
    /// including its picture header): see Step.
    public mutating func take(pts: Int64?, dts: Int64?, duration: Int64?, bytes: [UInt8]) -> Step {
        let duration = duration.flatMap { $0 > 0 ? $0 : nil }
        guard let picture = Self.picture(in: bytes) else { return queue(Times(pts: pts, dts: dts)) }
        lowDelay = picture.lowDelay ?? lowDelay
        guard !lowDelay && !picture.isBidirectional else {
            // Shown when decoded: ffmpeg's PTS = DTS, and the next picture is decoded after this one's duration.
            let shown = pts ?? decodeEnd
            decodeEnd = Self.sum(shown, duration)
            return queue(pts == nil ? Times(pts: shown, dts: shown ?? dts) : Times(pts: pts, dts: dts))
        }
        // ffmpeg's DTS for this picture (its own where its PES stated it), and the held picture shown at it.
        let decode = (pts == nil ? nil : dts) ?? referencePTS ?? decodeEnd
        decodeEnd = Self.sum(decode, referenceDuration ?? duration)
        (referenceDuration, referencePTS) = (duration, pts)
        var released = held
        if !released.isEmpty { released[0].pts = decode }
        held = []
        guard pts == nil else { return Step(released: released, current: Times(pts: pts, dts: dts)) }
        held = [Times(pts: nil, dts: decode ?? dts)]
        return Step(released: released, current: nil)
    }

    /// The end of the stream: the held samples' times (what the caller holds, in order), the first one shown where
    /// the next picture would be decoded.
    public mutating func finish() -> [Times] {
        var released = held
        if !released.isEmpty { released[0].pts = decodeEnd }
        held = []
        return released
    }

    /// A sample whose times are known: behind the held ones, or at once when nothing is held. More than `maxHeld`
    /// held (a stream of B-pictures after an untimed I- or P-picture, never an encoder's) are all released, the
    /// first placed as at the end of the stream, so that what is held stays bounded.
    private mutating func queue(_ times: Times) -> Step {
        guard !held.isEmpty else { return Step(released: [], current: times) }
        held.append(times)
        return Step(released: held.count > Self.maxHeld ? finish() : [], current: nil)
    }

    /// Samples held beyond this many are released (`queue`): more than a B-picture run (at most 16 in ffmpeg's
    /// encoder) and the picture before it.
    public static let maxHeld = 32

    /// `a + b`, nil when either is unknown or it overflows (a hostile stream's times).
    static func sum(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a, let b else { return nil }
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : total
    }

    /// The first picture header (00 00 01 00) in `bytes`, and the `low_delay` of a sequence extension (00 00 01 B5,
    /// extension id 1) before it; nil when there is none (or it is cut short before its picture_coding_type).
    public static func picture(in bytes: [UInt8]) -> Picture? {
        var lowDelay: Bool?
        var i = 0
        while i + 5 < bytes.count {
            guard bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 else { i += 1; continue }
            switch bytes[i + 3] {
            case 0xB5 where bytes[i + 4] >> 4 == 1 && i + 9 < bytes.count: lowDelay = bytes[i + 9] >> 7 == 1
            case 0x00: return Picture(codingType: Int(bytes[i + 5] >> 3) & 7, lowDelay: lowDelay)
            default: break
            }
            i += 4
        }
        return nil
    }
}
