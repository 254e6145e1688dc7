#define _GNU_SOURCE
#include "CSandbox.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

// Sanitized builds (make test-sanitize: swift build --sanitize=thread|address) only; the normal build has none of
// this. The sanitizer runtime does three things lazily, at its first report, that the filter refuses: it opens
// its log_path file (openat), reads /proc/self/maps to name the modules in stack traces (openat), and starts
// llvm-symbolizer (fork + execve: the filter kills the worker). A worker's report would then be lost, or the
// worker killed by SIGSYS in the middle of it. So, before the filter, the worker has the runtime do all three
// now; the filter itself is the same as in the normal build. (Also: no RLIMIT_AS, and no leak check at a
// sandboxed worker's exit; both below.)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TRACKD_SANITIZED 1
#endif
#endif
#ifdef TRACKD_SANITIZED
#include <sanitizer/common_interface_defs.h>

#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>

// LeakSanitizer's check at exit stops the world with a ptrace'ing task it clones without CLONE_THREAD: the
// filter kills the worker for that (SIGSYS, counted as a crash). A sandboxed worker therefore skips the check
// (LSan asks this hook); the supervisor and the test processes, which link the same code, still have it.
static volatile int sandboxed;
int __lsan_is_turned_off(void) { return sandboxed; }
#endif

static void prepare_sanitizer_for_the_filter(void) {
#if __has_feature(address_sanitizer)
    sandboxed = 1;
#endif
    __sanitizer_sandbox_arguments args = { .coverage_sandboxed = 0, .coverage_fd = -1, .coverage_max_block_size = 0 };
    __sanitizer_sandbox_on_notify(&args);  // caches the module list (/proc/self/maps)
    (void)__sanitizer_get_report_path();   // opens log_path's file for this pid (null without log_path)
    char symbol[256];                      // starts the symbolizer process (kept for later reports)
    __sanitizer_symbolize_pc(__builtin_return_address(0), "%p %F %L", symbol, sizeof symbol);
}
#endif

static int fail(char *error, size_t size, const char *format, ...) {
    int saved = errno;
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(error, size, format, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < size && saved != 0) snprintf(error + n, size - (size_t)n, ": %s", strerror(saved));
    errno = saved;
    return -1;
}

static int set_limit(int resource, uint64_t soft, uint64_t hard) {
    struct rlimit r = { .rlim_cur = (rlim_t)soft, .rlim_max = (rlim_t)hard };
    struct rlimit old;
    // Never raise a hard limit someone else lowered (that would fail without CAP_SYS_RESOURCE anyway).
    if (getrlimit(resource, &old) == 0 && old.rlim_max != RLIM_INFINITY) {
        if (r.rlim_max > old.rlim_max) r.rlim_max = old.rlim_max;
        if (r.rlim_cur > r.rlim_max) r.rlim_cur = r.rlim_max;
    }
    return setrlimit(resource, &r);
}

// The allowlist. Each group names the reason the worker needs it (docs/SECURITY.md repeats this list).
static const int allowed[] = {
    // I/O on descriptors the worker already holds: the connection (recvmsg/sendmsg), the client's media fd
    // (pread64), the memfd pools, stderr (write), GLib's wakeup pipes/eventfds.
    SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(pread64),
    SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(shutdown),
    SCMP_SYS(getsockopt), SCMP_SYS(close), SCMP_SYS(lseek), SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup3),
    SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
    // Pools: sealed memfds (memfd_create + ftruncate + fcntl(F_ADD_SEALS)) mapped into memory.
    SCMP_SYS(memfd_create), SCMP_SYS(ftruncate),
    // Memory: malloc, thread stacks, GStreamer buffers. mmap and mprotect are allowed only without PROT_EXEC
    // (W^X, add_write_xor_execute below).
    SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(brk), SCMP_SYS(membarrier),
    // Threads (streaming threads, libav's frame threads, the output pullers): glibc's pthread_create uses clone3,
    // whose flags seccomp cannot inspect, so clone3 answers ENOSYS (below) and glibc falls back to clone, which
    // is allowed only with CLONE_THREAD (below).
    SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(get_robust_list), SCMP_SYS(rseq), SCMP_SYS(set_tid_address),
    SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(gettid), SCMP_SYS(getpid), SCMP_SYS(getppid), SCMP_SYS(tgkill),
    SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity), SCMP_SYS(sched_getparam), SCMP_SYS(sched_getscheduler),
    SCMP_SYS(sched_get_priority_min), SCMP_SYS(sched_get_priority_max), SCMP_SYS(getpriority),
    // Signals (SIGPIPE ignored, Swift/glibc crash handling, thread cancellation).
    SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
    SCMP_SYS(restart_syscall),
    // Time and waiting: GLib/GStreamer clocks and timeouts, GLib's main-context polling, semaphores.
    SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep), SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl),
    SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(eventfd2), SCMP_SYS(pipe2),
    // Harmless information: own ids, resource usage, randomness (GLib hash seeds, Swift hashing), kernel version.
    SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(getresuid),
    SCMP_SYS(getresgid), SCMP_SYS(getrusage), SCMP_SYS(getrlimit), SCMP_SYS(prlimit64), SCMP_SYS(uname),
    SCMP_SYS(sysinfo), SCMP_SYS(getrandom),
};

// Calls that only an exploit would make: the process is killed, not just refused.
static const int killed[] = {
    SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(mount), SCMP_SYS(umount2),
    SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(init_module),
    SCMP_SYS(finit_module), SCMP_SYS(delete_module), SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load),
    SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(keyctl), SCMP_SYS(add_key),
    SCMP_SYS(request_key), SCMP_SYS(reboot), SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(setuid),
    SCMP_SYS(setgid), SCMP_SYS(setreuid), SCMP_SYS(setregid), SCMP_SYS(setresuid), SCMP_SYS(setresgid),
    SCMP_SYS(setgroups), SCMP_SYS(setfsuid), SCMP_SYS(setfsgid), SCMP_SYS(capset),
};

// W^X, as systemd's MemoryDenyWriteExecute= (seccomp_memory_deny_write_execute in its seccomp-util.c) but
// stricter, because every library and plugin the worker will run is loaded before the filter (docs/SECURITY.md,
// "Preloading") and openat is refused after it: no code is mapped after this point, so no new executable memory
// is needed at all. systemd refuses mmap with PROT_WRITE|PROT_EXEC together, every mprotect/pkey_mprotect with
// PROT_EXEC (seccomp cannot see whether the pages are anonymous) and shmat with SHM_EXEC. Here mmap with
// PROT_EXEC is refused too, whatever else it asks: an executable mapping of a descriptor the worker holds — a
// memfd it wrote, or the client's (hostile) media file — would run bytes an attacker chose without ever being
// writable and executable at once. shmat and pkey_mprotect are not allowed at all (the default EPERM).
// Refused with EPERM, like systemd's rule. GStreamer's ORC, the one user of run-time generated code, compiles what
// the worker will need before this (Rehearsal.compileConversions), and trackd_orc_seal (OrcSeal.c) then makes
// that code private read+exec with no writable alias and every later compile fall back to ORC's C code: after
// the filter ORC maps nothing and writes no code.
static int add_write_xor_execute(scmp_filter_ctx ctx) {
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    return rc;
}

static int install_filter(char *error, size_t size) {
    // Everything not listed fails with EPERM: GStreamer's and GLib's optional calls (openat of a lazily loaded
    // file, socket, ioctl on a device) fail cleanly instead of killing a worker mid-decode.
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (ctx == NULL) return fail(error, size, "seccomp_init failed");
    int rc = 0;
    // Apply to every thread GStreamer has already started, not only the calling one.
    if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    for (size_t i = 0; rc == 0 && i < sizeof allowed / sizeof allowed[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
    for (size_t i = 0; rc == 0 && i < sizeof killed / sizeof killed[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, killed[i], 0);
    // Threads yes, processes no.
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0) rc = add_write_xor_execute(ctx);
    // GstPoll (every GstBus, the system clock) makes its wakeup pair with socketpair(AF_UNIX) in GStreamer 1.22:
    // an unnamed, unconnected-to-anything pair, so it is allowed for AF_UNIX only (socket() stays refused).
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
    // prctl: only naming threads (GLib/GStreamer name their threads).
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME));
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0) {
        errno = -rc;
        return fail(error, size, "installing the seccomp filter failed");
    }
    return 0;
}

int trackd_sandbox_enter(const trackd_sandbox_config *c, char *error, size_t size) {
    errno = 0;
    // First, while /proc/self/maps can still be read: no more ORC compiles, its code read-only (OrcSeal.c).
    int sealed = 0;
    if (trackd_orc_seal(&sealed) != 0) return fail(error, size, "sealing ORC's generated code failed");
#ifdef TRACKD_SANITIZED
    // Sanitized builds: the shadow memory ThreadSanitizer/AddressSanitizer reserve at start-up is terabytes of
    // address space, so any RLIMIT_AS would make every later allocation fail. Not set (the only difference).
    uint64_t address_space_bytes = 0;
#else
    uint64_t address_space_bytes = c->address_space_bytes;
#endif
    if (address_space_bytes != 0 && set_limit(RLIMIT_AS, address_space_bytes, address_space_bytes) != 0)
        return fail(error, size, "setrlimit(RLIMIT_AS, %llu)", (unsigned long long)c->address_space_bytes);
    // SIGXCPU at the soft limit (default action: terminate), SIGKILL at the hard limit 5 s later.
    if (c->cpu_seconds != 0 && set_limit(RLIMIT_CPU, c->cpu_seconds, c->cpu_seconds + 5) != 0)
        return fail(error, size, "setrlimit(RLIMIT_CPU, %llu)", (unsigned long long)c->cpu_seconds);
    if (c->open_files != 0 && set_limit(RLIMIT_NOFILE, c->open_files, c->open_files) != 0)
        return fail(error, size, "setrlimit(RLIMIT_NOFILE, %llu)", (unsigned long long)c->open_files);
    if (set_limit(RLIMIT_CORE, 0, 0) != 0) return fail(error, size, "setrlimit(RLIMIT_CORE, 0)");
    if (c->drop_privileges) {
        if (setgroups(0, NULL) != 0) return fail(error, size, "setgroups([])");
        if (setresgid(c->gid, c->gid, c->gid) != 0) return fail(error, size, "setresgid(%u)", c->gid);
        if (setresuid(c->uid, c->uid, c->uid) != 0) return fail(error, size, "setresuid(%u)", c->uid);
        if (c->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0 || getuid() == 0 || geteuid() == 0)) {
            errno = 0;
            return fail(error, size, "privileges could be regained after dropping to uid %u", c->uid);
        }
        if (c->gid != 0 && (setgid(0) == 0 || getegid() == 0)) {
            errno = 0;
            return fail(error, size, "group privileges could be regained after dropping to gid %u", c->gid);
        }
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(error, size, "prctl(PR_SET_NO_NEW_PRIVS)");
#ifdef TRACKD_SANITIZED
    prepare_sanitizer_for_the_filter();
#endif
    return install_filter(error, size);
}
