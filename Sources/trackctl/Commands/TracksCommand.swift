import TrackdProtocol
import TrackClient

/// `trackctl tracks FILE [--json] [--asset]`: a file's tracks, their segments and the metadata, as a table or JSON.
struct TracksCommand: Command {
    static let json = Flag("--json", help: "one JSON array, one object per track; unknown values are null")
    static let withAsset = Flag("--asset", help: "with --json: one object, the asset's duration and metadata and its tracks")

    static let spec = CommandSpec(
        name: "tracks", summary: "list a file's tracks",
        forms: [[.argument(.file), .opt(json), .opt(withAsset)]],
        notes: """
              Lists each track: id, media type, codec, size, frame rate, duration, time range start, sample rate,
              channels, depth, alpha, bit depth, chroma subsampling and the recommended pixel format; then the
              asset's and each track's metadata (key space/key (common key) = value) and each track's segments
              (source → target, from the edit list). --json gives each track's "metadata" and "segments" too;
              --json --asset wraps the array as {"duration", "metadata", "tracks"}.
            """,
        examples: ["trackctl tracks clip.mp4", "trackctl tracks clip.mp4 --json", "trackctl tracks clip.mp4 --json --asset"])

    let file: String
    let asJSON: Bool
    let withAsset: Bool

    init(_ p: ParsedArguments) {
        file = p.argument(.file)
        asJSON = p[Self.json]
        withAsset = p[Self.withAsset]
    }

    func run(socketPath: String?) {
        let asset = Open.asset(file, socketPath: socketPath)
        if asJSON {
            let tracks = JSON.Value.array(asset.tracks.map(Self.json))
            print(JSON.encode(withAsset ? Self.assetJSON(asset, tracks: tracks) : tracks))
        } else {
            Self.printTable(asset)
            Self.printMetadata(asset)
        }
    }

    static func json(_ t: AssetTrack) -> JSON.Value {
        let video = t.mediaType == .video
        return .object([
            ("id", .int(Int64(t.trackID))),
            ("mediaType", .string(t.mediaType.description)),
            ("codec", t.codec == .none ? .null : .string(t.codec.description)),
            ("codecName", codecName(t.codec).map { .string($0) } ?? .null),
            ("width", number(t.naturalSize.width)),
            ("height", number(t.naturalSize.height)),
            ("nominalFrameRate", t.nominalFrameRate > 0 ? .number(t.nominalFrameRate, decimals: 3) : .null),
            ("duration", seconds(t.duration)),
            ("timeRangeStart", seconds(t.timeRangeStart)),
            ("sampleRate", number(t.sampleRate)),
            ("channels", number(t.channelCount)),
            ("depth", number(t.depth)),
            ("hasAlpha", video ? .bool(t.hasAlpha) : .null),
            ("bitsPerComponent", number(UInt32(t.bitsPerComponent))),
            ("chromaSubsampling", video && t.chromaSubsampling != .unknown ? .string(t.chromaSubsampling.description) : .null),
            ("recommendedPixelFormat", t.recommendedPixelFormat.map { .string($0.code.description) } ?? .null),
            ("rotation", video ? .int(Int64(t.rotation)) : .null),
            ("language", t.languageCode.map { .string($0) } ?? .null),
        ] + detailJSON(t))
    }

    static func seconds(_ t: MediaTime) -> JSON.Value { t.isNumeric ? .number(t.seconds, decimals: 6) : .null }
    static func number(_ n: UInt32) -> JSON.Value { n == 0 ? .null : .int(Int64(n)) }

    /// tracks --json: profile, level, pixel aspect ratio, colour description, bit rate, channel layout.
    static func detailJSON(_ t: AssetTrack) -> [(String, JSON.Value)] {
        func text(_ s: String?) -> JSON.Value { s.map { JSON.Value.string($0) } ?? .null }
        func code(_ c: UInt8?) -> JSON.Value { t.mediaType == .video ? c.map { .int(Int64($0)) } ?? .null : .null }
        let par: String? = t.pixelAspectRatio.map { "\($0.numerator):\($0.denominator)" }
        let range: String? = t.mediaType == .video ? colorRangeName(t.colorimetry.range) : nil
        return [
            ("profile", text(t.profile)), ("level", text(t.level)), ("pixelAspectRatio", text(par)),
            ("colorRange", text(range)), ("colorMatrix", code(t.colorimetry.statedMatrix)),
            ("colorPrimaries", code(t.colorimetry.statedPrimaries)), ("colorTransfer", code(t.colorimetry.statedTransfer)),
            ("bitRate", number(t.estimatedDataRate)), ("channelLayout", text(t.channelLayout)),
            ("timescale", number(UInt32(clamping: t.naturalTimeScale))),
            ("minFrameDuration", text(t.minFrameDuration.isNumeric ? t.minFrameDuration.description : nil)),
            ("segments", .array(t.segments.map(segmentJSON))), ("metadata", metadataJSON(t.metadata)),
            ("preferredTransform", transformJSON(t.preferredTransform)),
            ("codecConfiguration", t.codecConfiguration.isEmpty ? .null : .string(hexDigits(t.codecConfiguration))),
        ]
    }

    /// CGAffineTransform's six numbers as an object {a, b, c, d, tx, ty}.
    static func transformJSON(_ m: AffineTransform) -> JSON.Value {
        .object([("a", .number(m.a, decimals: 6)), ("b", .number(m.b, decimals: 6)), ("c", .number(m.c, decimals: 6)),
                 ("d", .number(m.d, decimals: 6)), ("tx", .number(m.tx, decimals: 6)), ("ty", .number(m.ty, decimals: 6))])
    }

    static func printTable(_ asset: Asset) {
        print("\(asset.path): duration \(fixed(asset.duration.seconds, 3)) s, \(asset.tracks.count) track(s)")
        let header = ["ID", "TYPE", "CODEC", "SIZE", "FPS", "DURATION", "START", "RATE", "CH", "DEPTH", "ALPHA", "BITS", "CHROMA",
                      "ROT", "LANG", "PIXFMT"]
        let rows = [header] + asset.tracks.map(row)
        let widths = header.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $0.element + String(repeating: " ", count: widths[$0.offset] - $0.element.count) }
                .joined(separator: "  "))
        }
        // ffprobe's per-stream details the table has no room for, one line per track that has any.
        for t in asset.tracks {
            let details = details(t)
            if !details.isEmpty { print("track \(t.trackID): " + details.joined(separator: "; ")) }
        }
        if asset.tracks.contains(where: { $0.mediaType == .video }) {
            print("PIXFMT: the recommended --pixel-format, the decoder's native layout for the track's BITS and CHROMA "
                  + "(a lossless repack, no conversion; docs/SETTINGS.md)")
        }
    }

    static func row(_ t: AssetTrack) -> [String] {
        let video = t.mediaType == .video
        return [
            "\(t.trackID)", t.mediaType.description, t.codec.description + (codecName(t.codec).map { " (\($0))" } ?? ""),
            video && t.naturalSize.width > 0 ? "\(t.naturalSize.width)x\(t.naturalSize.height)" : "-",
            t.nominalFrameRate > 0 ? fixed(t.nominalFrameRate, 3) : "-",
            t.duration.isNumeric ? fixed(t.duration.seconds, 3) + " s" : "-",
            t.timeRangeStart.isNumeric ? fixed(t.timeRangeStart.seconds, 3) : "-",
            t.sampleRate > 0 ? "\(t.sampleRate) Hz" : "-",
            t.channelCount > 0 ? "\(t.channelCount)" : "-",
            t.depth > 0 ? "\(t.depth)" : "-",
            video ? (t.hasAlpha ? "yes" : "no") : "-",
            video && t.bitsPerComponent > 0 ? "\(t.bitsPerComponent)" : "-",
            video && t.chromaSubsampling != .unknown ? t.chromaSubsampling.description : "-",
            video ? "\(t.rotation)" : "-",
            t.languageCode ?? "-",
            t.recommendedPixelFormat?.code.description ?? "-",
        ]
    }

    /// Profile and level, aspect ratios, colour description, bit rate and channel layout, as ffprobe shows them.
    static func details(_ t: AssetTrack) -> [String] {
        var details: [String] = []
        if let profile = t.profile { details.append("profile \(profile)" + (t.level.map { ", level \($0)" } ?? "")) }
        if let par = t.pixelAspectRatio, t.naturalSize.width > 0, t.naturalSize.height > 0 {
            let dar = reducedRatio(UInt64(t.naturalSize.width) * UInt64(par.numerator), UInt64(t.naturalSize.height) * UInt64(par.denominator))
            details.append("SAR \(par.numerator):\(par.denominator) DAR \(dar.0):\(dar.1)")
        }
        if t.mediaType == .video, let colour = colourDetail(t.colorimetry) { details.append(colour) }
        if t.estimatedDataRate > 0 { details.append("\(t.estimatedDataRate / 1000) kb/s") }
        if let layout = t.channelLayout { details.append(layout) }
        // ffprobe's time_base: the track's times are in these units (PROTOCOL.md §7.1).
        if t.naturalTimeScale > 0 { details.append("time base 1/\(t.naturalTimeScale)") }
        // AVAssetTrack's, from every frame's time (PROTOCOL.md §7.2); the FPS column is nominalFrameRate.
        if t.mediaType == .video, t.minFrameDuration.isNumeric { details.append("min frame duration \(t.minFrameDuration)") }
        return details
    }

    /// "color tv, matrix 1, primaries 1, transfer 1 (H.273)": the fields the track states, the unspecified ones left
    /// out (PROTOCOL.md §7.3); nil when it states none.
    static func colourDetail(_ c: Colorimetry) -> String? {
        let codes = [("matrix", c.statedMatrix), ("primaries", c.statedPrimaries), ("transfer", c.statedTransfer)]
            .compactMap { name, code in code.map { "\(name) \($0)" } }
        let parts = (colorRangeName(c.range).map { ["color \($0)"] } ?? []) + codes
        guard !parts.isEmpty else { return nil }
        return parts.joined(separator: ", ") + (codes.isEmpty ? "" : " (H.273)")
    }

    /// "tv" (video range) or "pc" (full range), ffprobe's spelling; nil when unknown.
    static func colorRangeName(_ range: UInt8) -> String? { range == 1 ? "tv" : range == 2 ? "pc" : nil }

    /// a:b in lowest terms.
    static func reducedRatio(_ a: UInt64, _ b: UInt64) -> (UInt64, UInt64) {
        func gcd(_ x: UInt64, _ y: UInt64) -> UInt64 { y == 0 ? x : gcd(y, x % y) }
        let g = max(gcd(a, b), 1)
        return (a / g, b / g)
    }
}
