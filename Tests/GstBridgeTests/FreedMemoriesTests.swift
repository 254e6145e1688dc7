import CGStreamer
@testable import GstBridge
import TestSupport
import Testing

/// The memfd allocator pushes each memory it frees, once, into its FreedMemories (no query into C), before the
/// memfd can be kept as a spare; an output's PoolLedger forgets what it takes from there.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct FreedMemoriesTests {
    init() throws { try Gst.initialize() }

    @Test func eachFreedMemoryIsPushedOnceAndTakenOnce() throws {
        let shared = SharedAllocator(maxLive: 4)
        let memories = (0..<3).map { _ in gst_allocator_alloc(shared.allocator.pointer, 8192, nil) }
        #expect(memories.allSatisfy { $0 != nil })
        #expect(shared.freed.take().isEmpty, "nothing was freed")
        gst_memory_unref(memories[0])
        gst_memory_unref(memories[1])
        let first = shared.freed.take()
        #expect(first.count == 2 && Set(first).count == 2)
        #expect(shared.freed.take().isEmpty, "taken once")
        gst_memory_unref(memories[2])
        let second = shared.freed.take()
        #expect(second.count == 1 && !first.contains(second[0]), "ids are never reused")
    }

    @Test func memoriesFreedAfterTheAllocatorsOwnerIsGoneStillReachTheInbox() throws {
        var shared: SharedAllocator? = SharedAllocator(maxLive: 4)
        let freed = shared!.freed
        let memory = gst_allocator_alloc(shared!.allocator.pointer, 4096, nil)
        shared = nil  // the memory keeps the allocator, and the allocator its inbox
        gst_memory_unref(memory)
        #expect(freed.take().count == 1)
    }
}
