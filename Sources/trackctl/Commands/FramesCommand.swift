import SystemCalls
import TrackdProtocol
import TrackClient

/// `trackctl frames FILE (--at … | --index …)`: exact random access, the frames at given times or indices.
struct FramesCommand: Command {
    static let at = Option<[MediaTime]>(
        "--at", "T1,T2,…", help: "the frames shown at these times (seconds, to the microsecond: a PTS printed by read names its own frame; or N/D exactly)"
    ) { text throws(UsageError) in
        try commaList(text) { item throws(UsageError) in try Seconds.time(item, rule: "--at takes seconds ≥ 0 or N/D") }
    }
    static let index = Option<[UInt64]>(
        "--index", "I1,I2,…", help: "the frames with these numbers (0-based, presentation order)"
    ) { text throws(UsageError) in
        try commaList(text) { item throws(UsageError) in
            guard let i = UInt64(item) else { throw UsageError("--index takes frame numbers (0, 1, …), not \(item)") }
            return i
        }
    }
    static let track = Option<UInt32>.videoTrack

    static let spec = CommandSpec(
        name: "frames", summary: "exact random access: the frames at given times or indices",
        forms: [[.argument(.file), .choice([[.the(at)], [.the(index)]]), .opt(track), .opt(VideoRequest.pixelFormat),
                 .opt(VideoRequest.width, VideoRequest.height), .opt(VideoRequest.untaggedMatrix), .opt(Rotation.option), .many(Setting.option), .opt(SampleOutput.output),
                 .opt(SampleOutput.md5), .opt(SampleOutput.json)]],
        notes: """
              The frames shown at the --at times, or with the --index numbers, decoded like read, in the order
              given, each GOP decoded once. --md5/--json/--output as for read, with INDEX the frame's number in
              the track. Frames are turned upright by the track's rotation tag (--rotation keep: as coded).
            """,
        examples: [
            "trackctl frames clip.mp4 --at 0.5,12.25,3 --pixel-format BGRA --md5",
            "trackctl frames clip.mp4 --index 0,10,20 --output frames.yuv",
        ])

    static func answersAlone(_ parsed: ParsedArguments) -> Bool { VideoRequest.answersAlone(parsed) }

    let parsed: ParsedArguments
    let video: VideoRequest

    init(_ p: ParsedArguments) throws(UsageError) {
        guard p.isGiven(Self.at) != p.isGiven(Self.index) else {
            throw UsageError("frames needs exactly one of --at T1,T2,… and --index I1,I2,…")
        }
        parsed = p
        video = try VideoRequest(p)
    }

    func run(socketPath: String?) {
        let overrides = Rotation.settings(Rotation.applies(parsed)).merging(Setting.dictionary(parsed.all(Setting.option))) { $1 }
        let settings = video.settings(overrides: overrides)
        let asset = Open.asset(parsed.argument(.file), socketPath: socketPath)
        let track = Open.track(asset, id: parsed[Self.track])
        let writer = SampleWriter(parsed, decodedAudio: false)
        let start = monotonicSeconds()
        let frames: [IndexedFrame]
        do {
            if let at = parsed[Self.at] {
                // Seconds are read to the microsecond, as read/frames print them, and taken half a microsecond late: a
                // printed PTS (rounded, maybe down) then names its own frame, not the one before, also on a track
                // whose times are nanoseconds. N/D is exact. trackd rounds either to the track's grid.
                let times = at.map { t in
                    t.timescale != MediaTime.nanosecondTimescale ? t
                        : MediaTime.nanoseconds(((t.value + 500) / 1000) * 1000 + 500)
                }
                frames = try asset.frames(at: times, track: track, outputSettings: settings)
            } else {
                frames = try asset.frames(atIndices: parsed[Self.index] ?? [], track: track, outputSettings: settings)
            }
        } catch {
            Exit.failed(error)
        }
        var bytes = 0
        for frame in frames { bytes += writer.write(frame.sample, index: Int(frame.index)) }
        writer.close()
        writer.summary(samples: frames.count, audioFrames: nil, bytes: bytes, since: start)
    }
}
