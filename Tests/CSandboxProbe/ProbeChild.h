// Internal to CSandboxProbe (not under include/: Swift does not see it).
#pragma once
#include <stddef.h>

// Runs body(result) in a forked child, which sends the `size` bytes of its result back over a pipe and exits; waits
// for it. result starts zeroed; afterwards it holds what the child reported, *signal_number the signal that ended the
// child (0 if it exited), and a short report is described in error[error_size] (unless a signal explains it).
// Returns 0, or -1 when pipe, fork or waitpid failed (errno).
int trackd_probe_fork(void (*body)(void *result), void *result, size_t size, int *signal_number, char *error,
                      size_t error_size);
