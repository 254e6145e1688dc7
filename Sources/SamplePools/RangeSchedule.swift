/// The random-access state of an output (`supportsRandomAccess`): at the end of a range the output sends RangeEnded
/// and waits for ResetOutput (more ranges), FinishOutput (complete) or CancelOutput. Pure state; the streamer keeps
/// it behind its lock next to the PoolLedger and signals its waiting thread on every change.
public struct RangeSchedule<Range> {
    /// RangeEnded was sent; ResetOutput is allowed until it is answered.
    public private(set) var awaitingReset = false
    /// Ranges of the last ResetOutput not read yet (taken one by one).
    public private(set) var pending: [Range] = []
    /// FinishOutput arrived: the end of the current ranges completes the output.
    public private(set) var final = false

    public init() {}

    public enum Next {
        /// Seek to this range and read it.
        case range(Range)
        /// FinishOutput arrived and no range is left: the output is complete.
        case completed
        /// Send RangeEnded now (then ask again).
        case announce
        /// RangeEnded was sent: wait for ResetOutput, FinishOutput or CancelOutput.
        case wait
    }

    /// What to do at the end of a range.
    public mutating func next() -> Next {
        if !pending.isEmpty { return .range(pending.removeFirst()) }
        if final { return .completed }
        if awaitingReset { return .wait }
        awaitingReset = true
        return .announce
    }

    public enum ResetRefusal: Error, Equatable { case notAwaiting }

    /// ResetOutput: read `ranges` next. Refused unless RangeEnded was sent since the last reset and FinishOutput has
    /// not arrived.
    public mutating func reset(_ ranges: [Range]) throws(ResetRefusal) {
        guard awaitingReset, !final else { throw .notAwaiting }
        awaitingReset = false
        pending = ranges
    }

    /// FinishOutput (markConfigurationAsFinal).
    public mutating func markFinal() { final = true }
}

extension RangeSchedule: Sendable where Range: Sendable {}
extension RangeSchedule.Next: Sendable where Range: Sendable {}
