import SamplePools
import TestSupport
import Testing

/// Zero-copy pools: one GStreamer memory, one slot, the sample kept while the client holds it.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SharedPoolTests {
    @Test func anUnknownMemoryIsAnnouncedWithItsSlotHeld() {
        var ledger = Ledger()
        guard case .unknown = ledger.holdShared(memoryID: 1, sample: "a") else { Issue.record("expected unknown"); return }
        let pool = ledger.addSharedPool(memoryID: 1, size: 8192, resource: Token("m1"), holding: "a")
        #expect(ledger.isHeld(SlotID(pool: pool, slot: 0)))
        #expect(ledger.sharedHeld == 1)
    }

    @Test func releaseHandsTheSampleBackAndTheMemoryIsReused() {
        var ledger = Ledger()
        let pool = ledger.addSharedPool(memoryID: 1, size: 8192, resource: Token("m1"), holding: "a")
        let released = ledger.release([SlotID(pool: pool, slot: 0)])
        #expect(released.samples == ["a"] && released.removed.isEmpty && released.notHeld == nil)
        #expect(ledger.sharedHeld == 0)
        #expect(ledger.contains(pool: pool), "a shared pool lives as long as its memory")
        guard case .held(let again) = ledger.holdShared(memoryID: 1, sample: "b") else { Issue.record("expected held"); return }
        #expect(again == pool)
        #expect(ledger.release([SlotID(pool: pool, slot: 0)]).samples == ["b"])
    }

    @Test func aMemoryWhoseSlotIsHeldCannotBeHeldTwice() {
        var ledger = Ledger()
        _ = ledger.addSharedPool(memoryID: 1, size: 8192, resource: Token("m1"), holding: "a")
        guard case .busy = ledger.holdShared(memoryID: 1, sample: "b") else { Issue.record("expected busy"); return }
        #expect(ledger.sharedHeld == 1)
    }

    @Test func sharedAndCopySlotsAreCountedApart() throws {
        var ledger = Ledger()
        ledger.addPool(size: 4096, count: 2)
        _ = try ledger.slot(1)
        _ = ledger.addSharedPool(memoryID: 1, size: 8192, resource: Token("m1"), holding: "a")
        _ = ledger.addSharedPool(memoryID: 2, size: 8192, resource: Token("m2"), holding: "b")
        #expect(ledger.sharedHeld == 2)
        #expect(ledger.heldCount == 3)
    }

    @Test func freedMemoriesRemoveTheirPools() {
        var ledger = Ledger()
        let a = ledger.addSharedPool(memoryID: 10, size: 1, resource: Token("a"), holding: "a")
        let b = ledger.addSharedPool(memoryID: 11, size: 1, resource: Token("b"), holding: "b")
        _ = ledger.release([SlotID(pool: a, slot: 0), SlotID(pool: b, slot: 0)])
        #expect(ledger.memoriesFreed([11, 99]) == [b], "an unknown memory is ignored")
        #expect(!ledger.contains(pool: b) && ledger.contains(pool: a))
        guard case .unknown = ledger.holdShared(memoryID: 11, sample: "c") else { Issue.record("expected unknown"); return }
        #expect(ledger.release([SlotID(pool: b, slot: 0)]).notHeld == SlotID(pool: b, slot: 0))
    }

    @Test func aSharedSlotIsOnlySlotZero() {
        var ledger = Ledger()
        let pool = ledger.addSharedPool(memoryID: 1, size: 1, resource: Token("m"), holding: "a")
        #expect(ledger.release([SlotID(pool: pool, slot: 1)]).notHeld == SlotID(pool: pool, slot: 1))
        #expect(ledger.sharedHeld == 1)
    }
}

/// The end of an output: OutputFinished, then the pools go as their last slots come back.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FinishTests {
    @Test func finishingDropsWhatNobodyHoldsAndDrainsWithTheLastRelease() throws {
        var ledger = Ledger()
        let copy = ledger.addPool(size: 4096, count: 2)
        let slot = try ledger.slot(1)
        let idle = ledger.addSharedPool(memoryID: 1, size: 1, resource: Token("idle"), holding: "idle")
        _ = ledger.release([SlotID(pool: idle, slot: 0)])
        let held = ledger.addSharedPool(memoryID: 2, size: 1, resource: Token("held"), holding: "held")
        let (first, drained) = ledger.finish()
        #expect(first && !drained)
        #expect(!ledger.contains(pool: idle))
        #expect(ledger.finish() == (false, false), "finishing twice does nothing")
        let one = ledger.release([slot])
        #expect(one.removed.isEmpty, "no PoolRemoved after OutputFinished")
        #expect(!ledger.contains(pool: copy) && !one.drained)
        let two = ledger.release([SlotID(pool: held, slot: 0)])
        #expect(two.samples == ["held"] && two.drained && ledger.poolCount == 0)
    }

    @Test func finishingWithNothingHeldDrainsAtOnce() throws {
        var ledger = Ledger()
        ledger.addPool(size: 4096, count: 2)
        #expect(ledger.finish() == (true, true))
        #expect(ledger.poolCount == 0)
    }

    @Test func freedMemoriesAreNotAnnouncedAfterTheEnd() {
        var ledger = Ledger()
        let pool = ledger.addSharedPool(memoryID: 1, size: 1, resource: Token("m"), holding: "a")
        _ = ledger.finish()
        #expect(ledger.contains(pool: pool))
        #expect(ledger.memoriesFreed([1]).isEmpty)
    }
}
