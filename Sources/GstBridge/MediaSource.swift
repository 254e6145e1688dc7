import CGStreamer
import MediaIndex
import CGstShim
import TrackdProtocol
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A client's media file, which it owns (closed when it goes — and when init throws). Every pipeline built on it
/// reads the descriptor with pread(), so discovery, outputs and thumbnails can run at the same time.
public final class MediaSource: Sendable {
    /// Only ever read with pread()/fstat(), which are thread-safe.
    let descriptor: FileDescriptor

    /// The descriptor's number, for a pipeline's trackdfdsrc (which borrows it for the pipeline's life).
    var fd: Int32 { descriptor.rawValue }

    /// What fstat says about the file now: the frame-index cache's key (a changed file has another mtime or size).
    public struct FileStatus: Equatable, Sendable {
        public let device: UInt64
        public let inode: UInt64
        public let size: UInt64
        public let mtimeSeconds: Int64
        public let mtimeNanoseconds: Int64
    }

    public func status() -> FileStatus? {
        guard let st = try? descriptor.status() else { return nil }
        return FileStatus(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: UInt64(st.st_size),
                          mtimeSeconds: Int64(st.st_mtim.tv_sec), mtimeNanoseconds: Int64(st.st_mtim.tv_nsec))
    }

    /// Takes ownership of `fd` (see `init(_:)`).
    public convenience init(fd: Int32) throws(TrackError) {
        try self.init(FileDescriptor(taking: fd))
    }

    /// Rejects non-regular files (directory, pipe, socket) with .invalidSourceMedia and empty files with
    /// .fileFormatNotRecognized; the descriptor is closed then.
    public init(_ descriptor: consuming FileDescriptor) throws(TrackError) {
        let st: stat
        do {
            st = try descriptor.status()
        } catch {
            throw TrackError(.invalidSourceMedia, "the media file descriptor cannot be examined: \(error.reason)")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            let kind = switch st.st_mode & S_IFMT {
            case S_IFDIR: "a directory"
            case S_IFIFO: "a pipe"
            case S_IFSOCK: "a socket"
            case S_IFCHR, S_IFBLK: "a device"
            default: "of an unknown type"
            }
            throw TrackError(.invalidSourceMedia, "the media file is not a regular file (it is \(kind))")
        }
        guard st.st_size > 0 else {
            throw TrackError(.fileFormatNotRecognized, "the media file is empty")
        }
        self.descriptor = descriptor
    }

    /// A demuxer that exposes no new track and describes none for this long is stuck (not a verdict on the bytes:
    /// every other end of discovery is the pipeline's own).
    static let discoveryTimeoutNs: UInt64 = 5_000_000_000
    /// How long every streaming task must stay paused, with no stream exposed, before discovery gives up early.
    static let stalledDemuxerNs: UInt64 = 1_000_000_000
    /// Discovery of a demuxer that never signals no-more-pads ends this long after its last new or described track.
    static let lastPadGraceNs: UInt64 = 100_000_000

    /// Track discovery, decided by the bytes (see waitForStreams); only a demuxer that makes no progress for 5 s is
    /// given up on. Not a media file → .fileFormatNotRecognized; damaged → .fileFailedToParse; the message includes
    /// GStreamer's error text (GstErrors.fromMessage).
    ///
    /// trackdfdsrc ! parsebin, with a probe on every exposed pad that notes the first buffers' timestamps and drops
    /// them (no sink: nothing prerolls, so one pull-mode streaming thread cannot block on one track while another
    /// waits for data). Done when every audio and video pad has seen a buffer, GAP or EOS (then its caps,
    /// stream-start, segment and tag events are all sticky on the pad); sparse (subtitle) pads are waited for only
    /// when there is nothing else. parsebin 1.22 does not emit no-more-pads, but it exposes the pads of a group all
    /// at once, before any of them passes data, so once data flows the set of pads is complete.
    public func discover() throws(TrackError) -> (duration: MediaTime, tracks: [TrackDescription]) {
        try Gst.initialize()
        let pipeline = try Pipeline()
        let parser = try pipeline.addSourceAndParser(fd: fd)
        let state = DiscoveryState()
        defer {
            pipeline.element.setState(GST_STATE_NULL)  // joins the streaming threads …
            state.releasePads()  // … so no probe runs while the pad refs go
        }
        parser.onPadAdded { pad in state.padAdded(pad) }
        parser.onNoMorePads { state.state.withLock { $0.noMorePads = true } }

        let context = "Cannot open the media file"
        try pipeline.setState(GST_STATE_PAUSED, context: context)
        let timedOut = try Self.waitForStreams(pipeline, parser: parser, state: state, context: context)
        let entries = state.state.withLock { $0.entries }
        if timedOut && entries.isEmpty {
            throw TrackError(.fileFailedToParse, "\(context): no stream found; the demuxer made no progress for \(Self.discoveryTimeoutNs / 1_000_000_000) s")
        }
        return try Self.describe(entries, parser: parser, containerTimes: pipeline.matroskaClock != nil,
                                 numbering: pipeline.numbering, context: context)
    }

    /// Waits until every stream is exposed and described (see discover); true when the deadline came first.
    ///
    /// The verdict is the bytes', not the clock's: discovery succeeds when every track was described before the
    /// first error any element posted — in the order of GStreamer's sequence numbers, which a track's first buffer
    /// takes too (DiscoveryState) — and fails with that error otherwise, whichever this thread saw first. A demuxer
    /// that describes a track and then fails on the next one's data (a damaged sample table) thus fails every time,
    /// and one that fails only after describing every track opens every time (its reads then fail).
    private static func waitForStreams(_ pipeline: Pipeline, parser: GstRef<GstElementObject>, state: DiscoveryState,
                                       context: String) throws(TrackError) -> Bool {
        var stalledSince: UInt64?
        var announced: Int?  // the streams parsebin's stream-collection message says it exposes
        let snapshot = { state.state.withLock { s in (s.describedSeq, s.noMorePads, s.entries.count, s.lastChange) } }
        while true {
            // With an error, the tracks are read again after it: every track described before the error (the same
            // streaming thread, which recorded the error before going on) is then in them. Read only before it, a
            // track described between the two reads was missed, and an error after every track was taken for one
            // before the last (once in about 4000 discoveries of a damaged MP4 under load).
            var (described, noMorePads, count, lastChange) = snapshot()
            let failure = firstError(pipeline, parser: parser, context: context)
            if failure != nil { (described, noMorePads, count, lastChange) = snapshot() }
            // Every track so far is described (checked every 10 ms, which also lets a sparse track's tags arrive);
            // done once every stream parsebin announced in its stream-collection message (posted as it exposes its
            // pads) has a pad, or it signalled no-more-pads, or — a parser that announces nothing — no track has
            // appeared for a while. A track described early (a WebM's audio) must not end discovery before the next
            // one's pad is added.
            if let described, noMorePads || announced.map({ count >= $0 }) == true
                || monotonicNs() - lastChange >= lastPadGraceNs {
                guard let failure, gst_util_seqnum_compare(failure.seq, described) < 0 else { return false }
                throw pipeline.settledError(first: failure.ranked, context: context)
            }
            // An error before every track was described is the verdict (a demuxer that gives up before exposing a
            // stream posts its error and then pauses its task). One after it is not: the last pads are waited for.
            if let failure, described.map({ gst_util_seqnum_compare(failure.seq, $0) < 0 }) ?? true {
                throw pipeline.settledError(first: failure.ranked, context: context)
            }
            if noMorePads && count == 0 {
                throw TrackError(.fileFormatNotRecognized, "\(context): no audio, video or subtitle streams found")
            }
            // A demuxer that stops with no stream and no error: waited for a second, since typefind also pauses its
            // task while parsebin autoplugs the demuxer, which takes long on a loaded machine (a valid WAV was once
            // refused after three 10 ms polls).
            if count == 0 && parser.tasksAllPaused {
                let since = stalledSince ?? monotonicNs()
                stalledSince = since
                if monotonicNs() - since >= stalledDemuxerNs {
                    throw pipeline.popError(context: context)
                        ?? TrackError(.fileFailedToParse, "\(context): the demuxer stopped without finding a stream (a damaged or truncated file)")
                }
            } else {
                stalledSince = nil
            }
            let now = monotonicNs(), deadline = lastChange + discoveryTimeoutNs  // no progress for that long: stuck
            if now >= deadline { return true }
            if let message = pipeline.bus.pop(timeoutNs: min(deadline - now, 10_000_000)) {
                announced = notice(message, parser: parser) ?? announced
            }
        }
    }

    /// The number of streams in parsebin's stream-collection message; nil for any other message. Errors are read
    /// from the bins' first errors (firstError), not here: the bus is only a wake-up for them.
    private static func notice(_ message: GstRef<GstMessageObject>, parser: GstRef<GstElementObject>) -> Int? {
        guard message.type == GST_MESSAGE_STREAM_COLLECTION, message.isFrom(parser) else { return nil }
        return message.streamCollectionSize
    }

    /// The first error posted in the pipeline — by the source or by any element inside the parser, including one
    /// parsebin dropped (it drops the errors of an element it is still autoplugging, and a demuxer in pull mode can
    /// fail before that ends) — with its sequence number. Kept by swift_gst_bin_record_first_error.
    private static func firstError(_ pipeline: Pipeline, parser: GstRef<GstElementObject>,
                                   context: String) -> (seq: UInt32, ranked: (rank: Int, error: TrackError))? {
        var first: (seq: UInt32, ranked: (rank: Int, error: TrackError))?
        for owner in [parser, pipeline.element] {
            guard let message = owner.firstRecordedError(),
                  let error = checkMessage(message, context: context, ignoreMissingPlugins: true) else { continue }
            let seq = message.seqnum
            if first.map({ gst_util_seqnum_compare(seq, $0.seq) < 0 }) ?? true {
                first = (seq, (GstErrors.rank(message), error))
            }
        }
        return first
    }

    /// The tracks of the discovered pads, and the asset's duration.
    /// `containerTimes`: the buffers' times are the tracks' own (Matroska: MatroskaClock), not their segments'
    /// stream times.
    private static func describe(_ entries: [DiscoveryState.Entry], parser: GstRef<GstElementObject>, containerTimes: Bool,
                                 numbering: TrackNumbering, context: String) throws(TrackError) -> (duration: MediaTime, tracks: [TrackDescription]) {
        var tracks: [TrackDescription] = []
        for entry in entries {
            let id = containerTrackID(entry.pad, numbering: numbering) ?? UInt32(entry.order)
            // A sparse (subtitle) track's first sample is not waited for: whether it came before discovery ended is
            // the machine's timing, so its time does not describe the track (its time range starts at 0; the worker
            // puts it where the container's edit list says).
            // Matroska (containerTimes): the block's own timestamp, the container's clock. Elsewhere: on the
            // demuxer's segment when the last dense track's first buffer passed (DiscoveryState.Entry.start).
            let start: MediaTime? = entry.sparse == true ? nil
                : containerTimes ? entry.firstPTS.map { mediaTime($0) }
                : (entry.start ?? entry.firstPTS.map { streamTime($0, segment: entry.pad.upstreamTimeSegment) })
            if let track = describeTrack(pad: entry.pad, id: id, start: start, caps: entry.firstCaps,
                                         configurationCaps: entry.configurationCaps, tags: entry.tags) {
                tracks.append(track)
            }
        }
        if tracks.isEmpty || tracks.allSatisfy({ $0.mediaType == .other }) {
            let kinds = entries.compactMap { entry -> String? in
                guard let caps = entry.pad.currentCaps else { return nil }
                return CapsView(caps)?.name
            }
            throw TrackError(.fileFormatNotRecognized,
                             "\(context): no audio, video or subtitle streams (found: \(kinds.joined(separator: ", ")))")
        }
        var assetDuration = MediaTime.invalid
        if let duration = parser.duration, duration >= 0 {
            assetDuration = .nanoseconds(duration)
        } else if let longest = tracks.compactMap(\.duration.nanoseconds).max() {
            assetDuration = .nanoseconds(longest)
        }
        return (assetDuration, tracks)
    }
}

/// Shared between discover() and parsebin's streaming threads.
final class DiscoveryState: @unchecked Sendable {
    // @unchecked: every field is behind the Mutex; the pads are GObjects with thread-safe refcounts.
    struct Entry: Sendable {
        let pad: GstRef<GstPadObject>  // dropped by releasePads()
        let order: Int
        /// Subtitle and other sparse tracks may not carry data for a long time: discovery does not wait for them.
        /// nil until the pad has caps: a pad exposed before its caps are set is waited for like a dense one.
        var sparse: Bool?
        /// The PTS of the first buffer that has one (in decode order: a closed GOP's first frame is also the first
        /// shown).
        var firstPTS: GstClockTime?
        /// The track's start: `firstPTS` in the segment in force at the demuxer when the last dense track's first
        /// buffer passed (DiscoveryState.takeStarts). Not the segment on this pad: a demuxer may correct its segment
        /// after the first buffers (matroskademux starts its stream time at the first block it reads, a video
        /// frame at 23 ms, and sends a new SEGMENT starting at 0 when an audio block at 0 ms follows), and a parser
        /// passes the new one on only with its next buffer — so this pad's segment when discovery ends depended on
        /// how far the streaming thread got (an MKV's video started at 0 or at 23 ms), and the first buffer's own
        /// segment is the one the demuxer corrected.
        var start: MediaTime?
        /// The caps the first buffer came with (one ref, dropped by releasePads): the track is described as it
        /// starts — by the time discovery ends, the demuxer may have moved on to a later format (a stream whose
        /// size changes).
        var firstCaps: GstRef<GstCapsObject>?
        /// The caps carrying the track's codec configuration when its first buffer passed (one ref, dropped by
        /// releasePads): the demuxer's where the container stores a record, else the parser's (describeTrack).
        var configurationCaps: GstRef<GstCapsObject>?
        /// The pad's tags when the track was described (its first buffer, GAP or EOS): a parser posts its own
        /// estimates (baseparse's running bit rate) only later, as it goes on, so tags read at the end of discovery
        /// would depend on how far the streaming thread got.
        var tags: [EventTags]?
        var done = false
        /// The GStreamer sequence number taken when the track was described (its first buffer, GAP or EOS), in the
        /// streaming thread: ordered with the errors that thread posts (their messages take one when made).
        var doneSeq: UInt32 = 0
    }

    struct State {
        var entries: [Entry] = []
        var noMorePads = false
        /// monotonicNs() of the last pad added or track described.
        var lastChange = monotonicNs()

        /// When every dense track (or, with none, every track) is described: the sequence number of the last of
        /// them to be; else nil.
        var describedSeq: UInt32? {
            let dense = entries.filter { $0.sparse != true }
            let wanted = dense.isEmpty ? entries : dense
            guard !wanted.isEmpty, wanted.allSatisfy(\.done) else { return nil }
            return wanted.map(\.doneSeq).reduce(wanted[0].doneSeq) { gst_util_seqnum_compare($1, $0) > 0 ? $1 : $0 }
        }
    }

    let state = Mutex(State())

    /// Records the pad (entry `order`) and watches it. The probe names its entry by `order`, not by the pad: a
    /// probe holding a reference to its own pad would keep the pad alive for ever.
    func padAdded(_ pad: GstRef<GstPadObject>) {
        let sparse = pad.currentCaps.map { Self.isSparse($0) }
        let order = state.withLock {
            $0.entries.append(Entry(pad: pad, order: $0.entries.count + 1, sparse: sparse))
            $0.lastChange = monotonicNs()
            return $0.entries.count
        }
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in probe(order, info) }
    }

    private func probe(_ pad: Int, _ info: borrowing ProbeInfo) -> GstPadProbeReturn {
        // Only this pad's streaming thread changes its entry's caps and done: read outside the lock, then kept.
        let (seen, done) = state.withLock { s in
            let entry = s.entries.first { $0.order == pad }
            return (entry?.firstCaps != nil, entry?.done == true)
        }
        if info.is(GST_PAD_PROBE_TYPE_BUFFER) {
            let pts = info.bufferTiming?.pts ?? clockTimeNone
            let caps = seen ? nil : info.padCurrentCaps
            let configurationCaps = seen ? nil : info.padUpstreamCodecDataCaps
            let tags = done ? nil : info.padTags
            update(pad) { entry in
                if entry.firstCaps == nil { entry.firstCaps = caps }
                if entry.configurationCaps == nil { entry.configurationCaps = configurationCaps }
                if !entry.done { entry.tags = tags }
                entry.done = true
                if entry.firstPTS == nil && pts != clockTimeNone { entry.firstPTS = pts }
            }
            return GST_PAD_PROBE_DROP
        }
        if info.is(GST_PAD_PROBE_TYPE_BUFFER_LIST) {
            let tags = done ? nil : info.padTags
            update(pad) { entry in
                if !entry.done { entry.tags = tags }
                entry.done = true
            }
            return GST_PAD_PROBE_DROP
        }
        if let t = info.eventType {
            if t == GST_EVENT_EOS || t == GST_EVENT_GAP {
                let tags = done ? nil : info.padTags
                update(pad) { entry in
                    if !entry.done { entry.tags = tags }
                    entry.done = true
                }
            }
            if t == GST_EVENT_CAPS, let caps = info.caps {
                let sparse = Self.isSparse(caps)
                update(pad) { if $0.sparse == nil { $0.sparse = sparse } }
            }
        }
        return GST_PAD_PROBE_OK
    }

    /// Neither audio nor video.
    static func isSparse(_ caps: GstRef<GstCapsObject>) -> Bool {
        let type = CapsView(caps)?.mediaType ?? .other
        return type != .video && type != .audio
    }

    /// `pad`: the entry's order.
    private func update(_ pad: Int, _ body: (inout Entry) -> Void) {
        state.withLock { s in
            guard let i = s.entries.firstIndex(where: { $0.order == pad }) else { return }
            let wasDone = s.entries[i].done
            let wasDescribed = s.describedSeq != nil
            body(&s.entries[i])
            if !wasDone && s.entries[i].done {
                s.lastChange = monotonicNs()
                s.entries[i].doneSeq = gst_util_seqnum_next()
            }
            if !wasDescribed && s.describedSeq != nil { Self.takeStarts(&s) }
        }
    }

    /// Puts each track's first PTS on the segment in force at the demuxer now, on the streaming thread that passed
    /// the last dense track's first buffer (or EOS/GAP): the demuxer has read every one of those first blocks, so
    /// whatever it corrected on seeing them is in its segment, and nothing it reads later is. (Pad calls only, under
    /// the lock: GStreamer calls none of this object's code while it holds a pad or element lock.)
    private static func takeStarts(_ s: inout State) {
        for i in s.entries.indices {
            guard let pts = s.entries[i].firstPTS else { continue }
            s.entries[i].start = streamTime(pts, segment: s.entries[i].pad.upstreamTimeSegment)
        }
    }

    /// Drops the pad refs (the probes hold this object, the pads would otherwise never be freed). Call after the
    /// pipeline is in NULL.
    func releasePads() {
        let entries = state.withLock { s in
            defer { s.entries = [] }
            return s.entries
        }
        _ = entries  // the GstRefs go with it, outside the lock
    }
}
