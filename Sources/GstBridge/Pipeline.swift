import CGStreamer
import MediaIndex
import CGstShim
import TrackdProtocol

/// Owns a GstPipeline and its bus. The pipeline is set to NULL before the last unref.
final class Pipeline {
    let element: GstRef<GstElementObject>
    let bus: GstRef<GstBusObject>
    /// Passthrough and discovery need no decoder: a missing-plugin message (qtdemux posts one for a codec it does not
    /// know) is then not an error.
    var ignoreMissingPlugins = false
    /// The parsebin of addSourceAndParser: an error posted inside it counts even when parsebin did not pass it on
    /// (droppedError).
    private var parser: GstRef<GstElementObject>?
    /// Matroska's clock (MatroskaClock), when the source is Matroska: the track's pad is given to it, and seeks and
    /// durations go through it.
    private(set) var matroskaClock: MatroskaClock?
    /// MPEG-PS: what times the MPEG-1/2 pictures their PES headers leave untimed (ProgramStreamVideoTimes); the
    /// track's pad is given to it.
    private(set) var programStreamVideo: ProgramStreamVideoTimes?
    /// Decoded AVI video with B-pictures (OpenGOPTimes): its ACCURATE seeks start before the range, and the seek's
    /// segment is given the range's start back.
    var openGOPTimes: OpenGOPTimes?
    /// How the source's pads' stream ids name tracks (containerTrackID): its container by its first bytes
    /// (TrackTimescale.container), and an Ogg's streams.
    private(set) var numbering = TrackNumbering()
    var container: TrackTimescale.Container { numbering.container }

    init() throws(TrackError) {
        guard let p = unsafe gst_pipeline_new(nil) else { throw TrackError(.unknown, "gst_pipeline_new failed") }
        let element = unsafe GstRef<GstElementObject>(floating: p)  // a toplevel pipeline has no parent to sink its floating ref
        self.element = element
        bus = element.bus
    }

    /// NULL before the references go (GstRef's deinits run after this).
    deinit { element.setState(GST_STATE_NULL) }

    /// Adds (bin takes the floating refs) and links the elements in order.
    func addChain(_ elements: [GstRef<GstElementObject>]) throws(TrackError) {
        for e in elements { element.add(e) }
        for (a, b) in zip(elements, elements.dropFirst()) {
            guard a.link(b) else {
                throw TrackError(.unknown, "could not link \(a.name) to \(b.name)")
            }
        }
    }

    /// trackdfdsrc(fd) ! parsebin, added to the pipeline. Returns the parsebin (borrowed: the pipeline owns it).
    func addSourceAndParser(fd: Int32) throws(TrackError) -> GstRef<GstElementObject> {
        let source = try makeElement("trackdfdsrc")
        let parser = try makeElement("parsebin")
        source.set("fd", int: fd)
        try addChain([source, parser])
        element.recordFirstError()  // the source's errors, and those parsebin passes on
        parser.recordFirstError()  // and those it drops
        self.parser = parser
        matroskaClock = MatroskaClock.forFile(fd: fd)
        numbering = TrackNumbering(fd: fd)
        programStreamVideo = container == .programStream ? ProgramStreamVideoTimes() : nil
        return parser
    }

    /// A flushing seek in time at rate 1 to `start` (and `stop` with `stopType` SET; -1: none), in the track's
    /// times — Matroska's through its clock, decoded AVI video with B-pictures' from before the range
    /// (OpenGOPTimes.seekStart); false when refused.
    func seek(flags: guint, start: Int64, stopType: GstSeekType, stop: Int64) -> Bool {
        let accurate = flags & GST_SEEK_FLAG_ACCURATE.rawValue != 0
        if let times = openGOPTimes, accurate {
            return element.seek(flags: flags, start: times.seekStart(start), stopType: stopType, stop: stop)
        }
        guard let clock = matroskaClock else { return element.seek(flags: flags, start: start, stopType: stopType, stop: stop) }
        let positions = clock.seekPositions(start: start, stop: stopType == GST_SEEK_TYPE_SET ? stop : nil, accurate: accurate)
        return element.seek(flags: flags, start: positions.start, stopType: stopType, stop: positions.stop ?? -1)
    }

    /// The pipeline's duration (ns) as the time the track ends at: Matroska's from the container's first timestamp.
    var duration: Int64? {
        guard let duration = element.duration else { return nil }
        return matroskaClock?.containerTime(duration) ?? duration
    }

    /// Sets `state`; a synchronous FAILURE is reported with the error the element posted.
    func setState(_ state: GstState, context: String) throws(TrackError) {
        if element.setState(state) == GST_STATE_CHANGE_FAILURE {
            throw popError(context: context) ?? TrackError(.unknown, "\(context): state change failed")
        }
    }

    /// Preroll/seek completion: waits for the pipeline's verdict — ASYNC_DONE, or an error (then the error of that
    /// failure that `settledError` picks). `timeoutNs` only bounds a pipeline that is stuck (no verdict at all); it
    /// is far longer than any preroll of a loaded machine, and longer than the supervisor's watchdog.
    func waitAsyncDone(timeoutNs: UInt64 = Pipeline.stuckNs, context: String) throws(TrackError) {
        let deadline = monotonicNs() &+ timeoutNs
        while true {
            let now = monotonicNs()
            guard now < deadline,
                  let message = bus.pop(timeoutNs: deadline - now) else {
                throw TrackError(.fileFailedToParse, "\(context): no verdict from the pipeline in \(timeoutNs / 1_000_000_000) s")
            }
            if let error = checkMessage(message, context: context, ignoreMissingPlugins: ignoreMissingPlugins) {
                throw settledError(first: (GstErrors.rank(message), error), context: context)
            }
            if message.type == GST_MESSAGE_ASYNC_DONE { return }
        }
    }

    /// How long a pipeline may give no verdict before it counts as stuck: 2 minutes (the watchdog, 30 s by default,
    /// ends a worker that makes no progress first).
    static let stuckNs: UInt64 = 120_000_000_000

    /// The error of a failure, when one was posted — on the bus, or inside parsebin and dropped by it
    /// (droppedError): see `settledError`. nil when there is none. Every verdict of a running pipeline (preroll,
    /// seek, each pull, the end of the stream) is taken here.
    func popError(context: String) -> TrackError? {
        let dropped = droppedError(context: context)
        guard let first = nextError(context: context) ?? dropped else { return nil }
        return settledError(first: first, also: dropped.map { [$0] } ?? [], context: context)
    }

    /// The first error posted inside parsebin, also when parsebin did not pass it on to the bus: parsebin drops the
    /// errors of an element it is still autoplugging, and a demuxer in pull mode streams — and can fail, posting its
    /// error and then going on (qtdemux with a damaged sample table ends that track and pushes the others to EOS) —
    /// before the autoplugging thread gets to end that window on a loaded machine. Whether the error reached the
    /// bus thus depended on scheduling (a damaged MP4 read completely once in 200 reads under load, issue #13). It
    /// is recorded as it is posted (swift_gst_bin_record_first_error), before the element pushes anything after it,
    /// so whoever sees a later sample or the end of the stream finds it. An element parsebin tried and removed again
    /// (a candidate that failed) is no longer inside it: its error does not count.
    private func droppedError(context: String) -> (rank: Int, error: TrackError)? {
        guard let parser, let message = parser.firstRecordedError(), message.isFrom(inside: parser),
              let error = checkMessage(message, context: context, ignoreMissingPlugins: ignoreMissingPlugins)
        else { return nil }
        return (GstErrors.rank(message), error)
    }

    /// The error to report for a failure whose first error is `first` (already popped): the pipeline is set to NULL,
    /// which joins every streaming thread, so every error this failure makes is on the bus; of those (and `also`,
    /// e.g. one parsebin dropped) the lowest `GstErrors.rank` wins, the first posted among equals. The text does not
    /// depend on which thread noticed first.
    func settledError(first: (rank: Int, error: TrackError), also: [(rank: Int, error: TrackError)] = [],
                      context: String) -> TrackError {
        element.setState(GST_STATE_NULL)
        var best = first
        for candidate in also where candidate.rank < best.rank { best = candidate }
        while let next = nextError(context: context) {
            if next.rank < best.rank { best = next }
        }
        while bus.pop() != nil {}
        return best.error
    }

    /// Pops messages without blocking until an error (or a trackd refusal); nil when the bus is empty.
    private func nextError(context: String) -> (rank: Int, error: TrackError)? {
        while let message = bus.pop() {
            if let error = checkMessage(message, context: context, ignoreMissingPlugins: ignoreMissingPlugins) {
                return (GstErrors.rank(message), error)
            }
        }
        return nil
    }
}
