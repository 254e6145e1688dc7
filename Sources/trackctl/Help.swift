// trackctl's help: one entry per command. A new command is one `CommandHelp` in `Help.commands` plus its case in
// main.swift's dispatch.

/// What `trackctl COMMAND --help` prints, and the line `trackctl --help` lists.
struct CommandHelp {
    let name: String
    /// One line for the command list.
    let summary: String
    /// Usage lines, without the leading "trackctl [--socket PATH] "; a line starting with a space continues the one
    /// before.
    let usage: [String]
    /// Options and behaviour, already indented.
    let details: String
    /// Complete command lines.
    let examples: [String]
}

enum Help {
    static let commands: [CommandHelp] = [
        CommandHelp(
            name: "tracks", summary: "list a file's tracks",
            usage: ["tracks FILE [--json]"],
            details: """
                  Lists each track: id, media type, codec, size, frame rate, duration, time range start, sample rate,
                  channels, depth, alpha, bit depth, chroma subsampling and the recommended pixel format.
                  --json   one JSON array, one object per track; unknown values are null
                """,
            examples: ["trackctl tracks clip.mp4", "trackctl tracks clip.mp4 --json"]),
        CommandHelp(
            name: "read", summary: "read every sample of a track (decoded or as stored)",
            usage: [
                "read FILE [--track ID] [--pixel-format CODE] [--width N --height N] [--passthrough]",
                "          [--start S [--duration D] | --ranges S1-E1,S2-E2,…] [--output PATH|-] [--md5] [--json]",
                "read FILE [--track ID] [--audio-format lpcm] [--sample-rate HZ] [--channels N]",
                "          [--bit-depth 8|16|24|32] [--float] [--big-endian] [--non-interleaved] [--output PATH|-] [--md5] [--json]",
                "read FILE [--track ID] [decoding options above] [--setting KEY=VALUE]... [--output PATH|-] [--md5] [--json]",
                "read --pixel-format list",
            ],
            details: """
                  Reads every sample of a track: decoded to --pixel-format (default 420v) or, with --passthrough,
                  as stored. --md5 prints "INDEX PTS DURATION SIZE MD5" per sample over the tightly packed
                  planes; --output writes those bytes (- for stdout); --json prints one object per sample.
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
                  --pixel-format list prints the supported pixel formats (no daemon needed).
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
            ]),
        CommandHelp(
            name: "frames", summary: "exact random access: the frames at given times or indices",
            usage: [
                "frames FILE (--at T1,T2,… | --index I1,I2,…) [--track ID] [--pixel-format CODE] [--width N --height N]",
                "            [--setting KEY=VALUE]... [--output PATH|-] [--md5] [--json]",
            ],
            details: """
                  The frames shown at the --at times (seconds, to the microsecond: a PTS printed by read names its
                  own frame), or with the --index numbers (0-based, presentation order), decoded like read, in the
                  order given, each GOP decoded once. --md5/--json/--output as for read, with INDEX the frame's
                  number in the track.
                """,
            examples: [
                "trackctl frames clip.mp4 --at 0.5,12.25,3 --pixel-format BGRA --md5",
                "trackctl frames clip.mp4 --index 0,10,20 --output frames.yuv",
            ]),
        CommandHelp(
            name: "frame", summary: "write the exact frame shown at a time as a PNG",
            usage: ["frame FILE --time SECONDS [--track ID] --output OUT.png"],
            details: """
                  Writes the frame displayed at --time (not the nearest keyframe) as a PNG encoded by the worker.
                """,
            examples: ["trackctl frame clip.mp4 --time 2.5 --output frame.png"]),
        CommandHelp(
            name: "contact-sheet", summary: "a PNG grid of exact frames spread over the video, with captions",
            usage: ["contact-sheet FILE --output SHEET.png [--count N] [--track ID]"],
            details: """
                  A PNG of N (--count, 1…100, default 12) exact frames, the ones shown at the centres of N equal
                  slices of the video track's duration, in a grid under a header (file name, size, codec, fps,
                  duration, file size), each captioned with its time (HH:MM:SS.mmm) and frame index. Tiles are
                  320 pixels wide, TH = 320 × display height / width rounded to even tall (rotation applied);
                  C = min(N, ⌈√(N·4·TH/960)⌉) columns, R = ⌈N/C⌉ rows; the sheet is 12 + C·332 wide and
                  40 + R·(TH + 34) tall; tile i's picture starts at x = 12 + (i mod C)·332, y = 40 + ⌊i/C⌋·(TH + 34).
                """,
            examples: ["trackctl contact-sheet clip.mp4 --count 16 --output sheet.png"]),
        CommandHelp(
            name: "status", summary: "show the daemon's state",
            usage: ["status [--json]"],
            details: """
                  Asks a fresh worker for the daemon's state: supervisor pid and uptime, connections accepted and
                  active, worker crashes, the samples every connection was sent and how many of their bytes the
                  workers copied or sent zero-copy, the worker's pid and GStreamer version.
                  --json   one JSON object
                """,
            examples: ["trackctl status", "trackctl --socket /tmp/trackd.sock status --json"]),
    ]

    static func command(named name: String) -> CommandHelp? { commands.first { $0.name == name } }

    static let socketNote = """
        The socket defaults to $TRACKD_SOCKET, else $XDG_RUNTIME_DIR/trackd.sock, else /run/trackd/trackd.sock;
        --socket PATH (before or after the command) picks another.
        """

    static let exitNote = "exit status: 0 success, 1 the reader or open failed, 2 usage error, 3 trackd unreachable"

    /// `trackctl --help`.
    static var overview: String {
        let width = commands.map(\.name.count).max() ?? 0
        var lines = [
            "usage: trackctl [--socket PATH] COMMAND [ARGS] [--help]", "",
            "Reads media through trackd (AVAssetReader for Linux).", "", "commands:",
        ]
        lines += commands.map { "  \($0.name.padding(width + 2))\($0.summary)" }
        lines += ["", socketNote, "", "examples:"]
        lines += commands.compactMap { $0.examples.first }.map { "  " + $0 }
        lines += ["", "Run `trackctl COMMAND --help` for a command's options and more examples.", exitNote]
        return lines.joined(separator: "\n")
    }

    /// `trackctl COMMAND --help`.
    static func text(for c: CommandHelp) -> String {
        var lines = usageLines(for: c).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines += ["", "\(c.name): \(c.summary)", c.details.trimmingTrailingNewlines, "", "examples:"]
        lines += c.examples.map { "  " + $0 }
        lines += ["", socketNote, exitNote]
        return lines.joined(separator: "\n")
    }

    /// The usage lines of one command, for a usage error.
    static func usageLines(for c: CommandHelp) -> String {
        let prefix = "  trackctl [--socket PATH] "
        let indent = String(repeating: " ", count: prefix.count)
        return (["usage:"] + c.usage.map { ($0.hasPrefix(" ") ? indent : prefix) + $0 }).joined(separator: "\n")
    }

    /// The command named on the command line, if any (the first word that is neither an option nor an option's
    /// value): a usage error raised while parsing still knows which command's usage to print.
    static var commandInArguments: CommandHelp? {
        var args = CommandLine.arguments.dropFirst()[...]
        while let a = args.popFirst() {
            if Options.valued.contains(a) || Options.repeatable.contains(a) {
                _ = args.popFirst()
            } else if !a.hasPrefix("-") {
                return command(named: a)
            }
        }
        return nil
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = self
        while s.last == "\n" { s.removeLast() }
        return s
    }
}
