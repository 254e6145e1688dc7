import MediaIndex
import Testing

/// FLAC frame headers' block sizes, from headers ffmpeg's encoder writes (2 s at 44.1 kHz, 4608-frame blocks).
struct FLACFrameTests {
    @Test func codedBlockSizes() {
        // Frame 1: block size code 5 (576 × 2³).
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x59, 0x08, 0x01, 0x3B]) == 4608)
        // The last frame (19): code 7, the size less one in 16 bits after the 1-byte frame number: 0x0287 + 1.
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x79, 0x08, 0x13, 0x02, 0x87, 0xC8]) == 648)
        // Code 6, 8 bits, after a 2-byte coded number (0xC2 0x80: frame 128).
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF9, 0x69, 0x08, 0xC2, 0x80, 0x63, 0x00]) == 100)
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x19, 0x08, 0x00]) == 192)
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0xA9, 0x08, 0x00]) == 1024)
    }

    @Test func notAFrameHeader() {
        #expect(FLACFrame.blockSize(header: [0x66, 0x4C, 0x61, 0x43, 0x00]) == nil)  // "fLaC"
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x09, 0x08, 0x00]) == nil)  // reserved code 0
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x79, 0x08, 0x13, 0x02]) == nil)  // ends in the size
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x69, 0x08, 0x80, 0x10]) == nil)  // continuation byte first
        #expect(FLACFrame.blockSize(header: [0xFF, 0xF8, 0x69, 0x08, 0xFF, 0x10]) == nil)  // no length
    }
}

