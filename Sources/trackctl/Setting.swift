#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Protocol

/// `--setting KEY=VALUE`: one entry of the output-settings dictionary, so any dictionary can be sent.
/// The rules are in the usage text and README.
enum Setting {
    /// Parses every `--setting` (later ones win for one key; keys are canonical, so aliases count as their key).
    static func parseAll(_ texts: [String]) -> [String: SettingValue] {
        var settings: [String: SettingValue] = [:]
        for text in texts {
            guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
                Exit.usageError("--setting takes KEY=VALUE, not \(text)")
            }
            let key = SettingsKey.canonical(String(text[..<eq]))
            settings[key] = value(String(text[text.index(after: eq)...]), key: key)
        }
        return settings
    }

    /// VALUE: JSON when it starts with `{`, `[` or `"`; else true/false; else an integer or decimal number; else a
    /// four-character code (its OSType number); else a string.
    static func value(_ text: String, key: String) -> SettingValue {
        if let first = text.first, "{[\"".contains(first) {
            do {
                return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)).value
            } catch {
                Exit.usageError("--setting \(key): not valid JSON (or holds null): \(text)")
            }
        }
        if text == "true" || text == "false" { return .bool(text == "true") }
        if let n = Int64(text) { return .int(n) }
        let numeric = !text.isEmpty && text.allSatisfy { "0123456789+-.eE".contains($0) } && text.contains(where: \.isNumber)
        if numeric, let d = Double(text), d.isFinite { return .double(d) }
        if let code = FourCC(text), code.isPrintable { return .int(Int64(code.rawValue)) }
        return .string(text)
    }

    /// `settings` with `overrides` replacing the entries for the same key (compared canonically, so an alias
    /// set by a convenience flag is replaced too).
    static func merged(_ settings: [String: SettingValue], _ overrides: [String: SettingValue]) -> [String: SettingValue] {
        var result = settings.filter { overrides[SettingsKey.canonical($0.key)] == nil }
        for (key, value) in overrides { result[key] = value }
        return result
    }
}

/// A JSON value decoded into the settings types: objects, arrays, booleans, integral numbers as integers, other
/// numbers as doubles, strings. null is rejected.
private struct JSONValue: Decodable {
    var value: SettingValue

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) {
            value = .bool(b)
        } else if let n = try? c.decode(Int64.self) {
            value = .int(n)
        } else if let d = try? c.decode(Double.self) {
            value = d.rounded() == d && abs(d) < 9e18 ? .int(Int64(d)) : .double(d)
        } else if let s = try? c.decode(String.self) {
            value = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            value = .array(a.map(\.value))
        } else {
            value = .dictionary(try c.decode([String: JSONValue].self).mapValues(\.value))
        }
    }
}
