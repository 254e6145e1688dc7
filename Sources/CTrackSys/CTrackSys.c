#define _GNU_SOURCE
#include "CTrackSys.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// The most descriptors one message may carry on either side; the protocol negotiates a smaller limit.
#define TRACKD_MAX_FDS_HARD 16

int trackd_required_seals(void) { return F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL; }

int trackd_memfd_sealed(const char *name, uint64_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, trackd_required_seals()) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int trackd_memfd_get_seals(int fd) { return fcntl(fd, F_GET_SEALS); }

int trackd_memfd_unsealed(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int trackd_memfd_seal_contents(int fd) {
    return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
}

ssize_t trackd_send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    if (nfds < 0 || nfds > TRACKD_MAX_FDS_HARD) { errno = EINVAL; return -1; }
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    union { char buf[CMSG_SPACE(sizeof(int) * TRACKD_MAX_FDS_HARD)]; struct cmsghdr align; } ctl;
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

ssize_t trackd_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int *truncated) {
    *nfds = 0;
    *truncated = 0;
    if (max_fds < 0 || max_fds > TRACKD_MAX_FDS_HARD) { errno = EINVAL; return -1; }
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    union { char buf[CMSG_SPACE(sizeof(int) * TRACKD_MAX_FDS_HARD)]; struct cmsghdr align; } ctl;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)(max_fds > 0 ? max_fds : 1)) };
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *received = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < count; i++) {
            if (*nfds < max_fds) fds[(*nfds)++] = received[i];
            else { close(received[i]); *truncated = 1; }
        }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
        // The kernel dropped descriptors it could not fit: the stream's fd accounting is now unknowable.
        for (int i = 0; i < *nfds; i++) close(fds[i]);
        *nfds = 0;
        *truncated = 1;
    }
    return n;
}

int trackd_peer_credentials(int sock, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int trackd_fd_is_regular(int fd, int *is_regular, uint64_t *size) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    *is_regular = S_ISREG(st.st_mode) ? 1 : 0;
    *size = (uint64_t)st.st_size;
    return 0;
}

int trackd_accept_cloexec(int listen_fd) { return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC); }

int trackd_errno(void) { return errno; }

pid_t trackd_spawn_with_fds(const char *path, char *const argv[], char *const envp[], const int *fds, int nfds) {
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    int rc = 0;
    // dup2 clears FD_CLOEXEC on the target, so 3, 4, … survive exec even though the sources are CLOEXEC.
    // A source must not be an earlier action's target: the supervisor's listener holds fd 3 (so a connection is
    // never 3) and it keeps the statistics fd at 100 or above (see SharedStatistics), so no source is 3 or 4.
    for (int i = 0; i < nfds && rc == 0; i++) rc = posix_spawn_file_actions_adddup2(&actions, fds[i], 3 + i);
    // The supervisor blocks the signals it takes with sigwait; a worker starts with none blocked.
    posix_spawnattr_t attr;
    if (rc == 0) rc = posix_spawnattr_init(&attr);
    else { posix_spawn_file_actions_destroy(&actions); errno = rc; return -1; }
    sigset_t none;
    sigemptyset(&none);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0) rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, path, &actions, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) { errno = rc; return -1; }
    return pid;
}

uint64_t trackd_atomic_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
void trackd_atomic_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
uint64_t trackd_atomic_add_u64(uint64_t *p, uint64_t v) { return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST); }
uint64_t trackd_atomic_sub_u64(uint64_t *p, uint64_t v) { return __atomic_sub_fetch(p, v, __ATOMIC_SEQ_CST); }

int trackd_socket_unread(int sock) {
    int n = 0;
    if (ioctl(sock, FIONREAD, &n) != 0) return -1;
    return n;
}

uint64_t trackd_monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int trackd_move_fd(int from, int to) { return dup3(from, to, 0); }

int trackd_set_thread_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }

int trackd_set_child_subreaper(int on) { return prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0, 0, 0, 0); }
