// libseccomp (Debian: libseccomp-dev): builds the worker's seccomp-BPF allowlist (CSandbox) instead of
// hand-written BPF. Its rule functions are variadic, so only the C shim CSandbox calls them.
#include <seccomp.h>
