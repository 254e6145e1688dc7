import SamplePools
import Synchronization
import TestSupport
import Testing

/// Stands for a pool's reservation against the pool-byte limits: counts how many are still held.
final class Reservation: Sendable {
    let live: Counter
    init(_ live: Counter) {
        self.live = live
        live.value.withLock { $0 += 1 }
    }
    deinit { live.value.withLock { $0 -= 1 } }
}

final class Counter: Sendable {
    let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
}

/// A pool's resource (its mapping, its reservation) lives exactly as long as the pool is in the ledger.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ReservationTests {
    typealias Reserved = PoolLedger<Reservation, String>

    @Test func aRetiredPoolReturnsItsReservationWithItsLastSlot() {
        let live = Counter()
        var ledger = Reserved()
        let first = ledger.newPoolID()
        ledger.addCopyPool(id: first, slotSize: 4096, slotCount: 2, resource: Reservation(live))
        guard case .slot(let held, _, _) = ledger.takeCopySlot(bytes: 1) else { Issue.record("expected a slot"); return }
        _ = ledger.takeCopySlot(bytes: 8000)  // retires the first pool
        ledger.addCopyPool(id: ledger.newPoolID(), slotSize: 8192, slotCount: 2, resource: Reservation(live))
        #expect(live.count == 2, "the retired pool keeps its reservation while a slot is held")
        _ = ledger.release([held])
        #expect(live.count == 1)
    }

    @Test func finishingReturnsTheReservationsOfIdlePoolsAtOnceAndTheOthersWhenDrained() {
        let live = Counter()
        var ledger = Reserved()
        ledger.addCopyPool(id: ledger.newPoolID(), slotSize: 4096, slotCount: 2, resource: Reservation(live))
        let shared = ledger.addSharedPool(memoryID: 1, size: 4096, resource: Reservation(live), holding: "frame")
        #expect(live.count == 2)
        _ = ledger.finish()
        #expect(live.count == 1, "the copy pool nobody holds goes with OutputFinished")
        #expect(ledger.release([SlotID(pool: shared, slot: 0)]).drained)
        #expect(live.count == 0)
    }

    @Test func aFreedMemoryReturnsItsReservation() {
        let live = Counter()
        var ledger = Reserved()
        let shared = ledger.addSharedPool(memoryID: 5, size: 4096, resource: Reservation(live), holding: "frame")
        _ = ledger.release([SlotID(pool: shared, slot: 0)])
        #expect(live.count == 1, "a released shared pool stays while GStreamer keeps its memory")
        _ = ledger.memoriesFreed([5])
        #expect(live.count == 0)
    }

    @Test func aHostileReleaseChangesNothingItShouldNot() {
        let live = Counter()
        var ledger = Reserved()
        let pool = ledger.newPoolID()
        ledger.addCopyPool(id: pool, slotSize: 4096, slotCount: 2, resource: Reservation(live))
        for bad in [SlotID(pool: pool, slot: 0), SlotID(pool: pool, slot: 2), SlotID(pool: 0, slot: 0),
                    SlotID(pool: .max, slot: .max)] {
            #expect(ledger.release([bad]).notHeld == bad)
        }
        #expect(ledger.heldCount == 0 && ledger.poolCount == 1 && live.count == 1)
        guard case .slot(let slot, _, _) = ledger.takeCopySlot(bytes: 1) else { Issue.record("expected a slot"); return }
        #expect(slot == SlotID(pool: pool, slot: 0), "the free list was not corrupted by the bad releases")
    }
}
