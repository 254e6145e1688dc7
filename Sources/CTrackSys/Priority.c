// A warm worker's CPU priority: it starts at a high nice value while other workers decode, so that its start-up
// (exec, linking, GStreamer, plugins, ORC, the rehearsal) runs on CPU time those reads leave idle, and it is set
// back to the supervisor's own priority when it takes a connection (or when no read is left to compete with).
#define _GNU_SOURCE
#include "CTrackSys.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int has_cap_sys_nice(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0}};
    if (syscall(SYS_capget, &header, data) != 0) return 0;
    return (data[CAP_SYS_NICE / 32].effective >> (CAP_SYS_NICE % 32)) & 1u;
}

int trackd_own_nice(void) {
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    return errno != 0 ? 0 : nice;
}

int trackd_can_restore_nice(void) {
    int own = trackd_own_nice();
    // Setting the value it already has needs no privilege: this fails only where a syscall filter refuses
    // setpriority (systemd's SystemCallFilter=~@resources).
    if (setpriority(PRIO_PROCESS, 0, own) != 0) return 0;
    struct rlimit limit;
    if (getrlimit(RLIMIT_NICE, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= (rlim_t)(20 - own)))
        return 1;
    return has_cap_sys_nice();
}

int trackd_renice_process(pid_t pid, int nice) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    int reniced = 0, failure = 0;
    // Twice: a thread started while the first pass ran inherits its creator's old value.
    for (int pass = 0; pass < 2; pass++) {
        DIR *dir = opendir(path);
        if (dir == NULL) return -1;
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            char *end;
            long tid = strtol(entry->d_name, &end, 10);
            if (end == entry->d_name || *end != '\0') continue;
            if (setpriority(PRIO_PROCESS, (id_t)tid, nice) == 0) {
                if (pass == 0) reniced++;
            } else if (errno != ESRCH && failure == 0) {
                failure = errno;
            }
        }
        closedir(dir);
    }
    if (failure != 0) {
        errno = failure;
        return -1;
    }
    return reniced;
}
