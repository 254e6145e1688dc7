import GstBridge
import Synchronization
import TrackdProtocol

/// The last finished ReadFrames' pipeline, kept for the connection's next ReadFrames of the same track with the same
/// output settings, which seeks it (TrackPipeline.reuse: a flushing, accurate seek) instead of building a new one:
/// building and tearing down a pipeline is most of what one ReadFrames of a few frames costs (docs/BENCHMARKS.md
/// #15). One per connection. It goes (stopped) when an output of other settings, another track or a CreateOutput
/// is made (that output may need the memory: an idle kept pipeline's frames count against no pool limit, like
/// MemfdSpares.c's spares), on CloseAsset of its asset, and when the connection ends. Only a ReadFrames that
/// completed while no other output was reading is kept (a failed or cancelled one is stopped as before).
struct KeptPipeline: Sendable {
    struct Key: Sendable, Hashable {
        let assetID: UInt32
        let trackID: UInt32
        let settings: VideoOutputRequest
    }

    let key: Key
    /// Frames the earlier output's client still holds stay out of its buffer pool until released (the pool makes
    /// others meanwhile: its maximum is 0, no limit), so the next ReadFrames never writes over them.
    let pipeline: TrackPipeline
}

extension Session {
    /// OutputStreamer's end of a completed ReadFrames (output `outputID`): keeps its pipeline for the next one (true),
    /// unless another output is reading now (it may need the memory), the asset was closed or the session is ending.
    func keep(_ pipeline: TrackPipeline, key: KeptPipeline.Key, outputID: UInt32) -> Bool {
        let others = state.withLock { $0.outputs.values.map(\.streamer) }.filter { $0.id != outputID }
        if others.contains(where: \.isReading) { return false }
        let (kept, dropped) = state.withLock { (s: inout State) -> (Bool, KeptPipeline?) in
            guard s.assets[key.assetID] != nil, !s.ended, !stopping.load(ordering: .relaxed) else { return (false, nil) }
            defer { s.kept = KeptPipeline(key: key, pipeline: pipeline) }
            return (true, s.kept)
        }
        dropped?.pipeline.stop()
        return kept
    }

    /// The kept pipeline when it serves `key` (it is no longer kept then); any other kept pipeline is stopped. Nil key: drop it (another kind of output, CloseAsset, the end).
    func takeKept(_ key: KeptPipeline.Key?, whenAsset assetID: UInt32? = nil) -> TrackPipeline? {
        let taken = state.withLock { (s: inout State) -> KeptPipeline? in
            guard let kept = s.kept else { return nil }
            if let assetID, kept.key.assetID != assetID { return nil }
            s.kept = nil
            return kept
        }
        guard let taken else { return nil }
        if let key, taken.key == key { return taken.pipeline }
        taken.pipeline.stop()
        return nil
    }

    /// Counts a ReadFrames served by a kept pipeline; the count so far on this connection.
    func noteReuse() -> UInt64 { stats.pipelinesReused.add(1, ordering: .relaxed).newValue }

    /// Drops the kept pipeline (stopped).
    func dropKept(asset assetID: UInt32? = nil) {
        _ = takeKept(nil, whenAsset: assetID)
    }
}
