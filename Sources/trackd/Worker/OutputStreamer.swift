import Foundation
import GstBridge
import MediaIndex
import TrackdProtocol
import SamplePools
import Synchronization
import SystemCalls

/// What keeps one pool alive: its reservation against the pool-byte limits and, for a copy pool, its mapping (a
/// zero-copy pool's memory is GStreamer's, mapped by GStreamer).
final class PoolResource: Sendable {
    let reservation: PoolReservation
    let mapping: SharedMapping?

    init(reservation: PoolReservation, mapping: SharedMapping?) {
        self.reservation = reservation
        self.mapping = mapping
    }
}

/// One output: a GStreamer pipeline for one track, the shared-memory pools its samples travel in, and the
/// dedicated thread that pulls from appsink (a blocking call) and sends samples while the client holds free slots.
/// It is made of one OutputPlan (what it delivers, how it reads: its loop switches on `plan.reading`) and one
/// OutputContext (where it sends and reports).
///
/// The pools, the held slots and the random-access state are a PoolLedger and a RangeSchedule (SamplePools) in a
/// StateMonitor: the receive loop's calls (release, cancel, reset, markFinal) change them and wake the thread,
/// which sleeps only on that — for a free slot (back-pressure) or for the client's next range. This file is the
/// thread and where one sample goes; OutputStreamer+Frames.swift is the ReadFrames loop.
final class OutputStreamer: Sendable {
    static let poolBudget = 64 << 20
    static let maxSlots = 8
    static let minSlots = 2
    static let page = 4096
    /// How long one appsink pull blocks: the thread sees a CancelOutput at least this often while GStreamer is busy.
    static let pullTimeoutNs: UInt64 = 100_000_000

    struct State: Sendable {
        var ledger = PoolLedger<PoolResource, PulledSample>()
        var schedule = RangeSchedule<MediaTimeRange>()
    }

    enum ReleaseError: Error { case notHeld(SlotRef) }
    enum ResetError: Error { case notRandomAccess, notAwaiting }

    let plan: OutputPlan
    let context: OutputContext
    var id: UInt32 { context.id }
    var pipeline: TrackPipeline { plan.stream.pipeline }
    var grid: TimeGrid { plan.stream.grid }
    /// The pipeline's counters when this output began on it.
    var baseline: PipelineCounts { plan.stream.baseline }
    var workerSlot: WorkerSlot { context.slot }
    private var stats: WorkerStats { context.stats }
    private let state = StateMonitor(State())
    /// The pipeline's frame counters already added to `stats` (from `baseline`).
    private let countedFrames: Mutex<(decoded: UInt64, converted: UInt64)>

    init(plan: OutputPlan, context: OutputContext) {
        (self.plan, self.context) = (plan, context)
        countedFrames = Mutex((plan.stream.baseline.framesDecoded, plan.stream.baseline.framesConverted))
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "output-\(id)"
        thread.start()
    }

    // ── the receive loop's side ──────────────────────────────────────────────────────────────────────────────────

    func cancel() {
        state.withLock { $0.ledger.cancel() }
    }

    /// ResetOutput: read `ranges` (in nanoseconds, already on the grid) next. Only a random-access output that sent
    /// RangeEnded (and was not finished or cancelled since) may be reset; a finished output ignores it (the caller
    /// checks for violations).
    func reset(_ ranges: [MediaTimeRange]) throws(ResetError) {
        guard plan.reading.randomAccess else { throw .notRandomAccess }
        try state.withLock { (s: inout State) throws(ResetError) in
            if s.ledger.finished || s.ledger.cancelled { return }
            do {
                try s.schedule.reset(ranges)
            } catch {
                throw .notAwaiting
            }
        }
    }

    /// FinishOutput (markConfigurationAsFinal): complete at the end of the current ranges, or now if waiting.
    func markFinal() {
        state.withLock { $0.schedule.markFinal() }
    }

    /// The client gives slots back. A slot it does not hold is a protocol violation.
    func release(_ slots: [SlotRef]) throws(ReleaseError) {
        var released = state.withLock { $0.ledger.release(slots.map { SlotID(pool: $0.poolID, slot: $0.slot) }) }
        if let bad = released.notHeld { throw .notHeld(SlotRef(poolID: bad.pool, slot: bad.slot)) }
        released.samples.removeAll()  // after the lock: that hands the buffers back to GStreamer
        for poolID in released.removed { send(.poolRemoved(outputID: id, poolID: poolID)) }
        if released.drained { context.owner?.outputDrained(id) }
    }

    // ── the thread ───────────────────────────────────────────────────────────────────────────────────────────────

    var isCancelled: Bool { state.withLock { $0.ledger.cancelled } }

    /// Still producing for its client (a stopping trackd waits for these): not finished or cancelled, and not
    /// waiting after RangeEnded for the client's next step.
    var isReading: Bool { state.withLock { !$0.ledger.finished && !$0.ledger.cancelled && !$0.schedule.awaitingReset } }

    func send(_ message: Message, fds: [Int32] = []) {
        do {
            try context.socket.send(message, requestID: context.requestID, fds: fds)
        } catch {
            // The client is gone; stop producing. The session notices the closed socket on its own.
            cancel()
        }
    }

    /// The puller counts as busy for the watchdog (the client waits on it) except while it waits for the client:
    /// for a free slot, or for ResetOutput/FinishOutput after RangeEnded.
    private func run() {
        workerSlot.beginBusy()
        var kept = false
        defer {
            workerSlot.endBusy()
            if !kept { pipeline.stop() }
        }
        let ending: Ending
        switch plan.reading {
        case .frames(let frames, let key):
            ending = readFrames(frames)
            // Offered before OutputFinished: the client's next ReadFrames may come as soon as it hears it.
            if ending.status == .completed, let key { kept = context.owner?.keep(pipeline, key: key, outputID: id) == true }
        case .passthrough(let randomAccess), .clipped(let randomAccess):
            ending = readRanges(first: nil, randomAccess: randomAccess)
        case .indexed(let first, let randomAccess):
            ending = readRanges(first: first, randomAccess: randomAccess)
        }
        finish(ending.status, ending.error)
    }

    /// How a loop ended: OutputFinished's status, and the error of a failed output.
    typealias Ending = (status: OutputStatus, error: TrackError?)

    /// CreateOutput: reads the pipeline's range, then (random access) each range ResetOutput gives, until
    /// FinishOutput. `first`: the first range is read by the frame index, and so is each later one.
    private func readRanges(first: IndexedRead?, randomAccess: Bool) -> Ending {
        let index = first?.index
        var current = first, delivered = 0  // the range read by the index, and what it delivered
        while true {
            if isCancelled { return (.cancelled, nil) }
            switch pipeline.pull(timeoutNs: Self.pullTimeoutNs) {
            case .timeout:
                continue
            case .endOfStream:
                if isCancelled { return (.cancelled, nil) }
                if let read = current, read.needsFallback(delivered: delivered) {
                    Log.warning("output \(id): no decoded frame matched the frame index in \(read.range.start) + \(read.range.duration); reading the range again by the decoder's clipping")
                    Event.frameIndexMismatch(output: id).emit()
                    current = nil
                    if let error = seek(read.range) { return (.failed, error) }
                    continue
                }
                guard randomAccess else { return (.completed, nil) }
                switch nextRange() {
                case .range(let range):
                    (current, delivered) = (index.map { IndexedRead(range, index: $0) }, 0)
                    let error = if let read = current {
                        seek(read.seek, lastNeededSample: read.lastNeededSample, selection: read.selection)
                    } else {
                        seek(range)
                    }
                    if let error { return (.failed, error) }
                case .completed:
                    return (.completed, nil)
                case .cancelled:
                    return (.cancelled, nil)
                }
            case .failed(let error):
                return isCancelled ? (.cancelled, nil) : (.failed, error)
            case .sample(let sample):
                deliver(sample, zeroCopy: true)
                delivered += 1
            }
        }
    }

    enum NextRange { case range(MediaTimeRange), completed, cancelled }

    /// Random access, at the end of a range: the next pending range; else, unless FinishOutput arrived, sends
    /// RangeEnded and waits for ResetOutput (its first range), FinishOutput (.completed) or CancelOutput.
    private func nextRange() -> NextRange {
        enum Step { case next(RangeSchedule<MediaTimeRange>.Next), cancelled }
        while true {
            let (step, waited) = state.wait(until: { s -> Step? in
                if s.ledger.cancelled { return .cancelled }
                let next = s.schedule.next()
                if case .wait = next { return nil }
                return .next(next)
            }, blocked: { workerSlot.endBusy() })
            if waited { workerSlot.beginBusy() }
            switch step {
            case .cancelled: return .cancelled
            case .next(.range(let range)): return .range(range)
            case .next(.completed): return .completed
            case .next(.announce):
                countFrames()
                send(.rangeEnded(outputID: id))
            case .next(.wait): continue  // not answered by the step
            }
        }
    }

    func seek(_ range: MediaTimeRange, neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil,
              selection: FrameSelection? = nil) -> TrackError? {
        do {
            try pipeline.seek(to: range, neededSamples: neededSamples, lastNeededSample: lastNeededSample,
                              selection: selection)
            return nil
        } catch {
            return error
        }
    }

    func finish(_ status: OutputStatus, _ error: TrackError? = nil) {
        let (first, drained) = state.withLock { $0.ledger.finish() }
        guard first else { return }
        countFrames()
        // Gone from the session before the client hears it ended: a GetStatus sent right after OutputFinished
        // arrives must not count it (the receive loop could otherwise answer before this thread removed it).
        if drained { context.owner?.outputDrained(id) }
        let lost = samplesLost()
        send(.outputFinished(OutputFinished(outputID: id, status: status, code: error?.code ?? 0,
                                            message: error?.message ?? "", samplesLost: lost)))
    }

    /// The stored samples this output could not deliver (PROTOCOL.md §12.5): ones the file lacks and ones the decoder
    /// made nothing of, since `baseline`; added to the session's count and logged, never silent.
    private func samplesLost() -> UInt64 {
        let now = PipelineCounts(pipeline)
        let missing = now.samplesMissing &- baseline.samplesMissing
        let undecodable = now.samplesUndecodable &- baseline.samplesUndecodable
        let lost = missing &+ undecodable
        guard lost > 0 else { return 0 }
        stats.samplesLost.add(lost, ordering: .relaxed)
        Log.warning("output \(id): \(lost) stored samples lost (\(missing) not in the file, \(undecodable) undecodable)")
        return lost
    }

    /// Adds what the pipeline decoded and converted since the last call to the session's counters: before
    /// RangeEnded and OutputFinished, so a Status the client sends after either counts the range.
    private func countFrames() {
        let now = (decoded: pipeline.framesDecoded, converted: pipeline.framesConverted)
        let before = countedFrames.withLock { c in
            defer { c = now }
            return c
        }
        stats.framesDecoded.add(now.decoded &- before.decoded, ordering: .relaxed)
        stats.framesConverted.add(now.converted &- before.converted, ordering: .relaxed)
    }

    /// A pool could not be made (a pool-byte limit, no shared memory): the output fails and stops.
    private func failPool(_ error: TrackError) {
        finish(.failed, error)
        cancel()
    }

    // ── where one sample goes ────────────────────────────────────────────────────────────────────────────────────

    /// Sends `sample` in a slot: its own frame pool when it is already in shared memory and `zeroCopy` allows it,
    /// else copied into a slot of the copy pool. Waits while the client holds every slot. False when cancelled.
    @discardableResult
    func deliver(_ sample: PulledSample, zeroCopy: Bool) -> Bool {
        removeFreedPools()
        var placed: SlotID?
        var copied = false
        if zeroCopy, sample.shared != nil {
            switch placeShared(sample) {
            case .pool(let poolID): placed = SlotID(pool: poolID, slot: 0)
            case .cancelled: return false
            case .unusable: break
            }
        }
        if placed == nil {
            guard let (slot, slotSize, mapping) = takeCopySlot(bytes: sample.size) else { return false }
            placed = slot
            sample.copyBytes(to: mapping.base + Int(slot.slot) * slotSize)
            stats.bytesCopied.add(UInt64(sample.size), ordering: .relaxed)
            copied = true
        }
        guard let placed else { return false }
        // Counted before the Sample goes out, not after: once the client has it, it may ask for Status, which the
        // receive loop answers on another thread — counted after the send, a client holding 8 samples was told 7.
        stats.samplesSent.add(1, ordering: .relaxed)
        workerSlot.countSample(copied: copied ? UInt64(sample.size) : 0, shared: copied ? 0 : UInt64(sample.size))
        send(.sample(Self.message(sample, output: id, slot: SlotRef(poolID: placed.pool, slot: placed.slot), grid: grid)))
        workerSlot.progress()
        return true
    }

    /// The Sample message: GStreamer's nanoseconds put on `grid`, the track's own clock — the nearest tick, which is
    /// the container's exact time (§7.1).
    static func message(_ sample: PulledSample, output: UInt32, slot: SlotRef, grid: TimeGrid) -> TrackdProtocol.Sample {
        var flags: UInt32 = sample.isSync ? TrackdProtocol.Sample.flagSync : 0
        if sample.decodeTime.isValid { flags |= TrackdProtocol.Sample.flagHasDecodeTime }
        if sample.isDiscontinuity { flags |= TrackdProtocol.Sample.flagDiscontinuity }
        if sample.isDroppable { flags |= TrackdProtocol.Sample.flagDroppable }
        return TrackdProtocol.Sample(
            outputID: output, slot: slot, length: UInt64(sample.size),
            presentationTime: grid.rounded(sample.presentationTime), decodeTime: grid.rounded(sample.decodeTime),
            duration: grid.rounded(sample.duration),
            flags: flags, format: sample.format, width: sample.width, height: sample.height,
            colorimetry: sample.colorimetry, planes: sample.planes, frameCount: sample.frameCount, trims: sample.trims)
    }

    enum SharedPlacement { case pool(UInt32), cancelled, unusable }

    /// Zero-copy: waits until the client holds fewer than `maxHeld` of this output's shared frames, announces the
    /// memory with PoolAdded the first time this output sees it (the ledger says so), and keeps the sample until
    /// the client releases its slot. .unusable: copy the frame (its memory's descriptor went to an earlier output).
    private func placeShared(_ sample: PulledSample) -> SharedPlacement {
        guard let shared = sample.shared else { return .unusable }
        let maxHeld = min(Self.maxSlots, max(Self.minSlots, Self.poolBudget / max(shared.mapSize, 1)))
        enum Known { case pool(UInt32), copy, unknown, cancelled }
        let known = state.waitForRelease(slot: workerSlot, stalled: stalled) { s -> Known? in
            if s.ledger.cancelled { return .cancelled }
            if s.ledger.sharedHeld >= maxHeld { return nil }  // the client holds its share of frames
            switch s.ledger.holdShared(memoryID: shared.id, sample: sample) {
            case .held(let poolID): return .pool(poolID)
            case .busy: return .copy  // two GstBuffers share one memory (a shallow copy): copy this one
            case .refused: return .copy
            case .unknown: return .unknown
            }
        }
        switch known {
        case .pool(let poolID): return .pool(poolID)
        case .copy: return .unusable
        case .cancelled: return .cancelled
        case .unknown: break
        }
        guard let memfd = sample.sharedDescriptor() else {  // closed once PoolAdded has sent it
            state.withLock { $0.ledger.refuseShared(memoryID: shared.id) }
            return .unusable
        }
        let reservation: PoolReservation
        do throws(TrackError) {
            reservation = try PoolReservation(slot: workerSlot, bytes: UInt64(shared.mapSize))
        } catch {
            logPoolLimit(error)
            failPool(error)
            return .cancelled
        }
        let resource = PoolResource(reservation: reservation, mapping: nil)
        let poolID = state.withLock {
            $0.ledger.addSharedPool(memoryID: shared.id, size: shared.mapSize, resource: resource, holding: sample)
        }
        send(.poolAdded(PoolAdded(outputID: id, poolID: poolID, slotCount: 1, slotSize: UInt64(shared.mapSize))),
             fds: [memfd.rawValue])
        return .pool(poolID)
    }

    /// Zero-copy: PoolRemoved for the memories GStreamer freed (a renegotiation, the pipeline's end); nothing to
    /// do, and no lock taken, when none was.
    private func removeFreedPools() {
        let freed = pipeline.takeFreedSharedMemories()
        guard !freed.isEmpty else { return }
        let removed = state.withLock { $0.ledger.memoriesFreed(freed) }
        for poolID in removed { send(.poolRemoved(outputID: id, poolID: poolID)) }
    }

    /// Waits for a free slot that fits `bytes`, creating or replacing the copy pool as needed. Nil when cancelled.
    private func takeCopySlot(bytes: Int) -> (SlotID, slotSize: Int, SharedMapping)? {
        while true {
            let step = state.waitForRelease(slot: workerSlot, stalled: stalled) { s -> PoolLedger<PoolResource, PulledSample>.CopySlot? in
                let step = s.ledger.takeCopySlot(bytes: bytes)
                if case .full = step { return nil }  // the client holds every slot
                return step
            }
            switch step {
            case .slot(let slot, let slotSize, let resource):
                guard let mapping = resource.mapping else { preconditionFailure("a copy pool has a mapping") }
                return (slot, slotSize, mapping)
            case .cancelled, .full:
                return nil
            case .needPool(let removed):
                if let removed { send(.poolRemoved(outputID: id, poolID: removed)) }
                guard createCopyPool(forBytes: bytes) else { return nil }
            }
        }
    }

    private func createCopyPool(forBytes bytes: Int) -> Bool {
        let wanted = plan.reading.isPassthrough ? max(bytes * 2, 1 << 20) : bytes
        let slotSize = (wanted + Self.page - 1) / Self.page * Self.page
        let slotCount = min(Self.maxSlots, max(Self.minSlots, Self.poolBudget / slotSize))
        let poolID = state.withLock { $0.ledger.newPoolID() }
        let reservation: PoolReservation
        do throws(TrackError) {
            reservation = try PoolReservation(slot: workerSlot, bytes: UInt64(slotSize * slotCount))
        } catch {
            logPoolLimit(error)
            failPool(error)
            return false
        }
        do {
            let memfd = try FileDescriptor.sealedMemfd(name: "trackd-pool-\(id)-\(poolID)", size: slotSize * slotCount)
            let mapping = try SharedMapping(fd: memfd.rawValue, size: slotSize * slotCount, writable: true)
            let resource = PoolResource(reservation: reservation, mapping: mapping)
            state.withLock { $0.ledger.addCopyPool(id: poolID, slotSize: slotSize, slotCount: slotCount, resource: resource) }
            send(.poolAdded(PoolAdded(outputID: id, poolID: poolID, slotCount: UInt32(slotCount), slotSize: UInt64(slotSize))),
                 fds: [memfd.rawValue])
            return true
        } catch {
            failPool(TrackError(.limitExceeded, "cannot create a shared-memory pool of \(slotSize * slotCount) bytes: \(error)"))
            return false
        }
    }
}

extension OutputStreamer {
    /// A pool refused by a pool-byte limit (`--pool-bytes-*`): the log line and the event record.
    func logPoolLimit(_ error: TrackError) {
        Log.warning("limit: output \(id): \(error.message)")
        Event.limit(kind: "output").emit()
    }
}
