import Foundation
import TestSupport
import Testing
import TrackClient

/// Opus's pre-skip and end padding are trim attachments (TrimDurationAtStart / TrimDurationAtEnd, 48 kHz frames) on
/// the passthrough packets they concern, in Ogg (OpusHead's pre-skip, the last granule position) and Matroska/WebM
/// (CodecDelay, DiscardPadding), on files ffmpeg and GStreamer make: every packet at ffprobe's PTS (integers in the
/// stream's time_base), and what the trims leave of the packets is what ffmpeg decodes. Decoded, the first sample is
/// at ffmpeg's first frame's PTS and the frame count is ffmpeg's.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct OpusTrimsTests {
    static let sine48 = AudioCountsTests.sine48
    static let gstSource = ["audiotestsrc", "num-buffers=100", "samplesperbuffer=960", "!", "audio/x-raw,rate=48000,channels=1",
                            "!", "opusenc"]
    /// (file, the frames each packet decodes to: libopus's frame duration).
    static let files: [String: (file: String, frames: Int64)] = [
        "ffmpeg-ogg": (AudioCountsTests.files["opus-ogg"]!.0, 960),
        "ffmpeg-webm": (AudioCountsTests.files["opus-webm"]!.0, 960),
        // 2.5 ms frames: libopus's pre-skip is then 120 frames, one packet.
        "ffmpeg-ogg-short": (Media.make("trims-opus-short.opus", sine48 + ["-c:a", "libopus", "-frame_duration", "2.5"]), 120),
        "ffmpeg-mka-short": (Media.make("trims-opus-short.mka", sine48 + ["-c:a", "libopus", "-frame_duration", "2.5"]), 120),
        "gst-ogg": (Media.makeWithGStreamer("trims-opus-gst.opus", gstSource + ["!", "oggmux"]), 960),
        "gst-webm": (Media.makeWithGStreamer("trims-opus-gst.webm", gstSource + ["!", "webmmux"]), 960),
        // 2.5 ms frames: the 312-frame pre-skip spreads over three packets (120, 120, 72); the last packet is all
        // padding.
        "gst-ogg-short": (gstShort, 120),
        // gst-ogg-short remuxed into Matroska by ffmpeg: two 2.5 ms blocks wholly inside its 312-frame CodecDelay and
        // a third partly (ffmpeg's own libopus with 2.5 ms frames has a pre-skip of 120, one block: ffmpeg-mka-short).
        "ffmpeg-mka-gst-short": (Media.make("trims-opus-gst-short.mka", ["-i", gstShort, "-c:a", "copy"]), 120),
    ]
    static let gstShort = Media.makeWithGStreamer("trims-opus-gst-short.opus", gstSource + ["frame-size=2", "!", "oggmux"])

    /// Opus in MP4 (PacketTimesTests: every packet's times are ffprobe's).
    static let mp4Files: [String: String] = [
        "ffmpeg-mp4": Media.make("trims-opus.mp4", sine48 + ["-c:a", "libopus", "-f", "mp4"]),
        "gst-mp4": Media.makeWithGStreamer("trims-opus-gst.mp4", gstSource + ["!", "mp4mux"]),
    ]

    static func frames(_ time: MediaTime?) -> Int64 {
        guard let time, time.isNumeric else { return 0 }
        return time.value * 48000 / Int64(time.timescale)
    }

    @Test(arguments: files.keys.sorted()) func passthroughTrimsLeaveWhatFFmpegDecodes(_ name: String) throws {
        let (file, frames) = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let decoded = try Probe.frames(file, "a:0").reduce(0) { $0 + Int64($1.samples ?? 0) }
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count, "\(name): \(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            #expect(PacketTimesTests.same(s.presentationTimeStamp, p.pts, base),
                    "\(name) \(i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1) × \(base)")
            #expect(s.packedBytes().count == p.size, "\(name) \(i): \(s.packedBytes().count) bytes, ffprobe \(p.size)")
        }
        let starts = stored.map { Self.frames($0.trimDurationAtStart) }, ends = stored.map { Self.frames($0.trimDurationAtEnd) }
        // The pre-skip from the first packet on, each trimmed by at most what it decodes to; the padding on the last.
        let preSkip = starts.reduce(0, +)
        #expect(preSkip > 0 && preSkip < 4 * 960, "\(name): pre-skip \(preSkip)")
        let spread = Int((preSkip + frames - 1) / frames)
        #expect(starts.prefix(spread).dropLast().allSatisfy { $0 == frames }, "\(name): \(starts.prefix(spread + 1))")
        #expect(starts.dropFirst(spread).allSatisfy { $0 == 0 })
        #expect(ends.dropLast().allSatisfy { $0 == 0 }, "\(name): an end trim before the last packet")
        if let skip = packets.first?.skip?.start, skip > 0 { #expect(preSkip == skip, "\(name): ffprobe's skip_samples \(skip)") }
        if let padding = packets.last?.skip?.end, padding > 0 { #expect(ends.last == padding, "\(name): ffprobe's discard_padding") }
        #expect(frames * Int64(stored.count) - preSkip - (ends.last ?? 0) == decoded,
                "\(name): \(stored.count) × \(frames) − \(preSkip) − \(ends.last ?? 0), ffmpeg decodes \(decoded)")
    }

    @Test(arguments: files.keys.sorted()) func decodedStartsAndCountsAreFFmpegs(_ name: String) throws {
        let (file, _) = try #require(Self.files[name])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let theirs = try Probe.frames(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(false),
                                                SettingsKey.bitDepth: .int(16)]
        let ours = try LostSamplesTests.read(daemon, file, .audio, settings).samples
        let first = try #require(ours.first?.presentationTimeStamp)
        let firstTheirs = try #require(theirs.first?.pts)
        // ffmpeg's first frame PTS in its time base, our first sample's at the output rate: within half a tick (a
        // Matroska block of 2.5 ms frames is stored at whole milliseconds, 0.5 ms off; ffmpeg's decoder and
        // GStreamer's round the skipped part to the tick differently: 0 vs 0.5 ms).
        #expect(2 * abs(first.value * base.den - firstTheirs * base.num * Int64(first.timescale)) <= Int64(first.timescale) * base.num,
                "\(name): first PTS \(first), ffmpeg \(firstTheirs) × \(base)")
        let count = ours.reduce(0) { $0 + $1.numberOfSamples }
        #expect(count == theirs.reduce(0) { $0 + ($1.samples ?? 0) }, "\(name): \(count) frames decoded")
    }

    /// A passthrough range to the end (and past it) from inside the fifth packet before the last, and from inside the
    /// last: that packet and every one after it, at ffprobe's PTS with its bytes, the last one with ffprobe's discard_padding as its end
    /// trim — in GStreamer's WebM too, whose last block is stored at the file's Duration (MatroskaTail).
    @Test(arguments: ["gst-webm", "ffmpeg-webm", "gst-ogg", "ffmpeg-ogg"]) func passthroughRangeToTheEndEndsOnTheLastPacket(_ name: String) throws {
        let file = try #require(Self.files[name]).file
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        try #require(packets.count > 10)
        for (from, seconds): (Int, Int64) in [(packets.count - 5, 1), (packets.count - 5, 10), (packets.count - 1, 1)] {
            let startPTS = try #require(packets[from].pts)
            let start = MediaTime(value: startPTS * base.num + 1, timescale: Int32(base.den))  // one tick inside it
            let range = MediaTimeRange(start: start, duration: MediaTime(value: seconds, timescale: 1))
            let stored = try LostSamplesTests.read(daemon, file, .audio, nil, range: range).samples
            try #require(stored.count == packets.count - from,
                         "\(name) from \(from) +\(seconds) s: \(stored.count) samples, want \(packets.count - from)")
            for (i, (s, p)) in zip(stored, packets[from...]).enumerated() {
                #expect(PacketTimesTests.same(s.presentationTimeStamp, p.pts, base),
                        "\(name) \(from + i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1) × \(base)")
                #expect(s.packedBytes().count == p.size, "\(name) \(from + i): \(s.packedBytes().count) bytes, ffprobe \(p.size)")
            }
            let padding = try #require(packets.last?.skip?.end)
            #expect(padding > 0 && Self.frames(stored.last?.trimDurationAtEnd) == padding,
                    "\(name): end trim \(String(describing: stored.last?.trimDurationAtEnd)), ffprobe's discard_padding \(padding)")
        }
    }

    /// GStreamer's opusenc with 2.5 ms frames ends an Ogg stream on a packet that is all padding (120 of 120):
    /// oggdemux does not push it, ffprobe lists it (`duration=1`, `discard_padding=120`). Every packet is delivered,
    /// at ffprobe's PTS with its bytes, the last one trimmed whole at its end.
    @Test func aLastPacketAllPaddingIsDelivered() throws {
        let file = try #require(Self.files["gst-ogg-short"]).file
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let base = try Probe.timeBase(file, "a:0")
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count && stored.count > 2, "\(stored.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(stored, packets).enumerated() {
            #expect(PacketTimesTests.same(s.presentationTimeStamp, p.pts, base), "\(i): PTS \(s.presentationTimeStamp), ffprobe \(p.pts ?? -1)")
            #expect(s.packedBytes().count == p.size, "\(i): \(s.packedBytes().count) bytes, ffprobe \(p.size)")
        }
        let padding = try #require(packets.last?.skip?.end)
        #expect(padding == 120 && Self.frames(stored.last?.trimDurationAtEnd) == padding)
        #expect(stored.dropLast().allSatisfy { Self.frames($0.trimDurationAtEnd) == 0 })
    }

    /// Opus in MP4 as ffmpeg muxes it: the edit (media time = the pre-skip, 312) is the trims, in the track's
    /// timescale (48 kHz): the first packet's TrimDurationAtStart is ffprobe's skip_samples, the last packet's
    /// TrimDurationAtEnd what lies after the edit's end (960 − its ffprobe duration 312 = 648). What the trims leave
    /// is the edit: ffprobe's duration_ts. Decoded, the track ends where its edit does (PROTOCOL.md §9): ffmpeg decodes
    /// the last packet whole (96 648 frames), trackd the edit's 96 000, as for AAC in MP4.
    @Test func mp4TrimsAreTheEdit() throws {
        let file = try #require(Self.mp4Files["ffmpeg-mp4"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count && stored.count > 2, "\(stored.count) samples, ffprobe lists \(packets.count)")
        let starts = stored.map { Self.frames($0.trimDurationAtStart) }, ends = stored.map { Self.frames($0.trimDurationAtEnd) }
        let skip = try #require(packets.first?.skip?.start)
        #expect(skip == 312 && starts == [skip] + Array(repeating: 0, count: stored.count - 1), "\(starts.prefix(3))")
        let last = try #require(packets.last?.duration)
        #expect(ends == Array(repeating: 0, count: stored.count - 1) + [960 - last], "\(ends.suffix(3))")
        let durationTS = try Int64(#require(run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
            "stream=duration_ts", "-of", "csv=p=0", file]).text.split(separator: "\n").first.flatMap { Int64($0) }))
        #expect(960 * Int64(stored.count) - skip - (960 - last) == durationTS)
        let settings: [String: SettingValue] = [SettingsKey.formatID: .int(0x6C70_636D), SettingsKey.isFloat: .bool(false),
                                                SettingsKey.bitDepth: .int(16)]
        let decoded = try LostSamplesTests.read(daemon, file, .audio, settings).samples
        #expect(decoded.first?.presentationTimeStamp.value == 0)
        #expect(decoded.reduce(0) { $0 + Int64($1.numberOfSamples) } == durationTS)
    }

    /// GStreamer's mp4mux writes no edit (and a dOps whose pre-skip ffmpeg misreads): the first packet's `stts`
    /// duration is 960 − pre-skip, the last one's what is left; those shortfalls are the trims, at its start and at
    /// the last one's end (ffprobe's durations: 648 and 312).
    @Test func gstreamerMP4TrimsAreTheShortDurations() throws {
        let file = try #require(Self.mp4Files["gst-mp4"])
        let daemon = try Daemon()
        defer { daemon.stop() }
        let packets = try Probe.packets(file, "a:0")
        let stored = try LostSamplesTests.read(daemon, file, .audio, nil).samples
        try #require(stored.count == packets.count && stored.count > 2, "\(stored.count) samples, ffprobe lists \(packets.count)")
        let first = try #require(packets.first?.duration), last = try #require(packets.last?.duration)
        #expect(first < 960 && last < 960)
        let starts = stored.map { Self.frames($0.trimDurationAtStart) }, ends = stored.map { Self.frames($0.trimDurationAtEnd) }
        #expect(starts == [960 - first] + Array(repeating: 0, count: stored.count - 1), "\(starts.prefix(3))")
        #expect(ends == Array(repeating: 0, count: stored.count - 1) + [960 - last], "\(ends.suffix(3))")
    }

    /// `trackctl read --passthrough --json` prints each sample's trims (value and timescale) when it has any.
    @Test func trackctlPrintsTheTrims() throws {
        let file = try #require(Self.files["ffmpeg-ogg"]).file
        let daemon = try Daemon()
        defer { daemon.stop() }
        let track = try #require(try Asset(path: file, socketPath: daemon.socketPath).tracks(withMediaType: .audio).first)
        let r = try daemon.trackctl(["read", file, "--track", "\(track.trackID)", "--passthrough", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let objects = r.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let packets = try Probe.packets(file, "a:0")
        try #require(objects.count == packets.count && objects.count > 2)
        func trim(_ object: [String: Any], _ key: String) -> [Int]? {
            (object[key] as? [String: Any]).map { [$0["value"] as? Int ?? -1, $0["timescale"] as? Int ?? -1] }
        }
        #expect(trim(objects[0], "trimAtStart") == [Int(packets[0].skip?.start ?? 0), 48000])
        #expect(trim(objects[objects.count - 1], "trimAtEnd") == [Int(packets[packets.count - 1].skip?.end ?? 0), 48000])
        #expect(objects.dropFirst().dropLast().allSatisfy { $0["trimAtStart"] == nil && $0["trimAtEnd"] == nil })
    }
}
