import Protocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

enum Commands {
    static func openAsset(_ options: Options, socketPath: String?) -> Asset {
        guard options.positional.count == 2 else { Exit.usageError("\(options.positional[0]) takes exactly one FILE") }
        do {
            return try Asset(path: options.positional[1], socketPath: socketPath)
        } catch {
            Exit.failed(error)
        }
    }

    static func seconds(_ t: MediaTime) -> JSON.Value { t.isNumeric ? .number(t.seconds, decimals: 6) : .null }
    static func number(_ n: UInt32) -> JSON.Value { n == 0 ? .null : .int(Int64(n)) }

    // MARK: tracks

    static func tracks(_ options: Options, socketPath: String?) {
        let asset = openAsset(options, socketPath: socketPath)
        if options.flags.contains("--json") {
            let items: [JSON.Value] = asset.tracks.map { t in
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
            print(JSON.encode(.array(items)))
            return
        }
        print("\(asset.path): duration \(fixed(asset.duration.seconds, 3)) s, \(asset.tracks.count) track(s)")
        let header = ["ID", "TYPE", "CODEC", "SIZE", "FPS", "DURATION", "START", "RATE", "CH", "DEPTH", "ALPHA", "BITS", "CHROMA",
                      "ROT", "LANG", "PIXFMT"]
        var rows = [header]
        for t in asset.tracks {
            let video = t.mediaType == .video
            rows.append([
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
            ])
        }
        let widths = header.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $0.element + String(repeating: " ", count: widths[$0.offset] - $0.element.count) }
                .joined(separator: "  "))
        }
        // ffprobe's per-stream details the table has no room for, one line per track that has any.
        for t in asset.tracks {
            var details: [String] = []
            if let profile = t.profile { details.append("profile \(profile)" + (t.level.map { ", level \($0)" } ?? "")) }
            if let par = t.pixelAspectRatio, t.naturalSize.width > 0, t.naturalSize.height > 0 {
                let dar = reducedRatio(UInt64(t.naturalSize.width) * UInt64(par.numerator), UInt64(t.naturalSize.height) * UInt64(par.denominator))
                details.append("SAR \(par.numerator):\(par.denominator) DAR \(dar.0):\(dar.1)")
            }
            if t.mediaType == .video, let range = colorRangeName(t.colorimetry.range) {
                details.append("color \(range), matrix \(t.colorimetry.matrix), primaries \(t.colorimetry.primaries), transfer \(t.colorimetry.transfer) (H.273)")
            }
            if t.estimatedDataRate > 0 { details.append("\(t.estimatedDataRate / 1000) kb/s") }
            if let layout = t.channelLayout { details.append(layout) }
            if !details.isEmpty { print("track \(t.trackID): " + details.joined(separator: "; ")) }
        }
        if asset.tracks.contains(where: { $0.mediaType == .video }) {
            print("PIXFMT: the recommended --pixel-format, the decoder's native layout for the track's BITS and CHROMA "
                  + "(a lossless repack, no conversion; docs/SETTINGS.md)")
        }
    }

    /// tracks --json: profile, level, pixel aspect ratio, colour description, bit rate, channel layout.
    static func detailJSON(_ t: AssetTrack) -> [(String, JSON.Value)] {
        func text(_ s: String?) -> JSON.Value { s.map { JSON.Value.string($0) } ?? .null }
        func code(_ c: UInt8) -> JSON.Value { t.mediaType == .video && c != 2 ? .int(Int64(c)) : .null }
        let par: String? = t.pixelAspectRatio.map { "\($0.numerator):\($0.denominator)" }
        let range: String? = t.mediaType == .video ? colorRangeName(t.colorimetry.range) : nil
        return [
            ("profile", text(t.profile)), ("level", text(t.level)), ("pixelAspectRatio", text(par)),
            ("colorRange", text(range)), ("colorMatrix", code(t.colorimetry.matrix)),
            ("colorPrimaries", code(t.colorimetry.primaries)), ("colorTransfer", code(t.colorimetry.transfer)),
            ("bitRate", number(t.estimatedDataRate)), ("channelLayout", text(t.channelLayout)),
        ]
    }

    /// "tv" (video range) or "pc" (full range), ffprobe's spelling; nil when unknown.
    static func colorRangeName(_ range: UInt8) -> String? { range == 1 ? "tv" : range == 2 ? "pc" : nil }

    /// a:b in lowest terms.
    static func reducedRatio(_ a: UInt64, _ b: UInt64) -> (UInt64, UInt64) {
        func gcd(_ x: UInt64, _ y: UInt64) -> UInt64 { y == 0 ? x : gcd(y, x % y) }
        let g = max(gcd(a, b), 1)
        return (a / g, b / g)
    }

    /// The common name of a codec four-char code trackd reports (the ones GstBridge maps caps to), or nil.
    static func codecName(_ codec: FourCC) -> String? {
        switch codec.description {
        case "avc1", "avc3": "H.264"
        case "hvc1", "hev1": "HEVC"
        case "vp08": "VP8"
        case "vp09": "VP9"
        case "av01": "AV1"
        case "jpeg": "Motion JPEG"
        case "png ": "PNG"
        case "apco": "ProRes 422 Proxy"
        case "apcs": "ProRes 422 LT"
        case "apcn": "ProRes 422"
        case "apch": "ProRes 422 HQ"
        case "ap4h": "ProRes 4444"
        case "ap4x": "ProRes 4444 XQ"
        case "mp4v": "MPEG-4 Part 2"
        case "mp2v": "MPEG-2 Video"
        case "mp1v": "MPEG-1 Video"
        case "raw ": "uncompressed video"
        case "mp4a": "AAC"
        case ".mp3": "MP3"
        case ".mp2": "MPEG-1 Layer II"
        case ".mp1": "MPEG-1 Layer I"
        case "Opus": "Opus"
        case "fLaC": "FLAC"
        case "lpcm": "PCM"
        case "ac-3": "AC-3"
        case "ec-3": "E-AC-3"
        case "alac": "ALAC"
        case "vorb": "Vorbis"
        case "alaw": "A-law"
        case "ulaw": "µ-law"
        case "tx3g": "timed text"
        default: nil
        }
    }

    // MARK: read

    static let audioValued = ["--audio-format", "--sample-rate", "--channels", "--bit-depth"]
    static let audioFlags = ["--float", "--big-endian", "--non-interleaved"]

    /// Linear PCM settings from the audio flags. --bit-depth and --float always send both AVLinearPCMBitDepthKey
    /// and AVLinearPCMIsFloatKey (--bit-depth alone: signed integer; --float alone: 32-bit float).
    static func audioSettings(_ options: Options) -> [String: SettingValue] {
        var settings: [String: SettingValue] = [SettingsKey.formatID: .string(options.values["--audio-format"] ?? "lpcm")]
        if let rate = options.int("--sample-rate") { settings[SettingsKey.sampleRate] = .int(Int64(rate)) }
        if let channels = options.int("--channels") { settings[SettingsKey.numberOfChannels] = .int(Int64(channels)) }
        let isFloat = options.flags.contains("--float")
        let depth = options.int("--bit-depth")
        if isFloat || depth != nil {
            settings[SettingsKey.isFloat] = .bool(isFloat)
            settings[SettingsKey.bitDepth] = .int(Int64(depth ?? (isFloat ? 32 : 16)))
        }
        if options.flags.contains("--big-endian") { settings[SettingsKey.isBigEndian] = .bool(true) }
        if options.flags.contains("--non-interleaved") { settings[SettingsKey.isNonInterleaved] = .bool(true) }
        return settings
    }

    /// A time in seconds (finite, ≥ 0), or a usage error.
    static func secondsValue(_ text: Substring, of option: String) -> Double {
        guard let v = Double(text), v.isFinite, v >= 0 else {
            Exit.usageError("\(option) takes seconds ≥ 0, not \(text)")
        }
        return v
    }

    /// --start/--duration: the reader's time range (nil: everything). --ranges: ranges read one after another.
    static func readRanges(_ options: Options) -> (timeRange: MediaTimeRange?, ranges: [MediaTimeRange]) {
        let start = options.values["--start"], duration = options.values["--duration"]
        if let list = options.values["--ranges"] {
            if start != nil || duration != nil { Exit.usageError("--ranges cannot be combined with --start/--duration") }
            let ranges = list.split(separator: ",", omittingEmptySubsequences: false).map { item -> MediaTimeRange in
                let parts = item.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { Exit.usageError("--ranges takes START-END[,START-END…] in seconds, not \(item)") }
                let s = secondsValue(parts[0], of: "--ranges")
                if parts[1].isEmpty { return MediaTimeRange(start: MediaTime(seconds: s), duration: .positiveInfinity) }
                let e = secondsValue(parts[1], of: "--ranges")
                guard e >= s else { Exit.usageError("--ranges: \(item) ends before it starts") }
                return MediaTimeRange(start: MediaTime(seconds: s), duration: MediaTime(seconds: e - s))
            }
            return (nil, ranges)
        }
        if start == nil && duration == nil { return (nil, []) }
        return (MediaTimeRange(start: MediaTime(seconds: start.map { secondsValue($0[...], of: "--start") } ?? 0),
                               duration: duration.map { MediaTime(seconds: secondsValue($0[...], of: "--duration")) } ?? .positiveInfinity),
                [])
    }

    static func read(_ options: Options, socketPath: String?) {
        let (timeRange, ranges) = readRanges(options)
        let passthrough = options.flags.contains("--passthrough")
        let formatName = options.values["--pixel-format"]
        let videoFlags = formatName != nil || options.values["--width"] != nil || options.values["--height"] != nil
        let overrides = Setting.parseAll(options.repeated["--setting"] ?? [])
        if passthrough && !overrides.isEmpty {
            Exit.usageError("--setting asks for decoded output; it cannot be combined with --passthrough")
        }
        // Audio keys in --setting choose the audio track as the audio options do (unless video options are given).
        let settingAudio = !videoFlags && !overrides.keys.contains(where: SettingsKey.videoKeys.contains)
            && overrides.keys.contains(where: SettingsKey.audioKeys.contains)
        let audio = audioValued.contains { options.values[$0] != nil } || audioFlags.contains { options.flags.contains($0) }
            || settingAudio
        if passthrough && (videoFlags || audio) {
            Exit.usageError("--passthrough reads samples as stored; it cannot be combined with --pixel-format/--width/--height or the audio options")
        }
        if audio && videoFlags {
            Exit.usageError("the audio options (--audio-format, --sample-rate, --channels, --bit-depth, --float, --big-endian, --non-interleaved) cannot be combined with --pixel-format/--width/--height")
        }
        var settings: [String: SettingValue]?
        if audio {
            settings = audioSettings(options)
        } else if !passthrough {
            settings = videoSettings(options, overrides: overrides)
        }
        let asset = openAsset(options, socketPath: socketPath)
        let track = pickTrack(asset, options, audio: audio, fallbackToAudio: !videoFlags && !passthrough)
        if !passthrough && !videoFlags && track.mediaType == .audio {
            settings = audioSettings(options)  // an audio track chosen with --track: linear PCM with its defaults
        }
        if let base = settings, !overrides.isEmpty { settings = Setting.merged(base, overrides) }  // --setting wins
        let decodedAudio = settings != nil && track.mediaType == .audio
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

        let writer = SampleWriter(options, decodedAudio: decodedAudio)
        let progress = !writer.md5 && !writer.json && isatty(2) != 0
        let total = asset.duration.seconds
        let start = monotonicSeconds()
        var index = 0, bytes = 0, frames = 0
        var nextRanges = ranges.dropFirst()
        while true {
            while let sample = misuse({ () throws(AssetReaderUsageError) in try output.copyNextSampleBuffer() }) {
                if decodedAudio { frames += sample.numberOfSamples }
                bytes += writer.write(sample, index: index)
                index += 1
                if progress && index % 10 == 0 { drawProgress(sample.presentationTimeStamp.seconds, total) }
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
        if progress { fputs("\r\u{1B}[K", IO.err) }
        guard reader.status == .completed else {
            Exit.failed(reader.error ?? TrackError(.unknown, "reading stopped with status \(reader.status)"))
        }
        writer.summary(samples: index, audioFrames: decodedAudio ? frames : nil, bytes: bytes, since: start)
    }

    /// The decoded-video settings of read/frames: --pixel-format (default 420v), --width/--height, then --setting
    /// entries; validated here so a mistake is reported before trackd is contacted.
    static func videoSettings(_ options: Options, overrides: [String: SettingValue]) -> [String: SettingValue] {
        let name = options.values["--pixel-format"] ?? "420v"
        let format = PixelFormat.parse(name)
        guard format != nil || UnsupportedPixelFormat.parse(name) != nil else {
            Exit.usageError("unknown pixel format \(name); `trackctl read --pixel-format list` shows the supported ones")
        }
        let width = options.int("--width"), height = options.int("--height")
        if (width == nil) != (height == nil) { Exit.usageError("--width and --height go together") }
        // A format known to be unsupported goes by name, so validation rejects it with its reason (-11861).
        var settings: [String: SettingValue] = [SettingsKey.pixelFormatType: format.map { .int(Int64($0.code.rawValue)) } ?? .string(name)]
        if let width, let height {
            settings[SettingsKey.width] = .int(Int64(width))
            settings[SettingsKey.height] = .int(Int64(height))
        }
        settings = Setting.merged(settings, overrides)
        do {
            _ = try OutputSettings.validateVideo(settings)
        } catch {
            Exit.failed(error)
        }
        return settings
    }

    // MARK: frames

    static func frames(_ options: Options, socketPath: String?) {
        let at = options.values["--at"], indexList = options.values["--index"]
        guard (at == nil) != (indexList == nil) else { Exit.usageError("frames needs exactly one of --at T1,T2,… and --index I1,I2,…") }
        let settings = videoSettings(options, overrides: Setting.parseAll(options.repeated["--setting"] ?? []))
        let asset = openAsset(options, socketPath: socketPath)
        let track = pickTrack(asset, options)
        let writer = SampleWriter(options, decodedAudio: false)
        let start = monotonicSeconds()
        let frames: [IndexedFrame]
        do {
            if let at {
                // Times are read to the microsecond, as read/frames print them, and taken half a microsecond late: a
                // printed PTS (rounded, maybe down) then names its own frame, not the one before.
                let times = at.split(separator: ",", omittingEmptySubsequences: false).map { text -> MediaTime in
                    .nanoseconds(Int64((secondsValue(text, of: "--at") * 1e6).rounded()) * 1000 + 500)
                }
                frames = try asset.frames(at: times, track: track, outputSettings: settings)
            } else {
                let indices = indexList!.split(separator: ",", omittingEmptySubsequences: false).map { text -> UInt64 in
                    guard let i = UInt64(text) else { Exit.usageError("--index takes frame numbers (0, 1, …), not \(text)") }
                    return i
                }
                frames = try asset.frames(atIndices: indices, track: track, outputSettings: settings)
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

/// Where read and frames put each sample: the packed bytes to --output (a file or - for stdout), one
/// "INDEX PTS DURATION SIZE MD5" line (--md5) or JSON object (--json) per sample, and a summary line otherwise.
final class SampleWriter {
    let md5: Bool, json: Bool
    let decodedAudio: Bool
    private var sink: UnsafeMutablePointer<FILE>?
    private let dataOnStdout: Bool

    init(_ options: Options, decodedAudio: Bool) {
        md5 = options.flags.contains("--md5")
        json = options.flags.contains("--json")
        self.decodedAudio = decodedAudio
        dataOnStdout = options.values["--output"] == "-"
        if let path = options.values["--output"] {
            sink = path == "-" ? IO.out : fopen(path, "wb")
            guard sink != nil else {
                Exit.failed(TrackError(.unknown, "cannot write \(path): \(String(cString: strerror(errno)))"))
            }
        }
    }

    /// Writes one sample; returns its packed size in bytes.
    func write(_ sample: SampleBuffer, index: Int) -> Int {
        var digest = md5 || json ? MD5Digest() : nil
        var size = 0
        sample.forEachPackedRow { row in
            size += row.count
            digest?.update(row)
            if let sink, let base = row.baseAddress, fwrite(base, 1, row.count, sink) != row.count {
                Exit.failed(TrackError(.unknown, "writing the output failed: \(String(cString: strerror(errno)))"))
            }
        }
        let pts = fixed(sample.presentationTimeStamp.seconds, 6)
        let duration = sample.duration.isNumeric ? fixed(sample.duration.seconds, 6) : "0.000000"
        if json {
            var fields: [(String, JSON.Value)] = [
                ("index", .int(Int64(index))), ("pts", .number(sample.presentationTimeStamp.seconds, decimals: 6)),
                ("duration", sample.duration.isNumeric ? .number(sample.duration.seconds, decimals: 6) : .null),
                ("size", .int(Int64(size))), ("sync", .bool(sample.isSync)),
            ]
            if decodedAudio { fields.append(("frames", .int(Int64(sample.numberOfSamples)))) }
            if md5 { fields.append(("md5", .string(digest!.finalizeHex()))) }
            Commands.emit(JSON.encode(.object(fields)), toStderr: dataOnStdout)
        } else if md5 {
            Commands.emit("\(index) \(pts) \(duration) \(size) \(digest!.finalizeHex())", toStderr: dataOnStdout)
        }
        return size
    }

    func close() {
        if let sink, sink != IO.out { fclose(sink) } else { fflush(IO.out) }
        sink = nil
    }

    /// "N samples in S s (… samples/s, … MiB/s)" unless --md5 or --json.
    func summary(samples: Int, audioFrames: Int?, bytes: Int, since start: Double) {
        guard !md5 && !json else { return }
        let elapsed = max(Commands.monotonicSeconds() - start, 1e-9)
        let line = "\(samples) samples" + (audioFrames.map { " (\($0) audio frames)" } ?? "") + " in \(fixed(elapsed, 3)) s ("
            + "\(fixed(Double(samples) / elapsed, 1)) samples/s, \(fixed(Double(bytes) / 1_048_576 / elapsed, 1)) MiB/s)"
        Commands.emit(line, toStderr: dataOnStdout)
    }
}

extension Commands {
    static func emit(_ line: String, toStderr: Bool) {
        if toStderr { fputs(line + "\n", IO.err) } else { print(line) }
    }

    static func pickTrack(_ asset: Asset, _ options: Options, audio: Bool = false, fallbackToAudio: Bool = false) -> AssetTrack {
        if let id = options.values["--track"] {
            guard let n = UInt32(id) else { Exit.usageError("--track takes a track id, not \(id)") }
            guard let t = asset.track(withTrackID: n) else {
                let ids = asset.tracks.map { "\($0.trackID) (\($0.mediaType))" }.joined(separator: ", ")
                Exit.failed(TrackError(.invalidArgument, "\(asset.path) has no track \(n); its tracks: \(ids)"))
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

    static func drawProgress(_ position: Double, _ total: Double) {
        guard total.isFinite, total > 0 else { return }
        let fraction = min(max(position / total, 0), 1)
        let filled = Int(fraction * 40)
        fputs("\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 40 - filled) + "] "
              + fixed(fraction * 100, 0) + "%", IO.err)
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    // MARK: frame

    static func frame(_ options: Options, socketPath: String?) {
        guard let timeText = options.values["--time"] else { Exit.usageError("frame needs --time SECONDS") }
        guard let time = Double(timeText), time.isFinite, time >= 0 else {
            Exit.usageError("--time takes a non-negative number of seconds, not \(timeText)")
        }
        guard let path = options.values["--output"] else { Exit.usageError("frame needs --output OUT.png") }
        let asset = openAsset(options, socketPath: socketPath)
        let track = pickTrack(asset, options)
        let image: GeneratedImage
        do {
            image = try asset.generateImage(track: track, at: MediaTime(seconds: time))
        } catch {
            Exit.failed(error)
        }
        guard let file = fopen(path, "wb") else {
            Exit.failed(TrackError(.unknown, "cannot write \(path): \(String(cString: strerror(errno)))"))
        }
        let written = image.png.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        guard written == image.png.count else { Exit.failed(TrackError(.unknown, "writing \(path) failed")) }
        print("wrote \(path): \(image.width)x\(image.height) PNG, the frame at \(fixed(image.actualTime.seconds, 6)) s")
    }

    // MARK: status

    static func status(_ options: Options, socketPath: String?) {
        let s: StatusReport
        do {
            s = try Trackd.status(socketPath: socketPath)
        } catch {
            Exit.failed(error)
        }
        if options.flags.contains("--json") {
            print(JSON.encode(.object([
                ("supervisorPid", .int(Int64(s.supervisorPID))), ("uptimeSeconds", .number(Double(s.supervisorUptimeMs) / 1000, decimals: 3)),
                ("connectionsAccepted", .int(Int64(s.connectionsAccepted))), ("activeConnections", .int(Int64(s.activeConnections))),
                ("workerCrashes", .int(Int64(s.workerCrashes))),
                ("samplesSent", .int(Int64(clamping: s.daemonSamplesSent))), ("bytesCopied", .int(Int64(clamping: s.daemonBytesCopied))),
                ("bytesZeroCopy", .int(Int64(clamping: s.daemonBytesShared))), ("workerPid", .int(Int64(s.workerPID))),
                ("gstreamer", .string(s.gstreamerVersion)),
            ])))
            return
        }
        print("""
            trackd supervisor pid \(s.supervisorPID), up \(fixed(Double(s.supervisorUptimeMs) / 1000, 1)) s
            connections accepted  \(s.connectionsAccepted) (this one included)
            active connections    \(s.activeConnections)
            worker crashes        \(s.workerCrashes)
            samples sent          \(s.daemonSamplesSent) (all connections)
            bytes copied          \(s.daemonBytesCopied) (into pools by the workers)
            bytes sent zero-copy  \(s.daemonBytesShared) (written by GStreamer into shared memory)
            this worker           pid \(s.workerPID), \(s.gstreamerVersion)
            """)
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

extension String {
    func padding(_ n: Int, with c: Character = " ") -> String {
        count >= n ? self + " " : self + String(repeating: c, count: n - count)
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
