import CTrackSys

/// A hand-off ThreadSanitizer cannot see by itself (a continuation resumed before its task has suspended,
/// CTrackSys/TsanMutex.c): `release` on the giving thread before the hand-off and `acquire` on the taking side
/// after it, on the same tag, order the two for TSan. No-ops outside a TSan build.
public enum TsanHandoff {
    public static func release(_ tag: UInt) { trackd_tsan_handoff_release(tag) }
    public static func acquire(_ tag: UInt) { trackd_tsan_handoff_acquire(tag) }
}
