import TrackdProtocol
import TrackClient

/// `trackctl frame FILE --time SECONDS --output OUT.png|OUT.jpg|-`: the exact frame shown at a time, as an image.
struct FrameCommand: Command {
    static let time = Option<MediaTime>.time(
        "--time", "SECONDS", rule: "takes a non-negative number of seconds or N/D", required: true,
        help: "the time of the frame: seconds, or N/D exactly (1001/30000)")
    static let track = Option<UInt32>.videoTrack
    static let output = Option<String>.text(
        "--output", "OUT.png", help: "the image to write: .png, .jpg or .jpeg (the extension names the format); - is PNG on stdout",
        required: true)

    static let spec = CommandSpec(
        name: "frame", summary: "write the exact frame shown at a time as a PNG or JPEG",
        forms: [[.argument(.file), .the(time), .opt(track), .opt(Rotation.option), .the(output)]],
        notes: """
              Writes the frame displayed at --time (not the nearest keyframe; a time at or after the end names the
              last frame) at the track's size, decoded by trackd as BGRA and turned upright by the track's rotation
              (--rotation keep: as coded). PNG is encoded by cairo (libpng), JPEG by libjpeg-turbo (quality 92).
            """,
        examples: ["trackctl frame clip.mp4 --time 2.5 --output frame.png",
                   "trackctl frame clip.mp4 --time 1001/30000 --output - > frame.png"])

    let file: String
    let time: MediaTime
    let trackID: UInt32?
    let image: ImageFile
    let applyRotation: Bool

    init(_ p: ParsedArguments) throws(UsageError) {
        file = p.argument(.file)
        time = p[Self.time] ?? .zero
        trackID = p[Self.track]
        image = try ImageFile(p[Self.output] ?? "")
        applyRotation = Rotation.applies(p)
    }

    func run(socketPath: String?) {
        let asset = Open.asset(file, socketPath: socketPath)
        let track = Open.track(asset, id: trackID)
        let settings = Rotation.settings(applyRotation).merging([
            SettingsKey.pixelFormatType: .int(Int64((FourCC("BGRA") as FourCC).rawValue)),
        ]) { $1 }
        let frame: ShownFrame
        do {
            frame = try Self.frame(asset, track, at: time, settings: settings)
        } catch {
            Exit.failed(error)
        }
        let sample = frame.sample
        var pixels = sample.packedBytes()
        let (width, height) = (Int(sample.width), Int(sample.height))
        image.write(&pixels, width: width, height: height, stride: width * 4)
        let line = "wrote \(image.path): \(width)x\(height) \(image.format.rawValue), frame \(frame.index) at "
            + "\(fixed(sample.presentationTimeStamp.seconds, 6)) s"
        if image.path == "-" { IO.err.write(line + "\n") } else { print(line) }
    }

    /// The frame shown at `time`; at or after the track's end (where ReadFrames answers -11901) the last frame, as
    /// AVAssetImageGenerator clamps (a time before the end names the frame shown then, §7.1: on an AVI at 30 fps
    /// 238/120 s is in the last frame of a 60-frame track).
    static func frame(_ asset: Asset, _ track: AssetTrack, at time: MediaTime,
                      settings: [String: SettingValue]) throws(TrackError) -> ShownFrame {
        let end = track.timeRangeStart.isNumeric && track.duration.isNumeric
            ? track.timeRangeStart.seconds + track.duration.seconds : Double.infinity
        let frames: [IndexedFrame]
        if time.seconds >= end {
            let count = try asset.frameCount(track: track)
            frames = try asset.frames(atIndices: [max(count, 1) - 1], track: track, outputSettings: settings)
        } else {
            frames = try asset.frames(at: [time], track: track, outputSettings: settings)
        }
        guard let first = frames.first else { throw TrackError(.unknown, "trackd returned no frame for \(time)") }
        return ShownFrame(index: first.index, sample: first.sample)
    }
}

/// --rotation of frame, frames and contact-sheet: the track's rotation tag applied (the default, as players and
/// ffmpeg's autorotate do: frames upright, a 90° track's 1280×720 frames 720×1280) or kept (frames as coded, as
/// AVAssetReaderTrackOutput and `read` give them). Applied by trackd (TrackdAppliesPreferredTrackTransform).
enum Rotation {
    static let option = Option<Bool>(
        "--rotation", "apply|keep",
        help: "apply: turn frames upright by the track's rotation tag, as players and ffmpeg's autorotate do; keep: "
            + "frames as coded (AVAssetReaderTrackOutput's)",
        default: "apply"
    ) { text throws(UsageError) in
        switch text {
        case "apply": return true
        case "keep": return false
        default: throw UsageError("--rotation takes apply or keep, not \(text)")
        }
    }

    static func applies(_ p: ParsedArguments) -> Bool { p[option] ?? true }

    /// The output setting that says it.
    static func settings(_ apply: Bool) -> [String: SettingValue] {
        apply ? [SettingsKey.appliesPreferredTrackTransform: .bool(true)] : [:]
    }
}
