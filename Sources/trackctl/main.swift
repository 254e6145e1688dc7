// trackctl — the command-line client of trackd, built on TrackClient. See `trackctl --help`.
import TrackdProtocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

enum Exit {
    /// Prints the problem, the usage of the command at hand (or the command list) and where to read more; exit 2.
    static func usageError(_ error: UsageError, command: CommandSpec?) -> Never {
        IO.err.write("trackctl: \(error.message)\n" + Help.afterUsageError(command))
        exit(2)
    }

    static func failed(_ error: TrackError) -> Never {
        IO.err.write("trackctl: error \(error.code) (\(error.knownCode.map { "\($0)" } ?? "unknown")): \(error.message)\n")
        exit(error.code == AVErrorCode.daemonUnreachable.rawValue ? 3 : 1)
    }
}

/// Finding the command on a line: only the global options (and their values) may come before its name.
enum Arguments {
    /// The index of the command's name: the first word that is not a global option or its value; another option
    /// before it is a usage error.
    static func commandIndex(in words: [String]) throws(UsageError) -> Int {
        var i = 0
        while i < words.count, words[i].hasPrefix("-") {
            let name = String(words[i].prefix { $0 != "=" })
            guard let option = Global.option(named: name) else {
                let takers = Trackctl.commands(taking: name)
                throw UsageError(takers.isEmpty ? "unknown option \(name)"
                                 : "\(name) goes after the command (an option of \(takers.joined(separator: ", ")))")
            }
            i += option.isFlag || words[i].contains("=") ? 1 : 2
        }
        guard i < words.count else { throw UsageError("no command given") }
        return i
    }

    /// The command named on a line, for help: the first word that is not an option or --socket's value.
    static func commandName(in words: [String]) -> String? {
        var rest = words[...]
        while let word = rest.popFirst() {
            if word == Global.socket.info.name { _ = rest.popFirst() } else if !word.hasPrefix("-") { return word }
        }
        return nil
    }
}

/// Parses the line against `C`'s declaration, checks it, and runs the command.
func run<C: Command>(_: C.Type, _ words: [String]) -> Never {
    let parsed: ParsedArguments
    let command: C
    do throws(UsageError) {
        parsed = try ParsedArguments.parse(words, spec: C.spec)
        if C.answersAlone(parsed) { exit(0) }
        try parsed.checkComplete()
        command = try C(parsed)
    } catch {
        Exit.usageError(error, command: C.spec)
    }
    command.run(socketPath: parsed[Global.socket])
    exit(0)
}

let words = Array(CommandLine.arguments.dropFirst())
if let version = VersionAnswer.answer(words) {
    print(version)
    exit(0)
}
switch Help.answer(words) {
case .success(let text)?:
    print(text)
    exit(0)
case .failure(let error)?:
    Exit.usageError(error, command: nil)
case nil:
    break
}
do throws(UsageError) {
    let index = try Arguments.commandIndex(in: words)
    guard let command = Trackctl.command(named: words[index]) else { throw UsageError("unknown command \(words[index])") }
    var rest = words
    rest.remove(at: index)
    run(command, rest)
} catch {
    Exit.usageError(error, command: nil)
}
