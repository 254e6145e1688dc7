// The declarations trackctl's command line is made of: an option is declared once — name, value placeholder, help,
// default, whether it is required or repeatable, and how its value is read and checked — and parsing, `--help`, the
// synopsis and the usage errors all come from that declaration (the idea of swift-argument-parser's @Option and
// @Flag, without the package).

/// A mistake on the command line: printed with the command's usage, exit status 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// What every option has, whatever its value's type: the row of a command's option table.
struct OptionInfo: Sendable {
    let name: String
    /// How its value is shown in the synopsis and the help ("N", "PATH|-"); nil for a flag, which takes no value.
    let placeholder: String?
    let help: String
    let isRequired: Bool
    let isRepeatable: Bool
    /// The value used when the option is not given, as it would be typed.
    let defaultText: String?
    /// Reads and checks one value (a usage error names the option and the value).
    let read: @Sendable (String) throws(UsageError) -> any Sendable

    var isFlag: Bool { placeholder == nil }
    /// "--width N", "--json".
    var synopsis: String { placeholder.map { "\(name) \($0)" } ?? name }
}

/// An option that takes a value of type `Value`: `ParsedArguments[option]` is that value.
struct Option<Value: Sendable>: Sendable {
    let info: OptionInfo

    init(_ name: String, _ placeholder: String, help: String, required: Bool = false, repeatable: Bool = false,
         default defaultText: String? = nil, _ parse: @escaping @Sendable (String) throws(UsageError) -> Value) {
        info = OptionInfo(name: name, placeholder: placeholder, help: help, isRequired: required, isRepeatable: repeatable,
                          defaultText: defaultText, read: { text throws(UsageError) in try parse(text) })
    }
}

/// An option without a value: given or not.
struct Flag: Sendable {
    let info: OptionInfo

    init(_ name: String, help: String) {
        info = OptionInfo(name: name, placeholder: nil, help: help, isRequired: false, isRepeatable: false, defaultText: nil,
                          read: { _ in true })
    }
}

/// A positional argument (FILE). Declared arguments are required, one value each.
struct Argument: Sendable {
    let name: String
    let help: String
}

// MARK: value kinds

extension Option where Value == String {
    /// Any text.
    static func text(_ name: String, _ placeholder: String, help: String, required: Bool = false) -> Self {
        Self(name, placeholder, help: help, required: required) { $0 }
    }
}

extension Option where Value == Int {
    /// A whole number ≥ 0.
    static func count(_ name: String, _ placeholder: String, help: String) -> Self {
        Self(name, placeholder, help: help) { text throws(UsageError) in
            guard let n = Int(text), n >= 0 else { throw UsageError("\(name) takes a non-negative whole number, not \(text)") }
            return n
        }
    }

    /// A whole number in `range` (a default, if any, is given as text and read the same way).
    static func number(_ name: String, _ placeholder: String, in range: ClosedRange<Int>, of what: String, default: Int,
                       help: String) -> Self {
        Self(name, placeholder, help: help, default: String(`default`)) { text throws(UsageError) in
            guard let n = Int(text), range.contains(n) else {
                throw UsageError("\(name) takes a number of \(what) from \(range.lowerBound) to \(range.upperBound), not \(text)")
            }
            return n
        }
    }
}

extension Option where Value == UInt32 {
    /// A track id.
    static func trackID(help: String) -> Self {
        Self("--track", "ID", help: help) { text throws(UsageError) in
            guard let n = UInt32(text) else { throw UsageError("--track takes a track id, not \(text)") }
            return n
        }
    }
}

extension Option where Value == Double {
    /// A time in seconds, finite and ≥ 0; `rule` ends the message for a bad value ("takes seconds ≥ 0").
    static func seconds(_ name: String, _ placeholder: String, rule: String = "takes seconds ≥ 0", required: Bool = false,
                        help: String) -> Self {
        Self(name, placeholder, help: help, required: required) { text throws(UsageError) in try Seconds.read(text, rule: "\(name) \(rule)") }
    }
}

enum Seconds {
    /// A time in seconds (finite, ≥ 0), or a usage error "`rule`, not TEXT".
    static func read(_ text: some StringProtocol, rule: String) throws(UsageError) -> Double {
        guard let v = Double(String(text)), v.isFinite, v >= 0 else { throw UsageError("\(rule), not \(text)") }
        return v
    }
}

/// A comma-separated list, each item read by `item` (the value of --at, --index, --ranges).
func commaList<Item>(_ text: String, _ item: (Substring) throws(UsageError) -> Item) throws(UsageError) -> [Item] {
    var items: [Item] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) { items.append(try item(part)) }
    return items
}
