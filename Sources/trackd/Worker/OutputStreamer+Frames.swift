import GstBridge
import MediaIndex
import SamplePools
import TrackdProtocol

extension FramePlan {
    /// What range `i` delivers: its wanted frames only; every other decoded frame is dropped before conversion.
    func selection(_ i: Int) -> FrameSelection { FrameSelection(index: index, frames: ranges[i].frames) }

    var resolved: [ResolvedFrame] {
        order.map { ResolvedFrame(index: UInt64($0), presentationTime: .nanoseconds(index.frames[$0].presentationTime)) }
    }
}

/// A pipeline's decode counters at one moment (TrackPipeline's, cumulative over its life).
struct PipelineCounts: Sendable, Equatable {
    var samplesDecoded: UInt64 = 0
    var samplesSkipped: UInt64 = 0
    var framesDecoded: UInt64 = 0
    var framesConverted: UInt64 = 0
    /// Stored samples the file lists but does not hold whole, and ones the decoder made nothing of.
    var samplesMissing: UInt64 = 0
    var samplesUndecodable: UInt64 = 0

    init() {}

    init(_ pipeline: TrackPipeline) {
        (samplesDecoded, samplesSkipped) = (pipeline.samplesDecoded, pipeline.samplesSkipped)
        (framesDecoded, framesConverted) = (pipeline.framesDecoded, pipeline.framesConverted)
        (samplesMissing, samplesUndecodable) = (pipeline.samplesLost, pipeline.samplesUndecodable)
    }
}

extension FrameOrder<PulledSample> {
    /// Keeps `sample` when it is a wanted frame not seen yet (the frame nearest its presentation time); false
    /// otherwise.
    mutating func keep(_ sample: PulledSample) -> Bool {
        guard let ns = sample.presentationTime.nanoseconds else { return false }
        return keep(sample, frame: plan.index.nearest(ns))
    }
}

extension OutputStreamer {
    /// ReadFrames: decodes the plan's ranges one after the other (each an accurate seek), keeps the wanted frames
    /// as they come, and sends them in request order as soon as the next one in that order is at hand. A read from
    /// the stream's beginning (Timing.fromStart), which has no stop, ends once the last frame is sent. The counts
    /// are logged before it returns: before the pipeline may go on to the next ReadFrames (on its own thread).
    func readFrames(_ frames: FramePlan) -> Ending {
        defer { logCounts(frames) }
        send(.framesResolved(outputID: id, frames: frames.resolved.map {
            ResolvedFrame(index: $0.index, presentationTime: grid.rounded($0.presentationTime))  // on the track's grid
        }))
        var order = FrameOrder<PulledSample>(frames)
        var range = 0
        var retried = false  // the current range was decoded again without the sample filter
        while true {
            if isCancelled { return (.cancelled, nil) }
            switch pipeline.pull(timeoutNs: Self.pullTimeoutNs) {
            case .timeout:
                continue
            case .failed(let error):
                return isCancelled ? (.cancelled, nil) : (.failed, error)
            case .endOfStream:
                if isCancelled { return (.cancelled, nil) }
                switch endOfRange(&range, retried: &retried, order) {
                case .next: continue
                case .finished(let status, let error): return (status, error)
                }
            case .sample(let sample):
                guard order.keep(sample) else { continue }
                while let (ready, zeroCopy) = order.ready() {
                    guard deliver(ready, zeroCopy: zeroCopy) else { return (.cancelled, nil) }
                    order.sent()
                }
                if order.isComplete && frames.index.timing == .fromStart { return (.completed, nil) }
            }
        }
    }

    /// The ReadFrames log line: what this output decoded and converted (from `baseline`: a kept pipeline's counters
    /// go on from the ReadFrames before).
    private func logCounts(_ plan: FramePlan) {
        let now = PipelineCounts(pipeline)
        Log.info("ReadFrames output \(id): \(plan.order.count) frames asked, \(now.samplesDecoded &- baseline.samplesDecoded) samples decoded (\(now.samplesSkipped &- baseline.samplesSkipped) skipped), \(now.framesDecoded &- baseline.framesDecoded) frames out of the decoder, \(now.framesConverted &- baseline.framesConverted) converted, in \(plan.ranges.count) ranges; \(TrackPipeline.frameMemoriesReused) frame memories reused in this worker so far")
        Event.readFramesDone(output: id, frames: plan.order.count, samplesDecoded: now.samplesDecoded &- baseline.samplesDecoded,
                             framesDecoded: now.framesDecoded &- baseline.framesDecoded,
                             framesConverted: now.framesConverted &- baseline.framesConverted,
                             memoriesReused: TrackPipeline.frameMemoriesReused).emit()
    }

    enum RangeEnd { case next, finished(OutputStatus, TrackError?) }

    /// The end of ReadFrames range `range`: decode it again if the sample filter kept back something a wanted frame
    /// needed, else seek to the next range, else the output ends.
    private func endOfRange(_ range: inout Int, retried: inout Bool, _ order: FrameOrder<PulledSample>) -> RangeEnd {
        let plan = order.plan
        // Fail-safe: if the sample filter kept back something a wanted frame needed (an index whose times are not
        // the demuxer's), decode the range again with every sample, as a plain accurate seek does.
        let current = plan.ranges[range]
        if !retried, current.neededSamples != nil || current.lastNeededSample != nil,
           !plan.wantedByRange[range].isSubset(of: order.arrived) {
            retried = true
            let lacking = plan.wantedByRange[range].subtracting(order.arrived).sorted()
            Log.warning("ReadFrames output \(id): range \(range) did not produce frame(s) \(lacking.prefix(8).map(String.init).joined(separator: ", ")) with the needed samples only; decoding it again with every sample")
            Event.rangeDecodedAgain(output: id).emit()
            // Every decoded frame converted this time (the index's times cannot be trusted to pick them out).
            if let error = seek(current.range, selection: FrameSelection(index: plan.index, frames: nil)) {
                return .finished(.failed, error)
            }
            return .next
        }
        retried = false
        range += 1
        if range < plan.ranges.count {
            let next = plan.ranges[range]
            if let error = seek(next.range, neededSamples: next.neededSamples, lastNeededSample: next.lastNeededSample,
                                selection: plan.selection(range)) {
                return .finished(.failed, error)
            }
            return .next
        }
        if order.isComplete { return .finished(.completed, nil) }
        let missing = plan.order[order.next]
        return .finished(.failed, TrackError(.decodeFailed,
            "frame \(missing) (at \(Double(plan.index.frames[missing].presentationTime) / 1e9) s) was not produced by the decoder"))
    }
}
