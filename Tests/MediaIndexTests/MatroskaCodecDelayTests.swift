import MediaIndex
import TestSupport
import Testing

/// MatroskaCodecDelay on Matroska headers built in the test (ffmpeg-made Opus files are compared with ffprobe by
/// IntegrationTests' OpusTrimsTests).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MatroskaCodecDelayTests {
    static func ebml(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] { TrackTimescaleTests.ebml(id, body) }
    static let header = ebml([0x1A, 0x45, 0xDF, 0xA3], ebml([0x42, 0x82], Array("webm".utf8)))
    static let unknownSegment: [UInt8] = [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    static let cluster = ebml([0x1F, 0x43, 0xB6, 0x75], [0xE7, 0x81, 0x00])

    static func entry(number: UInt8, delay: [UInt8]?) -> [UInt8] {
        ebml([0xAE], ebml([0xD7], [number]) + (delay.map { ebml([0x56, 0xAA], $0) } ?? []))
    }

    /// Each TrackEntry's CodecDelay by TrackNumber; none stated, 0, or more than maxNanoseconds (2 s): absent.
    @Test func delaysByTrackNumber() {
        let tracks = Self.ebml([0x16, 0x54, 0xAE, 0x6B],
                               Self.entry(number: 1, delay: [0x63, 0x2E, 0xA0])  // 6,500,000 ns: libopus's 312 frames
                               + Self.entry(number: 2, delay: nil) + Self.entry(number: 3, delay: [0])
                               + Self.entry(number: 4, delay: [0x01, 0x2A, 0x05, 0xF2, 0x00]))  // 5,000,000,000 ns
        let head = Self.header + Self.unknownSegment + tracks + Self.cluster + [UInt8](repeating: 0, count: 32)
        #expect(MatroskaCodecDelay.delays(head) == [1: 6_500_000])
        // Tracks after the first Cluster are not read; a head cut inside Tracks states nothing.
        #expect(MatroskaCodecDelay.delays(Self.header + Self.unknownSegment + Self.cluster + tracks).isEmpty)
        #expect(MatroskaCodecDelay.delays(Array((Self.header + Self.unknownSegment + tracks).dropLast(3))).isEmpty)
        #expect(MatroskaCodecDelay.delays([0x1A, 0x45]).isEmpty)
    }

    /// ffmpeg's PTS: the block's ticks less the delay's, each rounded half away from zero (6.5 ms → 7 ticks of 1 ms).
    @Test func ffmpegTicks() {
        let ms: Int64 = 1_000_000
        #expect(MatroskaCodecDelay.ffmpegTicks(block: 0, delay: 6_500_000, tick: ms) == -7)
        #expect(MatroskaCodecDelay.ffmpegTicks(block: 21 * ms, delay: 6_500_000, tick: ms) == 14)
        #expect(MatroskaCodecDelay.ffmpegTicks(block: 21 * ms, delay: 6_400_000, tick: ms) == 15)
        #expect(MatroskaCodecDelay.ffmpegTicks(block: 21 * ms, delay: 6_500_000, tick: 1) == 14_500_000)
        #expect(MatroskaCodecDelay.ffmpegTicks(block: 21 * ms, delay: 0, tick: 0) == 0)
    }
}
