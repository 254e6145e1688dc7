/// The worker's spare frame memories: which freed zero-copy memories are kept for the next memory of the same size,
/// and how many live memories may keep a copy of their descriptor so that they can be kept when freed.
///
/// A memfd touched once costs nothing more to write again, where a new one costs the kernel a fault and a zeroed
/// page per 4 KiB (docs/BENCHMARKS.md: 4–7 ms of a 720p ReadFrames of one frame). So GStreamer's memfd allocator
/// (CGstShim's MemfdPool.c, which only makes, maps, unmaps and closes) asks this policy, process-wide:
/// - `take(bytes:)` when it needs a memory: a kept one of exactly that size, or nil (it makes a new one);
/// - `keep(_:bytes:)` when a memory is freed: whether it is kept (at most `maxCount` memories and `maxBytes`
///   bytes), else the allocator unmaps and closes it;
/// - `acquireKeptDescriptor()` when a memory's descriptor first goes out: whether it may keep a copy of it (at most
///   `maxKeptDescriptors` at a time, so that live memories do not count against RLIMIT_NOFILE beyond that), and
///   `releaseKeptDescriptor()` when such a memory is freed.
///
/// `Memory` is what the allocator keeps (its descriptor and mapping); this type never looks inside it.
public struct SpareMemories<Memory> {
    public let maxCount: Int
    public let maxBytes: Int
    public let maxKeptDescriptors: Int

    private var spares: [(memory: Memory, bytes: Int)] = []
    /// Bytes of the kept memories.
    public private(set) var bytes = 0
    /// Live memories holding a copy of their descriptor.
    public private(set) var keptDescriptors = 0
    /// Memories made from a kept one, or announced again to a later output of a kept pipeline (`countReannounced`).
    public private(set) var reused: UInt64 = 0

    public init(maxCount: Int = 16, maxBytes: Int = 64 << 20, maxKeptDescriptors: Int = 64) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
        self.maxKeptDescriptors = maxKeptDescriptors
    }

    /// Kept memories.
    public var count: Int { spares.count }

    /// A kept memory of exactly `bytes` bytes, now the caller's; nil when there is none.
    public mutating func take(bytes size: Int) -> Memory? {
        guard let index = spares.firstIndex(where: { $0.bytes == size }) else { return nil }
        let spare = spares.remove(at: index)
        bytes -= spare.bytes
        reused += 1
        return spare.memory
    }

    /// Keeps a freed memory of `bytes` bytes when there is room; false: the caller releases it.
    public mutating func keep(_ memory: Memory, bytes size: Int) -> Bool {
        guard spares.count < maxCount, size <= maxBytes - bytes else { return false }
        spares.append((memory, size))
        bytes += size
        return true
    }

    /// Whether a memory whose descriptor goes out may keep a copy of it; pair a true answer with
    /// `releaseKeptDescriptor()` when that memory goes (or when the copy could not be made).
    public mutating func acquireKeptDescriptor() -> Bool {
        guard keptDescriptors < maxKeptDescriptors else { return false }
        keptDescriptors += 1
        return true
    }

    public mutating func releaseKeptDescriptor() {
        precondition(keptDescriptors > 0, "a kept descriptor released that was never acquired")
        keptDescriptors -= 1
    }

    /// A live memory was announced again to a later output of its kept pipeline: counted with those reused.
    public mutating func countReannounced() { reused += 1 }
}
