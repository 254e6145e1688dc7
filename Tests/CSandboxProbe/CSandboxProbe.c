#define _GNU_SOURCE
#include "CSandboxProbe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CSandbox.h>

static int operate(trackd_probe_operation operation) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = MAP_FAILED;
    switch (operation) {
    case trackd_probe_mmap_rw:
        return mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0;
    case trackd_probe_mmap_rwx:
        return mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED
            ? -1 : 0;
    case trackd_probe_mmap_rx_anonymous:
        return mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0;
    case trackd_probe_mprotect_rw_to_rx:
    case trackd_probe_mprotect_rw_to_r:
    case trackd_probe_pkey_mprotect_rx:
        p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return -2;
        memset(p, 0xC3, page);  // x86 `ret`: what a JIT would write
        if (operation == trackd_probe_mprotect_rw_to_r) return mprotect(p, page, PROT_READ);
        if (operation == trackd_probe_mprotect_rw_to_rx) return mprotect(p, page, PROT_READ | PROT_EXEC);
        return (int)syscall(SYS_pkey_mprotect, p, page, PROT_READ | PROT_EXEC, -1);
    case trackd_probe_mmap_memfd_rx:
    case trackd_probe_mmap_memfd_rw_shared: {
        int fd = memfd_create("probe", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)page) != 0) return -2;
        int prot = operation == trackd_probe_mmap_memfd_rx ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE;
        int flags = operation == trackd_probe_mmap_memfd_rx ? MAP_PRIVATE : MAP_SHARED;
        return mmap(NULL, page, prot, flags, fd, 0) == MAP_FAILED ? -1 : 0;
    }
    }
    errno = EINVAL;
    return -2;
}

int trackd_probe_in_sandbox(trackd_probe_operation operation, trackd_probe_result *result) {
    memset(result, 0, sizeof *result);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        close(fds[0]);
        trackd_probe_result r;
        memset(&r, 0, sizeof r);
        trackd_sandbox_config config = { 0 };
        if (trackd_sandbox_enter(&config, r.error, sizeof r.error) == 0) {
            r.entered = 1;
            errno = 0;
            int rc = operate(operation);
            r.succeeded = rc == 0;
            r.error_number = rc == 0 ? 0 : errno;
            if (rc == -2) snprintf(r.error, sizeof r.error, "the probe's set-up failed (errno %d)", errno);
        }
        (void)!write(fds[1], &r, sizeof r);  // write is allowed by the filter
        _exit(0);
    }
    close(fds[1]);
    ssize_t n;
    do { n = read(fds[0], result, sizeof *result); } while (n < 0 && errno == EINTR);
    close(fds[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (WIFSIGNALED(status)) result->signal_number = WTERMSIG(status);
    if (n != (ssize_t)sizeof *result && result->signal_number == 0) {
        snprintf(result->error, sizeof result->error, "the child reported %zd bytes", n);
    }
    return 0;
}
