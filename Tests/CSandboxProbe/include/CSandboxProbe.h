// CSandboxProbe — test-only (never linked into trackd): runs one memory operation in a forked child after the
// child entered the worker's sandbox (CSandbox's trackd_sandbox_enter, the product's function), and reports how
// it ended. Used by SandboxFilterTests to show what the filter refuses.
#ifndef CSANDBOX_PROBE_H
#define CSANDBOX_PROBE_H

typedef enum {
    trackd_probe_mmap_rw = 0,           ///< anonymous PROT_READ|PROT_WRITE (malloc, buffers): allowed
    trackd_probe_mmap_rwx,              ///< anonymous PROT_READ|PROT_WRITE|PROT_EXEC (a JIT's code): refused
    trackd_probe_mmap_rx_anonymous,     ///< anonymous PROT_READ|PROT_EXEC: refused
    trackd_probe_mprotect_rw_to_rx,     ///< mmap RW, write, mprotect to PROT_READ|PROT_EXEC: refused
    trackd_probe_mprotect_rw_to_r,      ///< mmap RW, mprotect to PROT_READ (glibc's RELRO, guard pages): allowed
    trackd_probe_mmap_memfd_rx,         ///< a memfd the process wrote, mapped PROT_READ|PROT_EXEC: refused
    trackd_probe_mmap_memfd_rw_shared,  ///< a memfd mapped PROT_READ|PROT_WRITE, MAP_SHARED (the pools): allowed
    trackd_probe_pkey_mprotect_rx,      ///< pkey_mprotect to PROT_READ|PROT_EXEC: refused
} trackd_probe_operation;

typedef struct {
    int entered;        ///< 1: the child entered the sandbox (else `error` says why not)
    int succeeded;      ///< 1: the operation succeeded
    int error_number;   ///< its errno when it failed
    int signal_number;  ///< the signal that ended the child, 0 if it exited
    char error[256];
} trackd_probe_result;

/// Forks; the child enters the sandbox (no rlimit changes, no privilege drop), tries `operation` and reports
/// through a pipe. Returns 0, or -1 (errno set) when fork/pipe/waitpid failed.
int trackd_probe_in_sandbox(trackd_probe_operation operation, trackd_probe_result *result);

/// What a child that compiled an ORC program (ORC's JIT, before the sandbox) saw after entering the sandbox.
typedef struct {
    int entered;                 ///< 1: the child entered the sandbox (else `error` says why not)
    int code_memory_available;   ///< trackd_orc_code_memory_available() before the sandbox
    int compiled_before;         ///< 1: the first program compiled to generated code before the sandbox
    int compiled_output_right;   ///< 1: after the sandbox, the generated code ran and gave the right bytes
    int compiled_code_sealed;    ///< 1: that code lies in a private r-x mapping of ORC's sealed memfd
    int later_compiled;          ///< 1: a program first compiled after the sandbox got generated code (must not)
    int later_ran_backup;        ///< 1: it ran its C backup function instead
    int later_output_right;      ///< 1: and gave the right bytes
    int orc_file_mappings;       ///< mappings of ORC's orcexec file after the sandbox (must be 0)
    int writable_executable;     ///< mappings writable and executable, or shared and executable (must be 0)
    int sealed_mappings;         ///< private r-x mappings of the sealed memfd
    int signal_number;           ///< the signal that ended the child, 0 if it exited
    char error[256];
} trackd_orc_probe_result;

/// Forks; the child compiles an ORC program, enters the sandbox (which seals ORC), runs that program, compiles and
/// runs a second one, and reads its own memory map (through a descriptor opened before the filter). Returns 0, or
/// -1 (errno set) when fork/pipe/waitpid failed.
int trackd_probe_orc_in_sandbox(trackd_orc_probe_result *result);

#endif
