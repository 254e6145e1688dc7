// libsystemd's daemon API (Debian: libsystemd-dev): sd_listen_fds for socket activation, sd_notify for
// Type=notify. Used instead of hand-written copies of either protocol.
#include <systemd/sd-daemon.h>
