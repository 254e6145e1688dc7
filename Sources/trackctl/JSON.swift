/// Minimal JSON writing for trackctl's line-oriented output (keys in a fixed order, as documented).
enum JSON {
    indirect enum Value {
        case null, bool(Bool), int(Int64), number(Double, decimals: Int), string(String), array([Value])
        case object([(String, Value)])
    }

    static func encode(_ v: Value) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .number(let d, let decimals):
            guard d.isFinite else { return "null" }
            return fixed(d, decimals)
        case .string(let s): return quote(s)
        case .array(let a): return "[" + a.map(encode).joined(separator: ",") + "]"
        case .object(let o): return "{" + o.map { quote($0.0) + ":" + encode($0.1) }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

/// Fixed-point formatting without Foundation's locale-dependent String(format:).
func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf") }
    var scale: Double = 1
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return String(value) }
    let n = Int64(scaled)
    let sign = value < 0 && n != 0 ? "-" : ""
    let whole = n / Int64(scale)
    let frac = n % Int64(scale)
    if decimals == 0 { return sign + String(whole) }
    let f = String(frac)
    return sign + String(whole) + "." + String(repeating: "0", count: decimals - f.count) + f
}
