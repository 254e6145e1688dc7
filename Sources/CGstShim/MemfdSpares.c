// The allocator's side of the spare-memory policy (see MemfdSpares.h): the installed Swift policy, or none.
#include "MemfdSpares.h"
#include "CGstShim.h"

#include <glib.h>

// Written once, by swift_gst_memfd_spares_install before the worker makes its first allocator; read on any thread.
static SwiftGstMemfdSparePolicy policy;
static gint installed;

void swift_gst_memfd_spares_install(const SwiftGstMemfdSparePolicy *p) {
    policy = *p;
    g_atomic_int_set(&installed, 1);
}

gboolean trackd_memfd_spare_take(gsize map_size, int *fd, guint8 **base) {
    return g_atomic_int_get(&installed) && policy.take(map_size, fd, base);
}

gboolean trackd_memfd_spare_keep(int fd, guint8 *base, gsize map_size) {
    return g_atomic_int_get(&installed) && policy.keep(fd, base, map_size);
}

gboolean trackd_memfd_kept_fd_acquire(void) { return g_atomic_int_get(&installed) && policy.acquire_kept_fd(); }

void trackd_memfd_kept_fd_release(void) {
    if (g_atomic_int_get(&installed)) policy.release_kept_fd();
}

void trackd_memfd_count_reannounced(void) {
    if (g_atomic_int_get(&installed)) policy.count_reannounced();
}
