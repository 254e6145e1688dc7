import CTrackSys
import TrackdProtocol
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's table of live workers, a sealed memfd shared read-write with every worker (fd 5), one
/// 128-byte slot per connection (the supervisor assigns the index at spawn and zeroes the slot when it reaps the
/// worker). Every field is a u64 read and written with C11 atomics (CTrackSys):
///
/// | word | field | written by |
/// |---:|---|---|
/// | 0 | pool bytes this worker has mapped | worker (reserve/return), supervisor (zero at spawn and reap) |
/// | 1 | busy: how many things the client is waiting on (requests in progress, outputs pulling with a free slot) | worker |
/// | 2 | progress: CLOCK_MONOTONIC ms of the last thing produced (sample or reply) or busy change | worker |
/// | 3 | receive calls made (the watchdog's proof that the worker still reads its socket) | worker |
/// | 4 | armed: 1 once the worker starts reading its connection (start-up does not count) | worker |
/// | 5 | samples sent | worker |
/// | 6 | bytes of sample data copied into pools and image memfds | worker |
/// | 7 | bytes of sample data sent zero-copy (frames GStreamer wrote into shared memory) | worker |
/// | 8 | sending: 1 while the worker writes a frame to its connection, left at 1 when a write failed midway | worker |
///
/// Words 5–7 make the daemon-wide counters of Status: the supervisor adds a reaped worker's to its retired totals
/// (SharedStatistics) before zeroing the slot, and a worker answering GetStatus adds those to every live slot's.
/// Words 4 and 1 of the other slots tell a worker how many decodes its own competes with (decoder threads,
/// Session.decodeThreads); words 5 and 6 tell the supervisor that a new connection has started up (its first
/// sample or image, Supervisor.startWarmWorkerAfterStartUps). Word 8 tells the supervisor, once a worker it killed
/// (the watchdog, or a stop past --stop-timeout) is gone, whether the connection is between frames: only then does
/// it add an Error frame saying why the session ended.
///
/// A worker can write any slot: a compromised worker can make others' pool reservations fail, have the
/// supervisor's watchdog look at false numbers, make other workers decode with fewer threads or delay the next
/// warm worker — denial of service only (docs/SECURITY.md).
final class WorkerTable: @unchecked Sendable {
    // @unchecked: the mapping's address is immutable; every access to the shared words goes through atomics.
    static let slotBytes = 128
    enum Field: Int, CaseIterable {
        case poolBytes = 0, busy, progress, reads, armed, samplesSent, bytesCopied, bytesShared, sending
    }

    let mapping: SharedMapping
    let slots: Int
    /// The supervisor's read-write descriptor of the table, at fd ≥ 100 (see trackd_spawn_with_fds), which every
    /// worker gets as fd 5; nil in a worker.
    let descriptor: SharedDescriptor?

    init(mapping: SharedMapping, slots: Int, descriptor: SharedDescriptor? = nil) {
        self.mapping = mapping
        self.slots = slots
        self.descriptor = descriptor
    }

    /// The supervisor's table: a new sealed memfd of `slots` slots.
    static func create(slots: Int) throws(SystemError) -> WorkerTable {
        let memfd = try FileDescriptor.sealedMemfd(name: "trackd-workers", size: slots * slotBytes)
        let mapping = try SharedMapping(fd: memfd.rawValue, size: slots * slotBytes, writable: true)
        return WorkerTable(mapping: mapping, slots: slots, descriptor: SharedDescriptor(try memfd.duplicate(atLeast: 100)))
    }

    /// A worker's view of the table passed as `fd`, or nil when there is none (a worker started by hand).
    static func attach(fd: Int32) -> WorkerTable? {
        guard let mapping = SharedMapping.mapSealed(fd: fd, minimumSize: slotBytes, writable: true) else { return nil }
        return WorkerTable(mapping: mapping, slots: mapping.size / slotBytes)
    }

    /// The index of `field`'s word of `slot` in the mapping.
    private func word(_ slot: Int, _ field: Field) -> Int {
        precondition(slot >= 0 && slot < slots)
        return slot * Self.slotBytes / 8 + field.rawValue
    }

    func load(_ slot: Int, _ field: Field) -> UInt64 { mapping.atomicLoad(word: word(slot, field)) }
    func store(_ slot: Int, _ field: Field, _ value: UInt64) { mapping.atomicStore(word: word(slot, field), value) }
    @discardableResult func add(_ slot: Int, _ field: Field, _ value: UInt64) -> UInt64 { mapping.atomicAdd(word: word(slot, field), value) }
    @discardableResult func sub(_ slot: Int, _ field: Field, _ value: UInt64) -> UInt64 { mapping.atomicSubtract(word: word(slot, field), value) }

    /// Zeroes a slot (supervisor: before a spawn and after a reap, which returns a dead worker's pool bytes).
    func clear(_ slot: Int) {
        for field in Field.allCases where field != .progress { store(slot, field, 0) }
        store(slot, .progress, trackd_monotonic_ms())
    }

    /// Pool bytes of every worker.
    var totalPoolBytes: UInt64 { total(.poolBytes) }

    /// `field` summed over every slot.
    func total(_ field: Field) -> UInt64 {
        (0..<slots).reduce(0) { $0 &+ load($1, field) }
    }
}

/// A worker's own slot: pool-byte reservations against its limits, and what the watchdog watches.
final class WorkerSlot: Sendable {
    let table: WorkerTable?
    let index: Int
    let poolBytesPerClient: UInt64
    let poolBytesTotal: UInt64

    init(table: WorkerTable?, index: Int, poolBytesPerClient: UInt64, poolBytesTotal: UInt64) {
        self.table = table.flatMap { index >= 0 && index < $0.slots ? $0 : nil }
        self.index = index
        self.poolBytesPerClient = poolBytesPerClient
        self.poolBytesTotal = poolBytesTotal
    }

    /// Reserves `bytes` of shared memory for a pool, or throws limitExceeded naming the limit. Adds first and
    /// then checks, so two workers reserving at once may both fail but never both exceed the total.
    func reservePool(_ bytes: UInt64) throws(TrackError) {
        guard let table else { return }
        let mine = table.add(index, .poolBytes, bytes)
        if mine > poolBytesPerClient {
            table.sub(index, .poolBytes, bytes)
            throw TrackError(.limitExceeded,
                             "a pool of \(bytes) bytes would exceed the shared memory limit per client (--pool-bytes-per-client \(poolBytesPerClient)); this connection already has \(mine - bytes) bytes in pools")
        }
        let total = table.totalPoolBytes
        if total > poolBytesTotal {
            table.sub(index, .poolBytes, bytes)
            throw TrackError(.limitExceeded,
                             "a pool of \(bytes) bytes would exceed the shared memory limit of all clients together (--pool-bytes-total \(poolBytesTotal)); \(total - bytes) bytes are in pools")
        }
    }

    func returnPool(_ bytes: UInt64) {
        table?.sub(index, .poolBytes, bytes)
    }

    /// The client now waits on something (a request in progress, an output pulling with a free slot).
    func beginBusy() {
        guard let table else { return }
        table.store(index, .progress, trackd_monotonic_ms())
        table.add(index, .busy, 1)
    }

    func endBusy() {
        guard let table else { return }
        table.sub(index, .busy, 1)
        table.store(index, .progress, trackd_monotonic_ms())
    }

    /// Something was produced for the client (a sample, a reply).
    func progress() {
        table?.store(index, .progress, trackd_monotonic_ms())
    }

    var isBusy: Bool { (table?.load(index, .busy) ?? 0) > 0 }

    /// The other workers that have something in progress for their clients now (a request, an output pulling):
    /// the decodes this one's would compete with for the CPUs.
    var othersBusy: Int {
        guard let table else { return 0 }
        return (0..<table.slots).filter { $0 != index && table.load($0, .armed) == 1 && table.load($0, .busy) > 0 }.count
    }

    /// CLOCK_MONOTONIC ms of the last progress or busy change, when there is a table.
    var lastProgressMs: UInt64? { table?.load(index, .progress) }

    /// The worker is about to read its connection; from now on the watchdog may judge it.
    func arm() { table?.store(index, .armed, 1) }

    func didRead() { table?.add(index, .reads, 1) }

    /// The connection's writes (MessageSocket's `sending`): word 8 is 1 while a frame is being written.
    func sending(_ active: Bool) { table?.store(index, .sending, active ? 1 : 0) }

    /// A sample was sent: `copied` bytes were copied into a pool, `shared` bytes went zero-copy.
    func countSample(copied: UInt64, shared: UInt64) {
        guard let table else { return }
        table.add(index, .samplesSent, 1)
        if copied > 0 { table.add(index, .bytesCopied, copied) }
        if shared > 0 { table.add(index, .bytesShared, shared) }
    }

    /// Bytes copied outside a sample (an image's PNG into its memfd).
    func countCopied(_ bytes: UInt64) { table?.add(index, .bytesCopied, bytes) }
}

/// One pool's reservation; returned when the pool is gone (the last reference to it is dropped).
final class PoolReservation: Sendable {
    let slot: WorkerSlot
    let bytes: UInt64

    init(slot: WorkerSlot, bytes: UInt64) throws(TrackError) {
        try slot.reservePool(bytes)
        self.slot = slot
        self.bytes = bytes
    }

    deinit { slot.returnPool(bytes) }
}
