// trackctl — the command-line client of trackd, built on TrackClient. See `trackctl --help`.
import Protocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

struct UsageError: Error { var message: String }

enum Exit {
    /// Prints the problem, the usage of the command at hand (or the command list) and where to read more.
    static func usageError(_ message: String) -> Never {
        var text = "trackctl: \(message)\n"
        if let command = Help.commandInArguments {
            text += Help.usageLines(for: command) + "\nRun `trackctl \(command.name) --help` for its options and examples.\n"
        } else {
            text += "commands: " + Help.commands.map(\.name).joined(separator: ", ")
                + "\nRun `trackctl --help` for usage and examples, `trackctl COMMAND --help` for a command's options.\n"
        }
        fputs(text, IO.err)
        exit(2)
    }

    static func failed(_ error: TrackError) -> Never {
        fputs("trackctl: error \(error.code) (\(error.knownCode.map { "\($0)" } ?? "unknown")): \(error.message)\n", IO.err)
        exit(error.code == AVErrorCode.daemonUnreachable.rawValue ? 3 : 1)
    }
}

/// Options parsed from the command line: flags without values and options with one value each.
struct Options {
    var positional: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []
    /// Every value of a repeatable option, in order.
    var repeated: [String: [String]] = [:]

    static let valued: Set<String> = ["--socket", "--track", "--pixel-format", "--width", "--height", "--output", "--time",
                                      "--audio-format", "--sample-rate", "--channels", "--bit-depth", "--start", "--duration", "--ranges",
                                      "--at", "--index", "--count"]
    static let repeatable: Set<String> = ["--setting"]
    static let boolean: Set<String> = ["--passthrough", "--md5", "--json", "--help", "-h", "--float", "--big-endian",
                                       "--non-interleaved"]

    init(_ args: [String]) {
        var i = 0
        while i < args.count {
            let a = args[i]
            if Self.repeatable.contains(a) {
                guard i + 1 < args.count else { Exit.usageError("\(a) needs a value") }
                repeated[a, default: []].append(args[i + 1])
                i += 2
            } else if Self.valued.contains(a) {
                guard i + 1 < args.count else { Exit.usageError("\(a) needs a value") }
                values[a] = args[i + 1]
                i += 2
            } else if let eq = a.firstIndex(of: "="), Self.repeatable.contains(String(a[..<eq])) {
                repeated[String(a[..<eq]), default: []].append(String(a[a.index(after: eq)...]))
                i += 1
            } else if let eq = a.firstIndex(of: "="), Self.valued.contains(String(a[..<eq])) {
                values[String(a[..<eq])] = String(a[a.index(after: eq)...])
                i += 1
            } else if Self.boolean.contains(a) {
                flags.insert(a)
                i += 1
            } else if a.hasPrefix("--") {
                Exit.usageError("unknown option \(a)")
            } else {
                positional.append(a)
                i += 1
            }
        }
    }

    func int(_ key: String) -> Int? {
        guard let v = values[key] else { return nil }
        guard let n = Int(v), n >= 0 else { Exit.usageError("\(key) takes a non-negative whole number, not \(v)") }
        return n
    }
}

// `trackctl help [COMMAND]`, `trackctl --help`, `trackctl COMMAND --help`: answered before any other parsing, so
// help works whatever else is on the line.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "help" || arguments.contains("--help") || arguments.contains("-h") {
    let named = arguments.first == "help" ? arguments.dropFirst().first.flatMap(Help.command(named:)) : Help.commandInArguments
    if arguments.first == "help", let name = arguments.dropFirst().first, named == nil {
        Exit.usageError("unknown command \(name)")
    }
    print(named.map(Help.text(for:)) ?? Help.overview)
    exit(0)
}
let options = Options(arguments)
if options.values["--pixel-format"] == "list" {
    Commands.printPixelFormats()
    exit(0)
}
guard let command = options.positional.first else { Exit.usageError("no command given") }
let socketPath = options.values["--socket"]
switch command {
case "tracks": Commands.tracks(options, socketPath: socketPath)
case "read": Commands.read(options, socketPath: socketPath)
case "frame": Commands.frame(options, socketPath: socketPath)
case "frames": Commands.frames(options, socketPath: socketPath)
case "status": Commands.status(options, socketPath: socketPath)
case "contact-sheet": ContactSheet.run(options, socketPath: socketPath)
default: Exit.usageError("unknown command \(command)")
}
exit(0)
