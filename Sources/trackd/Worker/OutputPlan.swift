import GstBridge
import MediaIndex
import SamplePools
import TrackdProtocol

/// What one output is made of, decided by the session before its thread starts: the stream it delivers and how it
/// reads the track. OutputStreamer's loop switches on `reading` and nothing else.
struct OutputPlan: Sendable {
    /// The pipeline, set for the first range; the grid the samples' times leave on (the track's; decoded audio: its
    /// output rate), ResetOutput's ranges are taken from (§7.1) — inside, times are GStreamer's nanoseconds; and the
    /// pipeline's counters when this output began on it (a kept pipeline's are not zero).
    struct Stream: Sendable {
        let pipeline: TrackPipeline
        let grid: TimeGrid
        var baseline = PipelineCounts()
    }

    let stream: Stream
    let reading: OutputReading<KeptPipeline.Key?>
}

/// Where an output reports: the session's table of outputs, which forgets it once drained and may keep the pipeline
/// of a completed ReadFrames for the next one.
protocol OutputOwner: AnyObject, Sendable {
    /// Output `id` finished and every slot is back.
    func outputDrained(_ id: UInt32)
    /// A completed ReadFrames offers its pipeline; true: kept (not stopped then).
    func keep(_ pipeline: TrackPipeline, key: KeptPipeline.Key, outputID: UInt32) -> Bool
}

/// What an output works with besides its plan: its ids, the connection it sends on, the counters it adds to, the
/// worker's slot (busy for the watchdog, progress, pool bytes) and its owner.
struct OutputContext: Sendable {
    let id: UInt32
    let requestID: UInt32
    let socket: MessageSocket
    let stats: WorkerStats
    let slot: WorkerSlot
    /// The client handles OutputStalled (capability bit 0): told when the output waits on it (OutputStreamer+Stalls).
    let reportsStalls: Bool
    weak let owner: (any OutputOwner)?
}

extension IndexedRead {
    /// The frames the range delivers, as the pipeline's frame gate takes them.
    var selection: FrameSelection { FrameSelection(index: index, frames: frames) }
}
