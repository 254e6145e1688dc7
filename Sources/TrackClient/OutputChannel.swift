import Dispatch
import TrackdProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// The client's end of one output: the pools the worker registered (mapped read-only once each) and the queue of
/// samples that arrived but were not yet taken by copyNextSampleBuffer. The queue never exceeds the pool's slot
/// count, because the worker sends a sample only into a slot the client has released.
final class OutputChannel: Sendable {
    enum Event {
        case sample(Sample, SharedMapping, slotSize: UInt64)
        case finished(OutputFinished)
        case failed(TrackError)
        /// Random access: every sample of the current ranges was delivered; the output waits for a reset.
        case rangeEnded
        /// ReadFrames: the frame each request resolved to, in request order (before the first sample).
        case resolved([ResolvedFrame])
        /// Nothing is queued and the worker waits until the client, holding this many samples of the output, releases
        /// one (OutputStalled): the next sample would never come. Not queued; reported by `next()`.
        case stalled(held: Int)
    }

    struct State: ~Copyable {
        var pools: [UInt32: (mapping: SharedMapping, slotSize: UInt64, slotCount: UInt32)] = [:]
        var queue: [Event] = []
        var head = 0
        /// A terminal event (finished or failed) is queued; later events are ignored.
        var ended = false
        /// The reader was cancelled: samples still in flight are released as they arrive.
        var discarding = false
        /// Samples delivered and not yet released (queued ones included), and what the last OutputStalled said the
        /// client held: while the two are equal the worker waits on this side (PROTOCOL.md §12.3).
        var held = 0
        var stalledAt: Int?
        /// `next()` reports the stall now: nothing is queued and no release crossed the OutputStalled.
        var isStalled: Bool { head == queue.count && stalledAt == held }
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    let connection: Connection
    private let outputIDBox = Mutex<UInt32>(0)

    init(connection: Connection) { self.connection = connection }

    var outputID: UInt32 {
        get { outputIDBox.withLock { $0 } }
        set { outputIDBox.withLock { $0 = newValue } }
    }

    /// Called on the connection's receive thread.
    func deliver(_ frame: consuming ReceivedFrame) {
        switch frame.message {
        case .poolAdded(let pool):
            let fd = frame.fds.rawValue(at: 0)  // (MessageSocket checked the count; the frame closes it)
            let (size, overflow) = pool.slotSize.multipliedReportingOverflow(by: UInt64(pool.slotCount))
            guard !overflow, size > 0, size < (1 << 40), SharedMapping.verifySealed(fd: fd, size: Int(size)) else {
                return push(.failed(TrackError(.protocolViolation,
                                               "pool \(pool.poolID) is not a sealed memfd of \(pool.slotCount)×\(pool.slotSize) bytes")))
            }
            do {
                let mapping = try SharedMapping(fd: fd, size: Int(size), writable: false)
                state.withLock { $0.pools[pool.poolID] = (mapping, pool.slotSize, pool.slotCount) }
            } catch {
                push(.failed(TrackError(.limitExceeded, "cannot map pool \(pool.poolID): \(error)")))
            }
        case .poolRemoved(_, let poolID):
            _ = state.withLock { $0.pools.removeValue(forKey: poolID) }
        case .sample(let sample):
            let pool = state.withLock { $0.pools[sample.slot.poolID] }
            guard let pool, sample.slot.slot < pool.slotCount, sample.length <= pool.slotSize,
                  sample.planes.allSatisfy({ planeFits($0, length: sample.length) })
            else {
                return push(.failed(TrackError(.protocolViolation,
                                               "sample names slot \(sample.slot.slot) of pool \(sample.slot.poolID) or planes outside it")))
            }
            push(.sample(sample, pool.mapping, slotSize: pool.slotSize))
        case .outputFinished(let finished):
            push(.finished(finished))
        case .rangeEnded:
            push(.rangeEnded)
        case .framesResolved(_, let frames):
            push(.resolved(frames))
        case .outputStalled(_, let held):
            state.withLock { $0.stalledAt = Int(held) }
            available.signal()  // wakes a waiting next(), which reports the stall
        default:
            break  // the frame closes any descriptor it carried
        }
    }

    private func planeFits(_ p: PlaneLayout, length: UInt64) -> Bool {
        guard p.rowBytes <= p.bytesPerRow || p.height <= 1 else { return false }
        guard p.height > 0 else { return p.offset <= length }
        let (span, o1) = UInt64(p.bytesPerRow).multipliedReportingOverflow(by: UInt64(p.height - 1))
        let (end, o2) = span.addingReportingOverflow(p.offset + UInt64(p.rowBytes))
        return !o1 && !o2 && end <= length
    }

    func fail(_ error: TrackError) { push(.failed(error)) }

    private func push(_ event: Event) {
        enum Outcome { case queued, dropped, releaseNow(SlotRef) }
        let outcome = state.withLock { s -> Outcome in
            if case .sample(let sample, _, _) = event, !s.ended {
                s.held += 1
                if s.discarding { return .releaseNow(sample.slot) }
            }
            if s.ended { return .dropped }
            switch event {
            case .finished, .failed: s.ended = true
            case .sample, .rangeEnded, .resolved, .stalled: break
            }
            s.queue.append(event)
            return .queued
        }
        switch outcome {
        case .queued: available.signal()
        case .dropped: break
        case .releaseNow(let slot): release(slot)
        }
    }

    /// Blocks until the next event, or returns `.stalled` at once when nothing is queued and the worker waits for
    /// this side to release a sample. The semaphore counts at least the queued events: `drainUnread()` (a cancel,
    /// possibly from another thread while this one waits) takes events without taking their signals, and an
    /// OutputStalled signals without an event, so a wake-up that finds the queue empty waits again — the output's
    /// OutputFinished follows every CancelOutput.
    func next() -> Event {
        while true {
            if let held = state.withLock({ $0.isStalled ? $0.held : nil }) { return .stalled(held: held) }
            available.wait()
            let event = state.withLock { s -> Event? in
                guard s.head < s.queue.count else { return nil }
                let e = s.queue[s.head]
                s.head += 1
                if s.head > 64 && s.head * 2 > s.queue.count {
                    s.queue.removeFirst(s.head)
                    s.head = 0
                }
                return e
            }
            if let event { return event }
        }
    }

    /// Samples that arrived but will never be taken (after cancel): release their slots.
    func drainUnread() {
        let samples = state.withLock { s -> [Sample] in
            s.discarding = true
            let rest = s.queue[s.head...]
            s.head = s.queue.count
            let samples = rest.compactMap { if case .sample(let x, _, _) = $0 { x } else { nil } }
            s.held -= samples.count
            return samples
        }
        if !samples.isEmpty {
            connection.post(.releaseSlots(outputID: outputID, slots: samples.map(\.slot)))
        }
    }

    func release(_ slot: SlotRef) {
        state.withLock { $0.held -= 1 }
        connection.post(.releaseSlots(outputID: outputID, slots: [slot]))
    }
}
