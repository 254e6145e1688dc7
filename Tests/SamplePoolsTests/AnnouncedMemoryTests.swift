import SamplePools
import TestSupport
import Testing

/// The ledger is the one record of which GStreamer memories an output was told about (PoolAdded with the memory's
/// descriptor) and which it must forget (the allocator freed them).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct AnnouncedMemoryTests {
    /// Announces memory `id` through the ledger as OutputStreamer does: unknown first, then its pool added.
    static func announce(_ ledger: inout Ledger, _ id: UInt32, sample: String) -> UInt32? {
        guard case .unknown = ledger.holdShared(memoryID: id, sample: sample) else { return nil }
        return ledger.addSharedPool(memoryID: id, size: 4096, resource: Token("m\(id)"), holding: sample)
    }

    @Test func aMemoryIsAnnouncedOnceWhateverItCarriesNext() throws {
        var ledger = Ledger()
        let pool = try #require(Self.announce(&ledger, 7, sample: "a"))
        for next in ["b", "c", "d"] {
            _ = ledger.release([SlotID(pool: pool, slot: 0)])
            guard case .held(let again) = ledger.holdShared(memoryID: 7, sample: next) else {
                Issue.record("memory 7 was announced: its pool is held again, not announced twice")
                return
            }
            #expect(again == pool)
        }
        #expect(ledger.poolCount == 1)
    }

    @Test func aFreedMemoryIsForgottenOnce() throws {
        var ledger = Ledger()
        let pool = try #require(Self.announce(&ledger, 7, sample: "a"))
        _ = ledger.release([SlotID(pool: pool, slot: 0)])
        #expect(ledger.memoriesFreed([7]) == [pool])
        #expect(ledger.memoriesFreed([7]).isEmpty, "a second notice of the same memory removes nothing")
        #expect(ledger.poolCount == 0)
        guard case .unknown = ledger.holdShared(memoryID: 7, sample: "b") else {
            Issue.record("a freed memory is forgotten")
            return
        }
    }

    @Test func aFreedMemoryIdSeenAgainIsAnnouncedAsANewPool() throws {
        var ledger = Ledger()
        let first = try #require(Self.announce(&ledger, 7, sample: "a"))
        _ = ledger.release([SlotID(pool: first, slot: 0)])
        _ = ledger.memoriesFreed([7])
        let second = try #require(Self.announce(&ledger, 7, sample: "b"), "announced afresh")
        #expect(second != first, "a new pool: the client may still have the old one mapped")
        #expect(ledger.isHeld(SlotID(pool: second, slot: 0)) && !ledger.contains(pool: first))
    }

    @Test func aRefusedMemoryIsCopiedUntilFreed() throws {
        var ledger = Ledger()
        guard case .unknown = ledger.holdShared(memoryID: 3, sample: "a") else { Issue.record("expected unknown"); return }
        ledger.refuseShared(memoryID: 3)
        for sample in ["b", "c"] {
            guard case .refused = ledger.holdShared(memoryID: 3, sample: sample) else {
                Issue.record("a refused memory is not asked about again")
                return
            }
        }
        #expect(ledger.sharedHeld == 0 && ledger.poolCount == 0)
        #expect(ledger.memoriesFreed([3]).isEmpty, "no pool to remove: it was never announced")
        #expect(try #require(Self.announce(&ledger, 3, sample: "d")) > 0, "forgotten once freed")
    }

    @Test func refusingAnAnnouncedMemoryChangesNothing() throws {
        var ledger = Ledger()
        let pool = try #require(Self.announce(&ledger, 3, sample: "a"))
        ledger.refuseShared(memoryID: 3)
        _ = ledger.release([SlotID(pool: pool, slot: 0)])
        guard case .held(pool) = ledger.holdShared(memoryID: 3, sample: "b") else { Issue.record("expected held"); return }
    }

    @Test func eachOutputKeepsItsOwnRecordOfAMemory() throws {
        // A pipeline kept for the next ReadFrames: its live memories are new to the next output's ledger.
        var earlier = Ledger(), later = Ledger()
        let old = try #require(Self.announce(&earlier, 5, sample: "a"))
        _ = earlier.release([SlotID(pool: old, slot: 0)])
        _ = earlier.finish()
        #expect(earlier.poolCount == 0, "finished: the pool nobody holds is gone")
        let new = try #require(Self.announce(&later, 5, sample: "b"), "the later output is told again")
        _ = later.release([SlotID(pool: new, slot: 0)])
        #expect(later.memoriesFreed([5, 6]) == [new], "a notice for a memory the output never saw is ignored")
    }

    @Test func memoryIDsAreOpaque() throws {
        var ledger = Ledger()
        let low = try #require(Self.announce(&ledger, 0, sample: "a"))
        let high = try #require(Self.announce(&ledger, .max, sample: "b"))
        #expect(low != high)
        _ = ledger.release([SlotID(pool: low, slot: 0), SlotID(pool: high, slot: 0)])
        #expect(ledger.memoriesFreed([.max]) == [high])
        guard case .held(low) = ledger.holdShared(memoryID: 0, sample: "c") else { Issue.record("expected held"); return }
    }
}
