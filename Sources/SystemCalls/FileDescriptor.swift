import CTrackSys
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor and the duty to close it: exactly one owner at a time (it cannot be copied), closed
/// when the owner ends (deinit; a close error then goes to `CloseFailures`), by `close()` (which throws it), or
/// handed on as a raw descriptor by `take()` (to a C call or a process that takes ownership). Reading and writing
/// borrow it. Closing a descriptor that is not open (EBADF) stops the process: see `closeDescriptor`.
public struct FileDescriptor: ~Copyable, Sendable {
    private let raw: Int32

    /// Becomes the owner of `raw` (which must be open).
    public init(taking raw: Int32) {
        precondition(raw >= 0, "FileDescriptor(taking: \(raw))")
        self.raw = raw
    }

    /// The owner of what a call that returns a new descriptor (or -1 with errno) returned.
    public init(_ call: @autoclosure () -> String, _ body: () -> Int32) throws(SystemError) {
        self.init(taking: try syscall(call(), body))
    }

    deinit { closeDescriptorReporting(raw) }

    /// The descriptor's number, for a call that borrows it. The descriptor stays owned here.
    public var rawValue: Int32 { raw }

    /// Closes now. EINTR is not retried (Linux has closed the descriptor either way); any other error is thrown,
    /// the descriptor being released all the same.
    public consuming func close() throws(SystemError) {
        let fd = raw
        discard self
        try closeDescriptor(fd)
    }

    /// Gives up ownership without closing: the caller owns the returned descriptor.
    public consuming func take() -> Int32 {
        let fd = raw
        discard self
        return fd
    }

    /// A new memfd of `size` bytes, sealed against shrinking, growing and further seals (close-on-exec).
    public static func sealedMemfd(name: String, size: Int) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("memfd_create") { unsafe trackd_memfd_sealed(name, UInt64(size)) }
    }

    /// A new empty memfd that may still be written and sealed (close-on-exec): filled with `writeFully`, then
    /// sealed with `sealContents()`.
    public static func unsealedMemfd(name: String) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("memfd_create") { unsafe trackd_memfd_unsealed(name) }
    }

    /// Seals a filled memfd against any change (shrinking, growing, writing, further seals).
    public func sealContents() throws(SystemError) {
        _ = try syscall("seal") { trackd_memfd_seal_contents(raw) }
    }

    /// Makes `target` refer to this open file (dup3, which a sandboxed worker may call), then closes this number.
    public consuming func move(onto target: borrowing FileDescriptor) throws(SystemError) {
        _ = try syscall("dup3") { trackd_move_fd(rawValue, target.rawValue) }
        try close()
    }

    /// A new close-on-exec descriptor for the same open file, numbered at least `minimum`.
    public func duplicate(atLeast minimum: Int32 = 0) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("fcntl F_DUPFD_CLOEXEC") { fcntl(raw, F_DUPFD_CLOEXEC, minimum) }
    }
}

extension FileDescriptor {
    /// Writes all of `bytes` (short writes continue, EINTR is retried). Throws on any error, or when the file
    /// takes no more (a write of 0 bytes).
    public func writeFully(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = try syscall("write") { unsafe Glibc.write(raw, bytes.baseAddress! + done, bytes.count - done) }
            guard n > 0 else { throw SystemError("write", errno: EIO) }
            done += n
        }
    }

    /// `writeFully` at file offset `offset` (pwrite: the descriptor's own offset is untouched).
    public func pwriteFully(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = try syscall("pwrite") {
                unsafe Glibc.pwrite(raw, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            guard n > 0 else { throw SystemError("pwrite", errno: EIO) }
            done += n
        }
    }

    /// Reads until `buffer` is full or the file ends (short reads continue, EINTR is retried). Returns the bytes
    /// read: fewer than `buffer.count` only at end of file.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try syscall("read") { unsafe Glibc.read(raw, buffer.baseAddress! + done, buffer.count - done) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// `readFully` from file offset `offset` (pread: the descriptor's own offset is untouched). A file that shrinks
    /// meanwhile gives a short count, never a SIGBUS.
    public func preadFully(into buffer: UnsafeMutableRawBufferPointer, at offset: Int = 0) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try syscall("pread") {
                unsafe Glibc.pread(raw, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// What fstat says about the file.
    public func status() throws(SystemError) -> stat {
        var st = stat()
        _ = try syscall("fstat") { unsafe fstat(raw, &st) }
        return st
    }

    /// Is it a regular file, and its size (fstat).
    public func regularFileSize() throws(SystemError) -> UInt64? {
        var regular: Int32 = 0
        var size: UInt64 = 0
        _ = try syscall("fstat") { unsafe trackd_fd_is_regular(raw, &regular, &size) }
        return regular != 0 ? size : nil
    }
}

extension Array where Element == UInt8 {
    /// `count` bytes read with `preadFully` from offset `offset`; fewer at end of file.
    public init(preading fd: borrowing FileDescriptor, count: Int, at offset: Int = 0) throws(SystemError) {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try unsafe bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemError) in try unsafe fd.preadFully(into: buffer, at: offset) }
        }.get()
        self = got == count ? bytes : Array(bytes.prefix(got))
    }
}

/// A FileDescriptor with shared ownership, for where a value that cannot be copied cannot go (a Dictionary's
/// values, records copied between tables): closed when the last reference goes.
public final class SharedDescriptor: Sendable {
    /// Borrow it for a call (`shared.descriptor.send(…)`); it stays this object's.
    public let descriptor: FileDescriptor

    public init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }

    /// The descriptor's number, for a call that borrows it.
    public var rawValue: Int32 { descriptor.rawValue }
}

/// Moves a FileDescriptor into an escaping closure (a thread's body), which takes it out once and so owns it for
/// exactly as long as it runs.
public final class DescriptorHandoff: Sendable {
    private let descriptor: Mutex<FileDescriptor?>

    public init(_ descriptor: consuming FileDescriptor) { self.descriptor = Mutex(descriptor) }

    /// The descriptor, the first time; nil after.
    public func take() -> FileDescriptor? { descriptor.withLock { $0.take() } }
}
