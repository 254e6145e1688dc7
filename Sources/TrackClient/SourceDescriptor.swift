import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// How each kind of media source becomes the descriptor OpenAsset passes (PROTOCOL.md §8: a regular, seekable file
/// opened for reading) — the rules of the Python client's `trackd.open()` (clients/python/trackd/_source.py):
///
/// - a path is opened read-only;
/// - an open regular file's descriptor is duplicated (the caller keeps and closes its own);
/// - everything else — bytes, a pipe, a socket, a character device — is copied into a **sealed memfd**: anonymous
///   memory, never a file on disk, sealed against writing, shrinking and growing before trackd sees it, so the
///   worker reads exactly the bytes given. Such a copy is limited to `maxBytes` (default
///   ``Asset/maxSourceBytes``, 4 GiB) and may not be empty.
///
/// Every function returns a descriptor the caller owns (close-on-exec), or throws and leaves nothing open.
enum SourceDescriptor {
    /// The read(2) size for pipes.
    static let chunk = 1 << 20

    /// `path` opened read-only. The daemon's worker judges what it is (a directory, an empty file: its errors).
    static func open(path: String) throws(TrackError) -> FileDescriptor {
        do {
            return try FileDescriptor(opening: path, O_RDONLY | O_CLOEXEC)
        } catch {
            throw TrackError(.invalidSourceMedia, "cannot open \(path): \(error.reason)")
        }
    }

    /// A sealed memfd holding `bytes`.
    static func memfd(copying bytes: UnsafeRawBufferPointer, name: String, maxBytes: Int) throws(TrackError) -> FileDescriptor {
        guard bytes.count <= maxBytes else { throw tooLarge("a \(bytes.count)-byte buffer", maxBytes) }
        let fd = try newMemfd(name)
        try copy(bytes, into: fd, name)
        return try seal(fd, size: bytes.count, name: name)
    }

    /// For `fd`, the caller's: a duplicate when it is a regular file open for reading; a sealed memfd holding what
    /// it reads to its end when it is a pipe, socket or device; an error for a directory or a closed descriptor.
    static func descriptor(from fd: Int32, name: String, maxBytes: Int) throws(TrackError) -> FileDescriptor {
        var st = stat()
        do throws(SystemError) {
            guard fd >= 0 else { throw SystemError("fstat", errno: EBADF) }
            _ = try syscall("fstat") { fstat(fd, &st) }
        } catch {
            throw TrackError(.invalidArgument, "file descriptor \(fd) is not open (\(error.reason))")
        }
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, flags & O_ACCMODE != O_WRONLY else {
            throw TrackError(.invalidArgument, "file descriptor \(fd) is open for writing only; trackd needs to read it")
        }
        switch st.st_mode & S_IFMT {
        case S_IFDIR:
            throw TrackError(.invalidSourceMedia, "\(name) is a directory, not a media file")
        case S_IFREG:
            do {
                return try FileDescriptor("fcntl F_DUPFD_CLOEXEC") { fcntl(fd, F_DUPFD_CLOEXEC, 0) }
            } catch {
                throw TrackError(.limitExceeded, "cannot duplicate file descriptor \(fd): \(error.reason)")
            }
        default:
            return try memfd(reading: fd, name: name, maxBytes: maxBytes)
        }
    }

    /// A sealed memfd holding what `source` reads until end of file (a pipe: until every writer has closed it).
    static func memfd(reading source: Int32, name: String, maxBytes: Int) throws(TrackError) -> FileDescriptor {
        let fd = try newMemfd(name)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var size = 0
        while true {
            let n: Int
            do {
                n = try syscall("read") { read(source, buffer.baseAddress, buffer.count) }
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                throw TrackError(.invalidArgument, "\(name) is non-blocking and had nothing to read; pass a blocking descriptor")
            } catch {
                throw TrackError(.invalidSourceMedia, "cannot read \(name): \(error.reason)")
            }
            if n == 0 { break }
            size += n
            guard size <= maxBytes else { throw tooLarge(name, maxBytes) }
            try copy(UnsafeRawBufferPointer(rebasing: buffer[..<n]), into: fd, name)
        }
        return try seal(fd, size: size, name: name)
    }

    /// Size of the file `fd` refers to (what trackd will read), or 0 when fstat fails.
    static func size(of fd: borrowing FileDescriptor) -> UInt64 {
        (try? fd.status()).map { UInt64(max(0, $0.st_size)) } ?? 0
    }

    // MARK: - Steps (each failure closes the memfd: its FileDescriptor owns it)

    private static func newMemfd(_ name: String) throws(TrackError) -> FileDescriptor {
        let label = "trackd-source:" + String(decoding: name.utf8.prefix(200), as: UTF8.self)
        do {
            return try FileDescriptor.unsealedMemfd(name: label)
        } catch {
            throw TrackError(.limitExceeded, "cannot create a memfd for \(name): \(error.reason)")
        }
    }

    private static func copy(_ bytes: UnsafeRawBufferPointer, into fd: borrowing FileDescriptor, _ name: String) throws(TrackError) {
        do {
            try fd.writeFully(bytes)
        } catch {
            throw TrackError(.limitExceeded, "cannot copy \(name) into a memfd: \(error.reason)")
        }
    }

    private static func seal(_ fd: consuming FileDescriptor, size: Int, name: String) throws(TrackError) -> FileDescriptor {
        guard size > 0 else { throw TrackError(.invalidArgument, "the media source is empty (0 bytes)") }
        do {
            try fd.sealContents()
        } catch {
            throw TrackError(.limitExceeded, "cannot seal the memfd holding \(name): \(error.reason)")
        }
        return fd
    }

    private static func tooLarge(_ what: String, _ maxBytes: Int) -> TrackError {
        TrackError(.limitExceeded, "\(what) is larger than maxBytes=\(maxBytes) (Asset copies it into a memfd, which is "
                   + "memory; pass a larger maxBytes: or a path)")
    }
}
