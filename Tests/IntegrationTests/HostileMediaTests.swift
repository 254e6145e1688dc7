import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Small valid files the damaged variants are derived from (made once per run).
enum HostileMedia {
    /// H.264 160×120 10 fps 1 s + AAC mono, moov at the end.
    static let mp4 = Media.make("hostile.mp4", [
        "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=1",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
        "-c:v", "libx264", "-preset", "veryfast", "-g", "5", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "1",
    ])
    /// The same with the moov first (a truncation inside mdat keeps the index).
    static let faststart = Media.make("hostile-faststart.mp4", [
        "-i", mp4, "-c", "copy", "-movflags", "+faststart",
    ])
    /// VP8 160×120 + Vorbis in Matroska.
    static let mkv = Media.make("hostile.mkv", [
        "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=1",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
        "-c:v", "libvpx", "-deadline", "realtime", "-c:a", "libvorbis", "-ac", "1",
    ])
    /// One H.264 MPEG-TS stream that is 160×120 for 3 s (what discovery sees), then 640×480 for 1 s.
    static let growing: String = {
        let small = Media.make("growing-a.ts", [
            "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=3",
            "-c:v", "libx264", "-preset", "veryfast", "-f", "mpegts",
        ])
        let large = Media.make("growing-b.ts", [
            "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=10:duration=1",
            "-c:v", "libx264", "-preset", "veryfast", "-f", "mpegts", "-output_ts_offset", "3",
        ])
        let path = Media.dir + "/growing.ts"
        let bytes = FileManager.default.contents(atPath: small)! + FileManager.default.contents(atPath: large)!
        _ = FileManager.default.createFile(atPath: path, contents: bytes)
        return path
    }()

    static func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path)!) }

    static func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = Media.dir + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    /// The damaged variants: (name, path).
    static func damaged() -> [(String, String)] {
        let mp4 = bytes(Self.mp4), fast = bytes(faststart), mkv = bytes(Self.mkv)
        var out: [(String, [UInt8])] = []
        // Truncations: inside moov, inside mdat (with the moov at the end or the front), in the middle of a cluster.
        for (name, data) in [("mp4", mp4), ("faststart", fast)] {
            let moov = MP4Boxes.first("moov", in: data)!, mdat = MP4Boxes.first("mdat", in: data)!
            out.append(("\(name)-cut-in-moov", Array(data.prefix(moov.offset + moov.size / 2))))
            out.append(("\(name)-cut-in-mdat", Array(data.prefix(mdat.offset + mdat.size / 3))))
            out.append(("\(name)-cut-after-header", Array(data.prefix(min(data.count, 64)))))
        }
        for fraction in [10, 50, 90] { out.append(("mkv-cut-\(fraction)", Array(mkv.prefix(mkv.count * fraction / 100)))) }
        // Bit flips (seeded): anywhere, and concentrated in the first 4 KiB (headers, index).
        for (name, data) in [("mp4", mp4), ("faststart", fast), ("mkv", mkv)] {
            for seed in 1...2 {
                var rng = SplitMix64(seed: UInt64(seed))
                var anywhere = data, header = data
                for _ in 0..<24 { anywhere[Int.random(in: 0..<data.count, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng) }
                for _ in 0..<24 { header[Int.random(in: 0..<min(4096, data.count), using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng) }
                out.append(("\(name)-flip-\(seed)", anywhere))
                out.append(("\(name)-flip-header-\(seed)", header))
            }
        }
        // Random bytes: bare, behind an MP4 ftyp, behind the Matroska header.
        var rng = SplitMix64(seed: 7)
        let random = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }
        out.append(("random", random))
        out.append(("random-after-ftyp", Array(fast.prefix(MP4Boxes.first("ftyp", in: fast)!.size)) + random))
        out.append(("random-after-ebml", Array(mkv.prefix(64)) + random))
        out.append(("empty", []))
        // Zero-length moov: size 0 ("to the end of the file") and an empty moov (size 8, its contents orphaned).
        for (name, data) in [("mp4", mp4), ("faststart", fast)] {
            let moov = MP4Boxes.first("moov", in: data)!
            var toEnd = data, empty = data
            MP4Boxes.put32(&toEnd, moov.offset, 0)
            MP4Boxes.put32(&empty, moov.offset, 8)
            out.append(("\(name)-moov-size-0", toEnd))
            out.append(("\(name)-moov-empty", empty))
        }
        // Huge declared dimensions in the sample entry and the track header.
        out.append(("mp4-65535x65535", MP4Boxes.declaringSize(mp4, width: 65535, height: 65535)))
        out.append(("faststart-65535x65535", MP4Boxes.declaringSize(fast, width: 65535, height: 65535)))
        return out.map { ($0.0, write("damaged-\($0.0)." + ($0.0.hasPrefix("mkv") ? "mkv" : "mp4"), $0.1)) }
    }
}

/// Hostile media (issue #4): damaged files give a clean error or clean partial output and the supervisor serves on;
/// the decode limits stop a read cleanly.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct HostileMediaTests {
    @Test func damagedMediaGetsCleanResultsAndTheSupervisorServesOn() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        // Four reads at a time (each has its own connection and worker): several variants wait out the 5 s
        // discovery bound, which is what takes time.
        let variants = HostileMedia.damaged()
        let reports = Mutex<[Int: (report: ReadReport, seconds: Double)]>([:])
        let next = Atomic<Int>(0)
        let (socketPath, pid) = (daemon.socketPath, daemon.pid)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while case let i = next.add(1, ordering: .relaxed).oldValue, i < variants.count {
                let started = Date()
                let report = HostileRead.readAll(variants[i].1, socketPath: socketPath, daemonPID: pid, timeout: 60)
                reports.withLock { $0[i] = (report, Date().timeIntervalSince(started)) }
            }
        }
        var summary: [String] = []
        for (i, (name, _)) in variants.enumerated() {
            guard let (report, seconds) = reports.withLock({ $0[i] }) else { Issue.record("\(name): not read"); continue }
            #expect(!report.hung, "\(name): no answer within 60 s")
            for error in report.errors {
                #expect(HostileRead.isClean(error), "\(name): \(error)")
            }
            summary.append("\(name): \(report.tracks) tracks, \(report.samples) samples, errors \(report.errors.map { String($0.code) }) (\(String(format: "%.2f", seconds)) s)")
        }
        #expect(daemon.isRunning, "the supervisor died")
        print("damaged media, through one daemon:\n" + summary.joined(separator: "\n"))
        // The empty file is refused at open.
        let empty = HostileRead.readAll(Media.dir + "/damaged-empty.mp4", daemon: daemon, timeout: 60)
        #expect(empty.errors.first?.code == AVErrorCode.fileFormatNotRecognized.rawValue)
        // No worker died, and the same supervisor reads a valid file completely.
        #expect(try HostileRead.workerCrashes(daemon) == 0)
        let valid = HostileRead.readAll(HostileMedia.mp4, daemon: daemon, timeout: 60)
        #expect(valid.errors.isEmpty, "\(valid.errors)")
        let packets = try Oracle.packets(HostileMedia.mp4).count
        #expect(valid.tracks == 2 && valid.samples > packets, "\(valid)")  // 10 frames + the AAC buffers
        #expect(daemon.isRunning)
    }

    func createError(_ asset: Asset, _ track: AssetTrack, _ settings: [String: SettingValue]) -> TrackError? {
        do {
            let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
            let reader = AssetReader(asset: asset)
            try reader.add(output)
            return try reader.startReading() ? nil : reader.error
        } catch {
            return error as? TrackError ?? TrackError(.unknown, "\(error)")
        }
    }

    /// Reads a whole output; the samples and how it ended.
    func readOutput(_ asset: Asset, _ track: AssetTrack, _ settings: [String: SettingValue]?) throws
        -> (samples: [SampleBuffer], error: TrackError?) {
        let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        guard try reader.startReading() else { return ([], reader.error) }
        var samples: [SampleBuffer] = []
        while let sample = try output.copyNextSampleBuffer() { samples.append(sample) }
        return (samples, reader.status == .failed ? reader.error : nil)
    }

    @Test func framePixelLimitRefusesDeclaredRequestedAndDecodedSizes() throws {
        let daemon = try Daemon(extraArgs: ["--max-frame-pixels", "50000"])
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)  // 320×240 = 76800
        let video = try #require(asset.tracks(withMediaType: .video).first)
        let declared = try #require(createError(asset, video, ["PixelFormatType": .string("BGRA")]))
        #expect(declared.code == AVErrorCode.limitExceeded.rawValue)
        #expect(declared.message == "track \(video.trackID) is 320×240 = 76800 pixels per frame, over the limit of 50000 pixels per frame (trackd --max-frame-pixels)")
        do {
            _ = try asset.generateImage(track: video, at: .zero)
            Issue.record("an image of a 320×240 track was made under a 50000-pixel limit")
        } catch {
            #expect(error.code == AVErrorCode.limitExceeded.rawValue && error.message.contains("--max-frame-pixels"), "\(error)")
        }
        // Passthrough decodes nothing; audio has no frame size.
        #expect(try readOutput(asset, video, nil).samples.count == 60)
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(try readOutput(asset, audio, ["AVFormatIDKey": .string("lpcm")]).error == nil)

        // A requested output size over the limit (the source, 160×120, is under it).
        let small = try Asset(path: HostileMedia.mp4, socketPath: daemon.socketPath)
        let smallVideo = try #require(small.tracks(withMediaType: .video).first)
        let scaled = try #require(createError(small, smallVideo, ["PixelFormatType": .string("BGRA"), "Width": .int(400)]))
        #expect(scaled.code == AVErrorCode.limitExceeded.rawValue)
        #expect(scaled.message == "the requested output size is 400×300 = 120000 pixels per frame, over the limit of 50000 pixels per frame (trackd --max-frame-pixels)")
        #expect(try readOutput(small, smallVideo, ["PixelFormatType": .string("BGRA"), "Width": .int(200)]).error == nil)

        // The decoder's size grows past the limit mid-stream: the small frames arrive, then the output fails.
        let growing = try Asset(path: HostileMedia.growing, socketPath: daemon.socketPath)
        let track = try #require(growing.tracks(withMediaType: .video).first)
        #expect(track.naturalSize == (160, 120))
        let (samples, error) = try readOutput(growing, track, ["PixelFormatType": .string("420v")])
        #expect(samples.count >= 1 && samples.count <= 30)
        #expect(samples.allSatisfy { $0.width == 160 && $0.height == 120 })
        let failure = try #require(error)
        #expect(failure.code == AVErrorCode.limitExceeded.rawValue)
        #expect(failure.message.hasSuffix("track \(track.trackID): the decoder produces 640×480 frames = 307200 pixels per frame, over the limit of 50000 pixels per frame (trackd --max-frame-pixels)"), "\(failure.message)")
        // Without the limit the same stream reads to its end with both sizes.
        let free = try Daemon()
        defer { free.stop() }
        let all = try readOutput(try Asset(path: HostileMedia.growing, socketPath: free.socketPath), track, ["PixelFormatType": .string("420v")])
        #expect(all.error == nil && all.samples.count == 40 && all.samples.last?.width == 640,
                "\(String(describing: all.error)), \(all.samples.count) samples, last \(String(describing: all.samples.last?.width))")
        #expect(daemon.isRunning && free.isRunning)
    }

    @Test func decodeBudgetsEndEachOutputCleanly() throws {
        let daemon = try Daemon(extraArgs: ["--decode-budget", "200000", "--audio-decode-budget", "20000"])
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let video = try #require(asset.tracks(withMediaType: .video).first)
        for _ in 0..<2 {  // the budget is per output: a second output gets its own
            let (samples, error) = try readOutput(asset, video, ["PixelFormatType": .string("420v")])
            #expect(samples.count <= 2)  // 2 × 76800 ≤ 200000 < 3 × 76800
            let failure = try #require(error)
            #expect(failure.code == AVErrorCode.limitExceeded.rawValue)
            #expect(failure.message.hasSuffix("track \(video.trackID): the decode budget of 200000 pixels per output is exhausted after 2 frames (153600 pixels) (trackd --decode-budget)"), "\(failure.message)")
        }
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        let (frames, audioError) = try readOutput(asset, audio, ["AVFormatIDKey": .string("lpcm")])
        #expect(frames.reduce(0) { $0 + $1.numberOfSamples } * Int(audio.channelCount) <= 20000)
        let audioFailure = try #require(audioError)
        #expect(audioFailure.code == AVErrorCode.limitExceeded.rawValue)
        #expect(audioFailure.message.contains("the decode budget of 20000 samples per output is exhausted after"), "\(audioFailure.message)")
        #expect(audioFailure.message.hasSuffix("(trackd --audio-decode-budget)"))
        // Passthrough is not decoded: not counted.
        #expect(try readOutput(asset, video, nil).error == nil)
        #expect(daemon.isRunning)
    }

    /// A video track with no frames (ffmpeg's `-frames:v 0`): GenerateImage answers a clean error, the same every
    /// time, and the connection goes on. It used to wait for a preroll that never came (decodebin exposes no pad
    /// without data) until the watchdog ended the worker: -11819 after 30 s (the fuzzer's "worker exited without a
    /// signal" inputs).
    @Test func anImageOfATrackWithNoFramesIsACleanError() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let file = Media.make("no-video-frames.mkv", ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=1",
                                                      "-f", "lavfi", "-i", "sine=sample_rate=16000:duration=1",
                                                      "-map", "0:v", "-map", "1:a", "-frames:v", "0",
                                                      "-c:v", "libvpx", "-c:a", "libvorbis"])
        let asset = try Asset(path: file, socketPath: daemon.socketPath)
        let video = try #require(asset.tracks(withMediaType: .video).first)
        var errors: [TrackError] = []
        for _ in 0..<2 {
            do {
                _ = try asset.generateImage(track: video, at: MediaTime(value: 1, timescale: 10))
                Issue.record("an image of a track with no frames")
            } catch {
                errors.append(error)
            }
        }
        #expect(errors.count == 2 && errors[0] == errors[1], "\(errors)")
        #expect(errors.first?.code == AVErrorCode.invalidArgument.rawValue, "\(errors)")
        #expect(errors.first?.message.hasSuffix("no frame at \(MediaTime(value: 1, timescale: 10)): the track has no frames") == true,
                "\(errors)")
        let audio = try #require(asset.tracks(withMediaType: .audio).first)
        #expect(try readOutput(asset, audio, ["AVFormatIDKey": .string("lpcm")]).error == nil)
    }

    @Test func badLimitOptionsAreRejected() throws {
        for args in [["--max-frame-pixels", "0"], ["--decode-budget", "lots"], ["--audio-decode-budget"]] {
            let r = try run(Env.trackd, ["--socket", Env.tempDir("bad-limit") + "/s.sock"] + args)
            #expect(r.status == 2, "\(args)")
            #expect(r.stderr.contains("\(args[0]) needs a positive whole number"), "\(r.stderr)")
        }
    }
}
