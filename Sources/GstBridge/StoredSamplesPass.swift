import CGStreamer
import CGstShim
import MediaIndex
import Synchronization
import TrackdProtocol

/// One parse-only pass over an MPEG-TS or MPEG-PS for several of its tracks: trackdfdsrc ! parsebin, each wanted
/// track's pad to an appsink of its own with PassthroughChain's sample maker — the stored samples, times and flags a
/// one-track passthrough read of the whole track gives — instead of one pass over the file per track (the demuxer
/// and every track's parser run in each: a TS of video and two audio tracks cost 3× one of a single track). An
/// MPEG-PS's branches get what its one-track read has: each track's own ProgramStreamVideoTimes on its pad, and the
/// demuxer's segments widened to the stream's beginning (StartSegment.attachToDemuxer).
///
/// One streaming thread feeds every appsink, so none of them may preroll (async off: the pipeline goes to PLAYING
/// at once; a prerolled sink would hold the thread the others wait for), and each appsink is pulled by a thread of
/// its own (GThread), as a one-track read pulls its only one: a thread waiting on one track's appsink never holds
/// up another's, and a full appsink blocks the demuxer only until its own thread takes a sample.
final class StoredSamplesPass: @unchecked Sendable {
    // @unchecked: everything is set in init; while the pass runs each branch is touched only by its own thread, the
    // GStreamer objects are thread-safe, and the pipeline's verdicts are taken one thread at a time (`verdicts`).
    /// One track's appsink and sample maker; touched only by its pulling thread while the pass runs.
    private final class Branch: @unchecked Sendable {
        let trackID: UInt32
        let sink: GstRef<GstElementObject>
        let samples: PassthroughSamples
        var negotiated = false
        var ended = false

        init(trackID: UInt32, sink: GstRef<GstElementObject>, samples: PassthroughSamples) {
            (self.trackID, self.sink, self.samples) = (trackID, sink, samples)
        }
    }

    /// What the pulling threads share: the first failure (which ends them all), the samples pulled by all (a pass
    /// is stuck only when none of them gets one) and the tracks that ended.
    private final class Shared: Sendable {
        struct State: Sendable {
            var failure: TrackError?
            var pulled = 0
            var ended: Set<UInt32> = []
        }
        let state = Mutex(State())
        var failed: Bool { state.withLock { $0.failure != nil } }
        func fail(_ error: TrackError) { state.withLock { $0.failure = $0.failure ?? error } }
    }

    private let source: MediaSource  // keeps the fd open as long as the pipeline reads it
    private let pipeline: Pipeline
    private let router: PadRouter
    private var branches: [Branch] = []
    private let context: String
    /// Held while a thread takes the pipeline's verdict (Pipeline.popError, which may stop the pipeline).
    private let verdicts = Mutex(())

    /// How long one wait on an appsink lasts before the thread looks at the others' state again.
    static let waitNs: UInt64 = 100_000_000
    /// No sample from any track for this long: the pass is stuck (FrameIndex.forEachStoredSample's 30 s).
    static let stuckNs: UInt64 = 30_000_000_000

    /// The pipeline for `trackIDs` of `source`, which must be an MPEG-TS or MPEG-PS (nil otherwise:
    /// FrameIndex.indexedInOnePass), not started.
    init?(source: MediaSource, trackIDs: [UInt32]) throws(TrackError) {
        guard FrameIndex.indexedInOnePass(source.container), !trackIDs.isEmpty else { return nil }
        try Gst.initialize()
        self.source = source
        context = "Cannot index tracks \(trackIDs.map(String.init).joined(separator: ", "))"
        let pipeline = try Pipeline()
        self.pipeline = pipeline
        let parser = try pipeline.addSourceAndParser(fd: source.fd)
        parser.exposeContainerFramed()
        pipeline.ignoreMissingPlugins = true
        var targets: [UInt32: GstRef<GstPadObject>] = [:]
        for trackID in Set(trackIDs).sorted() {
            let appsink = try makeAppSink()
            appsink.set("async", bool: false)
            try pipeline.addChain([appsink])
            let samples = PassthroughSamples(fd: source.fd, trackID: trackID)
            samples.segment.attach(to: appsink.staticPad("sink"))
            branches.append(Branch(trackID: trackID, sink: appsink, samples: samples))
            targets[trackID] = appsink.staticPad("sink")
        }
        let programStream = source.container == .programStream
        if programStream { branches[0].samples.segment.attachToDemuxer(in: parser) }  // one widening serves all
        let pictureTimes = programStream ? targets.mapValues { _ in ProgramStreamVideoTimes() } : [:]
        router = PadRouter(targets: targets, bus: pipeline.bus, requiredType: nil, clock: nil, pictureTimes: pictureTimes,
                           numbering: pipeline.numbering)
        router.attach(to: parser)
    }

    deinit { pipeline.element.setState(GST_STATE_NULL) }

    /// Reads the file once, giving each track's stored samples in its decode order to `each` — called on the
    /// track's own thread, so several calls may run at once —; `progress` is called for each sample. Returns the
    /// tracks whose pads were found (the others had no sample). Thrown: the pipeline's first error, or a pass stuck
    /// for 30 s.
    func run(progress: @escaping @Sendable () -> Void,
             _ each: @escaping @Sendable (UInt32, PulledSample) -> Void) throws(TrackError) -> Set<UInt32> {
        try pipeline.setState(GST_STATE_PLAYING, context: context)
        let shared = Shared()
        Self.onThreads(branches.map { branch in { [self] in pull(branch, shared: shared, progress: progress, each) } })
        if let failure = shared.state.withLock({ $0.failure }) ?? popError() { throw failure }
        return router.linkedTracks
    }

    /// One track's thread: pulls its appsink to the end, or until a thread failed.
    private func pull(_ branch: Branch, shared: Shared, progress: @Sendable () -> Void,
                      _ each: @Sendable (UInt32, PulledSample) -> Void) {
        var (seen, idle): (Int, UInt64) = (-1, 0)
        while !shared.failed {
            if let error = popError() { return shared.fail(error) }
            if let sample = next(branch, timeoutNs: Self.waitNs) {
                each(branch.trackID, sample)
                progress()
                shared.state.withLock { $0.pulled += 1 }
                continue
            }
            if branch.ended {
                // An error is posted before the element that failed pushes anything after it: seen here, if any.
                if let error = popError() { shared.fail(error) }
                return shared.state.withLock { _ = $0.ended.insert(branch.trackID) }
            }
            // A track the file does not have: its pad never comes; done once every track found has ended.
            let linked = router.linkedTracks
            if !linked.isEmpty, !linked.contains(branch.trackID),
               shared.state.withLock({ linked.isSubset(of: $0.ended) }) { return }
            let pulled = shared.state.withLock { $0.pulled }
            (seen, idle) = pulled == seen ? (seen, idle + Self.waitNs) : (pulled, 0)
            if idle >= Self.stuckNs { return shared.fail(TrackError(.failedToLoadMediaData, "\(context): no sample for 30 s")) }
        }
    }

    /// The pipeline's error, if one was posted (Pipeline.popError), taken by one thread at a time.
    private func popError() -> TrackError? {
        verdicts.withLock { _ in pipeline.popError(context: context) }
    }

    /// Runs each of `bodies` on a thread of its own (GThread) and returns when all have returned.
    private static func onThreads(_ bodies: [@Sendable () -> Void]) {
        final class Body: Sendable {
            let run: @Sendable () -> Void
            init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        }
        let threads = bodies.map { body in
            unsafe g_thread_new("trackd-index", { data in
                guard let data = unsafe data else { return nil }
                unsafe Unmanaged<Body>.fromOpaque(data).takeRetainedValue().run()
                return nil
            }, unsafe Unmanaged.passRetained(Body(body)).toOpaque())
        }
        for thread in threads { _ = unsafe g_thread_join(thread) }
    }

    /// The branch's next stored sample (TrackPipeline.pull's order: what the maker holds, then appsink, then the
    /// maker's tail at the end), or nil — when it has none within `timeoutNs`, or has ended (`ended` set).
    private func next(_ branch: Branch, timeoutNs: UInt64) -> PulledSample? {
        let samples = branch.samples
        if branch.ended { return nil }
        if let queued = samples.queued() { return queued }
        if samples.rangeEnded {
            branch.ended = true
            return nil
        }
        while let pulled = branch.sink.tryPullSample(timeoutNs: timeoutNs) {
            let sample = TrackPipeline.ownSample(pulled)
            if !branch.negotiated {
                // What appsink negotiated for the first sample, as a prerolled pipeline tells its maker.
                samples.negotiated(TrackPipeline.passthroughFormat(CapsView(sample.caps)))
                branch.negotiated = true
            }
            switch samples.make(sample) {
            case .sample(let made): return made
            case .skip: continue
            case .endOfRange:
                branch.ended = true
                return nil
            }
        }
        guard branch.sink.isEOS else { return nil }
        branch.ended = true
        if case .sample(let last) = samples.endOfInput() { return last }
        return nil
    }
}
