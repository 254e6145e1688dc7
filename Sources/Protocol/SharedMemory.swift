import CTrackSys
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A mapping of a sealed memfd pool. The worker maps it read-write and fills slots; the client maps it read-only.
@safe public final class SharedMapping: @unchecked Sendable {
    // @unchecked: the pointer is immutable after init; the bytes behind it are shared memory whose slots are
    // handed between processes by the protocol (a slot is written only while the worker owns it).
    public let base: UnsafeMutableRawPointer
    public let size: Int

    /// Creates a new sealed pool of `size` bytes (worker side). Returns the mapping and the fd, which the caller
    /// owns (as a raw descriptor: it goes into a message's descriptor list).
    public static func create(name: String, size: Int) throws(SystemError) -> (SharedMapping, Int32) {
        let fd = try FileDescriptor.sealedMemfd(name: name, size: size)
        let mapping = try SharedMapping(fd: fd.rawValue, size: size, writable: true)
        return (mapping, fd.take())
    }

    /// Maps `size` bytes of `fd`. A client checks the seals first (see `verifySealed`) so that the pool cannot
    /// shrink under it and fault.
    public init(fd: Int32, size: Int, writable: Bool) throws(SystemError) {
        let prot = writable ? (PROT_READ | PROT_WRITE) : PROT_READ
        let p = unsafe mmap(nil, size, prot, MAP_SHARED, fd, 0)
        guard let p = unsafe p, unsafe p != MAP_FAILED else { throw SystemError("mmap", errno: currentErrno()) }
        unsafe base = p
        self.size = size
    }

    deinit { unsafe munmap(base, size) }

    /// A copy of `count` bytes from `offset` (which must lie inside the mapping).
    public func bytes(at offset: Int, count: Int) -> [UInt8] {
        precondition(offset >= 0 && count >= 0 && offset <= size - count, "bytes \(offset)..<\(offset + count) of a \(size)-byte mapping")
        return unsafe [UInt8](UnsafeRawBufferPointer(start: base + offset, count: count))
    }

    /// True when `fd` carries all of F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL and is at least `size` bytes long.
    public static func verifySealed(fd: Int32, size: Int) -> Bool {
        let seals = trackd_memfd_get_seals(fd)
        let required = trackd_required_seals()
        var regular: Int32 = 0
        var actual: UInt64 = 0
        guard seals >= 0, seals & required == required,
              unsafe trackd_fd_is_regular(fd, &regular, &actual) == 0, regular != 0, actual >= UInt64(size)
        else { return false }
        return true
    }
}
