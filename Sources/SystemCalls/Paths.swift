// Calls that name a file by path: the Swift string becomes a C string here, the one place those calls take a
// pointer.
#if canImport(Glibc)
import Glibc
#endif

public enum PathCall {
    /// unlink(path); false when it failed (errno set).
    @discardableResult
    public static func unlink(_ path: String) -> Bool { unsafe Glibc.unlink(path) == 0 }

    /// rename(from, to), replacing `to`; false when it failed (errno set).
    public static func rename(_ from: String, to: String) -> Bool { unsafe Glibc.rename(from, to) == 0 }

    /// stat(path) (follows symbolic links); nil when it failed.
    public static func status(_ path: String) -> stat? {
        var st = stat()
        return unsafe stat(path, &st) == 0 ? st : nil
    }
}

extension FileDescriptor {
    /// open(path, flags, mode): the new descriptor, or the error (named "open"). EINTR is retried.
    public init(opening path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) {
        try self.init("open") { unsafe Glibc.open(path, flags, mode) }
    }

    /// `writeFully` of `bytes`.
    public func writeFully(_ bytes: [UInt8]) throws(SystemError) {
        try unsafe bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try unsafe writeFully(raw) } }.get()
    }

    /// `pwriteFully` of `bytes` at `offset`.
    public func pwriteFully(_ bytes: [UInt8], at offset: Int = 0) throws(SystemError) {
        try unsafe bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try unsafe pwriteFully(raw, at: offset) }
        }.get()
    }
}
