import TrackdProtocol
import SystemCalls
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// `trackctl frame FILE --time SECONDS --output OUT.png`: the exact frame shown at a time, as a PNG.
struct FrameCommand: Command {
    static let time = Option<MediaTime>.time(
        "--time", "SECONDS", rule: "takes a non-negative number of seconds or N/D", required: true,
        help: "the time of the frame: seconds, or N/D exactly (1001/30000)")
    static let track = Option<UInt32>.videoTrack
    static let output = Option<String>.text("--output", "OUT.png", help: "the PNG to write", required: true)

    static let spec = CommandSpec(
        name: "frame", summary: "write the exact frame shown at a time as a PNG",
        forms: [[.argument(.file), .the(time), .opt(track), .the(output)]],
        notes: """
              Writes the frame displayed at --time (not the nearest keyframe) as a PNG encoded by the worker.
            """,
        examples: ["trackctl frame clip.mp4 --time 2.5 --output frame.png"])

    let file: String
    let time: MediaTime
    let trackID: UInt32?
    let path: String

    init(_ p: ParsedArguments) {
        file = p.argument(.file)
        time = p[Self.time] ?? .zero
        trackID = p[Self.track]
        path = p[Self.output] ?? ""
    }

    func run(socketPath: String?) {
        let asset = Open.asset(file, socketPath: socketPath)
        let track = Open.track(asset, id: trackID)
        let image: GeneratedImage
        do {
            image = try asset.generateImage(track: track, at: time)
        } catch {
            Exit.failed(error)
        }
        guard let file = OutputFile.create(path) else {
            Exit.failed(TrackError(.unknown, "cannot write \(path): \(SystemError("fopen", errno: currentErrno()).reason)"))
        }
        let written = file.write(image.png)
        file.close()
        guard written else { Exit.failed(TrackError(.unknown, "writing \(path) failed")) }
        print("wrote \(path): \(image.width)x\(image.height) PNG, the frame at \(fixed(image.actualTime.seconds, 6)) s")
    }
}
