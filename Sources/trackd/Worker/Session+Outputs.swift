import CTrackSys
import Foundation
import GstBridge
import IndexCache
import MediaIndex
import SamplePools
import TrackdProtocol
import Synchronization

extension Session: OutputOwner {
    /// The requests about outputs: create one (CreateOutput, ReadFrames) and steer it (ReleaseSlots, CancelOutput,
    /// ResetOutput, FinishOutput). A thrown error is a protocol violation, as in `handle`.
    func handleOutputRequest(_ frame: borrowing ReceivedFrame,
                             reply: @escaping @Sendable (() throws(TrackError) -> Message) -> Void) throws(TrackError) {
        let rid = frame.requestID
        switch frame.message {
        case .createOutput(let request):
            // The reply must precede the output's first PoolAdded/Sample, so the streamer starts after it.
            background("create-output") { [self] in
                var streamer: OutputStreamer?
                reply { () throws(TrackError) -> Message in
                    let (created, s) = try createOutput(request, requestID: rid)
                    streamer = s
                    return created
                }
                streamer?.start()
            }
        case .readFrames(let request):
            background("read-frames") { [self] in
                var streamer: OutputStreamer?
                reply { () throws(TrackError) -> Message in
                    let (created, s) = try readFrames(request, requestID: rid)
                    streamer = s
                    return created
                }
                streamer?.start()
            }
        case .releaseSlots(let outputID, let slots):
            guard let streamer = outputs.streamer(outputID) else {
                throw TrackError(.protocolViolation, "ReleaseSlots names output \(outputID), which holds no slots")
            }
            do {
                try streamer.release(slots)
            } catch {
                guard case .notHeld(let ref) = error else { return }
                throw TrackError(.protocolViolation, "ReleaseSlots: slot \(ref.slot) of pool \(ref.poolID) of output \(outputID) is not held by the client")
            }
        case .cancelOutput(let outputID):
            outputs.streamer(outputID)?.cancel()
        case .resetOutput(let outputID, let ranges):
            guard MediaTimeRange.areAscendingAndDisjoint(ranges) else {
                throw TrackError(.protocolViolation,
                                 "ResetOutput: the ranges of output \(outputID) are not ascending, non-overlapping ranges with numeric starts ≥ 0 and durations ≥ 0 or +infinity")
            }
            guard let streamer = outputs.streamer(outputID) else { return }  // finished: ignored
            do {
                try streamer.reset(ranges.map(streamer.grid.nanoseconds))  // on the output's grid, in GStreamer's ns
            } catch {
                switch error {
                case .notRandomAccess:
                    throw TrackError(.protocolViolation, "ResetOutput: output \(outputID) was not created with supportsRandomAccess")
                case .notAwaiting:
                    throw TrackError(.protocolViolation, "ResetOutput: output \(outputID) has not sent RangeEnded since it was last reset, or was finished")
                }
            }
        case .finishOutput(let outputID):
            outputs.streamer(outputID)?.markFinal()
        default:
            return
        }
    }

    /// Registers a new output made by `plan` and answers OutputCreated; the caller starts the streamer after the
    /// reply is sent.
    func addOutput(_ plan: OutputPlan, assetID: UInt32, requestID: UInt32, mediaType: MediaType)
        throws(TrackError) -> (Message, OutputStreamer) {
        let format = plan.stream.pipeline.outputFormat
        let reportsStalls = Capabilities(rawValue: capabilities.load(ordering: .relaxed)).contains(.outputStalled)
        let streamer = try outputs.add(assetID: assetID) { outputID in
            OutputStreamer(plan: plan, context: OutputContext(
                id: outputID, requestID: requestID, socket: socket, stats: stats, slot: context.slot,
                reportsStalls: reportsStalls, owner: self))
        }
        return (.outputCreated(OutputCreated(outputID: streamer.id, mediaType: mediaType, format: format.format,
                                             width: format.width, height: format.height, codecConfig: format.codecConfig)),
                streamer)
    }

    /// OutputStreamer's end: output `id` finished and every slot is back, so the session forgets it.
    func outputDrained(_ id: UInt32) {
        outputs.remove(id)
    }

    func createOutput(_ request: CreateOutput, requestID: UInt32) throws(TrackError) -> (Message, OutputStreamer) {
        let (asset, track) = try assetTrack(request.assetID, request.trackID)
        kept.drop()  // this output may need the memory the kept pipeline holds
        guard request.timeRange.isValidReadingRange else {
            throw TrackError(.invalidArgument, "time range \(request.timeRange.start) + \(request.timeRange.duration) is not a valid range")
        }
        let mode = try Self.outputMode(request.settings, track: track)
        let limits = context.sandbox.decode
        if case .decode(let video) = mode { try checkDecodeLimits(limits, track: track, video: video) }
        var audio: AudioOutputRequest?
        if case .audio(let request) = mode { audio = request }
        let grid = Self.outputGrid(track: track, trackGrid: asset.grid(track.id), audio: audio)
        // The range on the output's grid, in the nanoseconds the demuxer gives those ticks (§7.1).
        let range = grid.nanoseconds(request.timeRange)
        let pipeline: TrackPipeline
        let reading: OutputReading<KeptPipeline.Key?>
        do {
            var threads: Int?
            var first: IndexedRead?  // decoded video: the frames each range delivers, by the frame index
            if case .decode = mode {
                threads = decodeThreads()
                first = decodedFrameIndex(asset, trackID: track.id).map { IndexedRead(range, index: $0) }
            }
            let randomAccess = request.supportsRandomAccess
            if let first {
                reading = .indexed(first: first, randomAccess: randomAccess)
            } else if case .passthrough = mode {
                reading = .passthrough(randomAccess: randomAccess)
            } else {
                reading = .clipped(randomAccess: randomAccess)
            }
            pipeline = try TrackPipeline(source: asset.source, trackID: track.id, mode: mode, timeRange: first?.seek ?? range,
                                         lastNeededSample: first?.lastNeededSample, selection: first?.selection,
                                         limits: limits, threads: threads,
                                         trackStart: asset.grid(track.id).nanoseconds(track.timeRangeStart),
                                         samplesUntimed: first == nil && Self.isUntimedRead(asset, track: track, mode: mode,
                                                                                            range: range, randomAccess: randomAccess))
        } catch where error.knownCode == .invalidArgument {
            // Discovery found the track; the demuxer did not expose it this time: the file is damaged (or changed).
            throw TrackError(.fileFailedToParse,
                             "track \(track.id) was found when the asset was opened but not when reading it again; the file is damaged or was changed (\(error.message))")
        }
        return try addOutput(OutputPlan(stream: .init(pipeline: pipeline, grid: grid), reading: reading),
                             assetID: request.assetID, requestID: requestID, mediaType: track.mediaType)
    }

    /// Whether `track`'s stored samples carry no presentation times, so that only the whole track can be read
    /// (TrackPipeline's `samplesUntimed`): asked in passthrough of MPEG-TS, MPEG-PS and elementary streams
    /// (`spansPackets`: the times are the packets'), and of an elementary stream's decoded video without a frame index
    /// (decoded MPEG-PS video without one is refused by TrackPipeline.checkCut), for a range other than the whole track or an
    /// output whose ResetOutput ranges may be; a track with a frame index is timed, else one pass finds it out
    /// (FrameIndexes).
    static func isUntimedRead(_ asset: Asset, track: TrackDescription, mode: OutputMode, range: MediaTimeRange,
                              randomAccess: Bool) -> Bool {
        switch mode {
        case .passthrough: guard asset.source.container.spansPackets else { return false }
        case .decode: guard asset.source.container == .elementaryStream else { return false }
        case .audio: return false
        }
        guard randomAccess || !TrackPipeline.isWholeTrack(range) else { return false }
        return asset.indexes.carriesNoTimes(source: asset.source, trackID: track.id)
    }

    /// What a CreateOutput's `settings` ask of `track`: decoded video, decoded audio, or (none) passthrough.
    static func outputMode(_ settings: [String: SettingValue]?, track: TrackDescription) throws(TrackError) -> OutputMode {
        guard let settings else { return .passthrough }
        switch track.mediaType {
        case .video:
            return .decode(try OutputSettings.validateVideo(settings, trackRotation: track.rotation))
        case .audio:
            let request = try OutputSettings.validateAudio(settings)
            let channels = request.channels ?? Int(track.channels)
            if request.isNonInterleaved && channels > AudioOutputRequest.maxNonInterleavedChannels {
                throw TrackError(.unsupportedOutputSettings,
                                 "AVLinearPCMIsNonInterleaved output has one plane per channel; trackd supports at most \(AudioOutputRequest.maxNonInterleavedChannels), not \(channels)")
            }
            return .audio(request)
        default:
            throw TrackError(.operationNotSupportedForAsset,
                             "decoded output of \(track.mediaType) tracks is not supported; read track \(track.id) with outputSettings nil (passthrough)")
        }
    }

    /// The frame index a decoded video output selects its frames by; nil (GStreamer's own clipping, the decoder's
    /// durations) when the track's index cannot be made.
    func decodedFrameIndex(_ asset: Asset, trackID: UInt32) -> FrameIndex? {
        do {
            return try decodingFrameIndex(asset, trackID: trackID)
        } catch {
            Log.warning("decoded output of track \(trackID): no frame index (\(error.message)); ranges follow the decoder's clipping")
            return nil
        }
    }

    /// The frame index decoded ranges and images select their frames by: the track's (frameIndex), or an elementary
    /// stream's untimed frames timed by their durations (FrameIndex.untimed), as the decoder times them when it reads
    /// the stream from its beginning, which such a decode does (TrackPipeline's `readsFromStart`, generatePNG).
    func decodingFrameIndex(_ asset: Asset, trackID: UInt32) throws(TrackError) -> FrameIndex {
        if asset.source.container == .elementaryStream, let untimed = try? untimedFrameIndex(asset, trackID: trackID) {
            return untimed
        }
        return try frameIndex(asset, trackID: trackID)
    }

    /// An elementary stream's untimed frames timed by their durations (FrameIndex.untimed), the last one displayed
    /// until the track's end.
    private func untimedFrameIndex(_ asset: Asset, trackID: UInt32) throws(TrackError) -> FrameIndex {
        let index = try asset.indexes.untimed(source: asset.source, trackID: trackID)
        guard let track = asset.tracks.first(where: { $0.id == trackID }) else { return index }
        return Self.ending(index, at: track, grid: asset.grid(trackID))
    }

    /// The frame index ReadFrames and CountFrames resolve requests against and ReadFrames plans by: the track's
    /// (frameIndex); an elementary stream's untimed frames (decodingFrameIndex, Timing.fromStart: read in one decode
    /// from the beginning); an AVI track's at its decode times when it holds B-pictures (Timing.decodeTimes: read in
    /// decoded ranges, as CreateOutput's are). An elementary stream with neither (an MPEG-4 Part 2 one whose VOPs are
    /// not evenly spaced: no rate to time its frames by) is refused with why its frames cannot be timed.
    func readingFrameIndex(_ asset: Asset, trackID: UInt32) throws(TrackError) -> FrameIndex {
        if asset.source.container == .elementaryStream {
            let untimed: TrackError
            do { return try untimedFrameIndex(asset, trackID: trackID) } catch { untimed = error }
            do { return try frameIndex(asset, trackID: trackID) } catch {
                throw asset.indexes.carriesNoTimes(source: asset.source, trackID: trackID) ? untimed : error
            }
        }
        guard asset.source.container == .avi else { return try frameIndex(asset, trackID: trackID) }
        let index = try asset.indexes.storedOrDecodeTimed(source: asset.source, trackID: trackID)
        guard let track = asset.tracks.first(where: { $0.id == trackID }) else { return index }
        return Self.ending(index, at: track, grid: asset.grid(track.id))
    }

    /// The track's frame index, its last frame displayed until the track's end (FrameIndex.endingAt: the end of its
    /// time range, on the demuxer's clock).
    func frameIndex(_ asset: Asset, trackID: UInt32) throws(TrackError) -> FrameIndex {
        let index = try asset.indexes.index(source: asset.source, trackID: trackID)
        guard let track = asset.tracks.first(where: { $0.id == trackID }) else { return index }
        return Self.ending(index, at: track, grid: asset.grid(track.id))
    }

    /// `index` with its last frame displayed until the end of `track`'s time range (FrameIndex.endingAt).
    static func ending(_ index: FrameIndex, at track: TrackDescription, grid: TimeGrid) -> FrameIndex {
        let (start, duration) = (track.timeRangeStart, track.duration)
        guard start.isNumeric, duration.isNumeric, start.timescale == duration.timescale else { return index }
        let (end, overflow) = start.value.addingReportingOverflow(duration.value)
        guard !overflow else { return index }
        return index.endingAt(grid.nanoseconds(MediaTime(value: end, timescale: start.timescale)))
    }

    /// Threads for a decoded video output's decoder and converter, from how many other workers are busy now.
    func decodeThreads() -> Int {
        let others = context.slot.othersBusy
        let threads = Self.decodeThreads(cpus: context.cpus, othersBusy: others)
        Log.info("decoder threads: \(threads) (\(others) other workers busy, \(context.cpus) CPUs)")
        Event.decoderThreads(threads: threads, others: others, cpus: context.cpus).emit()
        return threads
    }

    /// One per CPU when no other worker is busy (libav's automatic count is one more, CPUs + 1 frame threads: on 2
    /// CPUs the worker took 0.94× the CPU time and 0.93× the wall time with 2, docs/BENCHMARKS.md "Decode path");
    /// else the CPUs shared out, at least 1. Frame threading lets one decode use idle CPUs, but when every CPU has a
    /// decode already it only adds threads and hand-offs: 8 decoders at once on 2 CPUs took 7–13% less time
    /// single-threaded (gst-launch, 1080p H.264). Chosen when the output is created; a decode does not change it later.
    static func decodeThreads(cpus: Int, othersBusy: Int) -> Int {
        max(1, cpus / (othersBusy + 1))
    }

    /// Before anything is decoded: the container's declared size, then the requested output size, against
    /// --max-frame-pixels.
    func checkDecodeLimits(_ limits: DecodeLimits, track: TrackDescription, video: VideoOutputRequest) throws(TrackError) {
        try limits.checkFrame(width: UInt64(track.width), height: UInt64(track.height), "track \(track.id)")
        let turned = video.rotation % 180 != 0  // Width and Height are the turned frame's
        let source = turned ? (UInt64(track.height), UInt64(track.width)) : (UInt64(track.width), UInt64(track.height))
        if let size = Self.outputSize(video, source: source) {
            try limits.checkFrame(width: size.width, height: size.height, "the requested output size")
        }
    }

    /// ReadFrames: resolves each request against the track's frame index (built on first use), plans the ranges
    /// that decode every GOP once, and starts the output at the first range.
    func readFrames(_ request: ReadFrames, requestID: UInt32) throws(TrackError) -> (Message, OutputStreamer) {
        let (asset, track) = try assetTrack(request.assetID, request.trackID)
        guard track.mediaType == .video else {
            throw TrackError(.operationNotSupportedForAsset,
                             "ReadFrames reads video frames; track \(track.id) is \(track.mediaType) (read it with CreateOutput and a time range)")
        }
        let video = try OutputSettings.validateVideo(request.settings, trackRotation: track.rotation)
        let limits = context.sandbox.decode
        try checkDecodeLimits(limits, track: track, video: video)
        let index = try readingFrameIndex(asset, trackID: track.id)
        var order: [Int] = []
        let grid = asset.grid(track.id)
        for (i, frame) in request.frames.enumerated() {
            do {
                // A time on the track's grid, in the demuxer's nanoseconds: the frame index's clock (§7.1).
                var onGrid = frame
                if case .time(let t) = frame, let ns = grid.nanoseconds(t) { onGrid = .time(.nanoseconds(ns)) }
                order.append(try index.resolve(onGrid) { grid.time(nanoseconds: $0).seconds })
            } catch {
                throw TrackError(rawCode: error.code, message: "ReadFrames request \(i): \(error.message)")
            }
        }
        let plan = FramePlan(index: index, order: order)
        let key = KeptPipeline.Key(assetID: request.assetID, trackID: track.id, settings: video)
        let (pipeline, baseline) = try framesPipeline(plan, asset: asset, key: key)
        let how = baseline == nil ? "a new pipeline" : "the pipeline kept from the last ReadFrames (reuse \(noteReuse()) on this connection)"
        Log.info("ReadFrames on track \(track.id): \(order.count) frames, \(plan.ranges.count) decode ranges, \(how)")
        Event.readFrames(track: track.id, frames: order.count, ranges: plan.ranges.count, pipeline: baseline == nil ? "new" : "kept").emit()
        let stream = OutputPlan.Stream(pipeline: pipeline, grid: grid, baseline: baseline ?? PipelineCounts())
        // A read from the beginning has no stop (it ends once its frames are out, OutputStreamer.readFrames): kept, it
        // would decode the rest of the stream for nothing.
        let keep = index.timing == .fromStart ? nil : key
        return try addOutput(OutputPlan(stream: stream, reading: .frames(plan, keep: keep)),
                             assetID: request.assetID, requestID: requestID, mediaType: .video)
    }

    /// ReadFrames' pipeline, set for the plan's first range: the kept one seeked there when it serves `key` (and
    /// its counters before, nil for a new one), else a new one.
    private func framesPipeline(_ plan: FramePlan, asset: Asset, key: KeptPipeline.Key)
        throws(TrackError) -> (TrackPipeline, PipelineCounts?) {
        let first = plan.ranges[0]
        if let reused = kept.take(key) {
            let before = PipelineCounts(reused)
            do {
                try reused.reuse(for: first.range, neededSamples: first.neededSamples,
                                 lastNeededSample: first.lastNeededSample, selection: plan.selection(0))
                return (reused, before)
            } catch {
                Log.warning("ReadFrames: the kept pipeline could not seek (\(error.message)); building a new one")
                reused.stop()
            }
        }
        // A first range that starts near the beginning needs no seek: the pipeline prerolls from the start anyway, and
        // the samples before the range are dropped before the decoder.
        let start = first.firstPosition <= FrameIndex.maxSkippedSamples && first.neededSamples != nil ? .everything : first.range
        return (try TrackPipeline(source: asset.source, trackID: key.trackID, mode: .decode(key.settings), timeRange: start,
                                  neededSamples: first.neededSamples, lastNeededSample: first.lastNeededSample,
                                  selection: plan.selection(0), limits: context.sandbox.decode,
                                  threads: decodeThreads()), nil)
    }

    /// CountFrames: the size of the track's frame index (built on first use, as by ReadFrames).
    func countFrames(assetID: UInt32, trackID: UInt32) throws(TrackError) -> Message {
        let (asset, track) = try assetTrack(assetID, trackID)
        guard track.mediaType == .video else {
            throw TrackError(.operationNotSupportedForAsset,
                             "CountFrames counts video frames; track \(track.id) is \(track.mediaType)")
        }
        let index = try readingFrameIndex(asset, trackID: track.id)
        return .frameCount(trackID: track.id, count: UInt64(index.frames.count))
    }

    /// The frame size a decoded output with Width and/or Height delivers (one missing side follows the source's
    /// aspect ratio, as videoscale's); nil when neither is requested.
    static func outputSize(_ request: VideoOutputRequest, source: (width: UInt64, height: UInt64))
        -> (width: UInt64, height: UInt64)? {
        let w = request.width.map { UInt64(max(0, $0)) }, h = request.height.map { UInt64(max(0, $0)) }
        switch (w, h) {
        case let (w?, h?): return (w, h)
        case let (w?, nil): return (w, source.width > 0 ? w.multipliedFullWidth(by: source.height).low / source.width : 0)
        case let (nil, h?): return (source.height > 0 ? h.multipliedFullWidth(by: source.width).low / source.height : 0, h)
        case (nil, nil): return nil
        }
    }
}
