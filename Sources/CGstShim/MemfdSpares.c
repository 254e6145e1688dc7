// Frame memories kept for the worker's next output (see MemfdSpares.h).
#include "MemfdSpares.h"
#include "CGstShim.h"

#include <glib.h>

// Frame memories whose GStreamer memory was freed (a pipeline's end, a renegotiation), kept mapped for the process's
// next memory of the same size, whichever allocator asks: a memfd touched once costs nothing more to write again,
// where a new one costs the kernel a fault and a zeroed page per 4 KiB (on a 2-CPU VM with free page reporting and
// shadowed page tables ~5 µs a page: 4–5.5 MB, 4–7 ms of a worker's 31–36 ms per ReadFrames of one 720p frame,
// docs/BENCHMARKS.md). The worker is its client's alone, and a memory is freed only after every buffer in it came
// back — after the client released its slot (PROTOCOL.md §12.2) — so nothing still refers to what it held.
typedef struct {
    int fd;
    guint8 *base;
    gsize map_size;
} SpareMemfd;

#define SPARE_MAX 16
#define SPARE_MAX_BYTES ((gsize)64 << 20)
// Described memories whose fd the allocator keeps (to keep the memory as a spare when it is freed): at most this many
// in the process, so that live memories do not count against RLIMIT_NOFILE beyond it (docs/design/zero-copy.md);
// past it a memory's fd goes out as before and the memory is unmapped when freed.
#define KEPT_FDS_MAX 64
static guint kept_fds;
static GMutex spare_lock;
static SpareMemfd spares[SPARE_MAX];
static guint spare_count;
static gsize spare_bytes;
static guint64 spares_reused;

// A spare of exactly `map_size` bytes (its fd and mapping are the caller's), or FALSE.
gboolean trackd_memfd_spare_take(gsize map_size, int *fd, guint8 **base) {
    gboolean found = FALSE;
    g_mutex_lock(&spare_lock);
    for (guint i = 0; i < spare_count; i++) {
        if (spares[i].map_size != map_size) continue;
        *fd = spares[i].fd;
        *base = spares[i].base;
        spare_bytes -= map_size;
        spares[i] = spares[--spare_count];
        spares_reused++;
        found = TRUE;
        break;
    }
    g_mutex_unlock(&spare_lock);
    return found;
}

// Keeps a freed memory's fd and mapping as a spare when there is room; FALSE: the caller unmaps and closes it.
gboolean trackd_memfd_spare_keep(int fd, guint8 *base, gsize map_size) {
    gboolean kept = FALSE;
    g_mutex_lock(&spare_lock);
    if (spare_count < SPARE_MAX && map_size <= SPARE_MAX_BYTES - spare_bytes) {
        spares[spare_count++] = (SpareMemfd){.fd = fd, .base = base, .map_size = map_size};
        spare_bytes += map_size;
        kept = TRUE;
    }
    g_mutex_unlock(&spare_lock);
    return kept;
}

void trackd_memfd_count_reannounced(void) {
    g_mutex_lock(&spare_lock);
    spares_reused++;
    g_mutex_unlock(&spare_lock);
}

uint64_t swift_gst_memfd_spares_reused(void) {
    g_mutex_lock(&spare_lock);
    uint64_t n = spares_reused;
    g_mutex_unlock(&spare_lock);
    return n;
}

gboolean trackd_memfd_kept_fd_acquire(void) {
    g_mutex_lock(&spare_lock);
    gboolean keep = kept_fds < KEPT_FDS_MAX;
    if (keep) kept_fds++;
    g_mutex_unlock(&spare_lock);
    return keep;
}

void trackd_memfd_kept_fd_release(void) {
    g_mutex_lock(&spare_lock);
    kept_fds--;
    g_mutex_unlock(&spare_lock);
}
