import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol
import Synchronization

/// What an output delivers: the pixel format (decode) or codec (passthrough), the size, and for passthrough the
/// codec configuration record (avcC, hvcC, esds… bytes from the caps' codec_data).
public struct OutputFormat: Sendable, Hashable {
    public var format: FourCC
    public var width: UInt32
    public var height: UInt32
    public var codecConfig: [UInt8]

    public init(format: FourCC, width: UInt32, height: UInt32, codecConfig: [UInt8]) {
        self.format = format
        self.width = width
        self.height = height
        self.codecConfig = codecConfig
    }
}

public enum OutputMode: Sendable {
    /// The stored samples, undecoded, in decode order.
    case passthrough
    /// Decoded video frames converted to the requested pixel format (and size), in presentation order.
    case decode(VideoOutputRequest)
    /// Decoded audio converted to the requested linear PCM layout (rate, channels, sample format), in order.
    case audio(AudioOutputRequest)
}

public enum PullResult: Sendable {
    case sample(PulledSample)
    case timeout
    case endOfStream
    case failed(TrackError)
}

/// One track's pipeline: trackdfdsrc ! parsebin, then the mode's branch (OutputChains.swift) on the track's pad.
/// Other parsebin pads drop their buffers (see PadRouter). Each pulled sample goes through the mode's SampleMaker
/// (SampleMakers.swift, AudioSamples.swift).
public final class TrackPipeline: @unchecked Sendable {
    // @unchecked: the GStreamer objects are thread-safe; `stopped` is in a Mutex; the sample maker and the sticky
    // failure are touched only by pull() and seek(), which the caller runs on one dedicated thread (but for the
    // maker's thread-safe takeFreedSharedMemories).
    private let source: MediaSource  // keeps the fd open as long as the pipeline reads it
    private let pipeline: Pipeline
    private let sink: GstRef<GstElementObject>
    private let samples: any SampleMaker
    public let outputFormat: OutputFormat
    private let stopped = Mutex(false)
    private var failure: TrackError?
    /// "Cannot read track N", the start of every error message of this output: the same whether the failure came
    /// while prerolling (CreateOutput's error) or after it (OutputFinished), which depends on timing.
    private let context: String
    /// Decoded video's kCVPixelBufferBytesPerRowAlignmentKey (1: none): every pulled frame is laid out so.
    private let rowAlignment: Int
    /// The track's first presentation time (ns, the track's timeline), and whether the current range ends at or
    /// before it: such a range delivers nothing (AVAssetReader's rule), in every mode, and is not read.
    private let trackStart: Int64?
    private var rangeBeforeTrack = false
    /// MP4/MOV: what qtdemux leaves out at the end of a read (StoredSampleFeeder); nil for other containers.
    private let feeder: StoredSampleFeeder?
    /// Matroska Opus: the blocks stored at the file's Duration, which matroskademux leaves out after a seek.
    private let tailFeeder: MatroskaTailFeeder?
    /// MPEG-PS: every range is read from the stream's beginning, cut by the sample maker, the demuxer never seeked
    /// past it nor given a stop. mpegpsdemux 1.22 seeks by the pack headers' SCR and lands inside a GOP after the
    /// range's start (ffmpeg's `-f mpeg`: a range from 1.0 s started at 2.133 s or delivered nothing), and it ends
    /// a segment when any stream's timestamp passes the stop (GStreamer's PS: a frame of the range missing, those
    /// before it decoded from the wrong references). So is decoded video of an elementary stream with a frame
    /// selection: its samples carry no times, and the decoder times its frames exactly only from the beginning
    /// (after the parser's byte seek, by an estimate).
    private let readsFromStart: Bool
    /// Decoded video of an elementary stream read from its beginning: every stored sample is decoded (DecodeStop
    /// judges samples by their times, and after a seek the parser times the first one, at 0, only), the selection
    /// cuts the range.
    private let decodesEverySample: Bool
    /// A read of a track whose stored samples carry no presentation times: its id and what is read, "passthrough"
    /// or "decoded" (checkPlaced); else nil.
    private let untimedTrack: (id: UInt32, reading: String)?

    /// Only for a stuck pipeline: prerolls and seeks wait for the pipeline's verdict (Pipeline.waitAsyncDone).
    static let prerollTimeoutNs: UInt64 = Pipeline.stuckNs

    /// Builds and prerolls the pipeline for one track, seeks to `timeRange` and sets PLAYING.
    /// Decoded outputs enforce `limits` on what leaves the decoder (DecodeGuard); passthrough decodes nothing.
    /// `neededSamples` and `lastNeededSample` (decoded video, ReadFrames): the presentation times of the stored
    /// samples to decode (nil: all) and of the last one — the others never reach the decoder, and decoding ends
    /// after the last instead of at the demuxer's stop (see DecodeStop).
    /// `threads` (decoded video): the most threads the decoder (libav's max-threads) and the converter may use; nil
    /// = their defaults (the decoder: one per CPU; the converter: 2).
    /// `selection` (decoded video): the frames the first range delivers, the others dropped before conversion, and
    /// their display intervals as durations (FrameGate); nil: every frame, the decoder's durations.
    /// `trackStart`: the track's first presentation time (ns; its time range's start): a range that ends at or
    /// before it delivers nothing. `samplesUntimed` (passthrough, or decoded video of an elementary stream): no
    /// stored sample of the track carries a presentation time (FrameIndex.carriesNoTimes): every range but the whole
    /// track is refused (checkPlaced).
    public init(source: MediaSource, trackID: UInt32, mode: OutputMode, timeRange: MediaTimeRange,
                neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil, selection: FrameSelection? = nil,
                limits: DecodeLimits = DecodeLimits(), threads: Int? = nil, trackStart: Int64? = nil,
                samplesUntimed: Bool = false) throws(TrackError) {
        if case .passthrough = mode { untimedTrack = samplesUntimed ? (trackID, "passthrough") : nil } else {
            untimedTrack = samplesUntimed ? (trackID, "decoded") : nil
        }
        try Self.checkPlaced(timeRange, untimedTrack: untimedTrack)  // before any GStreamer object is made
        try Gst.initialize()
        self.source = source
        self.trackStart = trackStart
        var decodesByIndex = false
        if case .decode = mode { decodesByIndex = selection != nil }
        decodesEverySample = source.container == .elementaryStream && decodesByIndex
        readsFromStart = source.container == .programStream || decodesEverySample
        let pipeline = try Pipeline()
        self.pipeline = pipeline
        let parser = try pipeline.addSourceAndParser(fd: source.fd)
        let branch: OutputBranch = switch mode {
        case .passthrough:
            try PassthroughChain.build(pipeline, parser: parser, fd: source.fd, trackID: trackID)
        case .decode(let request):
            try VideoChain().build(pipeline, request: request, threads: threads, limits: limits, trackID: trackID,
                                   stop: decodesEverySample ? DecodeStop(needed: nil, lastNeeded: nil)
                                       : DecodeStop(needed: neededSamples, lastNeeded: lastNeededSample),
                                   // An AVI track with an index of stored times holds no B-picture (FrameIndex.build);
                                   // one indexed at its decode times does (decodeTimed).
                                   selection: selection,
                                   decodeOrder: source.container == .avi && selection.map { $0.index.timing == .stored } == true,
                                   avi: source.container == .avi)
        case .audio(let request):
            try AudioChain().build(pipeline, request: request, limits: limits, fd: source.fd, trackID: trackID,
                                   range: timeRange)
        }
        sink = branch.appsink
        samples = branch.samples
        if source.container == .programStream { branch.start.attachToDemuxer(in: parser) }
        if case .decode(let request) = mode { rowAlignment = request.bytesPerRowAlignment } else { rowAlignment = 1 }
        PadRouter(wantedTrack: trackID, target: branch.target.staticPad("sink"), pipeline: pipeline,
                  requiredType: branch.requiredType).attach(to: parser)
        var decodes = true
        if case .passthrough = mode { decodes = false }
        feeder = StoredSampleFeeder.forFile(fd: source.fd, trackID: trackID, decoded: decodes)
        feeder?.attach(to: branch.target.staticPad("sink"))
        feeder?.seeking(stop: Self.seekBounds(timeRange).stop, completes: lastNeededSample == nil)
        tailFeeder = MatroskaTailFeeder(fd: source.fd, trackID: trackID)
        tailFeeder?.attach(to: branch.target.staticPad("sink"))
        tailFeeder?.seeking(completes: lastNeededSample == nil)

        let context = "Cannot read track \(trackID)"
        self.context = context
        try pipeline.setState(GST_STATE_PAUSED, context: context)
        try pipeline.waitAsyncDone(timeoutNs: Self.prerollTimeoutNs, context: context)
        rangeBeforeTrack = Self.endsBefore(timeRange, trackStart)
        if readsFromStart {
            if !decodesEverySample {
                Self.armFromKeyFrame(samples, selection: selection, needed: neededSamples, lastNeeded: lastNeededSample)
            }
            if !rangeBeforeTrack { try Self.readFromStart(samples, sink: sink, range: timeRange, selection: selection) }
        } else if !rangeBeforeTrack {
            try Self.seekAfterPreroll(pipeline, samples: samples, sink: sink, to: timeRange, selection: selection,
                                      context: context)
        }
        outputFormat = Self.negotiatedFormat(sink: sink, mode: mode)
        samples.negotiated(outputFormat)
        try pipeline.setState(GST_STATE_PLAYING, context: context)
    }

    /// The first seek, to the reader's range, in PAUSED. None when the range is everything from 0 and the demuxer's
    /// stops need no lead (AudioSamples: with a lead, even reading everything needs a seek, because the demuxer's
    /// initial stop is the asset's duration).
    private static func seekAfterPreroll(_ pipeline: Pipeline, samples: any SampleMaker, sink: GstRef<GstElementObject>,
                                         to timeRange: MediaTimeRange, selection: FrameSelection?,
                                         context: String) throws(TrackError) {
        let lead = samples.prerolled(sink: sink)
        guard selection?.frames?.isEmpty != true else { return }  // no frame to deliver: no seek
        guard let bounds = lead > 0 ? seekBounds(timeRange) : seekRange(timeRange) else { return }
        // Decoded audio from 0 ends its ranges itself: no flush (FFmpeg's AAC decoder flushed after preroll decodes
        // every packet a little differently from one that was not), and the demuxer's stop, even with a lead, need
        // not move (what qtdemux leaves out at the end, StoredSampleFeeder adds).
        if samples.endsRangesItself, samples.seekStart(bounds.start) == 0 { return }
        let stop = samples.seeking(to: timeRange, stop: bounds.stop)
        let stopType = stop == nil && lead == 0 ? GST_SEEK_TYPE_NONE : GST_SEEK_TYPE_SET
        let ok = pipeline.seek(flags: seekFlags(samples), start: samples.seekStart(bounds.start),
                                       stopType: stopType, stop: stop ?? -1)  // SET -1: no stop
        guard ok else {
            throw pipeline.popError(context: context)
                ?? TrackError(.operationNotSupportedForAsset, "\(context): the demuxer refused to seek to \(timeRange.start)")
        }
        try pipeline.waitAsyncDone(timeoutNs: prerollTimeoutNs, context: context)
    }

    /// MPEG-PS (readsFromStart): the maker set for `range` without a seek. Decoded video needs a frame selection
    /// to cut a range that starts after the beginning (the decoder's clipping sees the segment from the beginning).
    private static func readFromStart(_ samples: any SampleMaker, sink: GstRef<GstElementObject>, range: MediaTimeRange,
                                      selection: FrameSelection?) throws(TrackError) {
        _ = samples.prerolled(sink: sink)
        try checkCut(range, samples: samples, selection: selection)
        _ = samples.seeking(to: range, stop: seekBounds(range).stop)
        samples.readingFromStart(range)
    }

    /// MPEG-PS decoded video read from the beginning: unless the caller chose the samples to decode (ReadFrames),
    /// the decoder is given only those the selection needs, from the key frame before its first frame (FrameIndex.plan,
    /// one run): what comes before is dropped before the decoder (DecodeStop), not decoded.
    private static func armFromKeyFrame(_ samples: any SampleMaker, selection: FrameSelection?, needed: [Int64]?,
                                        lastNeeded: Int64?) {
        guard needed == nil, let selection, let frames = selection.frames, !frames.isEmpty else { return }
        let plan = selection.index.plan(Set(frames), maxSkip: .max)
        guard plan.count == 1, let fromKeyFrame = plan[0].neededSamples else { return }
        samples.arm(neededSamples: fromKeyFrame, lastNeededSample: lastNeeded)
    }

    /// Decoded video of an MPEG-PS without a frame index cannot be cut after its beginning: refused, not wrong.
    private static func checkCut(_ range: MediaTimeRange, samples: any SampleMaker,
                                 selection: FrameSelection?) throws(TrackError) {
        guard samples is VideoSamples, selection == nil, seekRange(range) != nil else { return }
        throw TrackError(.operationNotSupportedForAsset,
                         "decoded MPEG-PS video can be read by time range only with a frame index, which this track does not have; read it from the start")
    }

    /// A passthrough range is placed by its samples' times (SyncStartGate finds its start by them, its end is a
    /// decode time): in a track whose stored samples carry none, every range but the whole track (from 0, no end) is
    /// refused, the same every time — never delivered empty or from wherever the demuxer's byte seek lands. So is a
    /// decoded one of an elementary stream: after the parser's byte seek the decoder's times are estimates (a frame
    /// at the range's start instead of its own, an extra frame at the end), exact only from the stream's beginning.
    private static func checkPlaced(_ range: MediaTimeRange, untimedTrack: (id: UInt32, reading: String)?) throws(TrackError) {
        guard let (trackID, reading) = untimedTrack, !isWholeTrack(range) else { return }
        throw TrackError(.operationNotSupportedForAsset,
                         "the stored samples of track \(trackID) carry no presentation times, so a \(reading) time range cannot be placed in them; read the track whole, from 0 to its end")
    }

    deinit { stop() }

    /// Whether `range` ends at or before `trackStart` (ns): nothing of the track is displayed in it.
    static func endsBefore(_ range: MediaTimeRange, _ trackStart: Int64?) -> Bool {
        guard let trackStart, let stop = seekBounds(range).stop else { return false }
        return stop <= trackStart
    }

    /// MP4/MOV: stored samples the sample tables list that the file does not hold whole, met at the ends of reads.
    public var samplesLost: UInt64 { feeder?.samplesLost ?? 0 }

    /// Decoded outputs: stored samples the decoder was given and made nothing of (damaged data), all ranges.
    public var samplesUndecodable: UInt64 { samples.samplesUndecodable }

    /// Decoded video: the stored samples handed to the decoder so far (every range, preroll included).
    public var samplesDecoded: UInt64 { samples.samplesDecoded }

    /// Decoded video: the stored samples dropped before the decoder as not needed (ReadFrames).
    public var samplesSkipped: UInt64 { samples.samplesSkipped }

    /// Decoded video: frames the decoder gave, and frames that went through conversion (delivered ones only, when
    /// a selection is set), all ranges.
    public var framesDecoded: UInt64 { samples.framesDecoded }
    public var framesConverted: UInt64 { samples.framesConverted }

    /// Zero-copy outputs: the ids of memfd memories (PulledSample.shared) freed since the last call — their pools
    /// are gone (an output's PoolLedger forgets them). Pushed by the allocator as it frees them: no call into C, and
    /// one atomic load when nothing was freed. Thread-safe.
    public func takeFreedSharedMemories() -> [UInt32] { samples.takeFreedSharedMemories() }

    /// Zero-copy: how many frame memories so far, in this process, were made from the memfd of one an earlier
    /// pipeline (or renegotiation) freed (FrameMemorySpares), instead of a new one, or were announced again to
    /// the next output of a kept pipeline (reuse).
    public static var frameMemoriesReused: UInt64 { FrameMemorySpares.reused }

    /// The seek for a time range: nil when it is everything from 0 (no seek needed). Positions in nanoseconds.
    static func seekRange(_ range: MediaTimeRange) -> (start: Int64, stop: Int64?)? {
        let bounds = seekBounds(range)
        if bounds.start == 0 && bounds.stop == nil { return nil }
        return bounds
    }

    /// Whether `range` is everything from 0: no seek, no end.
    public static func isWholeTrack(_ range: MediaTimeRange) -> Bool { seekRange(range) == nil }

    static func seekBounds(_ range: MediaTimeRange) -> (start: Int64, stop: Int64?) {
        let start = max(0, range.start.nanoseconds ?? 0)
        var stop: Int64?
        if let d = range.duration.nanoseconds, !range.duration.isPositiveInfinity {
            let (sum, overflow) = start.addingReportingOverflow(max(0, d))
            stop = overflow ? nil : sum
        }
        return (start, stop)
    }

    /// Random access: after the end of a range (pull returned .endOfStream), flush-seeks the running pipeline to
    /// `range` (ACCURATE, stop at its end), so that pull delivers exactly that range's samples, then
    /// .endOfStream again. Call from the pulling thread.
    /// `neededSamples`, `lastNeededSample`: as in init — what the decoder is given (decoded video only).
    /// `selection` (decoded video): the frames the range delivers, as in init; an empty one ends the range at once,
    /// without a seek.
    public func seek(to range: MediaTimeRange, neededSamples: [Int64]? = nil, lastNeededSample: Int64? = nil,
                     selection: FrameSelection? = nil) throws(TrackError) {
        if let failure { throw failure }
        try Self.checkPlaced(range, untimedTrack: untimedTrack)
        if decodesEverySample { samples.arm(neededSamples: nil, lastNeededSample: nil) } else {
            samples.arm(neededSamples: neededSamples, lastNeededSample: lastNeededSample)
        }
        samples.select(selection)
        if selection?.frames?.isEmpty == true { return }  // no frame to deliver: pull reports the end
        rangeBeforeTrack = Self.endsBefore(range, trackStart)
        if rangeBeforeTrack { return }  // nothing displayed in the range: pull reports the end
        let bounds = Self.seekBounds(range)
        feeder?.seeking(stop: bounds.stop, completes: lastNeededSample == nil)
        tailFeeder?.seeking(completes: lastNeededSample == nil)
        if readsFromStart {
            if !decodesEverySample {
                Self.armFromKeyFrame(samples, selection: selection, needed: neededSamples, lastNeeded: lastNeededSample)
            }
            return try seekToBeginning(range, selection: selection)
        }
        let stop = samples.seeking(to: range, stop: bounds.stop)
        let ok = pipeline.seek(flags: Self.seekFlags(samples), start: samples.seekStart(bounds.start),
                                       stopType: GST_SEEK_TYPE_SET, stop: stop ?? -1)  // -1: to the end (NONE would keep the last stop)
        guard ok else {
            throw pipeline.popError(context: context)
                ?? TrackError(.operationNotSupportedForAsset, "the demuxer refused to seek to \(range.start)")
        }
    }

    /// MPEG-PS (readsFromStart): a flush-seek to the stream's beginning, with no stop; the maker cuts `range`.
    private func seekToBeginning(_ range: MediaTimeRange, selection: FrameSelection?) throws(TrackError) {
        try Self.checkCut(range, samples: samples, selection: selection)
        _ = samples.seeking(to: range, stop: Self.seekBounds(range).stop)
        samples.readingFromStart(range)
        guard pipeline.seek(flags: Self.seekFlags(samples), start: 0, stopType: GST_SEEK_TYPE_SET, stop: -1) else {
            throw pipeline.popError(context: context)
                ?? TrackError(.operationNotSupportedForAsset, "the demuxer refused to seek to the stream's beginning")
        }
    }

    /// A pipeline kept from a finished output for the next one (a ReadFrames with the same track and settings):
    /// flush-seeks it to `range` as seek(to:) does — the decoder flushed, DecodeStop and FrameGate set for the new
    /// plan; the new output's own PoolLedger announces each frame memory to it again. Call only while no output pulls
    /// from it; a pipeline that failed refuses (its sticky failure).
    public func reuse(for range: MediaTimeRange, neededSamples: [Int64]?, lastNeededSample: Int64?,
                      selection: FrameSelection?) throws(TrackError) {
        if let failure { throw failure }
        guard !stopped.withLock({ $0 }) else {
            throw TrackError(.operationNotSupportedForAsset, "\(context): the kept pipeline was stopped")
        }
        try seek(to: range, neededSamples: neededSamples, lastNeededSample: lastNeededSample, selection: selection)
    }

    /// How far buffer timestamps run ahead of stream time at the appsink (its sticky segment's start − time), in ns;
    /// 0 when they do not.
    static func timestampLead(sink: GstRef<GstElementObject>) -> Int64 {
        guard let pad = sink.staticPadIfAny("sink") else { return 0 }
        guard let segment = pad.stickySegment, segment.format == GST_FORMAT_TIME,
              segment.start != clockTimeNone, segment.time != clockTimeNone, segment.start > segment.time,
              segment.start - segment.time < UInt64(Int64.max / 2) else { return 0 }
        return Int64(segment.start - segment.time)
    }

    /// FLUSH, and ACCURATE or KEY_UNIT|SNAP_BEFORE as the maker seeks (SampleMaker.seeksToKeyUnits).
    static func seekFlags(_ samples: any SampleMaker) -> guint {
        GST_SEEK_FLAG_FLUSH.rawValue | (samples.seeksToKeyUnits
            ? GST_SEEK_FLAG_KEY_UNIT.rawValue | GST_SEEK_FLAG_SNAP_BEFORE.rawValue
            : GST_SEEK_FLAG_ACCURATE.rawValue)
    }

    /// The range's start and duration in nanoseconds (duration nil: to the end).
    static func trimRange(_ range: MediaTimeRange) -> (start: Int64, duration: Int64?) {
        let bounds = seekBounds(range)
        return (bounds.start, bounds.stop.map { $0 - bounds.start })
    }

    /// A passthrough output's format: the stored codec, the size and the codec configuration of `view`.
    static func passthroughFormat(_ view: CapsView?) -> OutputFormat {
        OutputFormat(format: view?.codec ?? "????", width: UInt32(max(0, view?.int("width") ?? 0)),
                     height: UInt32(max(0, view?.int("height") ?? 0)), codecConfig: view?.codecConfiguration ?? [])
    }

    private static func negotiatedFormat(sink: GstRef<GstElementObject>, mode: OutputMode) -> OutputFormat {
        let view = CapsView(sink.staticPad("sink").currentCaps)
        let width = UInt32(max(0, view?.int("width") ?? 0))
        let height = UInt32(max(0, view?.int("height") ?? 0))
        switch mode {
        case .decode(let request):
            return OutputFormat(format: request.pixelFormat.code, width: width, height: height, codecConfig: [])
        case .passthrough:
            return passthroughFormat(view)
        case .audio:
            return OutputFormat(format: "lpcm", width: 0, height: 0, codecConfig: [])
        }
    }

    /// Blocking; call from one dedicated thread. .timeout when nothing arrived within `timeoutNs`, .endOfStream at
    /// the end (or after stop()), .failed on an error (Pipeline.popError: the bus, and what parsebin dropped) —
    /// checked before EOS or a range's end is believed, so a demuxer or decode error is not mistaken for the end.
    /// An error is posted before the element that failed pushes anything after it, so the end of the stream is
    /// a verdict on the bytes: every error posted before it is seen.
    public func pull(timeoutNs: UInt64) -> PullResult {
        if let failure { return .failed(failure) }
        if rangeBeforeTrack { return .endOfStream }
        if let next = samples.queued() { return .sample(next) }
        if samples.rangeEnded { return .endOfStream }
        if let error = pipeline.popError(context: context) {
            failure = error
            return .failed(error)
        }
        while let appsinkSample = sink.tryPullSample(timeoutNs: timeoutNs) {
            switch samples.make(Self.ownSample(appsinkSample)) {
            case .sample(let pulled): return .sample(pulled.aligningRows(to: rowAlignment))
            case .skip: continue  // audio entirely outside the range (dropped by the trimming): pull the next one
            case .endOfRange:
                // The sample past the range's end was pushed after any error on what precedes it: look again, or
                // an error posted while this pull waited would pass unseen, depending on timing.
                if let error = pipeline.popError(context: context) {
                    failure = error
                    return .failed(error)
                }
                return .endOfStream
            }
        }
        if let error = pipeline.popError(context: context) {
            failure = error
            return .failed(error)
        }
        if stopped.withLock({ $0 }) { return .endOfStream }
        if sink.isEOS {
            if case .sample(let last) = samples.endOfInput() { return .sample(last) }  // decoded audio's tail
            return .endOfStream
        }
        return .timeout
    }

    /// A GstSample of our own for what appsink pulled. appsink 1.22 hands out a ref on the one GstSample object it
    /// keeps, and after a flush sets caps on that object without making it writable first
    /// (gst_app_sink_render_common: "queue holding caps event might have been FLUSHed"). While the worker holds a
    /// frame across a flush-seek — a zero-copy frame the client has not released, a ReadFrames frame kept for its
    /// turn — that logged `GStreamer-CRITICAL: gst_sample_set_caps: assertion 'gst_sample_is_writable (sample)'
    /// failed` and left the caps unset. Holding our own sample gives appsink its object back at once (and saves it
    /// the copy gst_sample_make_writable would make on the next pull).
    static func ownSample(_ sample: GstRef<GstSampleObject>) -> GstRef<GstSampleObject> {
        // gst_sample_new refs the buffer and caps and copies the segment: transfer full.
        sample.copy()
    }

    /// Stops the pipeline (state NULL). Idempotent; safe while another thread is blocked in pull (which then
    /// returns .endOfStream).
    public func stop() {
        let first = stopped.withLock { s in
            defer { s = true }
            return !s
        }
        if first { pipeline.element.setState(GST_STATE_NULL) }
    }
}
