import Foundation

/// Everything trackd's command line sets, for both roles: the supervisor parses `trackd [OPTIONS]` into it, and
/// passes each worker the part it needs as `trackd worker [OPTIONS]`, which the worker parses with the same rows
/// (`Options.table`) into its own copy. The initial values are the defaults.
struct Configuration: Sendable {
    // Supervisor only.
    var socketPath: String?
    var workerUser = "nobody"
    var warmWorker = true
    var warmGraceMs: UInt64 = 200
    /// The nice value a warm worker starts with while other workers are running (0: the supervisor's own).
    var warmNice: UInt64 = 19
    var indexCacheBytes = 64 << 20
    /// Seconds a stopping trackd (SIGTERM) gives reads in flight before it ends them (supervisor and worker).
    var stopTimeout: UInt64 = 5
    // Both: the worker's sandbox (its uid/gid come from --worker-user) and the limits.
    var sandbox = WorkerSandbox()
    var limits = ConnectionLimits.defaults
    // Worker only: who it serves — a connection's client and worker-table slot, or a warm worker's wait for one.
    var clientPID: Int32 = 0
    var clientUID: UInt32 = 0
    var slot = -1
    var warm = false
}

/// One option: its name, its value's placeholder (nil for a flag), which role takes it, its help, how a value is
/// checked and set, and the value passed on to a worker.
struct TrackdOption: Sendable {
    enum Role: Sendable {
        /// `trackd` only.
        case supervisor
        /// `trackd`, and passed on to each worker (`value`).
        case both
        /// `trackd worker` only, set by the supervisor (`value`).
        case worker
    }

    let name: String
    let placeholder: String?
    let role: Role
    /// For `--help`; lines after the first are indented by the caller.
    let help: String
    /// "needs …": what a bad or missing value gets told (after the option's name).
    let needs: String
    /// Sets the option from its value (a flag gets ""); false when the value is refused.
    let set: @Sendable (inout Configuration, String) -> Bool
    /// The value a worker gets (nil: not passed, e.g. an unset uid); for `.supervisor` options, nil.
    let value: @Sendable (Configuration) -> String?

    var takesWorker: Bool { role != .supervisor }
    var takesSupervisor: Bool { role != .worker }
}

enum Options {
    enum ParseResult {
        case run(Configuration)
        case help
        case version
        /// A usage error: the message names the argument (`unknown`: no option has that name).
        case refused(String, unknown: Bool)
    }

    /// Parses `arguments` with the options `role` takes (`.supervisor` for `trackd`, `.worker` for `trackd worker`).
    static func parse(_ arguments: [String], as role: TrackdOption.Role) -> ParseResult {
        var configuration = Configuration()
        let rows = table.filter { role == .worker ? $0.takesWorker : $0.takesSupervisor }
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            if role == .supervisor, argument == "-h" || argument == "--help" { return .help }
            if role == .supervisor, argument == "--version" { return .version }
            guard let option = rows.first(where: { $0.name == argument }) else {
                return .refused("unknown argument \(argument)", unknown: true)
            }
            var value = ""
            if option.placeholder != nil {
                guard i + 1 < arguments.count else { return .refused("\(option.name) \(option.needs)", unknown: false) }
                value = arguments[i + 1]
                i += 1
            }
            guard option.set(&configuration, value) else { return .refused("\(option.name) \(option.needs)", unknown: false) }
            i += 1
        }
        return .run(configuration)
    }

    /// A worker's arguments after `trackd worker`: every option a worker takes that has a value in `configuration`.
    static func workerArguments(_ configuration: Configuration) -> [String] {
        table.filter(\.takesWorker).flatMap { option -> [String] in
            option.value(configuration).map { [option.name, $0] } ?? []
        }
    }

    /// `trackd --help`.
    static var usage: String {
        let limitNames = Set(ConnectionLimits.options.map(\.name))
        let rows = table.filter(\.takesSupervisor)
        let general = rows.filter { !limitNames.contains($0.name) }
        let limits = rows.filter { limitNames.contains($0.name) }
        let synopsis = synopsisGroups.map { group in
            wrap(group.filter(\.takesSupervisor).map { "[\($0.name)\($0.placeholder.map { " \($0)" } ?? "")]" })
        }
        return """
            usage: trackd \(synopsis.joined(separator: "\n              ")) [LIMITS]
                   trackd --version | --help
              Serves AVAssetReader-style sample reading to local clients.
            \(general.map { line($0, width: 23) }.joined(separator: "\n"))
            LIMITS (each hit gets the client an Error −11902 naming the limit, and a log line):
            \(limits.map { line($0, width: 31) }.joined(separator: "\n"))
              See docs/SECURITY.md for the worker sandbox, the decode limits and the limits.
            """
    }

    /// The synopsis's options, wrapped under "usage: trackd ".
    private static func wrap(_ words: [String]) -> String {
        var lines = [""]
        for word in words {
            if !lines[lines.count - 1].isEmpty, lines[lines.count - 1].count + word.count > 102 { lines.append("") }
            lines[lines.count - 1] += (lines[lines.count - 1].isEmpty ? "" : " ") + word
        }
        return lines.joined(separator: "\n" + String(repeating: " ", count: 14))
    }

    /// "  --name VALUE  help", the help starting `width` + 3 columns in (on the next line when the flag is longer).
    private static func line(_ option: TrackdOption, width: Int) -> String {
        let flag = option.name + (option.placeholder.map { " \($0)" } ?? "")
        let indent = String(repeating: " ", count: width + 3)
        let help = option.help.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent)
        guard flag.count < width else { return "  \(flag)\n\(indent)\(help)" }
        return "  \(flag.padding(toLength: width, withPad: " ", startingAt: 0)) \(help)"
    }
}
