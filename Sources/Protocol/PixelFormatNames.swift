/// What a pixel-format name a person typed stands for (`trackctl --pixel-format`; `trackctl read --pixel-format
/// list --json` prints the tables for other clients). The names are the tables of
/// PixelFormats.swift — each format's code, constant name and `names`, the unsupported CoreVideo formats and the
/// refused names of other libraries — matched without regard to case; each spelling belongs to one entry only.
/// Output settings on the wire keep Apple's spellings (`PixelFormat.parse`): a client turns a name into its code.
public enum PixelFormatLookup: Sendable, Equatable {
    case format(PixelFormat)
    /// A CoreVideo format GStreamer 1.22 cannot produce (the validation's row 8 reason).
    case unsupported(UnsupportedPixelFormat)
    /// Another library's layout no trackd format has; `name` as typed.
    case refused(name: String, RefusedPixelFormatName)
    /// No entry; `close` are the spellings nearest to it, each as "spelling (code)" when it is not the code.
    case unknown(name: String, close: [String])

    /// The usage message for anything but a format, nil for a format.
    public var problem: String? {
        switch self {
        case .format: return nil
        case .unsupported(let f): return f.message
        case .refused(let name, let r):
            let instead = r.instead.compactMap { code in PixelFormat.all.first { $0.name == code } }.map(\.nameWithAliases)
            return "\(name) is not a trackd pixel format (\(r.reason)); use \(instead.joined(separator: " or "))"
        case .unknown(let name, let close):
            return "unknown pixel format \(name)" + (close.isEmpty ? "" : "; close: " + close.joined(separator: ", "))
                + "; `trackctl read --pixel-format list` shows them all"
        }
    }
}

extension PixelFormat {
    /// The code as people write it: the four-char code, or for the two codes that are numbers (24RGB, 32ARGB)
    /// trackd's name of them, the first of `names`.
    public var name: String { code.isPrintable ? code.description : (names.first ?? code.description) }

    /// "420v (nv12)", "24RGB (rgb24, rgb)": the name and the other names, for messages and lists.
    var nameWithAliases: String {
        let others = names.filter { $0 != name }
        return others.isEmpty ? name : "\(name) (\(others.joined(separator: ", ")))"
    }

    /// Every spelling of the format, as written: the code, the constant name, the other names.
    public var spellings: [String] { [name, constantName] + names.filter { $0 != name } }

    /// A name as typed: first exactly as output settings take it (`parse`: codes, constant names, numbers), then
    /// every spelling of every table without regard to case.
    public static func lookup(_ text: String) -> PixelFormatLookup {
        if let f = parse(text) { return .format(f) }
        if let f = UnsupportedPixelFormat.parse(text) { return .unsupported(f) }
        let key = text.lowercased()
        if let f = all.first(where: { $0.spellings.contains { $0.lowercased() == key } }) { return .format(f) }
        if let f = UnsupportedPixelFormat.all.first(where: { [$0.code.description, $0.constantName].contains { $0.lowercased() == key } }) {
            return .unsupported(f)
        }
        if let r = RefusedPixelFormatName.all.first(where: { $0.names.contains(key) }) { return .refused(name: text, r) }
        return .unknown(name: text, close: close(to: key))
    }

    /// At most six entries near `key` (lower case), nearest first, each by its nearest spelling: an edit distance of
    /// at most 1 (names of up to three characters) or 2, or a spelling that starts with `key` (three characters or more).
    static func close(to key: String) -> [String] {
        let limit = key.count <= 3 ? 1 : 2
        var found: [(distance: Int, text: String)] = []
        func consider(_ spellings: [String], shown: (String) -> String) {
            let nearest = spellings.map { (editDistance(key, $0.lowercased()), $0) }.min { $0.0 < $1.0 }
            let prefixed = spellings.first { key.count >= 3 && $0.lowercased().hasPrefix(key) }
            if let (d, spelling) = nearest, d <= limit {
                found.append((d, shown(spelling)))
            } else if let prefixed {
                found.append((limit + 1, shown(prefixed)))
            }
        }
        for f in all { consider(f.spellings) { $0 == f.name ? $0 : "\($0) (\(f.name))" } }
        for r in RefusedPixelFormatName.all { consider(r.names) { $0 } }
        return found.enumerated().sorted { ($0.element.distance, $0.offset) < ($1.element.distance, $1.offset) }
            .prefix(6).map(\.element.text)
    }

    /// Levenshtein distance over characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in stride(from: 1, through: a.count, by: 1) {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous + (a[i - 1] == b[j - 1] ? 0 : 1)
                previous = row[j]
                row[j] = min(substitution, row[j] + 1, row[j - 1] + 1)
            }
        }
        return row[b.count]
    }
}
