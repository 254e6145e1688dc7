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

/// Samples per packet for Matroska blocks without a duration (MatroskaPacketTimes).
struct AudioPacketsTests {
    @Test func opusSamplesFromTheTOC() {
        #expect(AudioPackets.opusSamples([0xFC, 0x00]) == 960)  // config 31 (CELT 20 ms), one frame: libopus's
        #expect(AudioPackets.opusSamples([0x0D, 0x00]) == 1920)  // config 1 (SILK 20 ms), code 1: two frames
        #expect(AudioPackets.opusSamples([0xE3, 0x03]) == 360)  // config 28 (CELT 2.5 ms), code 3, 3 frames
        #expect(AudioPackets.opusSamples([0x1B, 0x02]) == 5760)  // config 3 (SILK 60 ms), code 3, 2 frames
        #expect(AudioPackets.opusSamples([0x1B, 0x03]) == nil)  // 180 ms: more than a packet may hold
        #expect(AudioPackets.opusSamples([0xFB]) == nil)  // code 3 without its count
        #expect(AudioPackets.opusSamples([UInt8]()) == nil)
    }

    @Test func aacSamplesFromTheConfig() {
        #expect(AudioPackets.aacSamples(config: [0x11, 0x90]).map { [$0.samples, $0.rate] } == [1024, 48000])  // AAC LC, stereo
        #expect(AudioPackets.aacSamples(config: [0x11, 0x94])?.samples == 960)  // frameLengthFlag
        #expect(AudioPackets.aacSamples(config: [0x16, 0x90]) == nil)  // reserved frequency index 13
        #expect(AudioPackets.aacSamples(config: [0xF8, 0x00]) == nil)  // escaped object type
        #expect(AudioPackets.aacSamples(config: [0x17]) == nil)
    }

    /// OpusHead's pre-skip (OpusTrims: the first Ogg packets' times); anything that is not an OpusHead: nil.
    @Test func opusPreSkipFromTheHeader() {
        let head = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]  // v1, stereo, 312, 48 kHz
        #expect(AudioPackets.opusPreSkip(head: head) == 312)
        #expect(AudioPackets.opusPreSkip(head: Array(head.prefix(18))) == nil)  // cut short
        #expect(AudioPackets.opusPreSkip(head: Array("OpusTags".utf8) + head.dropFirst(8)) == nil)
        #expect(AudioPackets.opusPreSkip(head: Array(head.prefix(8)) + [0x10] + head.dropFirst(9)) == nil)  // version 16
        #expect(AudioPackets.opusPreSkip(head: Array(head.prefix(9)) + [0] + head.dropFirst(10)) == nil)  // no channels
    }
}
