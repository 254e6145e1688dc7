import CTrackSys
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
    static func open(path: String) throws(TrackError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TrackError(.invalidSourceMedia, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// A sealed memfd holding `bytes`.
    static func memfd(copying bytes: UnsafeRawBufferPointer, name: String, maxBytes: Int) throws(TrackError) -> Int32 {
        guard bytes.count <= maxBytes else { throw tooLarge("a \(bytes.count)-byte buffer", maxBytes) }
        let fd = try newMemfd(name)
        do throws(TrackError) {
            try writeAll(fd, bytes, name)
            return try seal(fd, size: bytes.count, name: name)
        } catch {
            close(fd)
            throw error
        }
    }

    /// For `fd`, the caller's: a duplicate when it is a regular file open for reading; a sealed memfd holding what
    /// it reads to its end when it is a pipe, socket or device; an error for a directory or a closed descriptor.
    static func descriptor(from fd: Int32, name: String, maxBytes: Int) throws(TrackError) -> Int32 {
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0 else {
            throw TrackError(.invalidArgument, "file descriptor \(fd) is not open (\(errnoText(fd >= 0 ? errno : EBADF)))")
        }
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, flags & O_ACCMODE != O_WRONLY else {
            throw TrackError(.invalidArgument, "file descriptor \(fd) is open for writing only; trackd needs to read it")
        }
        switch st.st_mode & S_IFMT {
        case S_IFDIR:
            throw TrackError(.invalidSourceMedia, "\(name) is a directory, not a media file")
        case S_IFREG:
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { throw TrackError(.limitExceeded, "cannot duplicate file descriptor \(fd): \(errnoText())") }
            return copy
        default:
            return try memfd(reading: fd, name: name, maxBytes: maxBytes)
        }
    }

    /// A sealed memfd holding what `fd` reads until end of file (a pipe: until every writer has closed it).
    static func memfd(reading source: Int32, name: String, maxBytes: Int) throws(TrackError) -> Int32 {
        let fd = try newMemfd(name)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        do throws(TrackError) {
            var size = 0
            while true {
                let n = read(source, buffer.baseAddress, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    throw TrackError(.invalidArgument, "\(name) is non-blocking and had nothing to read; pass a blocking descriptor")
                }
                guard n >= 0 else { throw TrackError(.invalidSourceMedia, "cannot read \(name): \(errnoText())") }
                if n == 0 { break }
                size += n
                guard size <= maxBytes else { throw tooLarge(name, maxBytes) }
                try writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<n]), name)
            }
            return try seal(fd, size: size, name: name)
        } catch {
            close(fd)
            throw error
        }
    }

    /// Size of the file `fd` refers to (what trackd will read), or 0 when fstat fails.
    static func size(of fd: Int32) -> UInt64 {
        var isRegular: Int32 = 0, size: UInt64 = 0
        return trackd_fd_is_regular(fd, &isRegular, &size) == 0 ? size : 0
    }

    // MARK: - Steps

    private static func newMemfd(_ name: String) throws(TrackError) -> Int32 {
        let fd = trackd_memfd_unsealed("trackd-source:" + String(decoding: name.utf8.prefix(200), as: UTF8.self))
        guard fd >= 0 else { throw TrackError(.limitExceeded, "cannot create a memfd for \(name): \(errnoText())") }
        return fd
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ name: String) throws(TrackError) {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw TrackError(.limitExceeded, "cannot copy \(name) into a memfd: \(errnoText())") }
            done += n
        }
    }

    private static func seal(_ fd: Int32, size: Int, name: String) throws(TrackError) -> Int32 {
        guard size > 0 else { throw TrackError(.invalidArgument, "the media source is empty (0 bytes)") }
        guard trackd_memfd_seal_contents(fd) == 0 else {
            throw TrackError(.limitExceeded, "cannot seal the memfd holding \(name): \(errnoText())")
        }
        return fd
    }

    private static func tooLarge(_ what: String, _ maxBytes: Int) -> TrackError {
        TrackError(.limitExceeded, "\(what) is larger than maxBytes=\(maxBytes) (Asset copies it into a memfd, which is "
                   + "memory; pass a larger maxBytes: or a path)")
    }

    private static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}
