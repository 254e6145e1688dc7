// trackctl's help, made from the commands' declarations: `trackctl --help` (the command list, every command's
// synopsis, the global options, an example each), `trackctl COMMAND --help` and the usage printed with a usage error.

enum Help {
    static let exitNote = "exit status: 0 success, 1 the reader or open failed, 2 usage error, 3 trackd unreachable"
    static let width = 118
    /// Where an option's help starts on its row.
    static let column = 26

    /// `trackctl --help`.
    static var overview: String {
        let specs = Trackctl.commands.map { $0.spec }
        let nameWidth = specs.map(\.name.count).max() ?? 0
        var lines = [
            "usage: trackctl [--socket PATH] COMMAND [ARGS] [--help]", "       trackctl [--socket PATH] --version", "",
            "Reads media through trackd (AVAssetReader for Linux).", "", "commands:",
        ]
        lines += specs.map { "  \($0.name.padding(nameWidth + 2))\($0.summary)" }
        lines += ["", "synopsis:"] + Synopsis.all.map { "  " + $0 }
        lines += ["", "global options (before or after the command):"] + rows(Global.options)
        lines += ["", "examples:"] + specs.compactMap { $0.examples.first }.map { "  " + $0 }
        lines += ["", "Run `trackctl COMMAND --help` for a command's options and more examples.", exitNote]
        return lines.joined(separator: "\n")
    }

    /// `trackctl COMMAND --help`.
    static func text(for spec: CommandSpec) -> String {
        var lines = usage(spec) + ["", "\(spec.name): \(spec.summary)"]
        let arguments = spec.arguments.map { row($0.name, $0.help) }
        if !arguments.isEmpty || !spec.options.isEmpty {
            lines += ["", arguments.isEmpty ? "options:" : "arguments and options:"] + arguments.flatMap { $0 } + rows(spec.options)
        }
        if !spec.notes.isEmpty { lines += ["", spec.notes.trimmingTrailingNewlines] }
        lines += ["", "examples:"] + spec.examples.map { "  " + $0 }
        lines += ["", "global options (before or after the command):"] + rows(Global.options)
        lines += [exitNote]
        return lines.joined(separator: "\n")
    }

    /// "usage:" and the command's synopsis, indented.
    static func usage(_ spec: CommandSpec) -> [String] { ["usage:"] + Synopsis.lines(spec).map { "  " + $0 } }

    static func rows(_ options: [OptionInfo]) -> [String] {
        options.flatMap { o in row(o.synopsis + (o.isRepeatable ? " ..." : ""), o.help + (o.defaultText.map { " (default \($0))" } ?? "")) }
    }

    /// "  NAME     help", the help wrapped under itself.
    static func row(_ name: String, _ help: String) -> [String] {
        let lead = "  " + name
        let indent = String(repeating: " ", count: column)
        let text = wrap(help, width: width - column)
        if lead.count >= column - 1 { return [lead] + text.map { indent + $0 } }
        return [lead.padding(column)  + text[0]] + text.dropFirst().map { indent + $0 }
    }

    /// What a usage error prints after its message: the command's usage and where to read more, or the commands.
    static func afterUsageError(_ spec: CommandSpec?) -> String {
        guard let spec else {
            return "commands: " + Trackctl.commands.map { $0.spec.name }.joined(separator: ", ")
                + "\nRun `trackctl --help` for usage and examples, `trackctl COMMAND --help` for a command's options.\n"
        }
        return usage(spec).joined(separator: "\n") + "\nRun `trackctl \(spec.name) --help` for its options and examples.\n"
    }

    /// Answers `trackctl help [COMMAND]`, `trackctl --help`, `trackctl … COMMAND … --help` (or -h) before any other
    /// parsing, so help works whatever else is on the line; nil if the line asks for no help.
    static func answer(_ words: [String]) -> Result<String, UsageError>? {
        if words.first == "help" {
            guard let name = words.dropFirst().first else { return .success(overview) }
            guard let command = Trackctl.command(named: name) else { return .failure(UsageError("unknown command \(name)")) }
            return .success(text(for: command.spec))
        }
        guard words.contains("--help") || words.contains("-h") else { return nil }
        guard let name = Arguments.commandName(in: words), let command = Trackctl.command(named: name) else { return .success(overview) }
        return .success(text(for: command.spec))
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = self
        while s.last == "\n" { s.removeLast() }
        return s
    }

    func padding(_ n: Int, with c: Character = " ") -> String {
        count >= n ? self + " " : self + String(repeating: c, count: n - count)
    }
}
