import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// `FrameIndex.plan`: every GOP decoded once and only as far as a wanted frame needs; runs of needed samples less
/// than `maxSkippedSamples` apart share a range (one seek), the samples between them dropped.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecodePlanTests {
    /// `count` frames without reordering: frame i at 10·i ns, lasting 10, decode position i; sync where `syncs` says.
    static func index(count: Int, syncs: Set<Int>) -> FrameIndex {
        FrameIndex(frames: (0..<count).map {
            .init(presentationTime: Int64($0) * 10, duration: 10, isSync: syncs.contains($0), decodePosition: $0)
        })
    }

    static func times(_ positions: [ClosedRange<Int>]) -> [Int64] { positions.flatMap { $0.map { Int64($0) * 10 } } }

    static let gops = index(count: 300, syncs: Set(stride(from: 0, to: 300, by: 10)))

    @Test func aWantedFrameNeedsItsGOPUpToItself() throws {
        let plan = Self.gops.plan([15])
        try #require(plan.count == 1)
        #expect(plan[0].range == MediaTimeRange(start: .nanoseconds(150), duration: .nanoseconds(10)))
        #expect(plan[0].neededSamples == Self.times([10...15]))
        #expect(plan[0].lastNeededSample == 150)
        #expect(plan[0].firstPosition == 10)
    }

    @Test func framesOfOneGOPShareARun() throws {
        let plan = Self.gops.plan([17, 12])
        try #require(plan.count == 1)
        #expect(plan[0].range == MediaTimeRange(start: .nanoseconds(120), duration: .nanoseconds(60)))
        #expect(plan[0].neededSamples == Self.times([10...17]))
        #expect(plan[0].lastNeededSample == 170)
    }

    /// Two GOPs' runs close together: one range, the samples between the runs not needed.
    @Test func runsCloseTogetherShareARange() throws {
        let plan = Self.gops.plan([5, 25])
        try #require(plan.count == 1)
        #expect(plan[0].range == MediaTimeRange(start: .nanoseconds(50), duration: .nanoseconds(210)))
        #expect(plan[0].neededSamples == Self.times([0...5, 20...25]))
        #expect(plan[0].lastNeededSample == 250)
        #expect(plan[0].firstPosition == 0)
    }

    /// 120 samples skipped between runs still share a range; 121 do not.
    @Test func theMergeBoundaryIsMaxSkippedSamples() throws {
        #expect(FrameIndex.maxSkippedSamples == 120)
        let index = Self.index(count: 400, syncs: [0, 126, 127])
        let merged = index.plan([5, 126])  // skipped: 6 … 125
        try #require(merged.count == 1)
        #expect(merged[0].neededSamples == Self.times([0...5, 126...126]))
        let split = index.plan([5, 127])   // skipped: 6 … 126
        try #require(split.count == 2)
        #expect(split[0].neededSamples == Self.times([0...5]))
        #expect(split[0].range == MediaTimeRange(start: .nanoseconds(50), duration: .nanoseconds(10)))
        #expect(split[1].neededSamples == Self.times([127...127]))
        #expect(split[1].firstPosition == 127)
        #expect(split[1].range == MediaTimeRange(start: .nanoseconds(1270), duration: .nanoseconds(10)))
    }

    @Test func maxSkipIsAParameter() {
        #expect(Self.gops.plan([9, 10], maxSkip: 0).count == 1)  // adjacent runs: nothing skipped
        #expect(Self.gops.plan([8, 10], maxSkip: 0).count == 2)
        #expect(Self.gops.plan([5, 25], maxSkip: 13).count == 2)
        #expect(Self.gops.plan([5, 25], maxSkip: 14).count == 1)
        #expect(Self.gops.plan(Set(stride(from: 5, to: 300, by: 10)), maxSkip: 0).count == 30)
    }

    /// Decode order I P B B, presentation I B B P (four-frame GOPs): a B-frame needs the P after it in decode order.
    @Test func bFramesNeedTheSamplesTheyDependOn() throws {
        var stored: [FrameIndex.StoredSample] = []
        for gop in 0..<3 {
            let base = Int64(gop) * 40
            stored += [.init(presentationTime: base, duration: 10, isSync: true),
                       .init(presentationTime: base + 30, duration: 10, isSync: false),
                       .init(presentationTime: base + 10, duration: 10, isSync: false),
                       .init(presentationTime: base + 20, duration: 10, isSync: false)]
        }
        let index = FrameIndex(parsedSamples: stored)
        let b = index.plan([1], maxSkip: 0)  // the first B: decode positions 0 … 2
        #expect(b.map(\.neededSamples) == [[0, 10, 30]])
        #expect(b.map(\.lastNeededSample) == [10])
        #expect(b.map(\.range) == [MediaTimeRange(start: .nanoseconds(10), duration: .nanoseconds(10))])
        let p = index.plan([3], maxSkip: 0)  // the P: decode positions 0 … 1
        #expect(p.map(\.neededSamples) == [[0, 30]])
        #expect(p.map(\.lastNeededSample) == [30])
        let both = index.plan([1, 3, 6], maxSkip: 0)
        #expect(both.map(\.neededSamples) == [[0, 10, 30], [40, 50, 60, 70]])
        #expect(both.map(\.lastNeededSample) == [10, 60])
        #expect(both.map(\.firstPosition) == [0, 4])
        #expect(both.map(\.range) == [MediaTimeRange(start: .nanoseconds(10), duration: .nanoseconds(30)),
                                      MediaTimeRange(start: .nanoseconds(60), duration: .nanoseconds(10))])
    }

    /// ReadFrames plans the set of its requests: any order, with repeats, gives the same ranges, ascending and
    /// disjoint, each holding some requested frames and every requested frame in exactly one.
    @Test func requestOrderDoesNotChangeThePlan() throws {
        var rng = SplitMix64(seed: 0xD1A9_0DE4_0001)  // fixed: make test gives the same answer every run
        let index = Self.index(count: 1000, syncs: Set(stride(from: 0, to: 1000, by: 30)))
        for _ in 0..<50 {
            let requests = (0..<Int.random(in: 1...12, using: &rng)).map { _ in Int.random(in: 0..<1000, using: &rng) }
            let plan = index.plan(Set(requests))
            #expect(index.plan(Set(requests.shuffled(using: &rng) + requests.prefix(2))) == plan)
            let spans = plan.map { ($0.range.start.nanoseconds!, $0.range.start.nanoseconds! + $0.range.duration.nanoseconds!) }
            #expect(zip(spans, spans.dropFirst()).allSatisfy { $0.1 <= $1.0 }, "\(requests)")
            for frame in requests {
                let t = index.frames[frame].presentationTime
                #expect(spans.filter { ($0.0..<$0.1).contains(t) }.count == 1, "\(requests): frame \(frame)")
            }
            for span in spans {
                #expect(requests.contains { (span.0..<span.1).contains(index.frames[$0].presentationTime) })
            }
        }
    }

    @Test func everyFrameIsOneRangeOfEverySample() throws {
        let plan = Self.gops.plan(Set(0..<300))
        try #require(plan.count == 1)
        #expect(plan[0].neededSamples == Self.times([0...299]))
        #expect(plan[0].range == MediaTimeRange(start: .nanoseconds(0), duration: .nanoseconds(3000)))
    }

    /// Decode positions that are not a permutation (an index that cannot tell which sample is where): every
    /// sample is decoded.
    @Test func anIndexWithoutEveryDecodePositionNeedsEverySample() {
        let index = FrameIndex(frames: [.init(presentationTime: 0, duration: 10, isSync: true, decodePosition: 0),
                                        .init(presentationTime: 10, duration: 10, isSync: false, decodePosition: 0),
                                        .init(presentationTime: 20, duration: 10, isSync: false, decodePosition: 2)])
        let plan = index.plan([2])
        #expect(plan.map(\.neededSamples) == [nil])
        #expect(plan.map(\.lastNeededSample) == [20])
    }
}
