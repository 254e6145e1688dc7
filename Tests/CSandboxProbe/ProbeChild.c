#define _GNU_SOURCE
#include "ProbeChild.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int trackd_probe_fork(void (*body)(void *result), void *result, size_t size, int *signal_number, char *error,
                      size_t error_size) {
    memset(result, 0, size);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        close(fds[0]);
        void *r = calloc(1, size);
        if (r != NULL) {
            body(r);
            (void)!write(fds[1], r, size);  // write is allowed by the filter
        }
        _exit(0);
    }
    close(fds[1]);
    ssize_t n;
    do { n = read(fds[0], result, size); } while (n < 0 && errno == EINTR);
    close(fds[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (WIFSIGNALED(status)) *signal_number = WTERMSIG(status);
    if (n != (ssize_t)size && *signal_number == 0) snprintf(error, error_size, "the child reported %zd bytes", n);
    return 0;
}
