import MediaIndex
import TestSupport
import Testing

/// The times MPEGVideoTimes gives MPEG-1/2 pictures whose PES header had none: DTS the previous one's plus its
/// duration; PTS from the temporal reference within the group of pictures.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MPEGVideoTimesTests {
    static let frame: Int64 = 33_333_333

    /// A sample: [a sequence header and] [a GOP header and] a picture header with `tr` (10 bits) and coding type.
    static func picture(_ tr: Int, group: Bool = false, type: UInt8 = 1) -> [UInt8] {
        let sequence: [UInt8] = group ? [0, 0, 1, 0xB3, 0x0A, 0x00, 0x5A, 0x13] : []
        let gop: [UInt8] = group ? [0, 0, 1, 0xB8, 0x00, 0x08, 0x00, 0x40] : []
        return sequence + gop + [0, 0, 1, 0x00, UInt8(tr >> 2), UInt8(tr & 3) << 6 | type << 3, 0xFF, 0xF8]
    }

    /// The picture header's fields, after a GOP header or not; none in a sample without one (or cut short).
    @Test func pictureHeader() {
        let fields = { (bytes: [UInt8]) in MPEGVideoTimes.picture(in: bytes).map { [$0.temporalReference, $0.startsGroup ? 1 : 0] } }
        #expect(fields(Self.picture(0, group: true)) == [0, 1])
        #expect(fields(Self.picture(1023)) == [1023, 0])
        #expect(MPEGVideoTimes.picture(in: [0, 0, 1, 0xB7]) == nil)
        #expect(MPEGVideoTimes.picture(in: [0, 0, 1, 0x00, 0x01]) == nil)
        // picture_coding_type: 1 I, 2 P, 3 B (with every temporal reference bit set around it).
        #expect([1, 2, 3].map { MPEGVideoTimes.picture(in: Self.picture(1023, type: $0))?.isIntra } == [true, false, false])
    }

    /// ffmpeg's `-f mpeg` without B-pictures: PES PTS on the first picture of each PES only; the others are one
    /// frame after the one before in both times, across a GOP boundary too.
    @Test func withoutBPictures() {
        var times = MPEGVideoTimes()
        let f = Self.frame
        let stored: [(pts: Int64?, tr: Int, group: Bool)] = [(100, 0, true), (nil, 1, false), (nil, 2, false),
                                                             (100 + 3 * f, 3, false), (nil, 0, true), (nil, 1, false)]
        let got = stored.map { times.times(pts: $0.pts, dts: $0.pts, duration: f, bytes: Self.picture($0.tr, group: $0.group)) }
        let expected = (0..<6).map { Optional(100 + Int64($0) * f) }
        #expect(got.map { $0.pts } == expected)
        #expect(got.map { $0.dts } == expected)
    }

    /// With B-pictures (decode order I2 B0 B1 P5 B3 B4, only the I timed): each PTS from the temporal reference;
    /// the DTS keeps counting in decode order; the next group (its B-pictures shown first) follows the latest end.
    @Test func withBPictures() {
        var times = MPEGVideoTimes()
        let f = Self.frame
        let order = [2, 0, 1, 5, 3, 4]
        var got = order.enumerated().map { i, tr in
            times.times(pts: i == 0 ? 1000 + 2 * f : nil, dts: i == 0 ? 1000 : nil, duration: f, bytes: Self.picture(tr, group: i == 0))
        }
        #expect(got.map { $0.pts } == order.map { Optional(1000 + Int64($0) * f) })
        #expect(got.map { $0.dts } == (0..<6).map { Optional(1000 + Int64($0) * f) })
        got = [2, 0].enumerated().map { i, tr in times.times(pts: nil, dts: nil, duration: f, bytes: Self.picture(tr, group: i == 0)) }
        #expect(got.map { $0.pts } == [Optional(1000 + 8 * f), Optional(1000 + 6 * f)])
    }

    /// Nothing to place from: the first pictures before any time, a sample without a duration, a reset (a flush);
    /// a sample without a picture header keeps its own times; temporal references wrap at 1024.
    @Test func untimedStaysUntimed() {
        var times = MPEGVideoTimes()
        #expect(times.times(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(0, group: true)) == (nil, nil))
        #expect(times.times(pts: 10, dts: 10, duration: Self.frame, bytes: Self.picture(1023)) == (10, 10))
        #expect(times.times(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(0)) == (10 + Self.frame, 10 + Self.frame))
        #expect(times.times(pts: nil, dts: nil, duration: nil, bytes: Self.picture(1)) == (nil, 10 + 2 * Self.frame))
        #expect(times.times(pts: nil, dts: nil, duration: Self.frame, bytes: [0, 0, 1, 0xB7]) == (nil, nil))
        times.reset()
        #expect(times.times(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(2)) == (nil, nil))
        // Times that overflow (a hostile stream) place nothing.
        #expect(times.times(pts: .max - 1, dts: .max - 1, duration: .max, bytes: Self.picture(0)) == (.max - 1, .max - 1))
        #expect(times.times(pts: nil, dts: nil, duration: .max, bytes: Self.picture(1)) == (nil, nil))
    }
}
