import CCairo
import TrackdProtocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// `trackctl contact-sheet FILE --output SHEET.png|SHEET.jpg|- [--count N] [--track ID] [--rotation apply|keep]`: exact frames spread over a video track
/// in a captioned grid (`ContactSheet` draws it).
struct ContactSheetCommand: Command {
    static let output = Option<String>.text(
        "--output", "SHEET.png", help: "the image to write: .png, .jpg or .jpeg (the extension names the format); - is PNG on stdout",
        required: true)
    static let count = Option<Int>.number("--count", "N", in: 1...100, of: "frames", default: 12, help: "how many frames")
    static let track = Option<UInt32>.videoTrack

    static let spec = CommandSpec(
        name: "contact-sheet", summary: "a PNG or JPEG grid of exact frames spread over the video, with captions",
        forms: [[.argument(.file), .the(output), .opt(count), .opt(track), .opt(Rotation.option)]],
        notes: """
              An image of N exact frames, the ones shown at the centres of N equal slices of the video track's
              duration, in a grid under a header (file name, size, codec, fps, duration, file size), each captioned
              with its time (HH:MM:SS.mmm) and frame index. Tiles are 320 pixels wide, TH = 320 × display height /
              width rounded to even tall (the rotation tag applied; --rotation keep: frames as coded); C = min(N, ⌈√(N·4·TH/960)⌉) columns, R = ⌈N/C⌉ rows;
              the sheet is 12 + C·332 wide and 40 + R·(TH + 34) tall; tile i's picture starts at
              x = 12 + (i mod C)·332, y = 40 + ⌊i/C⌋·(TH + 34).
            """,
        examples: ["trackctl contact-sheet clip.mp4 --count 16 --output sheet.png"])

    let file: String
    let path: String
    let frameCount: Int
    let trackID: UInt32?
    let image: ImageFile
    let applyRotation: Bool

    init(_ p: ParsedArguments) throws(UsageError) {
        file = p.argument(.file)
        path = p[Self.output] ?? ""
        frameCount = p[Self.count] ?? 12
        trackID = p[Self.track]
        image = try ImageFile(path)
        applyRotation = Rotation.applies(p)
    }

    func run(socketPath: String?) {
        let asset = Open.asset(file, socketPath: socketPath)
        let track = Open.track(asset, id: trackID)
        let duration = Self.videoDuration(asset, track)
        let start = track.timeRangeStart.isNumeric ? track.timeRangeStart.seconds : 0
        let rotation = applyRotation ? Int(track.rotation) : 0
        let g = ContactSheet.Geometry(count: frameCount, trackWidth: Int(track.naturalSize.width),
                                      trackHeight: Int(track.naturalSize.height), rotation: rotation)
        let times = (0..<frameCount).map { MediaTime(seconds: start + (Double($0) + 0.5) * duration / Double(frameCount)) }
        let settings: [String: SettingValue] = [
            SettingsKey.pixelFormatType: .int(Int64((FourCC("BGRA") as FourCC).rawValue)),
            SettingsKey.width: .int(Int64(g.decodeWidth)), SettingsKey.height: .int(Int64(g.decodeHeight)),
        ]
        let frames: [ShownFrame]
        do {
            frames = try ShownFrame.at(times, asset, track, settings: settings)
        } catch {
            Exit.failed(error)
        }
        let sheet = ContactSheet.draw(g, frames: frames, rotation: rotation, headline: Self.headline(asset, track, duration: duration))
        guard sheet.status == CAIRO_STATUS_SUCCESS else {
            Exit.failed(TrackError(.unknown, "cannot draw \(path): \(CairoCanvas.describe(sheet.status))"))
        }
        var (pixels, stride) = sheet.pixels()
        image.write(&pixels, width: g.width, height: g.height, stride: stride)
        let line = "wrote \(path): \(g.width)x\(g.height) \(image.format.rawValue), \(frameCount) frames of track "
            + "\(track.trackID) in \(g.columns) columns x \(g.rows) rows, tiles \(ContactSheet.tileWidth)x\(g.tileHeight)"
        if path == "-" { IO.err.write(line + "\n") } else { print(line) }
    }

    /// The track's duration in seconds (else the asset's), once the track is known to be a video track with a size.
    static func videoDuration(_ asset: Asset, _ track: AssetTrack) -> Double {
        guard track.mediaType == .video else {
            Exit.failed(TrackError(.operationNotSupportedForAsset,
                                   "track \(track.trackID) of \(asset.path) is \(track.mediaType), not video; a contact sheet needs a video track"))
        }
        guard track.naturalSize.width > 0, track.naturalSize.height > 0 else {
            Exit.failed(TrackError(.operationNotSupportedForAsset, "track \(track.trackID) of \(asset.path) has no known picture size"))
        }
        let duration = track.duration.isNumeric && track.duration.seconds > 0 ? track.duration : asset.duration
        guard duration.isNumeric, duration.seconds > 0 else {
            Exit.failed(TrackError(.operationNotSupportedForAsset, "track \(track.trackID) of \(asset.path) has no known duration"))
        }
        return duration.seconds
    }

    /// "clip.mp4  ·  320x240 H.264 30.000 fps  ·  00:00:02.000  ·  0.1 MiB".
    static func headline(_ asset: Asset, _ track: AssetTrack, duration: Double) -> String {
        let fileSize = asset.byteCount > 0 ? Double(asset.byteCount) : nil
        let name = asset.path.split(separator: "/").last.map(String.init) ?? asset.path
        var headline = "\(name)  ·  \(track.naturalSize.width)x\(track.naturalSize.height) \(codecName(track.codec) ?? track.codec.description)"
        if track.nominalFrameRate > 0 { headline += " \(fixed(track.nominalFrameRate, 3)) fps" }
        if track.rotation != 0 { headline += " rotated \(track.rotation)°" }
        headline += "  ·  \(ContactSheet.clock(duration))"
        if let fileSize { headline += "  ·  \(fixed(fileSize / 1_048_576, 1)) MiB" }
        return headline
    }
}
