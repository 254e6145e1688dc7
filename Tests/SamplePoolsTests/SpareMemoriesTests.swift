import SamplePools
import TestSupport
import Testing

/// The worker's spare frame memories (MemfdPool.c asks this policy): only an exact size is reused, the count and
/// byte limits bound what is kept, and kept descriptors are counted against their own limit.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SpareMemoriesTests {
    @Test func onlyAMemoryOfExactlyTheSizeIsTaken() {
        var spares = SpareMemories<String>()
        #expect(spares.take(bytes: 4096) == nil)
        #expect(spares.keep("a", bytes: 8192) == true)
        #expect(spares.keep("b", bytes: 4096) == true)
        #expect(spares.take(bytes: 12288) == nil)
        #expect(spares.take(bytes: 4096) == "b")
        #expect(spares.take(bytes: 4096) == nil)  // taken once
        #expect(spares.count == 1 && spares.bytes == 8192 && spares.reused == 1)
        #expect(spares.take(bytes: 8192) == "a")
        #expect(spares.count == 0 && spares.bytes == 0 && spares.reused == 2)
    }

    @Test func ofTwoOfTheSameSizeTheOlderIsTakenFirst() {
        var spares = SpareMemories<Int>()
        for m in 1...3 { #expect(spares.keep(m, bytes: 4096) == true) }
        let taken = [spares.take(bytes: 4096), spares.take(bytes: 4096), spares.take(bytes: 4096)]
        #expect(taken == [1, 2, 3])
    }

    @Test func atMostMaxCountMemoriesAreKept() {
        var spares = SpareMemories<Int>(maxCount: 3, maxBytes: 1 << 30)
        var kept: [Bool] = []
        for m in 0..<5 { kept.append(spares.keep(m, bytes: 4096)) }
        #expect(kept == [true, true, true, false, false])
        #expect(spares.count == 3)
        _ = spares.take(bytes: 4096)
        #expect(spares.keep(9, bytes: 4096) == true)  // room again
    }

    @Test func atMostMaxBytesAreKept() {
        var small = SpareMemories<Int>(maxCount: 16, maxBytes: 100)
        #expect(small.keep(0, bytes: 101) == false)  // larger than the whole budget
        var spares = SpareMemories<Int>(maxCount: 16, maxBytes: 10_000)
        #expect(spares.keep(1, bytes: 6000) == true)
        #expect(spares.keep(2, bytes: 4001) == false)  // 10,001 bytes
        #expect(spares.keep(3, bytes: 4000) == true)  // exactly 10,000
        #expect(spares.keep(4, bytes: 1) == false)
        #expect(spares.bytes == 10_000)
    }

    @Test func keptDescriptorsAreBoundedAndReleased() {
        var spares = SpareMemories<Int>(maxKeptDescriptors: 2)
        let granted = [spares.acquireKeptDescriptor(), spares.acquireKeptDescriptor(), spares.acquireKeptDescriptor()]
        #expect(granted == [true, true, false])
        #expect(spares.keptDescriptors == 2)
        spares.releaseKeptDescriptor()
        #expect(spares.acquireKeptDescriptor() == true)
        #expect(spares.keptDescriptors == 2)
    }

    @Test func theDefaultsAreTheWorkersLimits() {
        let spares = SpareMemories<Int>()
        #expect(spares.maxCount == 16 && spares.maxBytes == 64 << 20 && spares.maxKeptDescriptors == 64)
    }

    @Test func aReannouncedMemoryCountsAsReused() {
        var spares = SpareMemories<Int>()
        spares.countReannounced()
        #expect(spares.reused == 1 && spares.count == 0)
    }
}
