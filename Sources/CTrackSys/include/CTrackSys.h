// CTrackSys — the Linux system calls Swift cannot call directly, each with the reason it needs C.
//
// Every function returns -1 and leaves errno set on failure, and none retries anything: EINTR and short transfers
// are the caller's. Swift wraps the fallible ones with the SystemCalls module (`syscall`, which captures errno and
// retries EINTR, and FileDescriptor), which turns a failure into a SystemError.
#ifndef CTRACKSYS_H
#define CTRACKSYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// memfd_create(2) with MFD_CLOEXEC|MFD_ALLOW_SEALING, sized to `size` with ftruncate and sealed with
/// F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL. Needs C because glibc only declares memfd_create and the
/// F_SEAL_* constants under _GNU_SOURCE, which Swift's Glibc module does not define.
/// Returns the fd (caller owns it) or -1.
int trackd_memfd_sealed(const char *name, uint64_t size);

/// memfd_create(2) with MFD_CLOEXEC|MFD_ALLOW_SEALING and no seal yet, to be filled with write(2) and then sealed
/// with trackd_memfd_seal_contents (TrackClient's media sources given as bytes or a pipe). Returns the fd or -1.
int trackd_memfd_unsealed(const char *name);

/// Seals a filled memfd against any change: F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE|F_SEAL_SEAL (F_SEAL_WRITE is
/// _GNU_SOURCE-only too). Returns 0 or -1.
int trackd_memfd_seal_contents(int fd);

/// The seals currently on `fd` (F_GET_SEALS), or -1.
int trackd_memfd_get_seals(int fd);

/// The three seals trackd requires on every pool: F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL.
int trackd_required_seals(void);

/// One sendmsg(2) of up to `len` bytes with `nfds` descriptors in one SCM_RIGHTS control message (none when `nfds`
/// is 0). Needs C for the CMSG_* macros. MSG_NOSIGNAL: a vanished peer gives EPIPE, never SIGPIPE. Returns the
/// bytes sent (possibly fewer than `len`: the caller sends the rest without the descriptors) or -1.
ssize_t trackd_send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);

/// recvmsg(2) into `buf`, collecting up to `max_fds` received descriptors (MSG_CMSG_CLOEXEC) into `fds`
/// and their count into `*nfds`. `*truncated` is set when the kernel reported MSG_CTRUNC (the peer sent
/// more descriptors than we allow: every received one is closed here, and the caller must treat it as a
/// protocol error). Returns bytes read (0 = orderly shutdown) or -1.
ssize_t trackd_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int *truncated);

/// SO_PEERCRED of a connected Unix socket (struct ucred needs _GNU_SOURCE). Returns 0 or -1.
int trackd_peer_credentials(int sock, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// fstat(2) reduced to what trackd checks: is it a regular file, and its size. Returns 0 or -1.
int trackd_fd_is_regular(int fd, int *is_regular, uint64_t *size);

/// accept4(2) with SOCK_CLOEXEC (glibc declares accept4 only under _GNU_SOURCE). Returns the fd or -1.
int trackd_accept_cloexec(int listen_fd);

/// errno as a value (errno is a macro over a thread-local function in glibc).
int trackd_errno(void);

/// posix_spawn(2) of `path` with `argv` (NULL-terminated) and environment `envp` (NULL-terminated), where the
/// child gets `fds[i]` as descriptor 3 + i and inherits stdin/stdout/stderr; every other descriptor is
/// close-on-exec in trackd. Needs C only to keep the file-actions object's lifetime in one place.
/// Returns the child pid or -1 with errno set.
pid_t trackd_spawn_with_fds(const char *path, char *const argv[], char *const envp[], const int *fds, int nfds);

/// Sequentially consistent 64-bit atomics on memory shared between processes (the supervisor's worker table,
/// a MAP_SHARED memfd). Needs C because Swift's Atomic cannot be placed on mapped memory. `p` must be 8-byte
/// aligned. add/sub return the new value.
uint64_t trackd_atomic_load_u64(const uint64_t *p);
void trackd_atomic_store_u64(uint64_t *p, uint64_t v);
uint64_t trackd_atomic_add_u64(uint64_t *p, uint64_t v);
uint64_t trackd_atomic_sub_u64(uint64_t *p, uint64_t v);

/// Bytes waiting unread in a socket's receive queue (ioctl FIONREAD, which is variadic and so not callable
/// from Swift). Returns the count or -1.
int trackd_socket_unread(int sock);

/// CLOCK_MONOTONIC in milliseconds: one clock for every process on the machine (the worker table's timestamps).
uint64_t trackd_monotonic_ms(void);

/// dup3(from, to, 0): makes `to` refer to `from`'s open file (closing what `to` was). Needs C: glibc declares dup3
/// only under _GNU_SOURCE; and a sandboxed worker must use dup3, which its seccomp filter allows (dup2 is a system
/// call of its own on x86_64). Returns `to`, or -1 with errno set.
int trackd_move_fd(int from, int to);

/// prctl(PR_SET_NAME, name): the calling thread's name (for the main thread, the process's comm, which ps shows).
/// Needs C: prctl is variadic. At most 15 bytes are kept. Returns 0 or -1 with errno set.
int trackd_set_thread_name(const char *name);

/// prctl(PR_SET_CHILD_SUBREAPER, on): orphaned descendants are re-parented to this process instead of init (tests
/// use it to see whether trackd left a worker unreaped). 0, or -1 with errno.
int trackd_set_child_subreaper(int on);

/// The calling process's nice value (getpriority; 0 if it cannot be read).
int trackd_own_nice(void);
/// 1 when this process may set a thread of its own uid back to its own nice value after raising it: setpriority is
/// not refused by a syscall filter, and RLIMIT_NICE allows it or the process has CAP_SYS_NICE. Else 0.
int trackd_can_restore_nice(void);
/// setpriority(PRIO_PROCESS, tid, nice) for every thread of `pid` (/proc/PID/task, read twice so that a thread
/// started meanwhile is not missed): Linux keeps a nice value per thread, and a new thread inherits its creator's.
/// Returns how many threads were set, or -1 with errno set (the first failure other than a thread that ended).
int trackd_renice_process(pid_t pid, int nice);

/// ThreadSanitizer builds: tell TSan that everything this thread did so far happens before whatever a thread does
/// after a later trackd_tsan_handoff_acquire on the same `tag` (__tsan_release/__tsan_acquire on the tag as an
/// address). For a hand-off whose real ordering lives in an uninstrumented library that TSan cannot see: a value
/// passed to a task through a continuation (TrackClient's SamplePump; TsanMutex.c says why). No-ops otherwise.
void trackd_tsan_handoff_release(uintptr_t tag);
void trackd_tsan_handoff_acquire(uintptr_t tag);

#endif
