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

/// Enters the sandbox, in this order: rlimits, privilege drop (if asked), PR_SET_NO_NEW_PRIVS, seccomp filter
/// (synchronised onto every thread of the process). Irreversible. On failure returns -1 and writes a message into
/// `error` (the process must then exit: it may be half-sandboxed). Returns 0 on success.
int trackd_sandbox_enter(const trackd_sandbox_config *config, char *error, size_t error_size);

#endif
