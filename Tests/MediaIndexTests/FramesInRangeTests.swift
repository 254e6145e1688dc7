import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// Which frames a time range delivers (`FrameIndex.framesDisplayed(in:)`, what decoded ranges, resets, ReadFrames
/// and GenerateImage share): every frame displayed at some time in [start, end), a frame being displayed from its
/// presentation time until the next one's (`displayEnd(of:)`), whatever its own duration.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FramesInRangeTests {
    /// 30 fps in a 1/15360 timebase, as ffmpeg's MP4 muxer writes it: frame k at 512·k ticks. The index holds what
    /// the demuxer gives (ns, rounded down, as GStreamer scales); Matroska-like durations overlap the next frame.
    static func index(count: Int, duration: Int64 = 33_333_334) -> FrameIndex {
        FrameIndex(frames: (0..<count).map { k in
            .init(presentationTime: ns(512 * Int64(k)), duration: duration, isSync: k % 10 == 0, decodePosition: k)
        })
    }

    static func ns(_ ticks: Int64) -> Int64 { MediaTime(value: ticks, timescale: 15360).nanoseconds! }

    static func range(_ start: Int64, _ duration: Int64) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(value: start, timescale: 15360), duration: MediaTime(value: duration, timescale: 15360))
    }

    /// Ends at, just before and just after frames 0–3 and one mid-file; starts at each frame's exact time and half
    /// way into it: the answer is the frame shown at the start through the last one starting before the end.
    @Test func everyFrameBoundary() {
        let index = Self.index(count: 60)
        for startFrame in [0, 1, 2, 3, 30] {
            for (startTick, firstFrame) in [(512 * Int64(startFrame), startFrame), (512 * Int64(startFrame) + 256, startFrame)] {
                for endFrame in [1, 2, 3, 4, 31] where 512 * Int64(endFrame) > startTick {
                    for (delta, lastFrame) in [(0, endFrame - 1), (-1, endFrame - 1), (1, endFrame)] {
                        let end = 512 * Int64(endFrame) + Int64(delta)
                        guard end > startTick else { continue }
                        let got = index.framesDisplayed(in: Self.range(startTick, end - startTick))
                        #expect(got == Array(firstFrame...max(firstFrame, lastFrame)), "[\(startTick), \(end)) ticks")
                    }
                }
            }
        }
    }

    /// The issue's cases: start 0 with an end anywhere in (1/30, 2/30] delivers frames 0 and 1; half a frame from
    /// frame 1's start delivers frame 1.
    @Test func theReportedCases() {
        let index = Self.index(count: 10)
        for end: Int64 in [513, 700, 1023, 1024] { #expect(index.framesDisplayed(in: Self.range(0, end)) == [0, 1], "end \(end)") }
        #expect(index.framesDisplayed(in: Self.range(512, 256)) == [1])
        #expect(index.framesDisplayed(in: Self.range(512, 512)) == [1])
    }

    @Test func durationsDoNotMatter() {
        let overlapping = Self.index(count: 10, duration: 40_000_000)  // each lasts past the next one's start
        let short = Self.index(count: 10, duration: 1)
        for index in [overlapping, short] {
            #expect(index.framesDisplayed(in: Self.range(512, 512)) == [1])
            #expect(index.framesDisplayed(in: Self.range(1024, 1)) == [2])
            #expect(index.displayEnd(of: 1) == index.frames[2].presentationTime)
        }
        #expect(overlapping.displayEnd(of: 9) == Self.ns(512 * 9) + 40_000_000)  // the last one: until the end
    }

    @Test func toTheEndEmptyAndPastTheEnd() {
        let index = Self.index(count: 10)
        let toEnd = MediaTimeRange(start: MediaTime(value: 512 * 7 + 1, timescale: 15360), duration: .positiveInfinity)
        #expect(index.framesDisplayed(in: toEnd) == [7, 8, 9])
        #expect(index.framesDisplayed(in: Self.range(512 * 7, 512 * 100)) == [7, 8, 9])
        #expect(index.framesDisplayed(in: Self.range(512 * 3, 0)).isEmpty)
        #expect(index.framesDisplayed(in: Self.range(512 * 10 + 1, 512)).isEmpty)  // after the last frame's end
    }

    /// A track whose first frame is later than 0 (Matroska or MPEG-TS timestamps): a range ending at or before that
    /// frame's presentation time delivers nothing (nothing is displayed before it, AVAssetReader's rule); one ending
    /// a tick after it, the first frame; one starting before it and running on, from the first frame.
    @Test func aRangeWhollyBeforeTheFirstFrameIsEmpty() {
        let late = FrameIndex(frames: (0..<10).map { k in
            .init(presentationTime: Self.ns(7680 + 512 * Int64(k)), duration: 33_333_334, isSync: k == 0, decodePosition: k)
        })  // the first frame at 0.5 s
        #expect(late.framesDisplayed(in: Self.range(0, 7680)).isEmpty)
        #expect(late.framesDisplayed(in: Self.range(0, 6000)).isEmpty)
        #expect(late.framesDisplayed(in: Self.range(1000, 6680)).isEmpty)
        #expect(late.framesDisplayed(in: Self.range(0, 7681)) == [0])
        #expect(late.framesDisplayed(in: Self.range(0, 7680 + 1024)) == [0, 1])
        #expect(late.framesDisplayed(in: MediaTimeRange(start: .zero, duration: .positiveInfinity)) == Array(0..<10))
    }

    /// The end is computed in the range's own timescale: start and duration each rounded down to ns would end a
    /// nanosecond early.
    @Test func theEndIsExact() {
        let r = MediaTimeRange(start: MediaTime(value: 2, timescale: 3), duration: MediaTime(value: 2, timescale: 3))
        #expect(FrameIndex.rangeEnd(r) == MediaTime(value: 4, timescale: 3))
        #expect(FrameIndex.rangeEnd(r)?.nanoseconds == 1_333_333_333)
        #expect(r.start.nanoseconds! + r.duration.nanoseconds! == 1_333_333_332)
    }

    /// Frames sharing a presentation time: only the last is displayed.
    @Test func aFrameHiddenByTheNextIsNotDelivered() {
        let index = FrameIndex(frames: [.init(presentationTime: 0, duration: 10, isSync: true, decodePosition: 0),
                                        .init(presentationTime: 10, duration: 10, isSync: false, decodePosition: 1),
                                        .init(presentationTime: 10, duration: 10, isSync: false, decodePosition: 2),
                                        .init(presentationTime: 20, duration: 10, isSync: false, decodePosition: 3)])
        #expect(index.framesDisplayed(in: MediaTimeRange(start: .nanoseconds(0), duration: .nanoseconds(30))) == [0, 2, 3])
    }

    /// qtdemux gives frame k of a 30 fps track in a 1/15360 timebase ⌈512·k/15360 s⌉ in ns; Matroska-like demuxers
    /// round down. Either way the exact request 512·k/15360 names frame k, and a range ending there stops before it.
    @Test func roundedUpAndDownFrameTimesMatchTheExactRequest() {
        for roundsUp in [true, false] {
            let index = FrameIndex(frames: (0..<60).map { k in
                let exact = Int128(512 * k) * 1_000_000_000
                let ns = Int64(roundsUp ? (exact + 15359) / 15360 : exact / 15360)
                return .init(presentationTime: ns, duration: 33_333_333, isSync: k % 10 == 0, decodePosition: k)
            })
            for k in [1, 2, 44, 47] {
                let t = MediaTime(value: 512 * Int64(k), timescale: 15360)
                #expect((try? index.resolve(.time(t))) == k, "frame \(k), rounded \(roundsUp ? "up" : "down")")
                #expect(index.framesDisplayed(in: Self.range(512 * Int64(k), 512 * 3)) == [k, k + 1, k + 2])
                #expect(index.framesDisplayed(in: Self.range(0, 512 * Int64(k))).last == k - 1)
            }
            // A whole number of nanoseconds is itself: 1 ns before frame 1 is frame 0.
            #expect(index.frameDisplayed(at: index.frames[1].presentationTime - 1) == 0)
        }
    }
}
