/// MPEG-TS bytes as tests read them.
public enum TransportStream {
    /// The PCR base (90 kHz) of the first packet that carries a PCR: where GStreamer's timeline starts (tsdemux
    /// starts the stream at its program's first PCR), so a time trackd gives is ffprobe's integer less this.
    public static func firstPCR(_ bytes: [UInt8]) -> Int64? {
        for at in stride(from: 0, to: bytes.count - 188 + 1, by: 188) where bytes[at] == 0x47 {
            let adaptation = (bytes[at + 3] >> 4) & 2 != 0
            guard adaptation, bytes[at + 4] >= 7, bytes[at + 5] & 0x10 != 0 else { continue }
            let b = bytes[(at + 6)..<(at + 11)].map(Int64.init)
            return b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7
        }
        return nil
    }
}
