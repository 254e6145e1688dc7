import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Where trackd listens unless told otherwise; trackd and its clients resolve it the same way:
/// `$TRACKD_SOCKET`, else `$XDG_RUNTIME_DIR/trackd.sock`, else `/run/trackd/trackd.sock`.
public enum SocketPath {
    public static func resolveDefault() -> String {
        if let p = environmentVariable("TRACKD_SOCKET"), !p.isEmpty { return p }
        if let d = environmentVariable("XDG_RUNTIME_DIR"), !d.isEmpty { return d + "/trackd.sock" }
        return "/run/trackd/trackd.sock"
    }
}
