import CGStreamer
import CGstShim
import Synchronization
import SystemCalls

/// The ids of the memfd memories an allocator freed and no output has heard of yet. MemfdPool.c pushes each one
/// from the thread that frees the memory (`swift_gst_memfd_allocator_new`'s `freed`); the output reading the
/// pipeline takes them before it places a sample, and its PoolLedger forgets their pools. Taking costs one atomic
/// load when nothing was freed (nearly every frame: memories are freed at a renegotiation and at the pipeline's end).
final class FreedMemories: Sendable {
    private let ids = Mutex<[UInt32]>([])
    /// Whether `ids` is non-empty; written under the mutex, read without it.
    private let pending = Atomic(false)

    func push(_ id: UInt32) {
        ids.withLock {
            $0.append(id)
            pending.store(true, ordering: .releasing)
        }
    }

    /// The ids pushed since the last call, oldest first.
    func take() -> [UInt32] {
        guard pending.load(ordering: .acquiring) else { return [] }
        return ids.withLock { ids in
            pending.store(false, ordering: .relaxed)
            let taken = ids
            ids.removeAll(keepingCapacity: true)
            return taken
        }
    }
}

/// Owns one ref on a memfd allocator (swift_gst_memfd_allocator_new). It makes, seals, maps and frees the memories
/// and says which were freed (`freed`); which output was told about which memory is that output's PoolLedger.
final class SharedAllocator: @unchecked Sendable {
    // @unchecked: the allocator's state is behind its own mutex.
    /// Not private: tests allocate through it.
    let allocator: GstRef<GstAllocatorObject>
    /// Freed memories, pushed by the allocator (which holds a reference on this until it is finalized).
    let freed = FreedMemories()

    init(maxLive: guint) {
        FrameMemorySpares.installed
        let context = unsafe Unmanaged.passRetained(freed).toOpaque()
        allocator = unsafe GstRef(full: swift_gst_memfd_allocator_new(
            maxLive, { context, id in unsafe Unmanaged<FreedMemories>.fromOpaque(context!).takeUnretainedValue().push(id) },
            context, { context in unsafe Unmanaged<FreedMemories>.fromOpaque(context!).release() })!)
    }

    /// Offers appsink (`sink`) a buffer pool over this allocator's memfds (swift_gst_appsink_offer_memfd_pool).
    func offer(to sink: GstRef<GstElementObject>, minBuffers: guint) {
        unsafe swift_gst_appsink_offer_memfd_pool(sink.pointer, allocator.pointer, minBuffers)
    }

    /// Sizes its memfds for NV12 made in place (swift_gst_memfd_allocator_reserve_nv12).
    func reserveNV12() { unsafe swift_gst_memfd_allocator_reserve_nv12(allocator.pointer) }

    /// Rewrites the sample's I420 frame as NV12 in its own memfd (swift_gst_memfd_make_nv12): the chroma plane's
    /// offset and stride, or nil when the frame is not in one of this allocator's memfds.
    func makeNV12(_ sample: GstRef<GstSampleObject>, layout: inout SwiftGstVideoLayout,
                  conversion: SwiftGstRangeConversion) -> (uvOffset: UInt64, uvStride: UInt32)? {
        var uvOffset: UInt64 = 0, uvStride: UInt32 = 0
        guard unsafe swift_gst_memfd_make_nv12(allocator.pointer, sample.buffer, &layout, conversion, &uvOffset,
                                               &uvStride) != 0 else { return nil }
        return (uvOffset, uvStride)
    }

    /// The memfd memory holding the sample's frame (swift_gst_memfd_describe), or nil when the frame is not one of
    /// this allocator's memories.
    func describe(_ sample: GstRef<GstSampleObject>) -> SharedMemory? {
        var slot = SwiftGstMemfdSlot()
        guard unsafe swift_gst_memfd_describe(allocator.pointer, sample.buffer, &slot) != 0 else { return nil }
        return SharedMemory(id: slot.id, mapSize: Int(slot.map_size))
    }

    /// A descriptor of the memfd holding the sample's frame, to send in PoolAdded (swift_gst_memfd_descriptor); nil
    /// when the allocator has none left for it (it went to an earlier output for good).
    func descriptor(_ sample: GstRef<GstSampleObject>) -> FileDescriptor? {
        let fd = unsafe swift_gst_memfd_descriptor(allocator.pointer, sample.buffer)
        return fd >= 0 ? FileDescriptor(taking: fd) : nil
    }
}
