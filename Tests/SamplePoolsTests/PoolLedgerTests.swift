import SamplePools
import TestSupport
import Testing

/// A resource that counts how many of its kind are alive: dropping a pool must drop it.
final class Token: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

typealias Ledger = PoolLedger<Token, String>

extension Ledger {
    /// Takes a copy slot, which must be there.
    mutating func slot(_ bytes: Int) throws -> SlotID {
        guard case .slot(let id, _, _) = takeCopySlot(bytes: bytes) else {
            throw LedgerTestError(message: "no slot for \(bytes) bytes")
        }
        return id
    }

    /// Adds a copy pool of `count` slots of `size` bytes; returns its id.
    @discardableResult
    mutating func addPool(size: Int, count: Int) -> UInt32 {
        let id = newPoolID()
        addCopyPool(id: id, slotSize: size, slotCount: count, resource: Token("pool \(id)"))
        return id
    }
}

struct LedgerTestError: Error { let message: String }

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct PoolLedgerTests {
    @Test func anEmptyLedgerAsksForAPool() {
        var ledger = Ledger()
        guard case .needPool(removed: nil) = ledger.takeCopySlot(bytes: 100) else { Issue.record("expected needPool"); return }
        #expect(ledger.poolCount == 0)
    }

    @Test func slotsAreHandedOutInOrderUntilAllAreHeld() throws {
        var ledger = Ledger()
        let pool = ledger.addPool(size: 4096, count: 3)
        let slots = try (0..<3).map { _ in try ledger.slot(4096) }
        #expect(slots == [0, 1, 2].map { SlotID(pool: pool, slot: $0) })
        #expect(ledger.heldCount == 3)
        // Back-pressure: every slot is held.
        guard case .full = ledger.takeCopySlot(bytes: 10) else { Issue.record("expected full"); return }
        guard case .full = ledger.takeCopySlot(bytes: 4096) else { Issue.record("expected full again"); return }
    }

    @Test func aReleasedSlotIsTheNextOneHandedOut() throws {
        var ledger = Ledger()
        let pool = ledger.addPool(size: 4096, count: 2)
        _ = try ledger.slot(1)
        let second = try ledger.slot(1)
        let released = ledger.release([second])
        #expect(released.notHeld == nil && released.removed.isEmpty && !released.drained)
        #expect(!ledger.isHeld(second))
        #expect(try ledger.slot(1) == SlotID(pool: pool, slot: 1))
    }

    @Test func theSlotHandedOutCarriesItsPoolsResourceAndSize() {
        var ledger = Ledger()
        let pool = ledger.addPool(size: 8192, count: 2)
        guard case .slot(let id, let size, let resource) = ledger.takeCopySlot(bytes: 8000) else {
            Issue.record("expected a slot")
            return
        }
        #expect(id.pool == pool && size == 8192 && resource.name == "pool \(pool)")
        #expect(ledger.resource(of: pool) === resource)
    }

    @Test func releasingASlotNotHeldIsAViolationAndStopsThere() throws {
        var ledger = Ledger()
        let pool = ledger.addPool(size: 4096, count: 4)
        let a = try ledger.slot(1), b = try ledger.slot(1)
        // Never handed out, unknown pool, then a duplicate in one batch.
        #expect(ledger.release([SlotID(pool: pool, slot: 3)]).notHeld == SlotID(pool: pool, slot: 3))
        #expect(ledger.release([SlotID(pool: 99, slot: 0)]).notHeld == SlotID(pool: 99, slot: 0))
        let duplicate = ledger.release([a, a, b])
        #expect(duplicate.notHeld == a)
        #expect(!ledger.isHeld(a), "the slots before the violation are released")
        #expect(ledger.isHeld(b), "the slots after it are not")
        // Releasing again what was released.
        #expect(ledger.release([a]).notHeld == a)
    }

    @Test func aLargerSampleRetiresTheCurrentPoolWhichGoesWithItsLastSlot() throws {
        var ledger = Ledger()
        let small = ledger.addPool(size: 4096, count: 2)
        let held = try ledger.slot(100)
        guard case .needPool(removed: nil) = ledger.takeCopySlot(bytes: 5000) else { Issue.record("expected needPool"); return }
        let large = ledger.addPool(size: 8192, count: 2)
        #expect(try ledger.slot(5000).pool == large)
        #expect(ledger.contains(pool: small), "a retired pool stays while the client holds a slot of it")
        let released = ledger.release([held])
        #expect(released.removed == [small])
        #expect(!ledger.contains(pool: small))
        #expect(ledger.resource(of: small) == nil)
    }

    @Test func aRetiredPoolNobodyHoldsGoesAtOnce() throws {
        var ledger = Ledger()
        let small = ledger.addPool(size: 4096, count: 2)
        let slot = try ledger.slot(1)
        _ = ledger.release([slot])
        guard case .needPool(removed: let removed) = ledger.takeCopySlot(bytes: 5000) else { Issue.record("expected needPool"); return }
        #expect(removed == small)
        #expect(!ledger.contains(pool: small))
    }

    @Test func poolIDsAreNeverReused() {
        var ledger = Ledger()
        let ids = (0..<5).map { _ in ledger.newPoolID() }
        #expect(ids == [1, 2, 3, 4, 5])
        let shared = ledger.addSharedPool(memoryID: 7, size: 1, resource: Token("m"), holding: "s")
        #expect(shared == 6)
    }

    @Test func cancelledLedgerHandsOutNothing() {
        var ledger = Ledger()
        ledger.addPool(size: 4096, count: 2)
        ledger.cancel()
        #expect(ledger.cancelled)
        guard case .cancelled = ledger.takeCopySlot(bytes: 1) else { Issue.record("expected cancelled"); return }
    }
}
