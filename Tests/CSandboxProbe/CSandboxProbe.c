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

#include "ProbeChild.h"

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

// The child's side of trackd_probe_in_sandbox: enters the sandbox, then tries the operation. The operation is
// per thread: swift-testing runs the probes' test cases in parallel, and with one global a case's child could run
// another case's operation (set by a second thread between this thread's store and its fork) — memfd_rx reported
// as allowed, once in a full run. The child is a copy of the thread that stored it.
static _Thread_local trackd_probe_operation probe_operation;
static void probe(void *result) {
    trackd_probe_result *r = result;
    trackd_sandbox_config config = { 0 };
    if (trackd_sandbox_enter(&config, r->error, sizeof r->error) != 0) return;
    r->entered = 1;
    errno = 0;
    int rc = operate(probe_operation);
    r->succeeded = rc == 0;
    r->error_number = rc == 0 ? 0 : errno;
    if (rc == -2) snprintf(r->error, sizeof r->error, "the probe's set-up failed (errno %d)", errno);
}

int trackd_probe_in_sandbox(trackd_probe_operation operation, trackd_probe_result *result) {
    probe_operation = operation;  // this thread's, read by the child it forks
    return trackd_probe_fork(probe, result, sizeof *result, &result->signal_number, result->error, sizeof result->error);
}
