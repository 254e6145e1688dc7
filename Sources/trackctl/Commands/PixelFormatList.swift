import TrackdProtocol

/// `trackctl read --pixel-format list [--json]`: PixelFormats.swift's tables — every format with its code, OSType,
/// GStreamer format, planes, constant, layout and other names; the CoreVideo formats trackd cannot produce; the
/// names of other libraries' layouts it refuses. docs/SETTINGS.md repeats the formats.
enum PixelFormatList {
    static func printText() {
        print("CODE    HEX         GSTREAMER  PLANES  CONSTANT / LAYOUT / OTHER NAMES (any case)")
        let indent = String(repeating: " ", count: 40)
        for f in PixelFormat.all {
            print("\(f.name.padding(8))\(hex(f.code).padding(12))\(f.gstFormat.padding(11))\(String(f.planeCount).padding(8))\(f.constantName)")
            print(indent + f.layout)
            let others = f.names.filter { $0 != f.name }
            if !others.isEmpty { print(indent + "names: " + others.joined(separator: ", ")) }
        }
        print("\nNot supported (GStreamer 1.22 has no format with CoreVideo's layout):")
        for f in UnsupportedPixelFormat.all {
            print("\(f.code.description.padding(8))\(f.constantName): \(f.reason)")
        }
        print("\nRefused names (other libraries' layouts no trackd format has):")
        for r in RefusedPixelFormatName.all {
            print("\(r.names.joined(separator: ", ")): \(r.reason); use \(r.instead.joined(separator: " or "))")
        }
    }

    /// One object: "formats" (code, osType, constant, gstreamer, planes, layout, names), "unsupported" (code,
    /// constant, reason), "refused" (names, reason, instead).
    static func printJSON() {
        func strings(_ list: [String]) -> JSON.Value { .array(list.map { .string($0) }) }
        let formats = PixelFormat.all.map { f in
            JSON.Value.object([
                ("code", .string(f.name)), ("osType", .int(Int64(f.code.rawValue))), ("constant", .string(f.constantName)),
                ("gstreamer", .string(f.gstFormat)), ("planes", .int(Int64(f.planeCount))), ("layout", .string(f.layout)),
                ("names", strings(f.names.filter { $0 != f.name })),
            ])
        }
        let unsupported = UnsupportedPixelFormat.all.map { f in
            JSON.Value.object([("code", .string(f.code.description)), ("constant", .string(f.constantName)), ("reason", .string(f.reason))])
        }
        let refused = RefusedPixelFormatName.all.map { r in
            JSON.Value.object([("names", strings(r.names)), ("reason", .string(r.reason)), ("instead", strings(r.instead))])
        }
        print(JSON.encode(.object([("formats", .array(formats)), ("unsupported", .array(unsupported)), ("refused", .array(refused))])))
    }

    /// 0x%08x.
    static func hex(_ code: FourCC) -> String {
        let digits = String(code.rawValue, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
