"""What trackd.open() accepts and how it becomes the descriptor OpenAsset passes (PROTOCOL.md §8: a regular,
seekable file opened for reading): a path is opened, an open regular file's descriptor is duplicated, and
everything else — bytes, bytearray, memoryview, a binary file-like object (io.BytesIO, an object-store stream),
a pipe or socket descriptor — is copied into a sealed memfd: anonymous memory, no file on disk, sealed against
writing, shrinking and growing before trackd sees it, so the worker reads exactly the bytes given."""

import fcntl
import io
import os
import stat

MAX_SOURCE_BYTES = 4 << 30
"""Default limit for sources copied into a memfd (bytes, streams, pipes): 4 GiB. A memfd is memory (it counts
against the process's memory and any cgroup limit) for as long as the asset is open; pass max_bytes= to
trackd.open() to lower or raise it. Paths and regular files are not copied and have no limit here."""

_CHUNK = 1 << 20
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def _too_large(what, max_bytes):
    return ValueError('%s is larger than max_bytes=%d (trackd.open copies it into a memfd, which is memory; pass '
                      'a larger max_bytes= or a path)' % (what, max_bytes))


def _new_memfd(name):
    return os.memfd_create('trackd-source:' + name[:200], os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _seal(fd, size):
    if size == 0:
        raise ValueError('the media source is empty (0 bytes)')
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    return fd


def memfd_from_buffer(data, name, max_bytes):
    """A sealed memfd holding the bytes of a buffer (bytes, bytearray, memoryview, array, numpy array...)."""
    view = memoryview(data).cast('B')
    if view.nbytes > max_bytes:
        raise _too_large('a %d-byte buffer' % view.nbytes, max_bytes)
    fd = _new_memfd(name)
    try:
        done = 0
        while done < view.nbytes:
            done += os.write(fd, view[done:done + (64 << 20)])
        return _seal(fd, done)
    except BaseException:
        os.close(fd)
        raise


def memfd_from_stream(read, name, max_bytes):
    """A sealed memfd holding what read(n) returns until it returns b'' (a binary stream's read)."""
    fd = _new_memfd(name)
    try:
        size = 0
        while True:
            chunk = read(_CHUNK)
            if chunk is None:  # a non-blocking raw stream with nothing yet
                raise ValueError('the stream %s returned None from read() (non-blocking); pass a blocking stream'
                                 % name)
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError('the stream %s read() returned %s, not bytes: open it in binary mode ("rb")'
                                % (name, type(chunk).__name__))
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise _too_large('the stream %s' % name, max_bytes)
            view, done = memoryview(chunk), 0
            while done < len(view):
                done += os.write(fd, view[done:])
        return _seal(fd, size)
    except BaseException:
        os.close(fd)
        raise


def _regular(fd):
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _from_fd(fd, name, max_bytes):
    """A regular file's descriptor: duplicated (the caller keeps its own). A pipe, socket or character device:
    read to its end into a memfd."""
    try:
        regular = _regular(fd)
    except OSError as e:
        raise ValueError('file descriptor %d is not open (%s)' % (fd, e.strerror)) from None
    if regular:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 0)
    return memfd_from_stream(lambda n: os.read(fd, n), name, max_bytes)


def open_source(source, name=None, max_bytes=MAX_SOURCE_BYTES):
    """(fd, name, path): a descriptor for OpenAsset that the caller owns (and closes), the name trackd logs, and
    the path when the source was one (else None)."""
    if isinstance(source, bool):
        raise TypeError('trackd.open() takes a path, a file descriptor, bytes or a binary file object, not a bool')
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if isinstance(path, bytes):
            raise TypeError('a path is a str or os.PathLike of str; bytes are taken as media data, not a path')
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if not _regular(fd):
                raise ValueError('%s is not a regular file (trackd reads regular, seekable files); pass its '
                                 'contents as bytes or a stream to read it into memory' % path)
        except BaseException:
            os.close(fd)
            raise
        return fd, name or path, path
    if isinstance(source, int):
        if source < 0:
            raise ValueError('%d is not a file descriptor' % source)
        return _from_fd(source, name or 'fd %d' % source, max_bytes), name or 'fd %d' % source, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = name or '<%d bytes>' % memoryview(source).nbytes
        return memfd_from_buffer(source, label, max_bytes), label, None
    read = getattr(source, 'read', None)
    if callable(read):
        label = name or getattr(source, 'name', None)
        label = label if isinstance(label, str) else '<%s>' % type(source).__name__
        try:
            fileno = source.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
            fileno = None
        if isinstance(fileno, int) and fileno >= 0 and _regular(fileno) and not isinstance(source, io.TextIOBase):
            return fcntl.fcntl(fileno, fcntl.F_DUPFD_CLOEXEC, 0), label, None
        if isinstance(source, io.TextIOBase):
            raise TypeError('%s is a text stream; open the file in binary mode ("rb")' % label)
        return memfd_from_stream(read, label, max_bytes), label, None
    raise TypeError('trackd.open() takes a path (str or os.PathLike), an open file descriptor (int), bytes, '
                    'bytearray, memoryview or a binary file-like object with read(), not %s' % type(source).__name__)
