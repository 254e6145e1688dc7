import CSystemd

/// libsystemd's notification calls the supervisor makes (sd_notify(3), sd_watchdog_enabled(3)), taking and returning
/// Swift values: the C strings and out-parameters stay in here.
enum Systemd {
    /// Sends `state` ("READY=1", "STOPPING=1\nSTATUS=…", "WATCHDOG=1") to the service manager; nothing happens when
    /// trackd was not started by systemd ($NOTIFY_SOCKET unset).
    static func notify(_ state: String) {
        _ = unsafe sd_notify(0, state)
    }

    /// The interval systemd's WatchdogSec= asks to be pinged within (µs), or nil when it asks for none.
    static func watchdogMicroseconds() -> UInt64? {
        var usec: UInt64 = 0
        return unsafe sd_watchdog_enabled(0, &usec) > 0 && usec > 0 ? usec : nil
    }
}
