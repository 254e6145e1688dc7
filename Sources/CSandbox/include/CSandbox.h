// CSandbox — the worker's sandbox (docs/SECURITY.md): resource limits, dropped privileges, the seccomp filter.
// Needs C: libseccomp's seccomp_rule_add is variadic; setgroups/setres[ug]id need _GNU_SOURCE.
#ifndef CSANDBOX_H
#define CSANDBOX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t address_space_bytes;   ///< RLIMIT_AS (0: leave unchanged)
    uint64_t cpu_seconds;           ///< RLIMIT_CPU soft limit; the hard limit is 5 s later (0: unchanged)
    uint64_t open_files;            ///< RLIMIT_NOFILE (0: unchanged)
    int drop_privileges;            ///< nonzero: setgroups([]), setresgid(gid), setresuid(uid); verified
    uint32_t uid;
    uint32_t gid;
} trackd_sandbox_config;

/// Enters the sandbox, in this order: ORC's generated code sealed (trackd_orc_seal), rlimits, privilege drop (if
/// asked), PR_SET_NO_NEW_PRIVS, seccomp filter (synchronised onto every thread of the process). Irreversible. On
/// failure returns -1 and writes a message into `error` (the process must then exit: it may be half-sandboxed).
/// Returns 0 on success.
int trackd_sandbox_enter(const trackd_sandbox_config *config, char *error, size_t error_size);

/// Whether ORC (GStreamer's code generator) would find memory for generated code here, tried the way ORC 0.4.33
/// tries (a dual-mapped file in $XDG_RUNTIME_DIR, $HOME, $TMPDIR or /tmp, else anonymous RWX). When it would not,
/// ORC aborts the process at its first compile, so nothing may be compiled before trackd_orc_seal. 1 or 0.
int trackd_orc_code_memory_available(void);

/// From now on ORC compiles nothing (every program runs its C backup function), and the code it generated so far
/// becomes private read+exec memory with no writable alias (OrcSeal.c says how). Call with no ORC code running;
/// trackd_sandbox_enter calls it first. Returns 0 and the number of executable regions sealed, or -1 with errno.
int trackd_orc_seal(int *regions_sealed);

// ── The worker's memory (WorkerMemory.c) ─────────────────────────────────────────────────────────────────────

/// malloc settings for a worker: at most 2 arenas (glibc's default is 8 per CPU). Call before any thread starts.
void trackd_worker_malloc_settings(void);

/// malloc_trim(0): gives the free memory of every arena back to the kernel. 1 if some was given back.
int trackd_worker_trim_heap(void);

/// Opens /proc/self/smaps for trackd_release_library_pages and keeps the descriptor: call before the sandbox,
/// which refuses openat (the open descriptor keeps working in it). 0, or -1 with errno.
int trackd_library_pages_open(void);

/// Drops from the resident set the pages of every private, not writable mapping of a file on disk that holds no
/// page of its own (smaps Anonymous 0): the code, read-only data, symbol and relocation tables of the libraries
/// and plugins the worker loaded, most of which it never uses again. Such a page holds exactly the file's bytes,
/// so the next access maps it again from the page cache (a minor fault; no syscall, nothing the sandbox refuses).
/// Returns the bytes that were resident in those mappings, or -1 (not opened, or smaps unreadable).
long trackd_release_library_pages(void);

#endif
