#define _GNU_SOURCE
#include "CSandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <orc/orc.h>

// ORC's generated code under W^X (docs/SECURITY.md "W^X"). ORC 0.4.33 (orccodemem.c) puts the code it generates in
// 64 KiB regions: a file (`orcexec.XXXXXX` in $XDG_RUNTIME_DIR, $HOME, $TMPDIR or /tmp, unlinked at once) mapped
// twice, MAP_SHARED read+exec and read+write, or, when no directory allows that, one anonymous RWX mapping. A
// region is made at the first compile that does not fit the existing ones; if neither kind of mapping can be made
// ORC does not fall back: the region has size 0 and orc_code_region_get_free_chunk reaches ORC_ASSERT(0), abort().
//
// So the worker (1) compiles the programs it will need while it may still map code (GstBridge's
// Rehearsal.compileConversions, before the filter, and only when trackd_orc_code_memory_available says ORC will
// find memory), then (2) here, just before the filter: makes every later compile fail cleanly, and turns the
// regions into ordinary read-only code.
//
// (2a) Later compiles: orc_program_compile() compiles for orc_target_get_default(), the last target registered as
// executable (orc_target_register, public API). A target whose compile step reports an error makes
// orc_program_compile_full take its error path *after* it made the program's OrcCode with exec = the program's C
// backup function (or ORC's emulator), and before orc_code_allocate_codemem: no region is touched, no mapping is
// made, and the orcc-generated callers (video-orc.c's orc_once blocks) run the C backup. Nothing is compiled
// after this, so the writable alias is never written again.
//
// (2b) The regions: each executable orcexec mapping (and any anonymous RWX one, ORC's fallback) is replaced, at the
// same address (MAP_FIXED, so the code pointers ORC handed out stay valid), by a private read+exec mapping of a
// sealed memfd holding the same bytes, and every non-executable orcexec mapping (the writable alias) is unmapped.
// Afterwards ORC's code is like a library's text: private, never writable while executable, no writable alias,
// no file behind it that the worker could map again (the memfd is closed; openat, and so /proc/self/map_files, is
// refused after the filter). mprotect to RW would succeed (private copy-on-write) but loses PROT_EXEC for good.

static unsigned int sealed_flags(void) { return 0; }
static void sealed_init(OrcCompiler *compiler) { (void)compiler; }
static void sealed_compile(OrcCompiler *compiler) {
    compiler->error = TRUE;
    compiler->result = ORC_COMPILE_RESULT_UNKNOWN_COMPILE;
}

static OrcTarget sealed_target = {
    .name = "trackd-sealed",
    .executable = TRUE,
    .get_default_flags = sealed_flags,
    .compiler_init = sealed_init,
    .compile = sealed_compile,
};

int trackd_orc_code_memory_available(void) {
    // The places orc_code_region_allocate_codemem tries, in its order, the way it tries them.
    const char *dirs[] = { getenv("XDG_RUNTIME_DIR"), getenv("HOME"), getenv("TMPDIR"), "/tmp" };
    const size_t size = 65536;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (dirs[i] == NULL) continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/orcexec.XXXXXX", dirs[i]) >= (int)sizeof path) continue;
        mode_t mask = umask(0066);
        int fd = mkstemp(path);
        umask(mask);
        if (fd < 0) continue;
        unlink(path);
        void *x = ftruncate(fd, (off_t)size) == 0 ? mmap(NULL, size, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0) : MAP_FAILED;
        void *w = x != MAP_FAILED ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        close(fd);
        if (x != MAP_FAILED) munmap(x, size);
        if (w != MAP_FAILED) munmap(w, size);
        if (w != MAP_FAILED) return 1;
    }
    void *a = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return 0;
    munmap(a, size);
    return 1;
}

typedef struct {
    uintptr_t start, end;
    int executable, writable, orc_file, anonymous;
} mapping;

// Replaces [start, end) by a private read+exec mapping of a sealed memfd with the same bytes.
static int relocate(const mapping *m) {
    size_t size = m->end - m->start;
    int fd = memfd_create("trackd-orc-code", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    const unsigned char *p = (const unsigned char *)m->start;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, p + done, size - done);
        // EINTR retried here, not by Swift's `syscall` (SystemCalls/Syscall.swift lists each such site): the code
        // mappings are being replaced, one C call from Swift for all of them.
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    int rc = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    if (rc == 0 && mmap((void *)m->start, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
        rc = -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

// The mappings of concern in /proc/self/maps: ORC's files (either alias) and anonymous RWX memory.
static int read_mappings(mapping *out, int capacity, int *count) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) return -1;
    char line[4096];
    *count = 0;
    while (fgets(line, sizeof line, maps) != NULL) {
        unsigned long start, end;
        char perms[8] = "";
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3) continue;
        const char *path = path_at > 0 ? line + path_at : "";
        mapping m = { .start = start, .end = end, .executable = perms[2] == 'x', .writable = perms[1] == 'w',
                      .orc_file = strstr(path, "/orcexec.") != NULL, .anonymous = path[0] == '\n' || path[0] == 0 };
        if (!m.orc_file && !(m.anonymous && m.executable && m.writable)) continue;
        if (*count == capacity) {
            fclose(maps);
            errno = E2BIG;
            return -1;
        }
        out[(*count)++] = m;
    }
    fclose(maps);
    return 0;
}

int trackd_orc_seal(int *regions_sealed) {
    *regions_sealed = 0;
    orc_init();  // idempotent; registers ORC's own targets first, so the sealed one comes last and is the default
    orc_target_register(&sealed_target);
    if (orc_target_get_default() != &sealed_target) {
        errno = EINVAL;
        return -1;
    }
    mapping found[256];
    int n = 0;
    if (read_mappings(found, (int)(sizeof found / sizeof found[0]), &n) != 0) return -1;
    for (int i = 0; i < n; i++) {
        if (found[i].executable) {
            if (relocate(&found[i]) != 0) return -1;
            (*regions_sealed)++;
        } else if (munmap((void *)found[i].start, found[i].end - found[i].start) != 0) {
            return -1;
        }
    }
    return 0;
}
