import SystemCalls
import TrackdProtocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// `trackctl read FILE …`: every sample of a track, decoded (video or linear PCM) or as stored.
struct ReadCommand: Command {
    static let track = Option<UInt32>.trackID(
        help: "the track to read (default: the first video track; with audio options, or in a file without video, the first audio track)")
    static let passthrough = Flag("--passthrough", help: "the samples as stored (compressed), not decoded")
    static let start = Option<MediaTime>.time("--start", "S", help: "the reader's timeRange starts at S (seconds, or N/D exactly)")
    static let duration = Option<MediaTime>.time("--duration", "D", help: "and lasts D (seconds, or N/D; default: to the end)")
    static let ranges = Option<[MediaTimeRange]>(
        "--ranges", "S1-E1,S2-E2,…", help: "reads these ranges (seconds or N/D; \"S-\" to the end) in the order given, with one output"
    ) { text throws(UsageError) in try commaList(text, Self.range) }

    static let spec = CommandSpec(
        name: "read", summary: "read every sample of a track (decoded or as stored)",
        forms: [
            [.argument(.file), .opt(track), .opt(VideoRequest.pixelFormat), .opt(VideoRequest.width, VideoRequest.height), .opt(VideoRequest.untaggedMatrix),
             .opt(passthrough), .optional([.choice([[.the(start), .opt(duration)], [.the(ranges)]])]),
             .opt(SampleOutput.output), .opt(SampleOutput.md5), .opt(SampleOutput.json)],
            [.argument(.file), .opt(track)] + AudioRequest.synopsis
                + [.opt(SampleOutput.output), .opt(SampleOutput.md5), .opt(SampleOutput.json)],
            [.argument(.file), .opt(track), .phrase("[decoding options above]"), .many(Setting.option), .opt(SampleOutput.output),
             .opt(SampleOutput.md5), .opt(SampleOutput.json)],
            [.literal(VideoRequest.pixelFormat.info, "list"), .opt(SampleOutput.json)],
        ],
        notes: """
              Reads every sample of a track: decoded to --pixel-format (default 420v) or, with --passthrough, as
              stored. --md5 prints "INDEX PTS DURATION SIZE MD5" per sample over the tightly packed planes;
              --output writes those bytes (- for stdout); --json prints one object per sample.
              Audio: any audio option (or --track naming an audio track) decodes to linear PCM; --track then
              defaults to the first audio track. Defaults: the track's rate and channels, 16-bit signed
              little-endian, interleaved. --bit-depth alone is signed integer, --float alone is 32-bit float.
              --output writes the PCM as delivered (non-interleaved: each buffer's channel planes one after
              another); --md5 hashes each buffer's bytes; --json adds "frames" per buffer.
              Audio keys in --setting (AVSampleRateKey, …) pick the audio track as the audio options do.
              --start/--duration set the reader's timeRange. --ranges reads its ranges with one output
              (supportsRandomAccess: the first is the reader's timeRange, then one reset(forReadingTimeRanges:) per
              range, markConfigurationAsFinal at the end).
            """,
        examples: [
            "trackctl read clip.mp4 --pixel-format BGRA --width 640 --height 360 --output frames.bgra",
            "trackctl read clip.mp4 --pixel-format y420 --md5",
            "trackctl read clip.mp4 --passthrough --json",
            "trackctl read song.flac --bit-depth 24 --output song.s24le",
            "trackctl read clip.mp4 --sample-rate 22050 --channels 1 --float --output mono.f32le",
            "trackctl read clip.mp4 --setting 'PixelFormatType=[\"v308\",\"BGRA\"]' --setting Width=640 --setting Height=360 --md5",
            "trackctl read clip.mp4 --pixel-format y420 --md5 --ranges 1.2-1.5,0-0.5",
            "trackctl read --pixel-format list",
        ])

    /// One item of --ranges: "S-E", or "S-" to the end.
    static func range(_ item: Substring) throws(UsageError) -> MediaTimeRange {
        let parts = item.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw UsageError("--ranges takes START-END[,START-END…] in seconds, not \(item)") }
        let s = try Seconds.time(parts[0], rule: "--ranges takes seconds ≥ 0 or N/D")
        if parts[1].isEmpty { return MediaTimeRange(start: s, duration: .positiveInfinity) }
        let e = try Seconds.time(parts[1], rule: "--ranges takes seconds ≥ 0 or N/D")
        guard !Seconds.isBefore(e, s) else { throw UsageError("--ranges: \(item) ends before it starts") }
        return MediaTimeRange(start: s, duration: Seconds.difference(e, s))
    }

    static func answersAlone(_ parsed: ParsedArguments) -> Bool { VideoRequest.answersAlone(parsed) }

    let parsed: ParsedArguments
    /// --start/--duration: the reader's time range (nil: everything). --ranges: ranges read one after another.
    let timeRange: MediaTimeRange?
    let ranges: [MediaTimeRange]
    let passthrough: Bool
    let videoGiven: Bool
    let audio: Bool
    let video: VideoRequest
    let audioSettings: [String: SettingValue]
    let overrides: [String: SettingValue]

    init(_ p: ParsedArguments) throws(UsageError) {
        parsed = p
        ranges = p[Self.ranges] ?? []
        if p.isGiven(Self.ranges) && (p.isGiven(Self.start) || p.isGiven(Self.duration)) {
            throw UsageError("--ranges cannot be combined with --start/--duration")
        }
        timeRange = p.isGiven(Self.start) || p.isGiven(Self.duration)
            ? MediaTimeRange(start: p[Self.start] ?? .zero, duration: p[Self.duration] ?? .positiveInfinity)
            : nil
        passthrough = p[Self.passthrough]
        videoGiven = VideoRequest.isGiven(p)
        overrides = Setting.dictionary(p.all(Setting.option))
        if passthrough && !overrides.isEmpty {
            throw UsageError("--setting asks for decoded output; it cannot be combined with --passthrough")
        }
        // Audio keys in --setting choose the audio track as the audio options do (unless video options are given).
        let settingAudio = !videoGiven && !overrides.keys.contains(where: SettingsKey.videoKeys.contains)
            && overrides.keys.contains(where: SettingsKey.audioKeys.contains)
        audio = AudioRequest.isGiven(p) || settingAudio
        if passthrough && (videoGiven || audio) {
            throw UsageError("--passthrough reads samples as stored; it cannot be combined with --pixel-format/--width/--height or the audio options")
        }
        if audio && videoGiven {
            throw UsageError("the audio options (--audio-format, --sample-rate, --channels, --bit-depth, --float, --big-endian, --non-interleaved, --audio-time-pitch-algorithm) cannot be combined with --pixel-format/--width/--height")
        }
        video = try VideoRequest(p)
        audioSettings = AudioRequest.settings(p)
    }

    func run(socketPath: String?) {
        var settings: [String: SettingValue]?
        if audio {
            settings = audioSettings
        } else if !passthrough {
            settings = video.settings(overrides: overrides)
        }
        let asset = Open.asset(parsed.argument(.file), socketPath: socketPath)
        let track = Open.track(asset, id: parsed[Self.track], audio: audio, fallbackToAudio: !videoGiven && !passthrough)
        if !passthrough && !videoGiven && track.mediaType == .audio {
            settings = audioSettings  // an audio track chosen with --track: linear PCM with its defaults
        }
        if let base = settings, !overrides.isEmpty { settings = Setting.merged(base, overrides) }  // --setting wins
        let output: AssetReaderTrackOutput
        do {
            output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        } catch {
            Exit.failed(error)
        }
        let reader = AssetReader(asset: asset)
        let started = misuse { () throws(AssetReaderUsageError) -> Bool in
            try output.setAlwaysCopiesSampleData(false)
            if let range = timeRange ?? ranges.first { try reader.setTimeRange(range) }
            try output.setSupportsRandomAccess(!ranges.isEmpty)
            try reader.add(output)
            return try reader.startReading()
        }
        guard started else { Exit.failed(reader.error ?? TrackError(.unknown, "startReading failed")) }
        readAll(reader, output, duration: asset.duration.seconds, decodedAudio: settings != nil && track.mediaType == .audio)
    }

    /// Copies every sample to the writer; with --ranges, one range after another.
    func readAll(_ reader: AssetReader, _ output: AssetReaderTrackOutput, duration total: Double, decodedAudio: Bool) {
        let writer = SampleWriter(parsed, decodedAudio: decodedAudio)
        let progress = !writer.md5 && !writer.json && isatty(2) != 0
        let start = monotonicSeconds()
        var index = 0, bytes = 0, frames = 0
        var nextRanges = ranges.dropFirst()
        while true {
            while let sample = misuse({ () throws(AssetReaderUsageError) in try output.copyNextSampleBuffer() }) {
                if decodedAudio { frames += sample.numberOfSamples }
                bytes += writer.write(sample, index: index)
                index += 1
                if progress && index % 10 == 0 { Self.drawProgress(sample.presentationTimeStamp.seconds, total) }
            }
            // --ranges: the next range once this one has returned nil; markConfigurationAsFinal after the last.
            guard !ranges.isEmpty, reader.status == .reading else { break }
            guard let next = nextRanges.popFirst() else {
                output.markConfigurationAsFinal()
                break
            }
            misuse { () throws(AssetReaderUsageError) in try output.reset(forReadingTimeRanges: [next]) }
        }
        writer.close()
        if progress { IO.err.write("\r\u{1B}[K") }
        guard reader.status == .completed else {
            Exit.failed(reader.error ?? TrackError(.unknown, "reading stopped with status \(reader.status)"))
        }
        writer.summary(samples: index, audioFrames: decodedAudio ? frames : nil, bytes: bytes, since: start)
    }

    static func drawProgress(_ position: Double, _ total: Double) {
        guard total.isFinite, total > 0 else { return }
        let fraction = min(max(position / total, 0), 1)
        let filled = Int(fraction * 40)
        IO.err.write("\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 40 - filled) + "] "
                     + fixed(fraction * 100, 0) + "%")
    }
}

/// read's audio options: linear PCM settings.
enum AudioRequest {
    static let format = Option<String>.text("--audio-format", "lpcm", help: "the audio format: lpcm, linear PCM (default lpcm)")
    static let sampleRate = Option<Int>.count("--sample-rate", "HZ", help: "resample to HZ (default: the track's rate)")
    static let channels = Option<Int>.count("--channels", "N", help: "mix to N channels (default: the track's)")
    static let bitDepth = Option<Int>.count("--bit-depth", "8|16|24|32", help: "integer samples of this many bits (default 16)")
    static let float = Flag("--float", help: "floating-point samples, 32-bit unless --bit-depth")
    static let bigEndian = Flag("--big-endian", help: "big-endian samples (default little-endian)")
    static let nonInterleaved = Flag("--non-interleaved", help: "each channel in its own plane (default interleaved)")
    static let timePitch = Option<String>.text(
        "--audio-time-pitch-algorithm", "NAME",
        help: "the output's audioTimePitchAlgorithm: Spectral (default), TimeDomain, Varispeed or LowQualityZeroLatency; at rate 1 the samples are the same")

    static let all: [any Declared] = [format, sampleRate, channels, bitDepth, float, bigEndian, nonInterleaved, timePitch]
    static var synopsis: [Usage] { all.map { .opt($0) } }

    static func isGiven(_ p: ParsedArguments) -> Bool { all.contains { p.isGiven($0) } }

    /// Linear PCM settings from the audio options. --bit-depth and --float always send both
    /// AVLinearPCMBitDepthKey and AVLinearPCMIsFloatKey (--bit-depth alone: signed integer; --float alone: 32-bit float).
    static func settings(_ p: ParsedArguments) -> [String: SettingValue] {
        var settings: [String: SettingValue] = [SettingsKey.formatID: .string(p[format] ?? "lpcm")]
        if let rate = p[sampleRate] { settings[SettingsKey.sampleRate] = .int(Int64(rate)) }
        if let channels = p[channels] { settings[SettingsKey.numberOfChannels] = .int(Int64(channels)) }
        let isFloat = p[float]
        let depth = p[bitDepth]
        if isFloat || depth != nil {
            settings[SettingsKey.isFloat] = .bool(isFloat)
            settings[SettingsKey.bitDepth] = .int(Int64(depth ?? (isFloat ? 32 : 16)))
        }
        if p[bigEndian] { settings[SettingsKey.isBigEndian] = .bool(true) }
        if p[nonInterleaved] { settings[SettingsKey.isNonInterleaved] = .bool(true) }
        if let name = p[timePitch] { settings[SettingsKey.audioTimePitchAlgorithm] = .string(name) }
        return settings
    }
}
