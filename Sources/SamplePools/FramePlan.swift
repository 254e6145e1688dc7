import MediaIndex

/// What a ReadFrames output delivers: frame indices in request order, and the time ranges (ascending, each one
/// accurate seek) that decode each of them with every GOP decoded once (`FrameIndex.plan`). The pipeline starts at
/// `ranges[0]`. Planning, like `RangeSchedule`: no GStreamer, no socket.
public struct FramePlan: Sendable {
    public let index: FrameIndex
    public let order: [Int]
    public let ranges: [FrameIndex.DecodeRange]
    /// The wanted frames each range must produce (their presentation times are in its time range).
    public let wantedByRange: [Set<Int>]

    public init(index: FrameIndex, order: [Int]) {
        self.index = index
        self.order = order
        let ranges = index.plan(Set(order))
        self.ranges = ranges
        wantedByRange = ranges.map { Set($0.frames) }
    }
}

/// ReadFrames bookkeeping: the wanted frames kept as they come out of the decoder, and which of them can be sent
/// now (the next ones in request order). A frame asked for more than once is copied for each request (one decoded
/// buffer cannot fill two held slots). `Sample` is what the decoder gives (the worker's pulled sample).
public struct FrameOrder<Sample> {
    public let plan: FramePlan
    private var uses: [Int: Int] = [:]
    private let single: Set<Int>
    private var kept: [Int: Sample] = [:]
    /// The next position in request order to send.
    public private(set) var next = 0
    /// Wanted frames that came out of the decoder.
    public private(set) var arrived: Set<Int> = []

    public init(_ plan: FramePlan) {
        self.plan = plan
        for frame in plan.order { uses[frame, default: 0] += 1 }
        single = Set(uses.filter { $0.value == 1 }.keys)
    }

    public var isComplete: Bool { next == plan.order.count }

    /// Keeps `sample`, decoded as `frame`, when that is a wanted frame not seen yet; false otherwise.
    public mutating func keep(_ sample: Sample, frame: Int) -> Bool {
        guard (uses[frame] ?? 0) > 0, kept[frame] == nil, !arrived.contains(frame) else { return false }
        arrived.insert(frame)
        kept[frame] = sample
        return true
    }

    /// The next frame in request order when it is at hand, and whether it may go zero-copy (asked for once).
    public func ready() -> (sample: Sample, zeroCopy: Bool)? {
        guard next < plan.order.count, let sample = kept[plan.order[next]] else { return nil }
        return (sample, single.contains(plan.order[next]))
    }

    /// The frame `ready()` gave was sent.
    public mutating func sent() {
        let frame = plan.order[next]
        next += 1
        uses[frame]! -= 1
        if uses[frame] == 0 { kept[frame] = nil }
    }
}
