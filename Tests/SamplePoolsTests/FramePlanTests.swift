import MediaIndex
import MediaVocabulary
import SamplePools
import TestSupport
import Testing

/// ReadFrames' plan and its bookkeeping: every wanted frame decoded by exactly one range, and frames sent in request
/// order as soon as the next one is at hand, a repeated frame copied for each request.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FramePlanTests {
    /// 100 frames without reordering, 10 ns each, a sync frame every 10.
    static let index = FrameIndex(frames: (0..<100).map {
        .init(presentationTime: Int64($0) * 10, duration: 10, isSync: $0 % 10 == 0, decodePosition: $0)
    })

    @Test func everyWantedFrameIsDecodedByExactlyOneRange() {
        let order = [73, 5, 41, 5, 99, 0]
        let plan = FramePlan(index: Self.index, order: order)
        #expect(plan.order == order)
        #expect(plan.wantedByRange.count == plan.ranges.count)
        #expect(plan.wantedByRange.reduce(0) { $0 + $1.count } == Set(order).count)
        #expect(plan.wantedByRange.reduce(Set<Int>()) { $0.union($1) } == Set(order))
        // Ranges ascend: decoding goes forward through the file.
        let starts = plan.ranges.map(\.range.start.value)
        #expect(starts == starts.sorted())
    }

    @Test func framesGoInRequestOrderAsSoonAsTheNextIsAtHand() {
        var order = FrameOrder<String>(FramePlan(index: Self.index, order: [30, 10, 20]))
        var sent: [String] = []
        func drain() {
            while let (sample, _) = order.ready() {
                sent.append(sample)
                order.sent()
            }
        }
        // The decoder gives them in presentation order.
        let kept1 = order.keep("f10", frame: 10)
        #expect(kept1)
        drain()
        #expect(sent.isEmpty)  // 30 comes first
        let kept2 = order.keep("f20", frame: 20)
        #expect(kept2)
        drain()
        #expect(sent.isEmpty)
        let kept3 = order.keep("f30", frame: 30)
        #expect(kept3)
        drain()
        #expect(sent == ["f30", "f10", "f20"])
        #expect(order.isComplete)
        #expect(order.arrived == [10, 20, 30])
    }

    @Test func aFrameAskedForTwiceIsCopiedAndOthersMayGoZeroCopy() {
        var order = FrameOrder<String>(FramePlan(index: Self.index, order: [7, 3, 7]))
        let kept4 = order.keep("f3", frame: 3)
        #expect(kept4)
        let kept5 = order.keep("f7", frame: 7)
        #expect(kept5)
        var got: [(String, Bool)] = []
        while let (sample, zeroCopy) = order.ready() {
            got.append((sample, zeroCopy))
            order.sent()
        }
        #expect(got.map(\.0) == ["f7", "f3", "f7"])
        #expect(got.map(\.1) == [false, true, false])
        #expect(order.isComplete)
    }

    @Test func unwantedAndRepeatedFramesAreNotKept() {
        var order = FrameOrder<String>(FramePlan(index: Self.index, order: [12]))
        let kept6 = order.keep("f11", frame: 11)
        #expect(!kept6)
        let kept7 = order.keep("f12", frame: 12)
        #expect(kept7)
        let kept8 = order.keep("f12 again", frame: 12)
        #expect(!kept8)
        #expect(order.ready()?.sample == "f12")
        order.sent()
        // Sent and released: a frame decoded a second time (a range decoded again) is not sent twice.
        let kept9 = order.keep("f12 later", frame: 12)
        #expect(!kept9)
        #expect(order.ready() == nil)
        #expect(order.next == 1)
    }
}
