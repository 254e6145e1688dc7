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

/// --pixel-format, --width, --height and --untagged-matrix: read's and frames' decoded video.
struct VideoRequest {
    static let pixelFormat = Option<String>(
        "--pixel-format", "NAME",
        help: "the pixel format to decode to: a CoreVideo code (420v, y420, BGRA, …), Apple's constant name, or a "
            + "GStreamer or ffmpeg name of the same layout (nv12, yuv420p, i420, rgb24, bgra, gbrp, p010le, …), in any case; "
            + "`list` prints them all with their names (no FILE or daemon needed; --json: as JSON)",
        default: "420v"
    ) { name throws(UsageError) in
        switch PixelFormat.lookup(name) {
        // An unsupported CoreVideo format goes on to validation, which names its reason (-11861, exit 1).
        case .format, .unsupported: return name
        case let other: if name == "list" { return name } else { throw UsageError(other.problem ?? name) }
        }
    }
    static let width = Option<Int>.count("--width", "N", help: "scale to this width (with --height)")
    static let height = Option<Int>.count("--height", "N", help: "scale to this height (with --width)")
    static let untaggedMatrix = Option<YCbCrMatrix>(
        "--untagged-matrix", "601|709",
        help: "the YCbCr matrix for video that names none (TrackdUntaggedYCbCrMatrix). Default: BT.601 up to 576 "
            + "lines, BT.709 above, as GStreamer and H.273 assume for HD; 601 converts as ffmpeg, PyAV, TorchCodec and "
            + "OpenCV do (libswscale assumes BT.601 at every size)"
    ) { text throws(UsageError) in
        switch text.lowercased() {
        case "601", "bt601", "bt.601", YCbCrMatrix.bt601.rawValue.lowercased(): return .bt601
        case "709", "bt709", "bt.709", YCbCrMatrix.bt709.rawValue.lowercased(): return .bt709
        default: throw UsageError("--untagged-matrix takes 601 or 709, not \(text)")
        }
    }

    let format: String
    let size: (width: Int, height: Int)?
    let matrix: YCbCrMatrix?

    init(_ p: ParsedArguments) throws(UsageError) {
        format = p[Self.pixelFormat] ?? "420v"
        switch (p[Self.width], p[Self.height]) {
        case (nil, nil): size = nil
        case (let width?, let height?): size = (width, height)
        default: throw UsageError("--width and --height go together")
        }
        matrix = p[Self.untaggedMatrix]
    }

    /// Whether any of them is on the line.
    static func isGiven(_ p: ParsedArguments) -> Bool {
        p.isGiven(pixelFormat) || p.isGiven(width) || p.isGiven(height) || p.isGiven(untaggedMatrix)
    }

    /// `--pixel-format list`: prints the formats and their names (`--json`: as JSON); the line needs nothing else.
    static func answersAlone(_ p: ParsedArguments) -> Bool {
        guard p.isGiven(pixelFormat), p[pixelFormat] == "list" else { return false }
        if p[SampleOutput.json] { PixelFormatList.printJSON() } else { PixelFormatList.printText() }
        return true
    }

    /// The output settings: the pixel format, the size, then the --setting entries; validated here, so a mistake is
    /// reported (exit 1) before trackd is contacted.
    func settings(overrides: [String: SettingValue]) -> [String: SettingValue] {
        // A format known to be unsupported goes by its code, so validation rejects it with its reason (-11861).
        let code: FourCC? = switch PixelFormat.lookup(format) {
        case .format(let f): f.code
        case .unsupported(let f): f.code
        default: nil
        }
        var settings: [String: SettingValue] = [SettingsKey.pixelFormatType: code.map { .int(Int64($0.rawValue)) } ?? .string(format)]
        if let size {
            settings[SettingsKey.width] = .int(Int64(size.width))
            settings[SettingsKey.height] = .int(Int64(size.height))
        }
        if let matrix { settings[SettingsKey.untaggedYCbCrMatrix] = .string(matrix.rawValue) }
        settings = Setting.merged(settings, overrides)
        do {
            _ = try OutputSettings.validateVideo(settings)
        } catch {
            Exit.failed(error)
        }
        return settings
    }
}

/// --output, --md5 and --json of read and frames (`SampleWriter` does what they say).
enum SampleOutput {
    static let output = Option<String>.text(
        "--output", "PATH|-", help: "writes each sample's tightly packed planes to PATH (- for stdout; the lines then go to stderr)")
    static let md5 = Flag("--md5", help: "prints \"INDEX PTS DURATION SIZE MD5\" per sample, the MD5 over those bytes")
    static let json = Flag("--json", help: "prints one JSON object per sample: index, pts, duration, size, sync (md5 "
                               + "with --md5; passthrough: trimAtStart/trimAtEnd when not zero)")
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
