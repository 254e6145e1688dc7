import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// stderr logging with sd-daemon priority prefixes (`<3>` error … `<7>` debug), so journald files each line
/// at its level when trackd runs under systemd, and a terminal still reads it.
enum Log {
    enum Level: Int { case error = 3, warning = 4, notice = 5, info = 6, debug = 7 }

    private static let roleName = Mutex("trackd")

    /// "trackd" or "trackd-worker": set once, at start.
    static var role: String {
        get { roleName.withLock { $0 } }
        set { roleName.withLock { $0 = newValue } }
    }

    static func write(_ level: Level, _ message: String) {
        writeToStandardError("<\(level.rawValue)>\(role)[\(getpid())]: \(message)\n")
    }

    static func error(_ m: String) { write(.error, m) }
    static func warning(_ m: String) { write(.warning, m) }
    static func notice(_ m: String) { write(.notice, m) }
    static func info(_ m: String) { write(.info, m) }
}
