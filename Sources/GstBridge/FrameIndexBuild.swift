import MediaIndex
import Synchronization
import TrackdProtocol

/// Where a track's frame index comes from in the worker (the index type, its rules and the MP4 table reader are in
/// MediaIndex, which needs no GStreamer): the container's sample tables when ContainerIndex reproduces them
/// exactly, else a parse-only pass — GStreamer 1.22's demuxers do not expose their sample tables.
extension FrameIndex {
    /// The index from an MP4/QuickTime file's sample tables, without demuxing the track; nil for other files and
    /// for tables ContainerIndex does not reproduce exactly (then `build`).
    public static func fromContainer(source: MediaSource, trackID: UInt32) -> FrameIndex? {
        ContainerIndex.mp4(file: source.descriptor, trackID: trackID).map { FrameIndex(frames: $0) }
    }

    /// Reads every stored sample of `trackID` (passthrough, no decoding) and indexes them; `progress` is called
    /// for each sample (a long file's pass is work in progress, not a stalled worker).
    public static func build(source: MediaSource, trackID: UInt32, progress: () -> Void = {}) throws(TrackError) -> FrameIndex {
        var stored: [StoredSample] = []
        let decodeOrder = source.container == .avi
        try forEachStoredSample(source: source, trackID: trackID, progress: progress) { (s) throws(TrackError) in
            guard let sample = storedSample(s, decodeOrder: decodeOrder) else {
                throw TrackError(.fileFailedToParse, "sample \(stored.count) of track \(trackID) has no presentation time; frames cannot be indexed")
            }
            stored.append(sample)
            return true
        }
        guard !stored.isEmpty else { throw TrackError.trackHasNoFrames(trackID) }
        return FrameIndex(parsedSamples: stored)
    }

    /// Whether `trackID` has stored samples and none of them carries a presentation time — an H.264 elementary
    /// stream, or one muxed into an MPEG-PS with no time in its PES headers: nothing places a passthrough range in
    /// it (TrackPipeline.checkPlaced). Reads the stored samples up to the first timed one (a timed track's first);
    /// `progress` as in `build`.
    public static func carriesNoTimes(source: MediaSource, trackID: UInt32,
                                      progress: () -> Void = {}) throws(TrackError) -> Bool {
        var (samples, timed) = (0, false)
        try forEachStoredSample(source: source, trackID: trackID, progress: progress) { (s) throws(TrackError) in
            samples += 1
            timed = s.presentationTime.nanoseconds != nil
            return !timed
        }
        return samples > 0 && !timed
    }

    /// Whether `container`'s tracks are indexed together by one pass over the file (buildAll): an MPEG-TS or
    /// MPEG-PS, whose track ids are the same on every open (the PID, the PES stream id).
    public static func indexedInOnePass(_ container: TrackTimescale.Container) -> Bool {
        container == .transportStream || container == .programStream
    }

    /// The indexes of several tracks of an MPEG-TS or MPEG-PS from one parse-only pass over the file
    /// (StoredSamplesPass), each the one `build` makes of the track alone. A track is left out of the answer when
    /// this pass does not index it — the pass failed or was refused (another container), the track was not found,
    /// has no frames or a sample without a presentation time —: `build` then indexes it alone and says why.
    public static func buildAll(source: MediaSource, trackIDs: [UInt32],
                                progress: @escaping @Sendable () -> Void = {}) -> [UInt32: FrameIndex] {
        let collected = CollectedSamples()  // appended by each track's own thread
        let found = try? forEachStoredSample(source: source, trackIDs: trackIDs, progress: progress) { trackID, s in
            collected.add(storedSample(s, decodeOrder: false), trackID)
        }
        guard let found else { return [:] }
        var indexes: [UInt32: FrameIndex] = [:]
        let (samples, untimed) = collected.state.withLock { ($0.samples, $0.untimed) }
        for (trackID, stored) in samples where found.contains(trackID) && !untimed.contains(trackID) && !stored.isEmpty {
            indexes[trackID] = FrameIndex(parsedSamples: stored)
        }
        return indexes
    }

    /// Pulls every stored sample of each of `trackIDs` of an MPEG-TS or MPEG-PS in one pass over the file
    /// (StoredSamplesPass: the samples a one-track passthrough read gives, each track's in its decode order, each
    /// track's on a thread of its own) into `each`. Returns the tracks found in the file; nil when the file is of
    /// another container.
    @discardableResult
    public static func forEachStoredSample(source: MediaSource, trackIDs: [UInt32], progress: @escaping @Sendable () -> Void = {},
                                           _ each: @escaping @Sendable (UInt32, PulledSample) -> Void) throws(TrackError) -> Set<UInt32>? {
        guard let pass = try StoredSamplesPass(source: source, trackIDs: trackIDs) else { return nil }
        return try pass.run(progress: progress, each)
    }

    /// A pulled sample as the index stores it; nil when it has no presentation time (an AVI sample whose decode
    /// order is its presentation order gets its decode time when `decodeOrder`).
    private static func storedSample(_ s: PulledSample, decodeOrder: Bool) -> StoredSample? {
        guard let pts = s.presentationTime.nanoseconds ?? (decodeOrder ? presentedInDecodeOrder(s) : nil) else { return nil }
        return StoredSample(presentationTime: pts, duration: s.duration.nanoseconds, isSync: s.isSync)
    }

    /// The frames of an elementary stream's track, which carry no timestamps — the parser gives each stored sample
    /// only a duration, one frame at the rate the stream states — timed as the decoder times them: the first at 0,
    /// each of the others where the one before it ends. For the track's timing (FrameTiming: its span and frame
    /// rate), for cutting decoded ranges read from the stream's beginning (the frames' times, each one frame long)
    /// and for ReadFrames, which reads its frames in one such range: the times are in decode order, so in a stream
    /// with B-frames a frame's decode position is not that of the picture shown at its time (Timing.fromStart). MPEG-4
    /// Part 2, whose parser gives no durations, is timed by its headers' rate (timedByVOPs). Thrown when a sample has
    /// no duration otherwise. `grid`: the frame grid of the rate the frames are timed by (the parser's caps, or the
    /// VOL's and VOPs') when every frame is one frame of it (FrameIndex.frameGrid), else nanoseconds.
    public static func untimed(source: MediaSource, trackID: UInt32,
                               progress: () -> Void = {}) throws(TrackError) -> (index: FrameIndex, grid: TimeGrid) {
        var stored: [StoredSample] = []
        var vops = MPEG4VOPTimes()  // MPEG-4 Part 2, whose parser gives no durations: its VOPs' times
        var end: Int64 = 0
        var rate: (Int32, Int32)?  // the parser's: its caps' framerate, by which it gives each frame its duration
        try forEachStoredSample(source: source, trackID: trackID, progress: progress) { (s) throws(TrackError) in
            if stored.isEmpty { rate = CapsView(s.sample.caps)?.fraction("framerate") }
            let duration = s.duration.nanoseconds ?? 0
            let timedByVOPs = s.format == "mp4v" && duration <= 0 && vops.see(s.leadingBytes(4096))
            guard duration > 0 || timedByVOPs, !s.presentationTime.isValid else {
                throw TrackError(.fileFailedToParse, "sample \(stored.count) of track \(trackID) has a timestamp or no duration; it is not an untimed stream")
            }
            stored.append(StoredSample(presentationTime: end, duration: duration, isSync: s.isSync))
            end = end.addingReportingOverflow(duration).partialValue
            return true
        }
        guard !stored.isEmpty else { throw TrackError.trackHasNoFrames(trackID) }
        if vops.times.isEmpty {
            let index = FrameIndex(parsedSamples: stored, timing: .fromStart)
            return (index, rate.flatMap { index.frameGrid(rate: Int64($0.0), Int64($0.1)) } ?? .nanoseconds)
        }
        let index = try timedByVOPs(stored, vops, trackID: trackID)
        let grid = vops.resolution.flatMap { r in vops.frameTicks.flatMap { index.frameGrid(rate: Int64(r), $0) } }
        return (index, grid ?? .nanoseconds)
    }

    /// An MPEG-4 Part 2 stream's frames, which its parser gives no duration, each one frame of the rate its VOL and
    /// VOPs state (MPEG4VOPTimes.frameTicks; the decoder is told it, ConverterInput.stateRawMPEG4Rate): frame n at n
    /// frames. Thrown when there is none (no fixed_vop_rate and VOPs not evenly spaced) or a sample has a duration.
    private static func timedByVOPs(_ stored: [StoredSample], _ vops: MPEG4VOPTimes,
                                    trackID: UInt32) throws(TrackError) -> FrameIndex {
        guard let frame = vops.frameNanoseconds, frame > 0, vops.times.count == stored.count else {
            throw TrackError(.fileFailedToParse, "the MPEG-4 Part 2 stream of track \(trackID) states no frame rate its decoder times it by: its VOL has no fixed_vop_rate and its VOPs are not evenly spaced")
        }
        return FrameIndex(parsedSamples: stored.enumerated().map { n, sample in
            StoredSample(presentationTime: Int64(n) * frame, duration: frame, isSync: sample.isSync)
        }, timing: .fromStart)
    }

    /// The frames of an AVI track with B-pictures, which AVI stores no presentation times for (avidemux gives key
    /// frames alone a PTS, their decode time; `build` refuses such a track): frame k, in presentation order, at the
    /// k-th stored decode time, where the decoder shows it (it gives the n-th frame shown the n-th decode time still
    /// pending, OpenGOPTimes), as long as the sample stored there. What ReadFrames resolves requests against and plans
    /// by (Timing.decodeTimes). Thrown when a sample has no decode time.
    public static func decodeTimed(source: MediaSource, trackID: UInt32, progress: () -> Void = {}) throws(TrackError) -> FrameIndex {
        var stored: [StoredSample] = []
        try forEachStoredSample(source: source, trackID: trackID, progress: progress) { (s) throws(TrackError) in
            guard let dts = s.decodeTime.nanoseconds else {
                throw TrackError(.fileFailedToParse, "sample \(stored.count) of track \(trackID) has neither a presentation nor a decode time; frames cannot be indexed")
            }
            stored.append(StoredSample(presentationTime: dts, duration: s.duration.nanoseconds, isSync: s.isSync))
            return true
        }
        guard !stored.isEmpty else { throw TrackError.trackHasNoFrames(trackID) }
        return FrameIndex(parsedSamples: stored, timing: .decodeTimes)
    }

    /// Pulls every stored sample of `trackID` through the passthrough pipeline (demuxer and parser, no decoding), in
    /// decode order, into `each`, until it returns false.
    static func forEachStoredSample(source: MediaSource, trackID: UInt32, progress: () -> Void,
                                    _ each: (PulledSample) throws(TrackError) -> Bool) throws(TrackError) {
        let pipeline = try TrackPipeline(source: source, trackID: trackID, mode: .passthrough, timeRange: .everything)
        defer { pipeline.stop() }
        var timeouts = 0
        while true {
            switch pipeline.pull(timeoutNs: 1_000_000_000) {
            case .sample(let s):
                timeouts = 0
                guard try each(s) else { return }
                progress()
            case .endOfStream:
                return
            case .timeout:
                timeouts += 1
                if timeouts >= 30 { throw TrackError(.failedToLoadMediaData, "indexing track \(trackID): no sample for 30 s") }
            case .failed(let error):
                throw error
            }
        }
    }

    /// An AVI sample without a PTS (avidemux gives one to key frames only): its decode time, which AVI stores, when
    /// it holds no B-picture (DecodeOrderTimes) — then it is presented in decode order; else nil.
    private static func presentedInDecodeOrder(_ sample: PulledSample) -> Int64? {
        let framing = CapsView(sample.sample.caps)?.h264Pictures?.framing
        let bytes = sample.leadingBytes(4096)
        guard let dts = sample.decodeTime.nanoseconds,
              DecodeOrderTimes.isBidirectional(bytes, codec: sample.format, framing: framing) == false else { return nil }
        return dts
    }
}

extension TrackError {
    /// Indexing found no stored frame in the track: the one error that says so (callers compare with it).
    public static func trackHasNoFrames(_ trackID: UInt32) -> TrackError {
        TrackError(.operationNotSupportedForAsset, "track \(trackID) has no frames")
    }
}

/// The stored samples of several tracks as their threads give them (FrameIndex.buildAll), and the tracks that had a
/// sample without a presentation time (not indexed).
private final class CollectedSamples: Sendable {
    struct State: Sendable {
        var samples: [UInt32: [FrameIndex.StoredSample]] = [:]
        var untimed: Set<UInt32> = []
    }
    let state = Mutex(State())

    func add(_ sample: FrameIndex.StoredSample?, _ trackID: UInt32) {
        state.withLock { s in
            if let sample { s.samples[trackID, default: []].append(sample) } else { s.untimed.insert(trackID) }
        }
    }
}
