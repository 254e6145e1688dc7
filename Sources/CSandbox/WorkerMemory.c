// The worker's resident memory (declared in CSandbox.h; measurements in docs/BENCHMARKS.md, "A worker's memory").
#define _GNU_SOURCE
#include "CSandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// ── malloc ─────────────────────────────────────────────────────────────────────────────────────────────────────

void trackd_worker_malloc_settings(void) {
    // glibc makes up to 8 arenas per CPU, one for each thread that finds the others locked: a worker's streaming
    // threads, libav's frame threads and the output's puller took 5, each keeping its own free memory.
    mallopt(M_ARENA_MAX, 2);
}

int trackd_worker_trim_heap(void) { return malloc_trim(0); }

// ── library pages ──────────────────────────────────────────────────────────────────────────────────────────────

static int smaps_fd = -1;

int trackd_library_pages_open(void) {
    if (smaps_fd >= 0) return 0;
    smaps_fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    return smaps_fd < 0 ? -1 : 0;
}

// One mapping of /proc/self/smaps while it is parsed: its header line, then its Rss and Anonymous lines.
typedef struct {
    unsigned long start, end;
    int eligible;  // a private mapping, not writable, of a file on disk
    unsigned long rss_kb, anonymous_kb;
    int have_rss, have_anonymous;
} mapping;

// "start-end perms offset dev inode   path".
static void parse_header(mapping *m, const char *line) {
    memset(m, 0, sizeof *m);
    char *end = NULL;
    m->start = strtoul(line, &end, 16);
    if (end == NULL || *end != '-') return;
    m->end = strtoul(end + 1, &end, 16);
    if (end == NULL || *end != ' ' || strlen(end) < 5) return;
    const char *perms = end + 1;
    const char *p = perms;
    for (int field = 0; field < 4 && p != NULL; field++) {  // past perms, offset, dev and inode
        p = strchr(p, ' ');
        if (p != NULL) p++;
    }
    while (p != NULL && *p == ' ') p++;
    // Not a memfd (ORC's sealed code, the pools), a device, SysV memory, or a file deleted since it was mapped.
    int on_disk = p != NULL && p[0] == '/' && strncmp(p, "/memfd:", 7) != 0 && strncmp(p, "/dev/", 5) != 0 &&
                  strncmp(p, "/SYSV", 5) != 0 && strstr(p, " (deleted)") == NULL;
    m->eligible = on_disk && perms[1] == '-' && perms[3] == 'p';
}

static unsigned long field_kb(const char *line) { return strtoul(strchr(line, ':') + 1, NULL, 10); }

// At the end of a mapping's lines: drops its pages if it qualifies; the bytes that were resident, or 0. A mapping
// with any page of its own (Anonymous > 0: relocated data made read-only after, a debugger's breakpoint) keeps
// all of them: MADV_DONTNEED would throw those copies away.
static unsigned long release(const mapping *m) {
    if (!m->eligible || !m->have_rss || !m->have_anonymous) return 0;
    if (m->anonymous_kb != 0 || m->rss_kb == 0 || m->end <= m->start) return 0;
    if (madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) != 0) return 0;
    return m->rss_kb * 1024;
}

long trackd_release_library_pages(void) {
    if (smaps_fd < 0 || lseek(smaps_fd, 0, SEEK_SET) != 0) return -1;
    static char buffer[1 << 16];  // one caller at a time (the worker's main thread)
    size_t held = 0;
    unsigned long released = 0;
    mapping m = {0};
    for (;;) {
        ssize_t n = read(smaps_fd, buffer + held, sizeof buffer - 1 - held);
        // EINTR retried here, not by Swift's `syscall` (SystemCalls/Syscall.swift lists each such site): a partial
        // line stays in this parser's buffer between reads.
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        held += (size_t)n;
        buffer[held] = '\0';
        char *line = buffer, *newline;
        while ((newline = strchr(line, '\n')) != NULL) {
            *newline = '\0';
            if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {  // a mapping's header
                released += release(&m);
                parse_header(&m, line);
            } else if (strncmp(line, "Rss:", 4) == 0) {
                m.rss_kb = field_kb(line);
                m.have_rss = 1;
            } else if (strncmp(line, "Anonymous:", 10) == 0) {
                m.anonymous_kb = field_kb(line);
                m.have_anonymous = 1;
            }
            line = newline + 1;
        }
        held = (size_t)(buffer + held - line);
        memmove(buffer, line, held);
        if (n == 0) break;
        if (held == sizeof buffer - 1) return -1;  // a line longer than the buffer: not smaps as we know it
    }
    released += release(&m);
    return (long)released;
}
