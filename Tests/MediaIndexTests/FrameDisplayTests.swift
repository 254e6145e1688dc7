import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// Which frame a time names (`FrameIndex.frameDisplayed(at:)`, what ReadFrames' `resolve` uses): a frame is
/// displayed from its presentation time until the next frame's; the last one until its end.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FrameDisplayTests {
    typealias Frame = FrameIndex.Frame

    static func index(_ frames: [(pts: Int64, duration: Int64)]) -> FrameIndex {
        FrameIndex(frames: frames.enumerated().map { i, f in
            Frame(presentationTime: f.pts, duration: f.duration, isSync: i == 0, decodePosition: i)
        })
    }

    /// Frames at 1000, 2000, 3000, 4000 ns lasting 1000 ns: the track ends at 5000.
    static let regular = index([(1000, 1000), (2000, 1000), (3000, 1000), (4000, 1000)])

    @Test func atJustBeforeAndBetweenPresentationTimes() {
        let index = Self.regular
        #expect(index.end == 5000)
        let cases: [(Int64, Int?)] = [(1000, 0), (1001, 0), (1999, 0), (2000, 1), (2500, 1), (2999, 1), (3000, 2),
                                      (4000, 3), (4999, 3), (5000, nil), (5001, nil), (.max, nil)]
        for (t, frame) in cases { #expect(index.frameDisplayed(at: t) == frame, "at \(t)") }
    }

    /// A track that ends inside its last frame's stored duration (an MP4 edit ending early) ends that frame there;
    /// any other end leaves the index as it is.
    @Test func theLastFrameEndsAtTheTracksEnd() {
        let ended = Self.regular.endingAt(4340)
        #expect(ended.end == 4340 && ended.displayEnd(of: 3) == 4340 && ended.frameDisplayed(at: 4340) == nil)
        #expect(ended.frameDisplayed(at: 4339) == 3 && ended.displayEnd(of: 2) == 4000)
        for end: Int64? in [nil, 4000, 3000, 5000, 6000] { #expect(Self.regular.endingAt(end).end == 5000, "\(String(describing: end))") }
    }

    @Test func beforeTheFirstFrameIsTheFirstFrame() {
        for t: Int64 in [999, 0, -1, .min] { #expect(Self.regular.frameDisplayed(at: t) == 0, "at \(t)") }
    }

    /// Durations do not matter between frames: a frame shorter than the gap to the next one is still displayed
    /// until the next one; a longer one ends when the next one starts.
    @Test func gapsAndOverlapsFollowTheNextPresentationTime() {
        let gaps = Self.index([(0, 10), (100, 10), (200, 10)])
        #expect(gaps.frameDisplayed(at: 50) == 0)
        #expect(gaps.frameDisplayed(at: 150) == 1)
        #expect(gaps.frameDisplayed(at: 209) == 2)
        #expect(gaps.frameDisplayed(at: 210) == nil)
        let overlaps = Self.index([(0, 500), (100, 500)])
        #expect(overlaps.frameDisplayed(at: 99) == 0)
        #expect(overlaps.frameDisplayed(at: 100) == 1)
        #expect(overlaps.frameDisplayed(at: 599) == 1)
        #expect(overlaps.frameDisplayed(at: 600) == nil)
    }

    /// A last frame without a duration still lasts 1 ns.
    @Test func aLastFrameWithoutDurationLastsOneNanosecond() {
        let index = Self.index([(0, 100), (100, 0)])
        #expect(index.end == 101)
        #expect(index.frameDisplayed(at: 100) == 1)
        #expect(index.frameDisplayed(at: 101) == nil)
    }

    /// Of frames with the same presentation time the last is displayed (the others for no time at all).
    @Test func ofEqualPresentationTimesTheLastIsDisplayed() {
        let index = Self.index([(0, 100), (100, 0), (100, 0), (100, 100), (200, 100)])
        #expect(index.frameDisplayed(at: 99) == 0)
        #expect(index.frameDisplayed(at: 100) == 3)
        #expect(index.frameDisplayed(at: 199) == 3)
        #expect(index.frameDisplayed(at: 200) == 4)
    }

    /// Stored samples in decode order I P B B are frames in presentation order I B B P; times name those.
    @Test func bFramesAreNamedInPresentationOrder() throws {
        let ms: Int64 = 1_000_000
        let index = FrameIndex(parsedSamples: [
            .init(presentationTime: 0, duration: 100 * ms, isSync: true),
            .init(presentationTime: 300 * ms, duration: 100 * ms, isSync: false),
            .init(presentationTime: 100 * ms, duration: 100 * ms, isSync: false),
            .init(presentationTime: 200 * ms, duration: 100 * ms, isSync: false),
        ])
        #expect(index.frames.map(\.decodePosition) == [0, 2, 3, 1])
        #expect(index.frameDisplayed(at: 150 * ms) == 1)
        #expect(index.frameDisplayed(at: 300 * ms) == 3)
        #expect(try index.resolve(.time(MediaTime(value: 3, timescale: 20))) == 1)  // 0.15 s
        #expect(try index.resolve(.time(.nanoseconds(300 * ms - 1))) == 2)
        #expect(try index.resolve(.index(3)) == 3)
    }

    /// Against the rule written the slow way, on random indexes with repeated times and random durations.
    @Test func theRuleOnRandomIndexes() {
        var rng = SplitMix64(seed: 0xF4A3_D15B_0001)  // fixed: make test gives the same answer every run
        for _ in 0..<200 {
            var pts: Int64 = .random(in: -50...50, using: &rng)
            var frames: [(pts: Int64, duration: Int64)] = []
            for _ in 0..<Int.random(in: 1...20, using: &rng) {
                frames.append((pts, .random(in: 0...30, using: &rng)))
                pts += .random(in: 0...20, using: &rng)
            }
            let index = Self.index(frames)
            let end = frames.last!.pts + max(frames.last!.duration, 1)
            for t in (frames.first!.pts - 3)...(end + 3) {
                let expected = t >= end ? nil : (frames.lastIndex { $0.pts <= t } ?? 0)
                #expect(index.frameDisplayed(at: t) == expected, "\(frames) at \(t)")
            }
        }
    }

    @Test func resolveRefusesWhatNamesNoFrame() throws {
        let index = Self.regular
        #expect(try index.resolve(.index(0)) == 0)
        #expect(try index.resolve(.time(.nanoseconds(4999))) == 3)
        for request: FrameRequest in [.index(4), .index(.max), .time(.nanoseconds(5000)), .time(.invalid),
                                      .time(.positiveInfinity), .time(MediaTime(value: 1, timescale: 0))] {
            #expect(throws: TrackError.self, "\(request)") { try index.resolve(request) }
            do {
                _ = try index.resolve(request)
            } catch {
                #expect(error.knownCode == .invalidArgument, "\(request)")
            }
        }
        #expect(throws: TrackError(.invalidArgument, "frame time 5e-06 s is after the last frame, which ends at 5e-06 s")) {
            try index.resolve(.time(.nanoseconds(5000)))
        }
        let empty = FrameIndex(frames: [])
        #expect(empty.end == nil)
        #expect(empty.frameDisplayed(at: 0) == nil)
        #expect(throws: TrackError.self) { try empty.resolve(.time(.zero)) }
        #expect(throws: TrackError.self) { try empty.resolve(.index(0)) }
    }

    /// A parse-only pass's samples without a duration last until the next frame; the last one as long as the one
    /// before it. Equal times keep their decode order.
    @Test func parsedSamplesWithoutDurations() {
        let index = FrameIndex(parsedSamples: [
            .init(presentationTime: 0, duration: nil, isSync: true),
            .init(presentationTime: 40, duration: 0, isSync: false),
            .init(presentationTime: 40, duration: 7, isSync: false),
            .init(presentationTime: 100, duration: nil, isSync: false),
        ])
        #expect(index.frames.map(\.decodePosition) == [0, 1, 2, 3])
        #expect(index.frames.map(\.duration) == [40, 0, 7, 7])
    }

    @Test func nearestPrefersTheEarlierOfTwo() {
        let index = Self.regular
        let cases: [(Int64, Int)] = [(.min, 0), (1000, 0), (1500, 0), (1501, 1), (2000, 1), (3600, 3), (.max, 3)]
        for (t, frame) in cases { #expect(index.nearest(t) == frame, "nearest \(t)") }
    }
}
