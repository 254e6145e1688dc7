/// A FLAC frame header's block size: how many samples (per channel) the frame holds (FLAC format, "FRAME_HEADER").
/// GStreamer 1.22's flacparse gives every frame of a fixed-blocksize stream the stream's block size as its duration,
/// the last one included, which holds fewer (ffmpeg's encoder: 648 of 4608 for 2 s at 44.1 kHz); the header states
/// the real count, which is what ffmpeg's demuxer and ffprobe report as the packet's duration.
public enum FLACFrame {
    /// The block size of the frame starting at `header[0]`, nil when the bytes are not a frame header: a sync code
    /// 0xFFF8/0xFFF9, a block size code other than the reserved 0, the coded frame or sample number (UTF-8-like,
    /// 1 to 7 bytes), then for codes 6 and 7 the size less one in 8 or 16 bits.
    public static func blockSize(header: some RandomAccessCollection<UInt8>) -> Int? {
        let b = Array(header.prefix(16))
        guard b.count >= 5, b[0] == 0xFF, b[1] & 0xFE == 0xF8 else { return nil }
        let code = Int(b[2] >> 4)
        switch code {
        case 0: return nil
        case 1: return 192
        case 2...5: return 576 << (code - 2)
        case 8...15: return 256 << (code - 8)
        default: break
        }
        // Codes 6 and 7: the size less one follows the coded number, whose first byte says its length.
        let lead = b[4]
        let numberLength = lead < 0x80 ? 1 : (~lead).leadingZeroBitCount  // its leading 1 bits
        // 10xxxxxx continues a number (no first byte), 0xFF has no length.
        guard numberLength <= 7, lead < 0x80 || numberLength >= 2 else { return nil }
        let at = 4 + numberLength
        if code == 6 { return at < b.count ? Int(b[at]) + 1 : nil }
        return at + 1 < b.count ? (Int(b[at]) << 8 | Int(b[at + 1])) + 1 : nil
    }
}

