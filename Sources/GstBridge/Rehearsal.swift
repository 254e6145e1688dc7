import CGStreamer
import CGstShim
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A warm worker's rehearsal: before its client arrives, it reads a tiny H.264 clip of its own making the way a
/// client's first read goes (discovery, then a decoded output into shared memory, to the end).
///
/// Why: the first pipeline in a process prerolls far slower than the next ones, even with every plugin already
/// loaded — libav's one-time tables and first frame-thread start, the type classes of each element, videoconvert's
/// first conversion, malloc's first arenas. On a 2-CPU machine the first 1080p H.264 frame took 40–50 ms from a
/// worker that had only loaded its plugins and 25–30 ms from one that had rehearsed (connect to first frame,
/// docs/BENCHMARKS.md). The clip is made by GStreamer (x264enc) in a memfd, so it is the worker's own input, not a
/// client's. Like everything a worker decodes, it runs in the sandbox; only the plugins of the elements that make
/// the clip are loaded before (`loadPlugins`), as the autopluggable ones are (Gst.preloadPlugins).
public enum Rehearsal {
    /// The elements that make the clip (the two encoders are alternatives).
    static let clipElements = ["videotestsrc", "x264enc", "openh264enc", "h264parse", "mp4mux", "fdsink"]

    /// Loads the plugins of the clip's elements; call before the sandbox, which refuses openat. Returns how many
    /// loaded (a missing encoder is reported by `run`).
    @discardableResult
    public static func loadPlugins() -> Int {
        (try? Gst.initialize()) == nil ? 0 : clipElements.filter { Gst.loadElementPlugin($0) }.count
    }

    /// What decoders give videoconvert: 8-bit 4:2:0 (I420; NV12 from some), 4:2:2, 4:4:4 and monochrome, their
    /// 10-bit forms (H.264/HEVC/VP9/AV1 High profiles, ProRes), planar RGB (HEVC/VP9 RGB), packed 4:2:2 (raw video).
    static let decodedFormats = ["I420", "NV12", "Y42B", "Y444", "GRAY8", "I420_10LE", "I422_10LE", "Y444_10LE",
                                 "GBR", "UYVY", "YUY2"]

    /// Compiles the ORC programs of the conversions a worker is likely to run — from each of `decodedFormats` to
    /// each pixel format trackd offers, and each offered format scaled down and up — by converting one small frame
    /// of each pair (the colour matrix is a parameter of the programs, not a program of its own: BT.601 and
    /// full-range frames compiled nothing BT.709 had not; 68 programs, docs/SECURITY.md). Call before the sandbox,
    /// and only when ORC can map code there (CSandbox's trackd_orc_code_memory_available): after the sandbox has
    /// sealed ORC, a program not compiled yet runs its C backup (docs/SECURITY.md "W^X"). Returns how many conversions ran, and the milliseconds of
    /// wall time and of the process's CPU time they took (the worker's other threads are idle then).
    @discardableResult
    public static func compileConversions() -> (conversions: Int, milliseconds: Double, cpuMilliseconds: Double) {
        guard (try? Gst.initialize()) != nil else { return (0, 0, 0) }
        let start = monotonicNs(), cpuStart = clock()
        var outputs: [String] = []
        for format in PixelFormat.all where !outputs.contains(format.gstFormat) { outputs.append(format.gstFormat) }
        let n = Gst.warmVideoConversions(inputs: decodedFormats, outputs: outputs, colorimetries: ["bt709"],
                                         width: 64, height: 32)
        return (n, Double(monotonicNs() - start) / 1e6, Double(clock() - cpuStart) * 1000 / Double(CLOCKS_PER_SEC))
    }

    /// What the rehearsal did, for the worker's log.
    public struct Report: Sendable {
        public let frames: Int
        public let milliseconds: Double
    }

    /// Makes the clip and reads it; throws (.unknown) when there is no H.264 encoder or the read fails — the
    /// worker serves its client anyway, only its first preroll is the slow one.
    public static func run() throws(TrackError) -> Report {
        try Gst.initialize()
        let start = monotonicNs()
        let fd = try Gst.rehearsalClip().get()
        let source = try MediaSource(fd: fd)
        let (_, tracks) = try source.discover()
        guard let track = tracks.first(where: { $0.mediaType == .video }), let format = PixelFormat.named("y420") else {
            throw TrackError(.unknown, "the rehearsal clip has no video track")
        }
        let pipeline = try TrackPipeline(source: source, trackID: track.id,
                                         mode: .decode(VideoOutputRequest(pixelFormat: format)),
                                         timeRange: MediaTimeRange(start: .zero, duration: .positiveInfinity))
        defer { pipeline.stop() }
        var frames = 0
        while true {
            switch pipeline.pull(timeoutNs: 2_000_000_000) {
            case .sample:
                frames += 1
            case .endOfStream:
                return Report(frames: frames, milliseconds: Double(monotonicNs() - start) / 1e6)
            case .timeout:
                throw TrackError(.unknown, "the rehearsal read timed out after \(frames) frames")
            case .failed(let error):
                throw error
            }
        }
    }
}
