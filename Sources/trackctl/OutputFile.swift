#if canImport(Glibc)
import Glibc
#endif

/// A C stdio stream (`FILE *`) that trackctl writes to: fd 1 or 2 (``IO``) or a file it creates. The only trackctl
/// code that holds a `FILE` pointer; callers write strings and byte spans.
@safe final class OutputFile: @unchecked Sendable {
    // @unchecked: the pointer never changes; stdio locks a FILE around each call (flockfile), and a created file is
    // written and closed by the one command that made it. IO's two streams are never closed.
    private let file: UnsafeMutablePointer<FILE>

    private init(_ file: UnsafeMutablePointer<FILE>) { unsafe self.file = file }

    /// Descriptor `fd` as a stream (fdopen "w"), unbuffered when `unbuffered` (setvbuf _IONBF).
    static func stream(_ fd: Int32, unbuffered: Bool) -> OutputFile {
        let file = unsafe fdopen(fd, "w")!
        if unbuffered { unsafe setvbuf(file, nil, _IONBF, 0) }
        return unsafe OutputFile(file)
    }

    /// `path` created or truncated for writing (fopen "wb"); nil, with errno set, when it cannot be.
    static func create(_ path: String) -> OutputFile? {
        guard let file = unsafe fopen(path, "wb") else { return nil }
        return unsafe OutputFile(file)
    }

    /// fputs.
    func write(_ text: String) {
        unsafe fputs(text, file)
    }

    /// fwrite of every byte of `bytes`; false when fewer were written.
    func write(_ bytes: RawSpan) -> Bool {
        unsafe bytes.withUnsafeBytes { raw in
            unsafe (raw.isEmpty || fwrite(raw.baseAddress, 1, raw.count, file) == raw.count)
        }
    }

    /// fwrite of every byte of `bytes`; false when fewer were written.
    func write(_ bytes: [UInt8]) -> Bool {
        write(bytes.span.bytes)
    }

    func flush() {
        unsafe fflush(file)
    }

    /// fclose: the stream must not be used after this.
    func close() {
        unsafe fclose(file)
    }
}
