// ThreadSanitizer builds only (make test-sanitize); otherwise empty but for the two hand-off functions at the end,
// which are no-ops.
//
// Swift's Synchronization.Mutex on Linux is a priority-inheritance futex. Its uncontended paths are atomics inlined
// into trackd's (instrumented) code, which TSan sees; its contended paths, _MutexHandle._lockSlow/_unlockSlow/
// _tryLockSlow in the uninstrumented libswiftSynchronization.so, hand the lock over in the kernel (FUTEX_LOCK_PI /
// FUTEX_UNLOCK_PI), so TSan sees no release and no acquire there and reports accesses that the Mutex does order
// (reproduced with 4 threads incrementing a counter under one Mutex: "Swift access race" without these wrappers,
// none with them, and the count exact). These definitions take the place of those three functions for every call
// in this executable (the Swift code calls them by symbol; an object file's definition wins over the shared
// library's), call the library's own (dlsym RTLD_NEXT, resolved at load, before any sandbox), and tell TSan about
// the acquire and the release, on the Mutex's address, as its pthread_mutex interceptors do.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sanitizer/tsan_interface.h>

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
// Swift's calling convention: the handle (the Mutex's storage, passed by address) is `self`, in swiftself.
#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

typedef SWIFTCALL void (*lock_slow_fn)(uint32_t, void *SWIFT_SELF);
typedef SWIFTCALL void (*unlock_slow_fn)(void *SWIFT_SELF);
typedef SWIFTCALL bool (*try_lock_slow_fn)(void *SWIFT_SELF);

SWIFTCALL void trackd_tsan_lock_slow(uint32_t owner, void *SWIFT_SELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void trackd_tsan_unlock_slow(void *SWIFT_SELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL bool trackd_tsan_try_lock_slow(void *SWIFT_SELF handle) __asm__(TRY_LOCK_SLOW);

static lock_slow_fn real_lock_slow;
static unlock_slow_fn real_unlock_slow;
static try_lock_slow_fn real_try_lock_slow;

__attribute__((constructor)) static void trackd_tsan_resolve_mutex(void) {
    real_lock_slow = (lock_slow_fn)dlsym(RTLD_NEXT, LOCK_SLOW);
    real_unlock_slow = (unlock_slow_fn)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    real_try_lock_slow = (try_lock_slow_fn)dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
}

SWIFTCALL void trackd_tsan_lock_slow(uint32_t owner, void *SWIFT_SELF handle) {
    real_lock_slow(owner, handle);
    __tsan_acquire(handle);
}

SWIFTCALL void trackd_tsan_unlock_slow(void *SWIFT_SELF handle) {
    __tsan_release(handle);
    real_unlock_slow(handle);
}

SWIFTCALL bool trackd_tsan_try_lock_slow(void *SWIFT_SELF handle) {
    bool locked = real_try_lock_slow(handle);
    if (locked) __tsan_acquire(handle);
    return locked;
}

// The same for GLib's GMutex, which GStreamer's object locks (GST_OBJECT_LOCK) and GLib's own queues use: a futex
// in the uninstrumented libglib, invisible to TSan, so an object trackd sets up and then hands to GStreamer (a pad
// probe's user data, read later on a streaming thread) looked unsynchronised. Calls from libgstreamer (and any
// other library) to g_mutex_* resolve to these definitions — the executable's own symbols come first — which call
// libglib's and annotate the acquire/release on the GMutex's address; g_cond_wait* release and re-acquire it.
typedef void (*g_mutex_fn)(void *);
typedef int (*g_mutex_try_fn)(void *);
typedef void (*g_cond_wait_fn)(void *, void *);
typedef int (*g_cond_wait_until_fn)(void *, void *, int64_t);

// Resolved on first use (a library's constructor may lock before this executable's constructors run).
static void *next_symbol(void **slot, const char *name) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}
static void *real_g_mutex_lock, *real_g_mutex_unlock, *real_g_mutex_trylock, *real_g_cond_wait,
    *real_g_cond_wait_until;

void g_mutex_lock(void *mutex) {
    ((g_mutex_fn)next_symbol(&real_g_mutex_lock, "g_mutex_lock"))(mutex);
    __tsan_acquire(mutex);
}

void g_mutex_unlock(void *mutex) {
    __tsan_release(mutex);
    ((g_mutex_fn)next_symbol(&real_g_mutex_unlock, "g_mutex_unlock"))(mutex);
}

int g_mutex_trylock(void *mutex) {
    int locked = ((g_mutex_try_fn)next_symbol(&real_g_mutex_trylock, "g_mutex_trylock"))(mutex);
    if (locked) __tsan_acquire(mutex);
    return locked;
}

void g_cond_wait(void *cond, void *mutex) {
    __tsan_release(mutex);
    ((g_cond_wait_fn)next_symbol(&real_g_cond_wait, "g_cond_wait"))(cond, mutex);
    __tsan_acquire(mutex);
}

int g_cond_wait_until(void *cond, void *mutex, int64_t end_time) {
    __tsan_release(mutex);
    int signalled = ((g_cond_wait_until_fn)next_symbol(&real_g_cond_wait_until, "g_cond_wait_until"))(cond, mutex, end_time);
    __tsan_acquire(mutex);
    return signalled;
}
#endif
#endif

// ── A value handed to a Swift task through a continuation ────────────────────────────────────────────────────────
// The Swift runtime (the uninstrumented libswift_Concurrency.so) does tell TSan about a continuation, but only on one
// of its two paths. swift_continuation_resume calls __tsan_release on the task, and a task that had suspended is run
// again by runJobInEstablishedExecutorContext, which calls __tsan_acquire on it: ordered. But when the resume comes
// first — the continuation is resumed before the awaiting task reaches swift_continuation_await — the task finds the
// status Resumed and goes on at once, without an acquire (Swift 6.3.1: the first compare in
// swift_continuation_await jumps straight to the caller's resume point, as does the path where its Pending→Awaited
// compare-and-swap loses to the resumer). The order is real there too (the status word is a release/acquire atomic
// in the runtime), TSan just cannot see it, and reports the task's reads of whatever the resuming thread built
// (docs/SECURITY.md § Sanitizers: "AsyncSamplesTests: a SampleBuffer handed through a continuation").
// A ten-line program reproduces it without trackd: a thread allocates an object, writes a field and resumes; the
// continuation's closure spins (relaxed atomic) until it has, so the await takes the fast path; the task reads the
// field — one TSan report per run; the same program with the resume 200 ms later (the task suspended first): none.
// Interposing swift_continuation_await (as g_mutex_* above) could acquire only before the runtime's own check, so a
// resume landing in between would still be missed; the hand-off is annotated where it happens instead: the
// resuming thread calls trackd_tsan_handoff_release(tag) just before resume, the task trackd_tsan_handoff_acquire
// (tag) just after its await returns, with the same tag.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRACKD_TSAN_HANDOFF 1
#endif
#endif
#include <stdint.h>
#include "CTrackSys.h"

void trackd_tsan_handoff_release(uintptr_t tag) {
#ifdef TRACKD_TSAN_HANDOFF
    __tsan_release((void *)tag);
#else
    (void)tag;
#endif
}

void trackd_tsan_handoff_acquire(uintptr_t tag) {
#ifdef TRACKD_TSAN_HANDOFF
    __tsan_acquire((void *)tag);
#else
    (void)tag;
#endif
}
