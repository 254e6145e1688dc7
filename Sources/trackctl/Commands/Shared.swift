// Declarations and steps more than one command shares: FILE, --track, the decoded-video options of read and frames,
// and the sample output options (--output, --md5, --json) of read and frames.
import TrackdProtocol
import TrackClient

extension Argument {
    static let file = Argument(name: "FILE", help: "the media file; - reads standard input (a pipe is read into memory)")
}

extension Option where Value == UInt32 {
    /// --track of the commands that show pictures.
    static var videoTrack: Self { trackID(help: "the video track to use (default: the first video track)") }
}

/// --pixel-format, --width and --height: read's and frames' decoded video.
struct VideoRequest {
    static let pixelFormat = Option<String>(
        "--pixel-format", "CODE",
        help: "the CoreVideo pixel format to decode to: its four-char code (420v, y420, BGRA, …) or Apple's constant "
            + "name; `list` prints the supported ones (no FILE or daemon needed)",
        default: "420v"
    ) { name throws(UsageError) in
        guard name == "list" || PixelFormat.parse(name) != nil || UnsupportedPixelFormat.parse(name) != nil else {
            throw UsageError("unknown pixel format \(name); `trackctl read --pixel-format list` shows the supported ones")
        }
        return name
    }
    static let width = Option<Int>.count("--width", "N", help: "scale to this width (with --height)")
    static let height = Option<Int>.count("--height", "N", help: "scale to this height (with --width)")

    let format: String
    let size: (width: Int, height: Int)?

    init(_ p: ParsedArguments) throws(UsageError) {
        format = p[Self.pixelFormat] ?? "420v"
        switch (p[Self.width], p[Self.height]) {
        case (nil, nil): size = nil
        case (let width?, let height?): size = (width, height)
        default: throw UsageError("--width and --height go together")
        }
    }

    /// Whether any of the three is on the line.
    static func isGiven(_ p: ParsedArguments) -> Bool { p.isGiven(pixelFormat) || p.isGiven(width) || p.isGiven(height) }

    /// `--pixel-format list`: prints the supported formats; the line needs nothing else.
    static func answersAlone(_ p: ParsedArguments) -> Bool {
        guard p.isGiven(pixelFormat), p[pixelFormat] == "list" else { return false }
        printPixelFormats()
        return true
    }

    /// The output settings: the pixel format, the size, then the --setting entries; validated here, so a mistake is
    /// reported (exit 1) before trackd is contacted.
    func settings(overrides: [String: SettingValue]) -> [String: SettingValue] {
        // A format known to be unsupported goes by name, so validation rejects it with its reason (-11861).
        let known = PixelFormat.parse(format)
        var settings: [String: SettingValue] = [SettingsKey.pixelFormatType: known.map { .int(Int64($0.code.rawValue)) } ?? .string(format)]
        if let size {
            settings[SettingsKey.width] = .int(Int64(size.width))
            settings[SettingsKey.height] = .int(Int64(size.height))
        }
        settings = Setting.merged(settings, overrides)
        do {
            _ = try OutputSettings.validateVideo(settings)
        } catch {
            Exit.failed(error)
        }
        return settings
    }

    static func printPixelFormats() {
        print("CODE    HEX         GSTREAMER  PLANES  CONSTANT / LAYOUT")
        for f in PixelFormat.all {
            let code = f.code.description.padding(8)
            let digits = String(f.code.rawValue, radix: 16)
            let hexText = "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
            print("\(code)\(hexText.padding(12))\(f.gstFormat.padding(11))\(String(f.planeCount).padding(8))\(f.constantName)")
            print(String(repeating: " ", count: 39) + f.layout)
        }
        print("\nNot supported (GStreamer 1.22 has no format with CoreVideo's layout):")
        for f in UnsupportedPixelFormat.all {
            print("\(f.code.description.padding(8))\(f.constantName): \(f.reason)")
        }
    }
}

/// --output, --md5 and --json of read and frames (`SampleWriter` does what they say).
enum SampleOutput {
    static let output = Option<String>.text(
        "--output", "PATH|-", help: "writes each sample's tightly packed planes to PATH (- for stdout; the lines then go to stderr)")
    static let md5 = Flag("--md5", help: "prints \"INDEX PTS DURATION SIZE MD5\" per sample, the MD5 over those bytes")
    static let json = Flag("--json", help: "prints one JSON object per sample: index, pts, duration, size, sync (and md5 with --md5)")
}

enum Open {
    /// FILE opened: a path, or `-` for standard input — a regular file there is passed as it is, a pipe is read to
    /// its end into a sealed memfd (TrackClient's `Asset(fileDescriptor:)`).
    static func asset(_ path: String, socketPath: String?) -> Asset {
        do {
            if path == "-" { return try Asset(fileDescriptor: 0, name: "stdin", socketPath: socketPath) }
            return try Asset(path: path, socketPath: socketPath)
        } catch {
            Exit.failed(error)
        }
    }

    /// The track with id `id`, else the first video track (or audio, if `audio`); with `fallbackToAudio`, a file
    /// without video reads its first audio track.
    static func track(_ asset: Asset, id: UInt32?, audio: Bool = false, fallbackToAudio: Bool = false) -> AssetTrack {
        if let id {
            guard let t = asset.track(withTrackID: id) else {
                let ids = asset.tracks.map { "\($0.trackID) (\($0.mediaType))" }.joined(separator: ", ")
                Exit.failed(TrackError(.invalidArgument, "\(asset.path) has no track \(id); its tracks: \(ids)"))
            }
            return t
        }
        let type: MediaType = audio ? .audio : .video
        // Without audio options a file with no video track (a .wav, a .flac) reads its first audio track.
        let fallback = audio || !fallbackToAudio ? nil : asset.tracks(withMediaType: .audio).first
        guard let t = asset.tracks(withMediaType: type).first ?? fallback else {
            Exit.failed(TrackError(.invalidArgument, "\(asset.path) has no \(type) track; choose one with --track"))
        }
        return t
    }
}

/// TrackClient misuse is a bug in trackctl: report AVFoundation's message and fail.
func misuse<T>(_ body: () throws(AssetReaderUsageError) -> T) -> T {
    do {
        return try body()
    } catch {
        Exit.failed(TrackError(.unknown, "internal error: \(error)"))
    }
}
