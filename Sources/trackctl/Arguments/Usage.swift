/// An option declaration of any value type.
protocol Declared: Sendable {
    var info: OptionInfo { get }
}

extension Option: Declared {}
extension Flag: Declared {}

/// One element of a synopsis line.
indirect enum Usage: Sendable {
    case argument(Argument)
    /// An option that must be given here: "--time SECONDS".
    case option(OptionInfo)
    /// An option with one particular value: "--pixel-format list".
    case literal(OptionInfo, String)
    /// "[ … ]"; holding only a `.choice`, "[a | b]".
    case optional([Usage])
    /// "(a | b)": exactly one of the alternatives.
    case choice([[Usage]])
    /// "[--setting KEY=VALUE]...".
    case repeated(OptionInfo)
    /// A phrase standing for other elements: "[decoding options above]".
    case phrase(String)

    /// The option that must be given here.
    static func the(_ d: some Declared) -> Usage { .option(d.info) }
    /// Options that may be given here, in one pair of brackets: "[--width N --height N]".
    static func opt(_ ds: any Declared...) -> Usage { .optional(ds.map { .option($0.info) }) }
    static func many(_ d: some Declared) -> Usage { .repeated(d.info) }

    var options: [OptionInfo] {
        switch self {
        case .argument, .phrase: []
        case .option(let o), .literal(let o, _), .repeated(let o): [o]
        case .optional(let items): items.flatMap(\.options)
        case .choice(let alternatives): alternatives.flatMap { $0.flatMap(\.options) }
        }
    }

    var arguments: [Argument] {
        switch self {
        case .argument(let a): [a]
        case .option, .literal, .repeated, .phrase: []
        case .optional(let items): items.flatMap(\.arguments)
        case .choice(let alternatives): alternatives.flatMap { $0.flatMap(\.arguments) }
        }
    }

    var text: String {
        switch self {
        case .argument(let a): a.name
        case .option(let o): o.synopsis
        case .literal(let o, let value): "\(o.name) \(value)"
        case .optional(let items):
            if items.count == 1, case .choice(let alternatives) = items[0] { "[" + Self.join(alternatives) + "]" }
            else { "[" + items.map(\.text).joined(separator: " ") + "]" }
        case .choice(let alternatives): "(" + Self.join(alternatives) + ")"
        case .repeated(let o): "[\(o.synopsis)]..."
        case .phrase(let p): p
        }
    }

    private static func join(_ alternatives: [[Usage]]) -> String {
        alternatives.map { $0.map(\.text).joined(separator: " ") }.joined(separator: " | ")
    }
}

enum Synopsis {
    static let prefix = "trackctl [--socket PATH] "
    static let width = 116

    /// One form of a command as lines: `prefix NAME element…`, wrapped between elements, continuation lines
    /// indented to the first element.
    static func lines(_ name: String, _ form: [Usage]) -> [String] {
        let lead = prefix + name + " "
        let indent = String(repeating: " ", count: lead.count)
        var lines: [String] = []
        var line = lead
        for element in form.map(\.text) {
            if line.count + element.count > width && line != lead && line != indent {
                lines.append(String(line.dropLast()))
                line = indent
            }
            line += element + " "
        }
        lines.append(String(line.dropLast()))
        return lines
    }

    static func lines(_ spec: CommandSpec) -> [String] { spec.forms.flatMap { lines(spec.name, $0) } }

    /// Every command's synopsis: `trackctl --help` shows it and README's trackctl section repeats it.
    static var all: [String] { Trackctl.commands.flatMap { lines($0.spec) } }
}

/// Words wrapped to lines of at most `width` characters (a longer word gets a line of its own).
func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty && line.count + 1 + word.count > width {
            lines.append(line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    return lines + [line]
}
