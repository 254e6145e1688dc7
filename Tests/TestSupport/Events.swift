import Foundation
import Testing

/// One event record of a trackd process (`<7>trackd[PID]: event=NAME key=value …`, written with TRACKD_EVENTS=1;
/// Sources/trackd/Events.swift names them, docs/ARCHITECTURE.md "Event records" lists them). Tests assert on these,
/// not on the wording of the log lines beside them.
public struct DaemonEvent: Sendable, CustomStringConvertible {
    /// "trackd" (the supervisor) or "trackd-worker".
    public let process: String
    public let pid: Int32
    public let name: String
    public let fields: [String: String]

    public subscript(_ key: String) -> String? { fields[key] }
    public func int(_ key: String) -> Int? { fields[key].flatMap { Int($0) } }
    public var description: String { "\(process)[\(pid)] \(name) \(fields.sorted { $0.key < $1.key })" }

    /// The record on one log line, or nil for any other line.
    init?(line: Substring) {
        guard let close = line.firstIndex(of: ">"), let open = line.firstIndex(of: "["),
              let end = line.range(of: "]: event=") else { return nil }
        guard let pid = Int32(line[line.index(after: open)..<end.lowerBound]) else { return nil }
        process = String(line[line.index(after: close)..<open])
        self.pid = pid
        var pairs = line[end.upperBound...].split(separator: " ")
        name = String(pairs.removeFirst())
        var fields: [String: String] = [:]
        for pair in pairs {
            guard let eq = pair.firstIndex(of: "=") else { continue }
            fields[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        self.fields = fields
    }
}

public enum DaemonEvents {
    /// The record names Sources/trackd/Events.swift writes (its `("name", [fields])` pairs). Asking for any other
    /// name is a test's mistake, recorded as an issue: a misspelt name would make "no such record" pass unseen.
    public static let names: Set<String> = {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/trackd/Events.swift")
        let text = (try? String(contentsOf: source, encoding: .utf8)) ?? ""
        return Set(text.matches(of: #/\("([a-z-]+)", \[/#).map { String($0.output.1) })
    }()

    /// Every record in a log, in the order written.
    public static func parse(_ log: String) -> [DaemonEvent] {
        log.split(separator: "\n").compactMap(DaemonEvent.init(line:))
    }

    /// The records named `name` (and matching `filter`) in the log at `logPath` now. A worker writes a record
    /// before it answers the request that caused it, so a record of a reply's work is there once the reply is;
    /// any other record (the supervisor's: a worker's end, a refusal; a worker's after its answer) may lag: wait.
    public static func read(_ logPath: String, _ name: String, where filter: (DaemonEvent) -> Bool = { _ in true })
        -> [DaemonEvent] {
        if !names.contains(name) { Issue.record("trackd writes no event record named '\(name)' (Sources/trackd/Events.swift)") }
        return parse(DaemonLog.read(logPath)).filter { $0.name == name && filter($0) }
    }

    /// Waits until the log at `logPath` holds at least `count` records named `name` matching `filter`, for at most
    /// `timeout` (generous: the machine may be loaded); returns those records then (fewer than `count` when the
    /// deadline passed, which the caller's assertion reports).
    public static func wait(_ logPath: String, _ name: String, count: Int = 1, timeout: Duration = defaultWaitTimeout,
                            where filter: (DaemonEvent) -> Bool = { _ in true }) -> [DaemonEvent] {
        var found: [DaemonEvent] = []
        waitUntil(timeout: timeout) {
            found = read(logPath, name, where: filter)
            return found.count >= count
        }
        return found
    }
}

extension Daemon {
    /// This daemon's records named `name` now (see `DaemonEvents.read` for which may lag).
    public func events(_ name: String, where filter: (DaemonEvent) -> Bool = { _ in true }) -> [DaemonEvent] {
        DaemonEvents.read(logPath, name, where: filter)
    }

    /// Waits (at most `timeout`) for `count` of this daemon's records named `name`; see `DaemonEvents.wait`.
    public func waitForEvents(_ name: String, count: Int = 1, timeout: Duration = defaultWaitTimeout,
                              where filter: (DaemonEvent) -> Bool = { _ in true }) -> [DaemonEvent] {
        DaemonEvents.wait(logPath, name, count: count, timeout: timeout, where: filter)
    }
}
