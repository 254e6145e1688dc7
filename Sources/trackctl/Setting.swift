#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TrackdProtocol

/// `--setting KEY=VALUE`: one entry of the output-settings dictionary, so any dictionary can be sent.
/// The rules are in the option's help and README.
struct Setting: Sendable {
    /// The canonical key (an alias counts as its key).
    let key: String
    let value: SettingValue

    /// The option of read and frames.
    static let option = Option<Setting>(
        "--setting", "KEY=VALUE", help: """
            adds any output-settings entry (docs/SETTINGS.md) and replaces the convenience options' entry for the same \
            KEY; later ones win. It asks for decoded output (not with --passthrough). KEY is the key's string value or \
            Apple's constant name (kCVPixelBufferPixelFormatTypeKey = PixelFormatType). VALUE is, in this order: JSON \
            if it starts with { [ or " (objects, arrays, true/false, numbers: integers when integral, strings; no \
            null); true/false a boolean; an integer, or a decimal number (double); exactly four characters the \
            four-char code's number (BGRA, 420v, lpcm: like Apple's kCVPixelFormatType_32BGRA); else a string
            """, repeatable: true, parse)

    static func parse(_ text: String) throws(UsageError) -> Setting {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw UsageError("--setting takes KEY=VALUE, not \(text)")
        }
        let key = SettingsKey.canonical(String(text[..<eq]))
        return Setting(key: key, value: try value(String(text[text.index(after: eq)...]), key: key))
    }

    /// The entries as a dictionary, later ones winning for one key.
    static func dictionary(_ entries: [Setting]) -> [String: SettingValue] {
        var settings: [String: SettingValue] = [:]
        for entry in entries { settings[entry.key] = entry.value }
        return settings
    }

    /// VALUE: JSON when it starts with `{`, `[` or `"`; else true/false; else an integer or decimal number; else a
    /// four-character code (its OSType number); else a string.
    static func value(_ text: String, key: String) throws(UsageError) -> SettingValue {
        if let first = text.first, "{[\"".contains(first) {
            guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
                throw UsageError("--setting \(key): not valid JSON (or holds null): \(text)")
            }
            return json.value
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
