/// How many samples (per channel) one stored audio packet decodes to, from its bytes or the codec configuration —
/// what ffmpeg's parsers give a packet as its duration when the container states none (Matroska blocks without a
/// BlockDuration).
public enum AudioPackets {
    /// An Opus packet's samples at 48 kHz (RFC 6716 §3.1): the TOC byte's configuration gives the frame size, its
    /// code the frame count (code 3: the next byte's low 6 bits). nil when the packet is empty or malformed.
    public static func opusSamples(_ packet: some RandomAccessCollection<UInt8>) -> Int? {
        guard let toc = packet.first else { return nil }
        let config = Int(toc >> 3)
        // In 1/400 s units (120 samples at 48 kHz): SILK 10/20/40/60 ms, hybrid 10/20 ms, CELT 2.5/5/10/20 ms.
        let units: Int
        switch config {
        case 0..<12: units = [4, 8, 16, 24][config % 4]
        case 12..<16: units = [4, 8][config % 2]
        default: units = [1, 2, 4, 8][config % 4]
        }
        let frames: Int
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { return nil }
            frames = Int(packet[packet.index(after: packet.startIndex)] & 0x3F)
        }
        guard frames > 0, frames * units <= 48 else { return nil }  // at most 120 ms
        return frames * units * 120
    }

    /// The samples of every AAC packet of a stream with this AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) — 960
    /// when the GASpecificConfig's frameLengthFlag is set, else 1024 — and its sampling frequency (the duration's
    /// rate: a demuxer's caps may state the doubled SBR rate). nil for a configuration it cannot read (an escaped
    /// object type, a reserved frequency index, too short).
    public static func aacSamples(config: [UInt8]) -> (samples: Int, rate: Int)? {
        guard config.count >= 2 else { return nil }
        let bits = config.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } << (8 * UInt64(8 - min(config.count, 8)))
        func field(_ at: Int, _ width: Int) -> Int { Int((bits >> UInt64(64 - at - width)) & ((1 << UInt64(width)) - 1)) }
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard field(0, 5) != 31 else { return nil }
        // audioObjectType (5), samplingFrequencyIndex (4; 15: a 24-bit frequency follows), channelConfiguration (4).
        let index = field(5, 4)
        let rate = index == 15 ? field(9, 24) : index < rates.count ? rates[index] : 0
        let at = index == 15 ? 5 + 4 + 24 + 4 : 5 + 4 + 4
        guard rate > 0, config.count * 8 > at else { return nil }
        return (field(at, 1) == 1 ? 960 : 1024, rate)
    }

    /// The pre-skip of an Opus identification header (RFC 7845 §5.1: "OpusHead", version 0–15, channel count, then
    /// the pre-skip as a little-endian u16 — 48 kHz frames a decoder drops at the start). nil for anything else.
    public static func opusPreSkip(head: [UInt8]) -> Int? {
        guard head.count >= 19, head.starts(with: Array("OpusHead".utf8)), head[8] & 0xF0 == 0, head[9] > 0 else { return nil }
        return Int(head[10]) | Int(head[11]) << 8
    }
}
