import CGStreamer
import CGstShim
import SamplePools
import Synchronization

/// The process's spare frame memories: SamplePools' `SpareMemories` policy, installed for the memfd allocators
/// (MemfdPool.c asks it through swift_gst_memfd_spares_install's table and does only the system calls: memfd_create,
/// mmap, munmap, close). A memory is freed only after every buffer in it came back — after the client released its
/// slot (PROTOCOL.md §12.2) — and the worker is its client's alone, so nothing still refers to what a kept memory
/// held.
enum FrameMemorySpares {
    /// A kept memory: its memfd and read-write mapping (the address as a number: it is only handed back to C).
    struct Memory: Sendable {
        var fd: Int32
        var base: UInt
    }

    static let policy = Mutex(SpareMemories<Memory>())

    /// Installs the policy for every allocator (once; `SharedAllocator` does it before making one).
    static let installed: Void = {
        var table = SwiftGstMemfdSparePolicy(
            take: { size, fd, base in
                guard let memory = FrameMemorySpares.policy.withLock({ $0.take(bytes: Int(size)) }) else { return 0 }
                unsafe fd?.pointee = memory.fd
                unsafe base?.pointee = UnsafeMutablePointer(bitPattern: memory.base)
                return 1
            },
            keep: { fd, base, size in
                let memory = Memory(fd: fd, base: UInt(bitPattern: base))
                return FrameMemorySpares.policy.withLock { $0.keep(memory, bytes: Int(size)) } ? 1 : 0
            },
            acquire_kept_fd: { FrameMemorySpares.policy.withLock { $0.acquireKeptDescriptor() } ? 1 : 0 },
            release_kept_fd: { FrameMemorySpares.policy.withLock { $0.releaseKeptDescriptor() } },
            count_reannounced: { FrameMemorySpares.policy.withLock { $0.countReannounced() } })
        unsafe swift_gst_memfd_spares_install(&table)
    }()

    /// How many memories so far were made from a kept one, or announced again to a later output of a kept pipeline.
    static var reused: UInt64 { policy.withLock { $0.reused } }
}
