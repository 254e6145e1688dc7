// A trackctl command: one type with its declaration (name, summary, synopsis — which names its options —, notes and
// examples), the reading of its parsed options, and `run`. A new command is one such type and its line in
// `Trackctl.commands`; a new option is one declaration in its command's type and its place in the synopsis.

/// What a command is, for parsing and help.
struct CommandSpec: Sendable {
    let name: String
    /// One line for the command list.
    let summary: String
    /// The forms of the command line after `trackctl [--socket PATH] NAME`. They name every argument and option the
    /// command takes, so the option table, the synopsis and the help cannot disagree.
    let forms: [[Usage]]
    /// Behaviour beyond the options' own help, already indented by two spaces.
    let notes: String
    /// Complete command lines.
    let examples: [String]

    /// The options the forms name, in the order they first appear.
    var options: [OptionInfo] {
        var seen: Set<String> = []
        return forms.flatMap { $0.flatMap(\.options) }.filter { seen.insert($0.name).inserted }
    }

    var arguments: [Argument] {
        var seen: Set<String> = []
        return forms.flatMap { $0.flatMap(\.arguments) }.filter { seen.insert($0.name).inserted }
    }

    func option(named name: String) -> OptionInfo? { options.first { $0.name == name } }
}

protocol Command: Sendable {
    static var spec: CommandSpec { get }

    /// A line answered without the command's arguments and without trackd (`read --pixel-format list`).
    static func answersAlone(_ parsed: ParsedArguments) -> Bool

    /// Reads the parsed options and checks how they combine; a bad combination is a usage error.
    init(_ parsed: ParsedArguments) throws(UsageError)

    /// Does the work. A failure exits 1, or 3 when trackd cannot be reached (`Exit.failed`).
    func run(socketPath: String?)
}

extension Command {
    static func answersAlone(_ parsed: ParsedArguments) -> Bool { false }
}

/// The options every command takes, before or after the command's name.
enum Global {
    static let socket = Option<String>.text(
        "--socket", "PATH",
        help: "trackd's socket; default $TRACKD_SOCKET, else $XDG_RUNTIME_DIR/trackd.sock, else /run/trackd/trackd.sock")
    /// Answered before any parsing (so help works whatever else is on the line); `-h` and `trackctl help COMMAND`
    /// are the same.
    static let help = Flag("--help", help: "this help (also -h; `trackctl help COMMAND` is the same)")
    /// Answered before any parsing, as --help (VersionAnswer).
    static let version = Flag("--version", help: "trackctl's version, then the version of trackd at the socket and its GStreamer's")

    static let options: [OptionInfo] = [socket.info, help.info, version.info]

    static func option(named name: String) -> OptionInfo? { options.first { $0.name == name } }
}

enum Trackctl {
    /// Every command, in the order `trackctl --help` lists them.
    static let commands: [any Command.Type] = [
        TracksCommand.self, ReadCommand.self, FramesCommand.self, FrameCommand.self, ContactSheetCommand.self,
        StatusCommand.self,
    ]

    static func command(named name: String) -> (any Command.Type)? { commands.first { $0.spec.name == name } }

    /// The commands that take an option (for the message when another command is given it).
    static func commands(taking option: String) -> [String] {
        commands.map { $0.spec }.filter { $0.option(named: option) != nil }.map { $0.name }
    }
}
