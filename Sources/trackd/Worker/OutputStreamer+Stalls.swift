import SamplePools
import TrackdProtocol

/// The puller's waits for the client's releases (PROTOCOL.md §12.3): not the worker's stall, and — to a client that
/// handles it (capability bit 0) — announced with OutputStalled, so that the client can fail a read at once instead
/// of waiting for a sample that comes only after a release.
extension StateMonitor where State == OutputStreamer.State {
    /// Runs `step` until it answers; it answers nil while the client holds every slot it may hold of the output.
    /// While the thread waits, `slot` does not count it busy (the watchdog's), and once per wait `stalled` is told
    /// how many of the output's samples the client holds, counted when the step found no slot: a release the
    /// worker has already seen is not in the count.
    func waitForRelease<T>(slot: WorkerSlot, stalled: (Int) -> Void, _ step: (inout State) -> T?) -> T {
        var held = 0
        let (answer, waited) = wait(until: { s -> T? in
            let answer = step(&s)
            if answer == nil { held = s.ledger.heldCount }
            return answer
        }, blocked: {
            slot.endBusy()
            stalled(held)
        })
        if waited { slot.beginBusy() }
        return answer
    }
}

extension OutputStreamer {
    /// OutputStalled for a client that handles it: the output waits until the client, holding `held` of its
    /// samples, releases one.
    func stalled(held: Int) {
        if context.reportsStalls { send(.outputStalled(outputID: id, held: UInt32(clamping: held))) }
    }
}
