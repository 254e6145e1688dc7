import MediaIndex
import TestSupport
import Testing

/// The times MPEGVideoTimes gives MPEG-1/2 pictures whose PES header had none, as ffmpeg gives them: an I- or
/// P-picture is shown at the next one's DTS (held until it comes), a B-picture at its own DTS; each untimed DTS is
/// the previous I- or P-picture's stated PTS, else where the previous picture's decoding ends. The streams below are
/// ffprobe's packets of ffmpeg-made `-f mpeg` files (times in 1/90000, one frame 3000): its PTS where the PES
/// stated one, and each frame's `best_effort_timestamp`.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MPEGVideoTimesTests {
    typealias Times = MPEGVideoTimes.Times
    static let frame: Int64 = 3000

    /// A sample: [a sequence header and extension with `lowDelay`] a picture header of coding `type` (1 I, 2 P, 3 B)
    /// with every temporal reference bit set.
    static func picture(_ type: UInt8, lowDelay: Bool? = nil) -> [UInt8] {
        let sequence: [UInt8] = lowDelay.map { [0, 0, 1, 0xB3, 0x0A, 0x00, 0x5A, 0x13, 0, 0, 1, 0xB5, 0x14, 0x8A, 0x00, 0x01, 0x00, $0 ? 0x80 : 0x00] } ?? []
        return sequence + [0, 0, 1, 0x00, 0xFF, 0xC0 | type << 3, 0xFF, 0xF8]
    }

    /// One stored sample in decode order: its coding type and the times its PES stated (nil: none).
    struct Stored {
        var type: UInt8
        var pts: Int64?
        var dts: Int64?
    }

    /// Every sample's times as they go out, in decode order, after the stream ends (held ones where released).
    static func run(_ stored: [Stored], lowDelay: Bool? = nil, times: inout MPEGVideoTimes) -> [Times] {
        var out: [Times?] = []
        var waiting: [Int] = []
        for (i, s) in stored.enumerated() {
            let step = times.take(pts: s.pts, dts: s.dts, duration: frame, bytes: picture(s.type, lowDelay: i == 0 ? lowDelay : nil))
            out.append(step.current)
            if step.current == nil { waiting.append(i) }
            for (j, t) in zip(waiting.prefix(step.released.count), step.released) { out[j] = t }
            waiting.removeFirst(min(step.released.count, waiting.count))
        }
        for (j, t) in zip(waiting, times.finish()) { out[j] = t }
        return out.map { $0 ?? Times(pts: -1, dts: -1) }
    }

    static func run(_ stored: [Stored], lowDelay: Bool? = nil) -> [Times] {
        var times = MPEGVideoTimes()
        return run(stored, lowDelay: lowDelay, times: &times)
    }

    /// The picture header's coding type; a sequence extension's low_delay before it; none without a picture header
    /// (or one cut short).
    @Test func pictureHeader() {
        #expect([1, 2, 3].map { MPEGVideoTimes.picture(in: Self.picture($0))?.codingType } == [1, 2, 3])
        #expect([1, 2, 3].map { MPEGVideoTimes.picture(in: Self.picture($0))?.isIntra } == [true, false, false])
        #expect([1, 2, 3].map { MPEGVideoTimes.picture(in: Self.picture($0))?.isBidirectional } == [false, false, true])
        #expect([nil, false, true].map { MPEGVideoTimes.picture(in: Self.picture(2, lowDelay: $0))?.lowDelay } == [nil, false, true])
        #expect(MPEGVideoTimes.picture(in: [0, 0, 1, 0xB7]) == nil)
        #expect(MPEGVideoTimes.picture(in: [0, 0, 1, 0x00, 0x01]) == nil)
    }

    /// ffmpeg's `-f mpeg` at 30 fps without B-pictures (PES DTS one frame before PTS): an untimed picture is shown one
    /// frame after the one before, as every other; a run of untimed ones counts on from the last DTS; the last, held
    /// at the end, one frame after its DTS.
    @Test func constantRate() {
        let stored = [Stored(type: 1, pts: 48000, dts: 45000), Stored(type: 2, pts: nil, dts: nil), Stored(type: 2, pts: nil, dts: nil),
                      Stored(type: 2, pts: 57000, dts: 54000), Stored(type: 2, pts: nil, dts: nil)]
        #expect(Self.run(stored) == (0..<5).map { Times(pts: 48000 + Int64($0) * Self.frame, dts: 45000 + Int64($0) * Self.frame) })
    }

    /// The same at a variable rate (frames 0.1 s apart, each PES DTS the PTS before): an untimed picture is decoded at
    /// the PTS before it and shown at the next picture's DTS — ffprobe's pkt_dts and best_effort_timestamp, not
    /// mpegvideoparse's DTS (one frame after the one before); the last one, held at the end, one frame after its DTS
    /// (as ffmpeg's 294000 after 291000).
    @Test func variableRate() {
        let stored = [Stored(type: 2, pts: 147000, dts: 138000), Stored(type: 2, pts: nil, dts: 141000), Stored(type: 2, pts: 165000, dts: 156000),
                      Stored(type: 1, pts: nil, dts: 159000), Stored(type: 2, pts: 183000, dts: 174000), Stored(type: 1, pts: nil, dts: 177000)]
        #expect(Self.run(stored) == [Times(pts: 147000, dts: 138000), Times(pts: 156000, dts: 147000), Times(pts: 165000, dts: 156000),
                                     Times(pts: 174000, dts: 165000), Times(pts: 183000, dts: 174000), Times(pts: 186000, dts: 183000)])
    }

    /// With B-pictures (ffmpeg's `-bf 2`, decode order P B B P B B I): an untimed P is decoded at the stated PTS of the
    /// P before it and shown at the next I's DTS; the B-pictures held behind it go with it, an untimed one at the
    /// DTS after the B before it. An untimed P after an untimed one is decoded after the B before it.
    @Test func withBPictures() {
        let stored = [Stored(type: 2, pts: 102000, dts: 93000), Stored(type: 3, pts: 96000, dts: 96000), Stored(type: 3, pts: 99000, dts: 99000),
                      Stored(type: 2, pts: nil, dts: nil), Stored(type: 3, pts: 105000, dts: 105000), Stored(type: 3, pts: nil, dts: nil),
                      Stored(type: 1, pts: 120000, dts: 111000), Stored(type: 2, pts: nil, dts: nil), Stored(type: 3, pts: nil, dts: nil),
                      Stored(type: 2, pts: nil, dts: nil)]
        #expect(Self.run(stored) == [Times(pts: 102000, dts: 93000), Times(pts: 96000, dts: 96000), Times(pts: 99000, dts: 99000),
                                     Times(pts: 111000, dts: 102000), Times(pts: 105000, dts: 105000), Times(pts: 108000, dts: 108000),
                                     Times(pts: 120000, dts: 111000), Times(pts: 126000, dts: 120000), Times(pts: 123000, dts: 123000),
                                     Times(pts: 129000, dts: 126000)])
    }

    /// A `low_delay` MPEG-2 stream does not reorder: an untimed picture is shown when decoded, one frame after the one
    /// before (ffmpeg's `-flags +low_delay`: PES PTS = DTS), and nothing is held.
    @Test func lowDelay() {
        var times = MPEGVideoTimes()
        let first = times.take(pts: 144000, dts: 144000, duration: Self.frame, bytes: Self.picture(1, lowDelay: true))
        let second = times.take(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(2))
        #expect(first == MPEGVideoTimes.Step(released: [], current: Times(pts: 144000, dts: 144000)))
        #expect(second == MPEGVideoTimes.Step(released: [], current: Times(pts: 147000, dts: 147000)))
        times.reset()  // the stream's low_delay is kept
        #expect(times.take(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(2)).current == Times(pts: nil, dts: nil))
    }

    /// Nothing to place from: after a reset (a flush) the pictures before a stated time stay untimed — a P among them
    /// still shown at the next one's stated DTS; a sample without a picture header keeps its times (held behind an
    /// untimed picture); nothing is placed after a picture without a duration, nor where times overflow.
    @Test func untimedStaysUntimed() {
        var times = MPEGVideoTimes()
        #expect(times.take(pts: 10, dts: 7, duration: Self.frame, bytes: Self.picture(1)).current == Times(pts: 10, dts: 7))
        #expect(times.take(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(2)).current == nil)
        times.reset()
        #expect(times.take(pts: nil, dts: 3, duration: Self.frame, bytes: Self.picture(3)).current == Times(pts: nil, dts: 3))
        #expect(times.take(pts: nil, dts: 4, duration: Self.frame, bytes: Self.picture(2)).current == nil)
        #expect(times.take(pts: 5, dts: 5, duration: nil, bytes: [0, 0, 1, 0xB7]).current == nil)
        #expect(times.take(pts: 40, dts: 30, duration: Self.frame, bytes: Self.picture(2))
                == MPEGVideoTimes.Step(released: [Times(pts: 30, dts: 4), Times(pts: 5, dts: 5)], current: Times(pts: 40, dts: 30)))
        #expect(times.finish().isEmpty)
        times.reset()
        #expect(times.take(pts: 40, dts: 30, duration: nil, bytes: Self.picture(2)).current == Times(pts: 40, dts: 30))
        #expect(times.take(pts: nil, dts: nil, duration: Self.frame, bytes: Self.picture(3)).current == Times(pts: nil, dts: nil))
        times.reset()
        #expect(times.take(pts: .max - 1, dts: .max - 1, duration: .max, bytes: Self.picture(3)).current == Times(pts: .max - 1, dts: .max - 1))
        #expect(times.take(pts: nil, dts: nil, duration: .max, bytes: Self.picture(3)).current == Times(pts: nil, dts: nil))
    }

    /// What is held stays bounded: B-pictures without end behind an untimed P are released, all of them, once more
    /// than `maxHeld` are held.
    @Test func heldIsBounded() {
        var times = MPEGVideoTimes()
        _ = times.take(pts: 10, dts: 7, duration: 1, bytes: Self.picture(1))
        #expect(times.take(pts: nil, dts: nil, duration: 1, bytes: Self.picture(2)).current == nil)
        let steps = (0..<MPEGVideoTimes.maxHeld).map { _ in times.take(pts: nil, dts: nil, duration: 1, bytes: Self.picture(3)) }
        #expect(steps.dropLast().allSatisfy { $0 == MPEGVideoTimes.Step(released: [], current: nil) })
        let placed = [Times(pts: 11 + Int64(MPEGVideoTimes.maxHeld), dts: 10)]
            + (0..<Int64(MPEGVideoTimes.maxHeld)).map { Times(pts: 11 + $0, dts: 11 + $0) }
        #expect(steps.last == MPEGVideoTimes.Step(released: placed, current: nil))
        #expect(times.finish().isEmpty)
    }
}
