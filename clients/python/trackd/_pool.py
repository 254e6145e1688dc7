"""Sample pools (PROTOCOL.md §12.2): sealed memfds the worker fills and this process maps read-only."""

import fcntl
import mmap
import os
import stat

from .errors import ProtocolViolation

try:
    import numpy as _np
except ImportError:  # without numpy a pool has no address (frames are memoryviews then)
    _np = None

_SEALS = 1 | 2 | 4  # F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW (§12.2)


def check_memfd(fd, size, what):
    """§12.2: sealed against shrinking and growing, a regular file of at least size bytes."""
    seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    st = os.fstat(fd)
    if seals & _SEALS != _SEALS:
        raise ProtocolViolation('%s is not sealed against shrinking and growing (seals 0x%x)' % (what, seals))
    if not stat.S_ISREG(st.st_mode) or st.st_size < size:
        raise ProtocolViolation('%s: %d bytes, not a file of at least %d bytes' % (what, st.st_size, size))


class Pool:
    """A sealed memfd mapped read-only (§12.2)."""

    def __init__(self, pool_id, slot_count, slot_size, fd):
        try:
            size = slot_count * slot_size  # Python integers do not overflow
            if size == 0:
                raise ProtocolViolation('pool %d has %d slots of %d bytes' % (pool_id, slot_count, slot_size))
            check_memfd(fd, size, 'pool %d' % pool_id)
            self.mmap = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        self.id, self.slot_count, self.slot_size, self.size = pool_id, slot_count, slot_size, size
        # Where the mapping starts in this process (None without numpy): an attribute, read for every array.
        self.address = None
        if _np is not None:
            view = _np.frombuffer(self.mmap, dtype=_np.uint8)
            self.address = view.__array_interface__['data'][0]
            del view  # drop the buffer export; the mapping lives as long as this object

