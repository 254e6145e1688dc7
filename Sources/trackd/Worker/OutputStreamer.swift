import Dispatch
import Foundation
import GstBridge
import MediaIndex
import Protocol
import Synchronization

/// What a ReadFrames output delivers: frame indices in request order, and the time ranges (ascending, each one
/// accurate seek) that decode each of them with every GOP decoded once. The pipeline starts at `ranges[0]`.
struct FramePlan: Sendable {
    let index: FrameIndex
    let order: [Int]
    let ranges: [FrameIndex.DecodeRange]
    /// The wanted frames each range must produce (their presentation times are in its time range).
    let wantedByRange: [Set<Int>]

    init(index: FrameIndex, order: [Int]) {
        self.index = index
        self.order = order
        let ranges = index.plan(Set(order))
        self.ranges = ranges
        wantedByRange = ranges.map { r in
            let start = r.range.start.nanoseconds ?? 0, end = start + (r.range.duration.nanoseconds ?? 0)
            return Set(order.filter { (start..<end).contains(index.frames[$0].presentationTime) })
        }
    }

    var resolved: [ResolvedFrame] {
        order.map { ResolvedFrame(index: UInt64($0), presentationTime: .nanoseconds(index.frames[$0].presentationTime)) }
    }
}

/// Counters a worker reports in Status.
final class WorkerStats: Sendable {
    let samplesSent = Atomic<UInt64>(0)
    /// Bytes of sample data the worker copied between GStreamer's buffers and the shared pool.
    let bytesCopied = Atomic<UInt64>(0)
}

/// One output: a GStreamer pipeline for one track, the shared-memory pools its samples travel in, and the
/// dedicated thread that pulls from appsink (a blocking call) and sends samples while the client holds free slots.
///
/// Slots are the flow control: a sample occupies one slot of the output's current pool from the moment it is
/// sent until the client releases it. When the client holds every slot, the pulling thread waits. A sample
/// larger than the current pool's slots retires that pool (it is unmapped and PoolRemoved is sent once its last
/// slot comes back) and a larger one is created, so memory per output stays bounded by `poolBudget`.
final class OutputStreamer: Sendable {
    static let poolBudget = 64 << 20
    static let maxSlots = 8
    static let minSlots = 2
    static let page = 4096

    struct Pool {
        /// nil: a zero-copy pool — one GStreamer memory (PulledSample.shared), one slot, mapped by GStreamer.
        let mapping: SharedMapping?
        /// Counts the pool against the per-client and total pool-byte limits until the pool is dropped.
        let reservation: PoolReservation
        let slotSize: Int
        var free: [UInt32]
        var held: Set<UInt32> = []
        var retired = false
    }

    struct State: ~Copyable {
        var pools: [UInt32: Pool] = [:]
        var currentPool: UInt32?
        var nextPoolID: UInt32 = 1
        var cancelled = false
        var finished = false
        /// Random access: RangeEnded was sent; the output waits for ResetOutput, FinishOutput or CancelOutput.
        var awaitingReset = false
        /// Random access: ranges of the last ResetOutput not yet read (the puller takes them one by one).
        var pendingRanges: [MediaTimeRange] = []
        /// Random access: FinishOutput arrived; the end of the current ranges completes the output.
        var final = false
        /// Zero-copy: GStreamer memory id → pool id, for every memory announced with PoolAdded and not yet freed.
        var sharedPools: [UInt32: UInt32] = [:]
        /// Zero-copy: the samples whose memory the client holds, by pool id (their slot is 0). Dropping one returns
        /// its buffer to GStreamer's pool.
        var sharedHeld: [UInt32: PulledSample] = [:]
    }

    enum ReleaseError: Error { case notHeld(SlotRef) }
    enum ResetError: Error { case notRandomAccess, notAwaiting }

    let id: UInt32
    let requestID: UInt32
    let passthrough: Bool
    let supportsRandomAccess: Bool
    /// ReadFrames: the frames to deliver, in request order, and the ranges to decode them from.
    let frames: FramePlan?
    private let pipeline: TrackPipeline
    private let socket: MessageSocket
    private let stats: WorkerStats
    private let workerSlot: WorkerSlot
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Called once when the output has finished and every slot is back (the session forgets it then).
    private let onDrained: @Sendable (UInt32) -> Void

    init(id: UInt32, requestID: UInt32, pipeline: TrackPipeline, passthrough: Bool, supportsRandomAccess: Bool,
         frames: FramePlan? = nil, socket: MessageSocket, stats: WorkerStats, slot: WorkerSlot,
         onDrained: @escaping @Sendable (UInt32) -> Void) {
        self.id = id
        self.frames = frames
        self.supportsRandomAccess = supportsRandomAccess
        self.requestID = requestID
        self.pipeline = pipeline
        self.passthrough = passthrough
        self.socket = socket
        self.stats = stats
        self.workerSlot = slot
        self.onDrained = onDrained
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "output-\(id)"
        thread.start()
    }

    func cancel() {
        let alreadyFinished = state.withLock { s in
            let f = s.finished
            s.cancelled = true
            return f
        }
        if !alreadyFinished { wake.signal() }
    }

    /// ResetOutput: read `ranges` next. Only a random-access output that sent RangeEnded (and was not finished
    /// or cancelled since) may be reset; a finished output ignores it (the caller checks for violations).
    func reset(_ ranges: [MediaTimeRange]) throws(ResetError) {
        guard supportsRandomAccess else { throw .notRandomAccess }
        let accepted = try state.withLock { (s: inout State) throws(ResetError) -> Bool in
            if s.finished || s.cancelled { return false }
            guard s.awaitingReset, !s.final else { throw .notAwaiting }
            s.awaitingReset = false
            s.pendingRanges = ranges
            return true
        }
        if accepted { wake.signal() }
    }

    /// FinishOutput (markConfigurationAsFinal): complete at the end of the current ranges, or now if waiting.
    func markFinal() {
        state.withLock { $0.final = true }
        wake.signal()
    }

    /// The client gives slots back. A slot it does not hold is a protocol violation.
    func release(_ slots: [SlotRef]) throws(ReleaseError) {
        var removals: [UInt32] = []
        var returned: [PulledSample] = []  // dropped after the lock: that hands the buffers back to GStreamer
        let drained = try state.withLock { (s: inout State) throws(ReleaseError) -> Bool in
            for ref in slots {
                guard var pool = s.pools[ref.poolID], pool.held.remove(ref.slot) != nil else {
                    throw .notHeld(ref)
                }
                if pool.mapping == nil {
                    // Zero-copy: the pool lives as long as GStreamer's memory (PoolRemoved when it is freed).
                    if let sample = s.sharedHeld.removeValue(forKey: ref.poolID) { returned.append(sample) }
                    if s.finished { s.pools[ref.poolID] = nil } else { s.pools[ref.poolID] = pool }
                    continue
                }
                pool.free.append(ref.slot)
                if (pool.retired || s.finished) && pool.held.isEmpty {
                    s.pools[ref.poolID] = nil
                    if !s.finished { removals.append(ref.poolID) }
                } else {
                    s.pools[ref.poolID] = pool
                }
            }
            return s.finished && s.pools.values.allSatisfy { $0.held.isEmpty }
        }
        returned.removeAll()
        for poolID in removals { send(.poolRemoved(outputID: id, poolID: poolID)) }
        wake.signal()
        if drained { onDrained(id) }
    }

    private func send(_ message: Message, fds: [Int32] = []) {
        do {
            try socket.send(message, requestID: requestID, fds: fds)
        } catch {
            // The client is gone; stop producing. The session notices the closed socket on its own.
            state.withLock { $0.cancelled = true }
        }
    }

    /// The puller counts as busy for the watchdog (the client waits on it) except while it waits for the client:
    /// for a free slot, or for ResetOutput/FinishOutput after RangeEnded.
    private func run() {
        if let frames { return runFrames(frames) }
        workerSlot.beginBusy()
        defer {
            workerSlot.endBusy()
            pipeline.stop()
        }
        while true {
            if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
            switch pipeline.pull(timeoutNs: 100_000_000) {
            case .timeout:
                continue
            case .endOfStream:
                if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
                guard supportsRandomAccess else { return finish(.completed) }
                switch nextRange() {
                case .range(let range):
                    if let error = seek(range) { return finish(.failed, error) }
                case .completed:
                    return finish(.completed)
                case .cancelled:
                    return finish(.cancelled)
                }
            case .failed(let error):
                if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
                return finish(.failed, error)
            case .sample(let sample):
                deliver(sample, zeroCopy: true)
            }
        }
    }

    /// Sends `sample` in a slot: its own frame pool when it is already in shared memory and `zeroCopy` allows it,
    /// else copied into a slot of the copy pool. Waits while the client holds every slot. False when cancelled.
    @discardableResult
    private func deliver(_ sample: PulledSample, zeroCopy: Bool) -> Bool {
        removeFreedPools()
        var placed: (poolID: UInt32, slot: UInt32)?
        var copied = false
        if zeroCopy, sample.shared != nil {
            switch acquireShared(sample) {
            case .pool(let poolID): placed = (poolID, 0)
            case .cancelled: return false
            case .unusable: break
            }
        }
        if placed == nil {
            sample.discardSharedFD()
            guard let (p, slot, slotSize, mapping) = acquireSlot(bytes: sample.size) else { return false }
            placed = (p, slot)
            sample.copyBytes(to: mapping.base + Int(slot) * slotSize)
            stats.bytesCopied.add(UInt64(sample.size), ordering: .relaxed)
            copied = true
        }
        guard let (poolID, slot) = placed else { return false }
        var flags: UInt32 = sample.isSync ? Protocol.Sample.flagSync : 0
        if sample.decodeTime.isValid { flags |= Protocol.Sample.flagHasDecodeTime }
        if sample.isDiscontinuity { flags |= Protocol.Sample.flagDiscontinuity }
        if sample.isDroppable { flags |= Protocol.Sample.flagDroppable }
        send(.sample(Protocol.Sample(
            outputID: id, slot: SlotRef(poolID: poolID, slot: slot), length: UInt64(sample.size),
            presentationTime: sample.presentationTime, decodeTime: sample.decodeTime, duration: sample.duration,
            flags: flags, format: sample.format, width: sample.width, height: sample.height,
            colorimetry: sample.colorimetry, planes: sample.planes, frameCount: sample.frameCount)))
        stats.samplesSent.add(1, ordering: .relaxed)
        workerSlot.countSample(copied: copied ? UInt64(sample.size) : 0, shared: copied ? 0 : UInt64(sample.size))
        workerSlot.progress()
        return true
    }

    /// ReadFrames: decodes the plan's ranges one after the other (each an accurate seek), keeps the wanted frames
    /// as they come, and sends them in request order as soon as the next one in that order is at hand. A frame
    /// asked for more than once is copied for each request (one GStreamer buffer cannot fill two held slots).
    private func runFrames(_ plan: FramePlan) {
        workerSlot.beginBusy()
        defer {
            workerSlot.endBusy()
            pipeline.stop()
        }
        send(.framesResolved(outputID: id, frames: plan.resolved))
        var uses: [Int: Int] = [:]
        for frame in plan.order { uses[frame, default: 0] += 1 }
        let single = uses.filter { $0.value == 1 }.keys
        var kept: [Int: PulledSample] = [:]
        var next = 0
        var range = 0
        var decoded = 0  // frames that reached appsink (decoded and converted), wanted or not
        var arrived: Set<Int> = []  // wanted frames that came out of the decoder
        var retried = false  // the current range was decoded again without the sample filter
        defer {
            Log.info("ReadFrames output \(id): \(plan.order.count) frames asked, \(pipeline.samplesDecoded) samples decoded (\(pipeline.samplesSkipped) skipped) and \(decoded) delivered by the decoder in \(plan.ranges.count) ranges")
        }
        while true {
            if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
            switch pipeline.pull(timeoutNs: 100_000_000) {
            case .timeout:
                continue
            case .failed(let error):
                if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
                return finish(.failed, error)
            case .endOfStream:
                if state.withLock({ $0.cancelled }) { return finish(.cancelled) }
                // Fail-safe: if the sample filter kept back something a wanted frame needed (an index whose times
                // are not the demuxer's), decode the range again with every sample, as a plain accurate seek does.
                let current = plan.ranges[range]
                if !retried, current.neededSamples != nil || current.lastNeededSample != nil,
                   !plan.wantedByRange[range].isSubset(of: arrived) {
                    retried = true
                    let lacking = plan.wantedByRange[range].subtracting(arrived).sorted()
                    Log.warning("ReadFrames output \(id): range \(range) did not produce frame(s) \(lacking.prefix(8).map(String.init).joined(separator: ", ")) with the needed samples only; decoding it again with every sample")
                    if let error = seek(current.range) { return finish(.failed, error) }
                    continue
                }
                retried = false
                range += 1
                if range < plan.ranges.count {
                    let next = plan.ranges[range]
                    if let error = seek(next.range, neededSamples: next.neededSamples, lastNeededSample: next.lastNeededSample) {
                        return finish(.failed, error)
                    }
                    continue
                }
                if next == plan.order.count { return finish(.completed) }
                let missing = plan.order[next]
                return finish(.failed, TrackError(.decodeFailed,
                    "frame \(missing) (at \(Double(plan.index.frames[missing].presentationTime) / 1e9) s) was not produced by the decoder"))
            case .sample(let sample):
                decoded += 1
                guard let ns = sample.presentationTime.nanoseconds else { continue }
                let frame = plan.index.nearest(ns)
                guard (uses[frame] ?? 0) > 0, kept[frame] == nil, !arrived.contains(frame) else { continue }
                arrived.insert(frame)
                kept[frame] = sample
                while next < plan.order.count, let ready = kept[plan.order[next]] {
                    let frame = plan.order[next]
                    guard deliver(ready, zeroCopy: single.contains(frame)) else { return finish(.cancelled) }
                    next += 1
                    uses[frame]! -= 1
                    if uses[frame] == 0 { kept[frame] = nil }
                }
            }
        }
    }

    enum NextRange { case range(MediaTimeRange), completed, cancelled }

    /// Random access, at the end of a range: the next pending range; else, unless FinishOutput arrived, sends
    /// RangeEnded and waits for ResetOutput (its first range), FinishOutput (.completed) or CancelOutput.
    private func nextRange() -> NextRange {
        enum Step { case range(MediaTimeRange), completed, cancelled, announce, wait }
        var waiting = false
        defer { if waiting { workerSlot.beginBusy() } }
        while true {
            let step = state.withLock { s -> Step in
                if s.cancelled { return .cancelled }
                if !s.pendingRanges.isEmpty { return .range(s.pendingRanges.removeFirst()) }
                if s.final { return .completed }
                if s.awaitingReset { return .wait }
                s.awaitingReset = true
                return .announce
            }
            switch step {
            case .range(let range): return .range(range)
            case .completed: return .completed
            case .cancelled: return .cancelled
            case .announce: send(.rangeEnded(outputID: id))
            case .wait:
                if !waiting {
                    waiting = true
                    workerSlot.endBusy()
                }
                _ = wake.wait(timeout: .now() + .milliseconds(100))
            }
        }
    }

    private func seek(_ range: MediaTimeRange, neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil) -> TrackError? {
        do {
            try pipeline.seek(to: range, neededSamples: neededSamples, lastNeededSample: lastNeededSample)
            return nil
        } catch {
            return error
        }
    }

    enum SharedPlacement { case pool(UInt32), cancelled, unusable }

    /// Zero-copy: waits until the client holds fewer than `maxHeld` of this output's shared frames, announces the
    /// memory with PoolAdded the first time it is seen, and keeps the sample until the client releases its slot.
    /// .unusable: a memory whose fd was given up earlier (the frame was copied then) — copy this one too.
    private func acquireShared(_ sample: PulledSample) -> SharedPlacement {
        guard let shared = sample.shared else { return .unusable }
        let maxHeld = min(Self.maxSlots, max(Self.minSlots, Self.poolBudget / max(shared.mapSize, 1)))
        var waiting = false
        defer { if waiting { workerSlot.beginBusy() } }
        while true {
            let (cancelled, full) = state.withLock { ($0.cancelled, $0.sharedHeld.count >= maxHeld) }
            if cancelled { return .cancelled }
            if !full { break }
            if !waiting {
                waiting = true
                workerSlot.endBusy()  // the client holds its share of frames: waiting on it is not the worker's stall
            }
            _ = wake.wait(timeout: .now() + .milliseconds(100))
        }
        enum Known { case pool(UInt32), busy, unknown }
        switch state.withLock({ s -> Known in
            guard let poolID = s.sharedPools[shared.id], var pool = s.pools[poolID] else { return .unknown }
            // Two GstBuffers can share one memory (a shallow copy): while the client holds the slot, copy instead.
            guard !pool.held.contains(0) else { return .busy }
            pool.held.insert(0)
            s.pools[poolID] = pool
            s.sharedHeld[poolID] = sample
            return .pool(poolID)
        }) {
        case .pool(let poolID): return .pool(poolID)
        case .busy: return .unusable
        case .unknown: break
        }
        guard let fd = sample.takeSharedFD() else { return .unusable }
        defer { close(fd) }
        let reservation: PoolReservation
        do throws(TrackError) {
            reservation = try PoolReservation(slot: workerSlot, bytes: UInt64(shared.mapSize))
        } catch {
            Log.warning("limit: output \(id): \(error.message)")
            finish(.failed, error)
            state.withLock { $0.cancelled = true }
            return .cancelled
        }
        let poolID = state.withLock { s in
            let poolID = s.nextPoolID
            s.nextPoolID += 1
            s.sharedPools[shared.id] = poolID
            s.pools[poolID] = Pool(mapping: nil, reservation: reservation, slotSize: shared.mapSize, free: [], held: [0])
            s.sharedHeld[poolID] = sample
            return poolID
        }
        send(.poolAdded(PoolAdded(outputID: id, poolID: poolID, slotCount: 1, slotSize: UInt64(shared.mapSize))), fds: [fd])
        return .pool(poolID)
    }

    /// Zero-copy: PoolRemoved for the memories GStreamer freed (a renegotiation, the pipeline's end). The client
    /// holds none of them: a held slot keeps its sample, and so its memory, alive.
    private func removeFreedPools() {
        let freed = pipeline.takeFreedSharedMemories()
        guard !freed.isEmpty else { return }
        let removed = state.withLock { s -> [UInt32] in
            let ids = freed.compactMap { s.sharedPools.removeValue(forKey: $0) }
            for poolID in ids { s.pools[poolID] = nil }
            return s.finished ? [] : ids
        }
        for poolID in removed { send(.poolRemoved(outputID: id, poolID: poolID)) }
    }

    /// Waits for a free slot that fits `bytes`, creating or replacing the pool as needed. Nil when cancelled.
    private func acquireSlot(bytes: Int) -> (UInt32, UInt32, Int, SharedMapping)? {
        var waiting = false
        defer { if waiting { workerSlot.beginBusy() } }
        while true {
            enum Step { case got(UInt32, UInt32, Int, SharedMapping), needPool(retire: UInt32?, removeNow: Bool), wait, cancelled }
            let step = state.withLock { s -> Step in
                if s.cancelled { return .cancelled }
                if let current = s.currentPool, var pool = s.pools[current], let mapping = pool.mapping {
                    if pool.slotSize < bytes {
                        pool.retired = true
                        let empty = pool.held.isEmpty
                        s.pools[current] = empty ? nil : pool
                        s.currentPool = nil
                        return .needPool(retire: current, removeNow: empty)
                    }
                    if let slot = pool.free.popLast() {
                        pool.held.insert(slot)
                        s.pools[current] = pool
                        return .got(current, slot, pool.slotSize, mapping)
                    }
                    return .wait
                }
                return .needPool(retire: nil, removeNow: false)
            }
            switch step {
            case .got(let p, let slot, let size, let mapping):
                return (p, slot, size, mapping)
            case .cancelled:
                return nil
            case .wait:
                if !waiting {
                    waiting = true
                    workerSlot.endBusy()  // the client holds every slot: waiting on it is not the worker's stall
                }
                _ = wake.wait(timeout: .now() + .milliseconds(100))
            case .needPool(let retired, let removeNow):
                if let retired, removeNow { send(.poolRemoved(outputID: id, poolID: retired)) }
                guard createPool(forBytes: bytes) else { return nil }
            }
        }
    }

    private func createPool(forBytes bytes: Int) -> Bool {
        let wanted = passthrough ? max(bytes * 2, 1 << 20) : bytes
        let slotSize = (wanted + Self.page - 1) / Self.page * Self.page
        let slotCount = min(Self.maxSlots, max(Self.minSlots, Self.poolBudget / slotSize))
        let poolID = state.withLock { s in
            defer { s.nextPoolID += 1 }
            return s.nextPoolID
        }
        let reservation: PoolReservation
        do throws(TrackError) {
            reservation = try PoolReservation(slot: workerSlot, bytes: UInt64(slotSize * slotCount))
        } catch {
            Log.warning("limit: output \(id): \(error.message)")
            finish(.failed, error)
            state.withLock { $0.cancelled = true }
            return false
        }
        do {
            let (mapping, fd) = try SharedMapping.create(name: "trackd-pool-\(id)-\(poolID)", size: slotSize * slotCount)
            defer { close(fd) }
            state.withLock { s in
                s.pools[poolID] = Pool(mapping: mapping, reservation: reservation, slotSize: slotSize,
                                       free: (0..<UInt32(slotCount)).reversed().map { $0 })
                s.currentPool = poolID
            }
            send(.poolAdded(PoolAdded(outputID: id, poolID: poolID, slotCount: UInt32(slotCount), slotSize: UInt64(slotSize))),
                 fds: [fd])
            return true
        } catch {
            finish(.failed, TrackError(.limitExceeded, "cannot create a shared-memory pool of \(slotSize * slotCount) bytes: \(error)"))
            state.withLock { $0.cancelled = true }
            return false
        }
    }

    private func finish(_ status: OutputStatus, _ error: TrackError? = nil) {
        let (first, drained) = state.withLock { s -> (Bool, Bool) in
            if s.finished { return (false, false) }
            s.finished = true
            s.pools = s.pools.filter { !$0.value.held.isEmpty }
            return (true, s.pools.isEmpty)
        }
        guard first else { return }
        // Gone from the session before the client hears it ended: a GetStatus sent right after OutputFinished
        // arrives must not count it (the receive loop could otherwise answer before this thread removed it).
        if drained { onDrained(id) }
        send(.outputFinished(OutputFinished(outputID: id, status: status, code: error?.code ?? 0, message: error?.message ?? "")))
    }
}
