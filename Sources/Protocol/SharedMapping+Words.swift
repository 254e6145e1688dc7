import CTrackSys
import SystemCalls

// SharedMapping's bounds-checked accessors, so that code using a mapping never holds its base pointer: the u64
// words of the supervisor's statistics and worker table (plain, or C11 atomics through CTrackSys), and copies in.
extension SharedMapping {
    /// How many whole u64 words the mapping holds.
    public var wordCount: Int { size / 8 }

    private func wordPointer(_ index: Int) -> UnsafeMutablePointer<UInt64> {
        precondition(index >= 0 && index < wordCount, "word \(index) of a \(size)-byte mapping")
        return unsafe (base + index * 8).assumingMemoryBound(to: UInt64.self)
    }

    /// u64 word `index` (byte offset 8 × index), read and written plainly: for words one process writes.
    public subscript(word index: Int) -> UInt64 {
        get { unsafe wordPointer(index).pointee }
        set { unsafe wordPointer(index).pointee = newValue }
    }

    /// Word `index` read with an atomic load.
    public func atomicLoad(word index: Int) -> UInt64 { unsafe trackd_atomic_load_u64(wordPointer(index)) }

    /// Word `index` written with an atomic store.
    public func atomicStore(word index: Int, _ value: UInt64) { unsafe trackd_atomic_store_u64(wordPointer(index), value) }

    /// Adds atomically to word `index`; returns the new value.
    @discardableResult
    public func atomicAdd(word index: Int, _ value: UInt64) -> UInt64 {
        unsafe trackd_atomic_add_u64(wordPointer(index), value)
    }

    /// Subtracts atomically from word `index`; returns the new value.
    @discardableResult
    public func atomicSubtract(word index: Int, _ value: UInt64) -> UInt64 {
        unsafe trackd_atomic_sub_u64(wordPointer(index), value)
    }

    /// Copies `bytes` into the mapping at byte `offset` (which, with the bytes, must lie inside it).
    public func copy(_ bytes: [UInt8], toOffset offset: Int) {
        precondition(offset >= 0 && bytes.count <= size - offset, "\(bytes.count) bytes at \(offset) of a \(size)-byte mapping")
        unsafe bytes.withUnsafeBytes { raw in
            guard let source = raw.baseAddress else { return }
            unsafe (base + offset).copyMemory(from: source, byteCount: raw.count)
        }
    }

    /// Maps all of the sealed memfd `fd` (see `verifySealed`) when it is a regular file of at least `minimumSize`
    /// bytes; nil otherwise, or when it cannot be mapped.
    public static func mapSealed(fd: Int32, minimumSize: Int, writable: Bool) -> SharedMapping? {
        var regular: Int32 = 0
        var size: UInt64 = 0
        guard unsafe trackd_fd_is_regular(fd, &regular, &size) == 0, regular != 0, size >= UInt64(minimumSize),
              size <= UInt64(Int.max), verifySealed(fd: fd, size: Int(size))
        else { return nil }
        return try? SharedMapping(fd: fd, size: Int(size), writable: writable)
    }
}
