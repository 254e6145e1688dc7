/// A command line read against one command's declaration: its arguments and the values of its options, each
/// already checked by its option's declaration.
struct ParsedArguments {
    let spec: CommandSpec
    private(set) var arguments: [String] = []
    private var values: [String: [any Sendable]] = [:]

    init(spec: CommandSpec) { self.spec = spec }

    /// The value given last, else the declared default, else nil.
    subscript<Value>(_ option: Option<Value>) -> Value? {
        if let value = given(option.info).last { return value as? Value }
        return option.info.defaultText.flatMap { try? option.info.read($0) as? Value }
    }

    /// Every value given, in order (a repeatable option).
    func all<Value>(_ option: Option<Value>) -> [Value] { given(option.info).compactMap { $0 as? Value } }

    subscript(_ flag: Flag) -> Bool { !given(flag.info).isEmpty }

    func isGiven(_ d: some Declared) -> Bool { !given(d.info).isEmpty }

    /// The value of a declared argument (present once `checkComplete` has passed).
    func argument(_ a: Argument) -> String {
        guard let i = spec.arguments.firstIndex(where: { $0.name == a.name }), i < arguments.count else {
            preconditionFailure("\(spec.name) reads \(a.name) before checkComplete or without declaring it")
        }
        return arguments[i]
    }

    /// A command reads only what it declared: reading anything else is a bug in trackctl, caught by every test.
    private func given(_ info: OptionInfo) -> [any Sendable] {
        precondition(spec.option(named: info.name) != nil || Global.option(named: info.name) != nil,
                     "\(spec.name) reads \(info.name) without declaring it")
        return values[info.name] ?? []
    }

    /// The arguments and the required options are all there.
    func checkComplete() throws(UsageError) {
        let declared = spec.arguments
        if arguments.count != declared.count {
            guard let first = declared.first else { throw UsageError("\(spec.name) takes no arguments, not \(arguments[0])") }
            throw UsageError(declared.count == 1 ? "\(spec.name) takes exactly one \(first.name)"
                             : "\(spec.name) takes " + declared.map(\.name).joined(separator: " "))
        }
        for option in spec.options where option.isRequired && values[option.name] == nil {
            throw UsageError("\(spec.name) needs \(option.synopsis)")
        }
    }

    /// Reads `words` (the command line without trackctl's and the command's names) against `spec` and the global
    /// options: "--name VALUE" or "--name=VALUE" for an option with a value, "--name" for a flag, anything not
    /// starting with "--" an argument.
    static func parse(_ words: [String], spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments(spec: spec)
        var rest = words[...]
        while let word = rest.popFirst() {
            guard word.hasPrefix("--") else {
                parsed.arguments.append(word)
                continue
            }
            let equals = word.firstIndex(of: "=")
            let name = equals.map { String(word[..<$0]) } ?? word
            guard let option = spec.option(named: name) ?? Global.option(named: name) else {
                throw UsageError(notAnOption(equals == nil ? word : name, of: spec))
            }
            let text: String
            if option.isFlag {
                guard equals == nil else { throw UsageError("\(name) takes no value, not \(word)") }
                text = ""
            } else if let equals {
                text = String(word[word.index(after: equals)...])
            } else {
                guard let next = rest.popFirst() else { throw UsageError("\(name) needs a value") }
                text = next
            }
            parsed.values[name, default: []].append(try option.read(text))
        }
        return parsed
    }

    /// "unknown option --x", or, for another command's option, which commands take it.
    static func notAnOption(_ name: String, of spec: CommandSpec) -> String {
        let takers = Trackctl.commands(taking: name)
        guard !takers.isEmpty else { return "unknown option \(name)" }
        return "\(spec.name) does not take \(name) (an option of \(takers.joined(separator: ", ")))"
    }
}
