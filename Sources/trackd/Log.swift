#if canImport(Glibc)
import Glibc
#endif

/// stderr logging with sd-daemon priority prefixes (`<3>` error … `<7>` debug), so journald files each line
/// at its level when trackd runs under systemd, and a terminal still reads it.
enum Log {
    enum Level: Int { case error = 3, warning = 4, notice = 5, info = 6, debug = 7 }

    nonisolated(unsafe) static var role = "trackd"

    static func write(_ level: Level, _ message: String) {
        let line = "<\(level.rawValue)>\(role)[\(getpid())]: \(message)\n"
        line.withCString { p in _ = Glibc.write(2, p, strlen(p)) }
    }

    static func error(_ m: String) { write(.error, m) }
    static func warning(_ m: String) { write(.warning, m) }
    static func notice(_ m: String) { write(.notice, m) }
    static func info(_ m: String) { write(.info, m) }
}
