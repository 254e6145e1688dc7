// SamplePools — the bookkeeping of one output's shared-memory pools, with no GStreamer and no socket: which pools
// exist, which slots the client holds, which are free, which pool is retired, and what each pool keeps alive.
// The worker's OutputStreamer keeps one PoolLedger behind its lock, asks it where the next sample goes, and sends
// what it answers (PoolAdded, Sample, PoolRemoved). Every rule of back-pressure and retirement is here, unit-tested
// in Tests/SamplePoolsTests without a daemon.

/// A slot of a pool, as the wire names it (Protocol's SlotRef; this module does not depend on Protocol).
public struct SlotID: Hashable, Sendable, CustomStringConvertible {
    public var pool: UInt32
    public var slot: UInt32

    public init(pool: UInt32, slot: UInt32) {
        self.pool = pool
        self.slot = slot
    }

    public var description: String { "slot \(slot) of pool \(pool)" }
}

/// The pools of one output and the slots the client holds.
///
/// Two kinds of pool:
/// - a **copy pool**: the output's own memory of `slotCount` slots of `slotSize` bytes; samples are copied into a
///   free slot. One copy pool is current; a sample larger than its slots retires it (it goes once its last held slot
///   comes back) and the caller adds a larger one.
/// - a **shared pool**: one GStreamer memory holding one frame (zero-copy), slot 0; the ledger keeps the sample
///   (`Held`) while the client holds the slot, so nothing writes the memory meanwhile. It lives as long as the
///   memory does (`memoriesFreed`).
///
/// The ledger is the one record of which GStreamer memories this output has been told about (announced with
/// PoolAdded, its descriptor sent) and which it could not be (`refuseShared`: no descriptor left, its frames are
/// copied). The allocator only makes and frees memories and says which it freed; each id it frees is forgotten
/// here (`memoriesFreed`), so a memory seen again — a later output on a kept pipeline, or an id the allocator
/// reused — is announced afresh. Memory ids are opaque: no order or arithmetic on them.
///
/// `Resource` is what keeps a pool alive (its mapping, its reservation against the pool-byte limits): dropped when
/// the pool leaves the ledger. `Held` is what a held shared slot keeps (the pulled sample): handed back by `release`
/// so the caller drops it outside its lock.
public struct PoolLedger<Resource, Held> {
    public enum Kind: Equatable, Sendable {
        case copy
        case shared(memoryID: UInt32)
    }

    struct Pool {
        let kind: Kind
        let resource: Resource
        let slotSize: Int
        var free: [UInt32]
        var held: Set<UInt32> = []
        var retired = false
        /// Shared pools: the sample kept while the client holds slot 0.
        var sample: Held?
    }

    private var pools: [UInt32: Pool] = [:]
    private var currentCopyPool: UInt32?
    private var nextID: UInt32 = 1
    /// What this output knows of a GStreamer memory: announced as a pool, or refused (its frames are copied).
    enum Memory: Sendable {
        case pool(UInt32)
        case refused
    }

    /// Shared: GStreamer memory id → what this output knows of it, for every memory seen and not yet freed.
    private var memories: [UInt32: Memory] = [:]
    /// The shared slots the client holds now.
    public private(set) var sharedHeld = 0
    /// No more samples: CancelOutput, the client gone, or a failure on the way.
    public private(set) var cancelled = false
    /// OutputFinished was sent: pools go as soon as their last slot is back, and no PoolRemoved is announced.
    public private(set) var finished = false

    public init() {}

    // ── state ────────────────────────────────────────────────────────────────────────────────────────────────────

    /// Pools in the ledger (retired ones still held included).
    public var poolCount: Int { pools.count }

    /// Slots the client holds, all pools.
    public var heldCount: Int { pools.values.reduce(0) { $0 + $1.held.count } }

    /// Whether `slot` is held by the client.
    public func isHeld(_ slot: SlotID) -> Bool { pools[slot.pool]?.held.contains(slot.slot) ?? false }

    /// Whether pool `id` is in the ledger.
    public func contains(pool id: UInt32) -> Bool { pools[id] != nil }

    /// The resource of pool `id` (nil when it is gone).
    public func resource(of id: UInt32) -> Resource? { pools[id]?.resource }

    public mutating func cancel() { cancelled = true }

    /// A new pool id (ids are never reused). The caller names the pool's memory with it before adding the pool.
    public mutating func newPoolID() -> UInt32 {
        defer { nextID += 1 }
        return nextID
    }

    // ── copy pools ───────────────────────────────────────────────────────────────────────────────────────────────

    public enum CopySlot {
        /// Copy the sample into `slot` (held from now on) at `slot.slot × slotSize` in `resource`'s memory.
        case slot(SlotID, slotSize: Int, resource: Resource)
        /// Every slot of the current pool is held: wait for a release (back-pressure).
        case full
        /// No current pool fits: add one (`addCopyPool`). `removed`: the pool this retired, already gone (it held
        /// nothing) — announce PoolRemoved for it.
        case needPool(removed: UInt32?)
        case cancelled
    }

    /// Where a sample of `bytes` bytes goes: a free slot of the current copy pool, or why not.
    public mutating func takeCopySlot(bytes: Int) -> CopySlot {
        if cancelled { return .cancelled }
        guard let current = currentCopyPool, var pool = pools[current] else { return .needPool(removed: nil) }
        if pool.slotSize < bytes {
            currentCopyPool = nil
            if pool.held.isEmpty {
                pools[current] = nil
                return .needPool(removed: current)
            }
            pool.retired = true
            pools[current] = pool
            return .needPool(removed: nil)
        }
        guard let slot = pool.free.popLast() else { return .full }
        pool.held.insert(slot)
        pools[current] = pool
        return .slot(SlotID(pool: current, slot: slot), slotSize: pool.slotSize, resource: pool.resource)
    }

    /// Adds copy pool `id` (from `newPoolID`) of `slotCount` free slots and makes it current (the old current pool,
    /// if any, was retired by `takeCopySlot`).
    public mutating func addCopyPool(id: UInt32, slotSize: Int, slotCount: Int, resource: Resource) {
        pools[id] = Pool(kind: .copy, resource: resource, slotSize: slotSize,
                         free: (0..<UInt32(max(0, slotCount))).reversed().map { $0 })
        currentCopyPool = id
    }

    // ── shared pools (zero-copy) ─────────────────────────────────────────────────────────────────────────────────

    public enum SharedSlot {
        /// The memory's pool is known: its slot 0 is held now, keeping `sample`.
        case held(poolID: UInt32)
        /// The memory's pool is known but its slot is held already (two buffers sharing one memory): copy instead.
        case busy
        /// A memory this output was not told about: announce it (`addSharedPool`), or `refuseShared` it and copy.
        case unknown
        /// A memory refused earlier (`refuseShared`) and not freed since: copy the sample.
        case refused
    }

    /// Holds slot 0 of the pool of GStreamer memory `memoryID`, keeping `sample` until it is released.
    public mutating func holdShared(memoryID: UInt32, sample: Held) -> SharedSlot {
        let id: UInt32
        switch memories[memoryID] {
        case nil: return .unknown
        case .refused: return .refused
        case .pool(let pool): id = pool
        }
        guard var pool = pools[id] else { return .unknown }  // dropped when the output finished
        guard !pool.held.contains(0) else { return .busy }
        pool.held.insert(0)
        pool.sample = sample
        pools[id] = pool
        sharedHeld += 1
        return .held(poolID: id)
    }

    /// Adds the pool of GStreamer memory `memoryID` (`size` bytes) with its slot 0 held, keeping `sample`. Returns the
    /// new pool's id.
    public mutating func addSharedPool(memoryID: UInt32, size: Int, resource: Resource, holding sample: Held) -> UInt32 {
        let id = newPoolID()
        memories[memoryID] = .pool(id)
        pools[id] = Pool(kind: .shared(memoryID: memoryID), resource: resource, slotSize: size, free: [], held: [0],
                         sample: sample)
        sharedHeld += 1
        return id
    }

    /// GStreamer memory `memoryID` cannot be announced to this output (no descriptor is left for it): its samples
    /// are copied until it is freed.
    public mutating func refuseShared(memoryID: UInt32) {
        if memories[memoryID] == nil { memories[memoryID] = .refused }
    }

    /// GStreamer freed these memories (a renegotiation, the pipeline's end): their pools go, and the memories are
    /// forgotten. The client holds none of them (a held slot keeps its sample, and so its memory). Returns the pools
    /// to announce as removed (none once finished). Ids this output never saw are ignored.
    public mutating func memoriesFreed(_ memoryIDs: [UInt32]) -> [UInt32] {
        let ids = memoryIDs.compactMap { id -> UInt32? in
            guard case .pool(let pool) = memories.removeValue(forKey: id) else { return nil }
            return pool
        }
        for id in ids {
            if let pool = pools.removeValue(forKey: id), !pool.held.isEmpty { sharedHeld -= pool.held.count }
        }
        return finished ? [] : ids
    }

    // ── the client gives slots back ──────────────────────────────────────────────────────────────────────────────

    public struct Released {
        /// Retired copy pools whose last slot came back: announce PoolRemoved for each.
        public var removed: [UInt32] = []
        /// The samples of released shared slots: drop them outside the lock (that hands their buffers back).
        public var samples: [Held] = []
        /// Finished and nothing held any more: the output can be forgotten.
        public var drained = false
        /// The first slot that was not held (a protocol violation); the slots before it were released.
        public var notHeld: SlotID?
    }

    /// Releases `slots` in order, stopping at the first one the client does not hold.
    public mutating func release(_ slots: [SlotID]) -> Released {
        var result = Released()
        for ref in slots {
            guard var pool = pools[ref.pool], pool.held.remove(ref.slot) != nil else {
                result.notHeld = ref
                return result
            }
            if case .shared = pool.kind {
                // Shared: the pool lives as long as GStreamer's memory (memoriesFreed), or until finished.
                sharedHeld -= 1
                if let sample = pool.sample { result.samples.append(sample) }
                pool.sample = nil
                pools[ref.pool] = finished ? nil : pool
                continue
            }
            pool.free.append(ref.slot)
            if (pool.retired || finished) && pool.held.isEmpty {
                pools[ref.pool] = nil
                if !finished { result.removed.append(ref.pool) }
            } else {
                pools[ref.pool] = pool
            }
        }
        result.drained = finished && pools.values.allSatisfy { $0.held.isEmpty }
        return result
    }

    // ── the end ──────────────────────────────────────────────────────────────────────────────────────────────────

    /// OutputFinished is about to be sent: pools nobody holds go now, the others with their last slot. `first`:
    /// this is the first call; `drained`: nothing is held (the output can be forgotten now).
    public mutating func finish() -> (first: Bool, drained: Bool) {
        if finished { return (false, false) }
        finished = true
        pools = pools.filter { !$0.value.held.isEmpty }
        return (true, pools.isEmpty)
    }
}

extension PoolLedger: Sendable where Resource: Sendable, Held: Sendable {}
extension PoolLedger.Pool: Sendable where Resource: Sendable, Held: Sendable {}
extension PoolLedger.CopySlot: Sendable where Resource: Sendable {}
extension PoolLedger.Released: Sendable where Held: Sendable {}
