/// MPEG-PS bytes as tests read them.
public enum ProgramStream {
    /// The system_clock_reference_base (90 kHz) of the first pack header (00 00 01 BA): MPEG-2's ('01' first) or
    /// MPEG-1's ('0010' first) layout. Where GStreamer's timeline starts (mpegpsdemux starts the stream at the first
    /// pack's SCR), so a time trackd gives is ffprobe's integer less this.
    public static func firstSCR(_ b: [UInt8]) -> Int64? {
        guard let at = (0..<max(b.count - 13, 0)).first(where: { b[$0] == 0 && b[$0 + 1] == 0 && b[$0 + 2] == 1 && b[$0 + 3] == 0xBA })
        else { return nil }
        let p = b[(at + 4)..<(at + 9)].map(Int64.init)
        if p[0] & 0xC0 == 0x40 {
            return (p[0] & 0x38) << 27 | (p[0] & 0x03) << 28 | p[1] << 20 | (p[2] & 0xF8) << 12 | (p[2] & 0x03) << 13
                | p[3] << 5 | p[4] >> 3
        }
        return (p[0] & 0x0E) << 29 | p[1] << 22 | (p[2] & 0xFE) << 14 | p[3] << 7 | p[4] >> 1
    }
}
