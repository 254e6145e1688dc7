import Foundation
import Testing

/// trackctl's command lines as each command declares them: a command takes its own options and the global ones,
/// nothing else; a mistake is a usage error (exit 2) that names it; the help and README's synopsis come from the
/// same declarations. No daemon needed: every line here fails or is answered before trackd is contacted.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TrackctlUsageTests {
    static let commands = TrackctlHelpTests.commands
    /// A socket nobody listens on: a line that got past its usage checks would exit 3, not 2.
    static let nowhere = ["--socket", "/nonexistent/trackd.sock"]

    /// `trackctl COMMAND --help`'s table of arguments and options: option name → whether it takes a value.
    static func options(of command: String) throws -> [String: Bool] {
        let r = try run(Env.trackctl, ["help", command])
        #expect(r.status == 0, "\(command): \(r.stderr)")
        let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(where: { $0 == "options:" || $0 == "arguments and options:" }) else { return [:] }
        var options: [String: Bool] = [:]
        for line in lines[(header + 1)...].prefix(while: { !$0.isEmpty }) where line.hasPrefix("  --") {
            // "  --width N    help…": the option and its placeholder, then at least two spaces.
            let lead = line.dropFirst(2).components(separatedBy: "  ")[0].split(separator: " ")
            options[String(lead[0])] = lead.count > 1
        }
        return options
    }

    /// Every command's options.
    static func allOptions() throws -> [String: [String: Bool]] {
        var all: [String: [String: Bool]] = [:]
        for command in commands { all[command] = try options(of: command) }
        return all
    }

    /// The lines after `title` up to the next empty line, without their two-space indent.
    static func section(_ title: String, of text: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: title) else { return [] }
        return lines[(start + 1)...].prefix { !$0.isEmpty }.map { String($0.dropFirst(2)) }
    }

    func expectUsageError(_ args: [String], naming words: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try run(Env.trackctl, Self.nowhere + args)
        #expect(r.status == 2, "\(args): exit \(r.status), \(r.stderr)", sourceLocation: sourceLocation)
        let message = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
        for word in words {
            #expect(message.hasPrefix("trackctl: ") && message.contains(word), "\(args): \(message)", sourceLocation: sourceLocation)
        }
        #expect(r.stdout.isEmpty, "\(args) wrote to stdout", sourceLocation: sourceLocation)
    }

    @Test func statusRefusesReadsOptions() throws {
        try expectUsageError(["status", "--width", "5"], naming: ["--width"])
        let r = try run(Env.trackctl, Self.nowhere + ["status", "--width", "5"])
        #expect(r.stderr.contains("trackctl [--socket PATH] status [--json]") && r.stderr.contains("Run `trackctl status --help`"))
    }

    /// Each command refuses every option only other commands take, and says whose option it is.
    @Test func everyCommandRefusesOtherCommandsOptions() throws {
        let all = try Self.allOptions()
        for command in Self.commands {
            let own = try #require(all[command])
            for (other, options) in all where other != command {
                for (option, takesValue) in options where own[option] == nil {
                    try expectUsageError([command, option] + (takesValue ? ["1"] : []), naming: [option, other])
                }
            }
        }
    }

    @Test func unknownCommandsAndOptions() throws {
        try expectUsageError(["bogus"], naming: ["unknown command bogus"])
        try expectUsageError(["bogus", "FILE", "--json"], naming: ["unknown command bogus"])
        try expectUsageError(["read", "FILE", "--bogus"], naming: ["unknown option --bogus"])
        try expectUsageError(["--bogus", "read", "FILE"], naming: ["unknown option --bogus"])
        // Only the global options go before the command.
        try expectUsageError(["--json", "status"], naming: ["--json", "after the command"])
        try expectUsageError(["status", "--json=yes"], naming: ["--json takes no value"])
    }

    /// Every option that takes a value, of every command, at the end of the line without one.
    @Test func aMissingValueIsAUsageError() throws {
        for (command, options) in try Self.allOptions() {
            for (option, takesValue) in options where takesValue {
                let file = command == "status" ? [] : ["FILE"]
                try expectUsageError([command] + file + [option], naming: ["\(option) needs a value"])
            }
        }
        try expectUsageError(["status", "--socket"], naming: ["--socket needs a value"])
    }

    @Test func aBadValueIsAUsageError() throws {
        let cases: [(option: String, args: [String])] = [
            ("--width", ["read", "F", "--width", "x", "--height", "2"]), ("--track", ["read", "F", "--track", "video"]),
            ("--start", ["read", "F", "--start", "-1"]), ("--duration", ["read", "F", "--duration", "long"]),
            ("--ranges", ["read", "F", "--ranges", "2-1"]), ("--ranges", ["read", "F", "--ranges", "1"]),
            ("--sample-rate", ["read", "F", "--sample-rate", "fast"]), ("pixel format nope", ["read", "F", "--pixel-format", "nope"]),
            ("--setting", ["read", "F", "--setting", "Width"]), ("--index", ["frames", "F", "--index", "1,x"]),
            ("--at", ["frames", "F", "--at", "1,-2"]), ("--time", ["frame", "F", "--time", "soon", "--output", "o.png"]),
            ("--count", ["contact-sheet", "F", "--output", "o.png", "--count", "101"]),
        ]
        for c in cases { try expectUsageError(c.args, naming: [c.option]) }
    }

    @Test func aMissingArgumentOrRequiredOptionIsAUsageError() throws {
        try expectUsageError(["tracks"], naming: ["tracks takes exactly one FILE"])
        try expectUsageError(["read", "--md5"], naming: ["read takes exactly one FILE"])
        try expectUsageError(["frames", "--at", "1"], naming: ["frames takes exactly one FILE"])
        try expectUsageError(["frames", "F"], naming: ["frames needs exactly one of --at"])
        try expectUsageError(["frame", "F", "--time", "1"], naming: ["frame needs --output OUT.png"])
        try expectUsageError(["frame", "F", "--output", "o.png"], naming: ["frame needs --time SECONDS"])
        try expectUsageError(["contact-sheet", "F"], naming: ["contact-sheet needs --output SHEET.png"])
        try expectUsageError(["status", "F"], naming: ["status takes no arguments"])
    }

    /// `trackctl help read` lists read's options, and only read's.
    @Test func helpListsTheCommandsOwnOptions() throws {
        let read = try Self.options(of: "read")
        for option in ["--track", "--pixel-format", "--width", "--height", "--passthrough", "--start", "--duration", "--ranges",
                       "--output", "--md5", "--json", "--audio-format", "--sample-rate", "--channels", "--bit-depth", "--float",
                       "--big-endian", "--non-interleaved", "--setting"] {
            #expect(read[option] != nil, "read's help lists \(option)")
        }
        for option in ["--time", "--count", "--at", "--index", "--socket"] { #expect(read[option] == nil, "read's help lists \(option)") }
        #expect(try Self.options(of: "status") == ["--json": false])
        #expect(try Self.options(of: "frame") == ["--time": true, "--track": true, "--rotation": true, "--output": true])
        #expect(try Self.options(of: "contact-sheet") == ["--output": true, "--count": true, "--track": true, "--rotation": true])
    }

    /// Help is answered whatever else is on the line, and each command's help shows its synopsis and options.
    @Test(arguments: TrackctlHelpTests.commands) func helpOfEachCommand(_ command: String) throws {
        for args in [[command, "--help"], [command, "--frobnicate", "-h"], ["help", command]] {
            let r = try run(Env.trackctl, args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            let usage = Self.section("usage:", of: r.text)
            #expect(!usage.isEmpty && usage.allSatisfy { $0.hasPrefix("trackctl [--socket PATH] \(command) ") || $0.hasPrefix(" ") })
            let synopsis = Self.section("synopsis:", of: try run(Env.trackctl, ["--help"]).text)
            #expect(usage.allSatisfy(synopsis.contains), "\(command)'s usage is its part of the synopsis")
            #expect(r.text.contains("global options (before or after the command):\n  --socket PATH"))
        }
    }

    /// README's trackctl synopsis is `trackctl --help`'s, line for line.
    @Test func readmeSynopsisIsTheHelpsSynopsis() throws {
        let readme = try String(contentsOfFile: FileManager.default.currentDirectoryPath + "/README.md", encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## trackctl\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        let ours = block.split(separator: "\n").map(String.init)
        let synopsis = Self.section("synopsis:", of: try run(Env.trackctl, ["--help"]).text)
        #expect(synopsis.count > 6)
        #expect(ours == synopsis, "README.md's trackctl block differs from `trackctl --help`'s synopsis:\n\(synopsis.joined(separator: "\n"))")
        for command in Self.commands { #expect(synopsis.contains { $0.hasPrefix("trackctl [--socket PATH] \(command) ") }) }
    }
}
