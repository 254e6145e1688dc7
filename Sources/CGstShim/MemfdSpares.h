// Frame memories (MemfdPool.c) kept for the worker's next output: a freed memory's memfd and mapping, and the
// count of described memories whose fd the allocator keeps so that they can be kept when freed.
#ifndef TRACKD_MEMFD_SPARES_H
#define TRACKD_MEMFD_SPARES_H

#include <glib.h>
#include <stdint.h>

/// A kept memfd of exactly `map_size` bytes: its fd and read-write mapping become the caller's. FALSE: none.
gboolean trackd_memfd_spare_take(gsize map_size, int *fd, guint8 **base);
/// Keeps a freed memory's fd and mapping when there is room (16 memfds, 64 MiB); FALSE: the caller unmaps and closes.
gboolean trackd_memfd_spare_keep(int fd, guint8 *base, gsize map_size);
/// Whether a described memory may keep a copy of its fd (at most 64 at a time); pair with _release when it goes.
gboolean trackd_memfd_kept_fd_acquire(void);
void trackd_memfd_kept_fd_release(void);
/// A live memory was announced again to a later output of its kept pipeline: counted with the spares taken.
void trackd_memfd_count_reannounced(void);

#endif
