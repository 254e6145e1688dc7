// trackctl — the command-line client of trackd, built on TrackClient. See `trackctl --help`.
import Protocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage:
      trackctl [--socket PATH] tracks FILE [--json]
      trackctl [--socket PATH] read FILE [--track ID] [--pixel-format CODE] [--width N --height N] [--passthrough]
                               [--start S [--duration D] | --ranges S1-E1,S2-E2,…] [--output PATH|-] [--md5] [--json]
      trackctl [--socket PATH] read FILE [--track ID] [--audio-format lpcm] [--sample-rate HZ] [--channels N]
                               [--bit-depth 8|16|24|32] [--float] [--big-endian] [--non-interleaved]
                               [--output PATH|-] [--md5] [--json]
      trackctl [--socket PATH] read FILE [--track ID] [decoding options above] [--setting KEY=VALUE]...
                               [--output PATH|-] [--md5] [--json]
      trackctl [--socket PATH] frames FILE (--at T1,T2,… | --index I1,I2,…) [--track ID] [--pixel-format CODE]
                               [--width N --height N] [--setting KEY=VALUE]... [--output PATH|-] [--md5] [--json]
      trackctl [--socket PATH] frame FILE --time SECONDS [--track ID] --output OUT.png
      trackctl [--socket PATH] contact-sheet FILE --output SHEET.png [--count N] [--track ID]
      trackctl [--socket PATH] status [--json]
      trackctl read --pixel-format list

    Reads media through trackd (AVAssetReader for Linux). The socket defaults to $TRACKD_SOCKET, else
    $XDG_RUNTIME_DIR/trackd.sock, else /run/trackd/trackd.sock.

      tracks    list the file's tracks (--json: one array, unknown values null)
      read      read every sample of a track: decoded to --pixel-format (default 420v) or, with --passthrough,
                as stored. --md5 prints "INDEX PTS DURATION SIZE MD5" per sample over the tightly packed
                planes; --output writes those bytes; --json prints one object per sample.
                Audio: any audio option (or --track naming an audio track) decodes to linear PCM; --track then
                defaults to the first audio track. Defaults: the track's rate and channels, 16-bit signed
                little-endian, interleaved. --bit-depth alone is signed integer, --float alone is 32-bit float.
                --output writes the PCM as delivered (non-interleaved: each buffer's channel planes one after
                another); --md5 hashes each buffer's bytes; --json adds "frames" per buffer.
                --setting KEY=VALUE (repeatable) adds any output-settings entry (docs/SETTINGS.md) and replaces
                the convenience options' entry for the same KEY; it asks for decoded output (not with
                --passthrough). KEY is the key's string value or Apple's constant name
                (kCVPixelBufferPixelFormatTypeKey = PixelFormatType). VALUE is, in this order: JSON if it starts
                with { [ or " (objects, arrays, true/false, numbers: integers when integral, strings; no null);
                true/false a boolean; an integer, or a decimal number (double); exactly four characters the
                four-char code's number (BGRA, 420v, lpcm: like Apple's kCVPixelFormatType_32BGRA); else a string.
                Audio keys (AVSampleRateKey, …) pick the audio track as the audio options do.
                --start/--duration (seconds) set the reader's timeRange. --ranges reads those ranges in the order
                given with one output (supportsRandomAccess: the first is the reader's timeRange, then one
                reset(forReadingTimeRanges:) per range, markConfigurationAsFinal at the end); "S-" reads to the end.
      frames    exact random access: the frames shown at the --at times (seconds, to the microsecond: a PTS
                printed by read names its own frame), or with the --index numbers (0-based, presentation order),
                decoded like read, in the order given, each GOP decoded once;
                --md5/--json/--output as for read, with INDEX the frame's number in the track
      frame     write the exact frame shown at --time as a PNG
      contact-sheet
                a PNG of N (--count, 1…100, default 12) exact frames, the ones shown at the centres of N equal
                slices of the video track's duration, in a grid under a header (file name, size, codec, fps,
                duration, file size), each captioned with its time (HH:MM:SS.mmm) and frame index. Tiles are
                320 pixels wide, TH = 320 × display height / width rounded to even tall (rotation applied);
                C = min(N, ⌈√(N·4·TH/960)⌉) columns, R = ⌈N/C⌉ rows; the sheet is 12 + C·332 wide and
                40 + R·(TH + 34) tall; tile i's picture starts at x = 12 + (i mod C)·332, y = 40 + ⌊i/C⌋·(TH + 34)
      status    show the daemon's state

    examples:
      trackctl tracks clip.mp4
      trackctl read clip.mp4 --pixel-format BGRA --width 640 --height 360 --output frames.bgra
      trackctl read clip.mp4 --pixel-format y420 --md5
      trackctl read song.flac --bit-depth 24 --output song.s24le
      trackctl read clip.mp4 --sample-rate 22050 --channels 1 --float --output mono.f32le
      trackctl read clip.mp4 --setting 'PixelFormatType=["v308","BGRA"]' --setting Width=640 --setting Height=360 --md5
      trackctl frame clip.mp4 --time 2.5 --output frame.png
      trackctl contact-sheet clip.mp4 --count 16 --output sheet.png
      trackctl frames clip.mp4 --at 0.5,12.25,3 --pixel-format BGRA --md5
      trackctl read clip.mp4 --pixel-format y420 --md5 --ranges 1.2-1.5,0-0.5

    exit status: 0 success, 1 the reader or open failed, 2 usage error, 3 trackd unreachable
    """

struct UsageError: Error { var message: String }

enum Exit {
    static func usageError(_ message: String) -> Never {
        fputs("trackctl: \(message)\n\(usage)\n", IO.err)
        exit(2)
    }

    static func failed(_ error: TrackError) -> Never {
        fputs("trackctl: error \(error.code) (\(error.knownCode.map { "\($0)" } ?? "unknown")): \(error.message)\n", IO.err)
        exit(error.code == AVErrorCode.daemonUnreachable.rawValue ? 3 : 1)
    }
}

/// Options parsed from the command line: flags without values and options with one value each.
struct Options {
    var positional: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []
    /// Every value of a repeatable option, in order.
    var repeated: [String: [String]] = [:]

    static let valued: Set<String> = ["--socket", "--track", "--pixel-format", "--width", "--height", "--output", "--time",
                                      "--audio-format", "--sample-rate", "--channels", "--bit-depth", "--start", "--duration", "--ranges",
                                      "--at", "--index", "--count"]
    static let repeatable: Set<String> = ["--setting"]
    static let boolean: Set<String> = ["--passthrough", "--md5", "--json", "--help", "-h", "--float", "--big-endian",
                                       "--non-interleaved"]

    init(_ args: [String]) {
        var i = 0
        while i < args.count {
            let a = args[i]
            if Self.repeatable.contains(a) {
                guard i + 1 < args.count else { Exit.usageError("\(a) needs a value") }
                repeated[a, default: []].append(args[i + 1])
                i += 2
            } else if Self.valued.contains(a) {
                guard i + 1 < args.count else { Exit.usageError("\(a) needs a value") }
                values[a] = args[i + 1]
                i += 2
            } else if let eq = a.firstIndex(of: "="), Self.repeatable.contains(String(a[..<eq])) {
                repeated[String(a[..<eq]), default: []].append(String(a[a.index(after: eq)...]))
                i += 1
            } else if let eq = a.firstIndex(of: "="), Self.valued.contains(String(a[..<eq])) {
                values[String(a[..<eq])] = String(a[a.index(after: eq)...])
                i += 1
            } else if Self.boolean.contains(a) {
                flags.insert(a)
                i += 1
            } else if a.hasPrefix("--") {
                Exit.usageError("unknown option \(a)")
            } else {
                positional.append(a)
                i += 1
            }
        }
    }

    func int(_ key: String) -> Int? {
        guard let v = values[key] else { return nil }
        guard let n = Int(v), n >= 0 else { Exit.usageError("\(key) takes a non-negative whole number, not \(v)") }
        return n
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
if options.flags.contains("--help") || options.flags.contains("-h") {
    print(usage)
    exit(0)
}
if options.values["--pixel-format"] == "list" {
    Commands.printPixelFormats()
    exit(0)
}
guard let command = options.positional.first else { Exit.usageError("no command given") }
let socketPath = options.values["--socket"]
switch command {
case "tracks": Commands.tracks(options, socketPath: socketPath)
case "read": Commands.read(options, socketPath: socketPath)
case "frame": Commands.frame(options, socketPath: socketPath)
case "frames": Commands.frames(options, socketPath: socketPath)
case "status": Commands.status(options, socketPath: socketPath)
case "contact-sheet": ContactSheet.run(options, socketPath: socketPath)
default: Exit.usageError("unknown command \(command)")
}
exit(0)
