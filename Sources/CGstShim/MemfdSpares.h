// Frame memories (MemfdPool.c) kept for the worker's next output: the allocator asks the spare policy installed with
// swift_gst_memfd_spares_install (CGstShim.h; the rules and their tests are Swift: SamplePools' SpareMemories). With
// none installed, nothing is kept.
#ifndef TRACKD_MEMFD_SPARES_H
#define TRACKD_MEMFD_SPARES_H

#include <glib.h>
#include <stdint.h>

/// A kept memfd of exactly `map_size` bytes: its fd and read-write mapping become the caller's. FALSE: none.
gboolean trackd_memfd_spare_take(gsize map_size, int *fd, guint8 **base);
/// Keeps a freed memory's fd and mapping when the policy has room; FALSE: the caller unmaps and closes.
gboolean trackd_memfd_spare_keep(int fd, guint8 *base, gsize map_size);
/// Whether a memory whose fd goes out may keep a copy of it; pair with _release when it goes.
gboolean trackd_memfd_kept_fd_acquire(void);
void trackd_memfd_kept_fd_release(void);
/// A live memory was announced again to a later output of its kept pipeline: counted with the spares taken.
void trackd_memfd_count_reannounced(void);

#endif
