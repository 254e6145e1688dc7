// The declarations trackctl's command line is made of: an option is declared once — name, value placeholder, help,
// default, whether it is required or repeatable, and how its value is read and checked — and parsing, `--help`, the
// synopsis and the usage errors all come from that declaration (the idea of swift-argument-parser's @Option and
// @Flag, without the package).

import TrackdProtocol

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

extension Option where Value == MediaTime {
    /// A time ≥ 0: seconds (`1.5`) or a rational `N/D` (`1001/30000`, exact); `rule` ends the message for a bad value
    /// ("takes seconds ≥ 0").
    static func time(_ name: String, _ placeholder: String, rule: String = "takes seconds ≥ 0 or N/D", required: Bool = false,
                     help: String) -> Self {
        Self(name, placeholder, help: help, required: required) { text throws(UsageError) in try Seconds.time(text, rule: "\(name) \(rule)") }
    }
}

enum Seconds {
    /// A time in seconds (finite, ≥ 0), or a usage error "`rule`, not TEXT".
    static func read(_ text: some StringProtocol, rule: String) throws(UsageError) -> Double {
        guard let v = Double(String(text)), v.isFinite, v >= 0 else { throw UsageError("\(rule), not \(text)") }
        return v
    }

    /// A time ≥ 0 as given: `N/D` exactly (value N, timescale D; D from 1 to 2147483647), or seconds to the nearest
    /// nanosecond. trackd compares either with the frames' times exactly (PROTOCOL.md §7.1).
    static func time(_ text: some StringProtocol, rule: String) throws(UsageError) -> MediaTime {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let n = Int64(parts[0]), n >= 0, let d = Int32(parts[1]), d > 0 else { throw UsageError("\(rule), not \(text)") }
            return MediaTime(value: n, timescale: d)
        }
        return MediaTime(seconds: try read(text, rule: rule))
    }

    /// `end − start` exactly when both are in one timescale (or their least common multiple fits in 32 bits), else
    /// in nanoseconds. Both numeric and ≥ 0, end ≥ start.
    static func difference(_ end: MediaTime, _ start: MediaTime) -> MediaTime {
        let (a, b) = (Int64(start.timescale), Int64(end.timescale))
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        let common = a / x * b
        if common <= Int64(Int32.max) {
            let (e, o1) = end.value.multipliedReportingOverflow(by: common / b)
            let (s, o2) = start.value.multipliedReportingOverflow(by: common / a)
            if !o1 && !o2 { return MediaTime(value: e - s, timescale: Int32(common)) }
        }
        return .nanoseconds((end.nanoseconds ?? 0) - (start.nanoseconds ?? 0))
    }

    /// Whether `a` is before `b` (exactly).
    static func isBefore(_ a: MediaTime, _ b: MediaTime) -> Bool {
        Int128(a.value) * Int128(b.timescale) < Int128(b.value) * Int128(a.timescale)
    }
}

/// A comma-separated list, each item read by `item` (the value of --at, --index, --ranges).
func commaList<Item>(_ text: String, _ item: (Substring) throws(UsageError) -> Item) throws(UsageError) -> [Item] {
    var items: [Item] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) { items.append(try item(part)) }
    return items
}
