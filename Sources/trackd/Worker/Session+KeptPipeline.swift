import GstBridge
import Synchronization
import TrackdProtocol

/// The last finished ReadFrames' pipeline of each open asset, kept for the connection's next ReadFrames of the same
/// asset, track and output settings, which seeks it (TrackPipeline.reuse: a flushing, accurate seek) instead of
/// building a new one: building and tearing down a pipeline is most of what one ReadFrames of a few frames costs
/// (docs/BENCHMARKS.md #15), and a loader that reads single frames of several files in turn comes back to each file
/// often (one random 720p frame at a time from 8 files: about 90 -> 75 ms of worker CPU). One per asset — at most
/// maxKeptPipelines on a connection (a kept 720p pipeline holds about 40 MB), the least recently kept stopped first.
/// A kept pipeline goes (stopped) when a ReadFrames of its asset asks for another track or other settings, when a
/// CreateOutput is made (that output may need the memory: an idle kept pipeline's frames count against no pool
/// limit, like MemfdSpares.c's spares), on CloseAsset of its asset, and when the connection ends. Only a ReadFrames
/// that completed while no other output was reading is kept (a failed or cancelled one is stopped as before).
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

/// The kept pipelines of a connection, least recently kept first, behind their own lock; once the connection has
/// ended nothing is kept any more.
final class KeptPipelines: Sendable {
    private struct Kept {
        var pipelines: [KeptPipeline] = []
        var ended = false
    }

    private let kept = Mutex(Kept())

    /// Keeps `pipeline` under `key` — one per asset, at most `Session.maxKeptPipelines` — when `allowed` (asked under
    /// this lock, so a CloseAsset that drops the asset's pipeline after it sees it closed) says so and the
    /// connection has not ended. True: kept (the caller does not stop it then).
    func keep(_ pipeline: TrackPipeline, key: KeptPipeline.Key, if allowed: () -> Bool) -> Bool {
        let (done, dropped) = kept.withLock { (k: inout Kept) -> (Bool, [KeptPipeline]) in
            guard !k.ended, allowed() else { return (false, []) }
            var dropped = k.pipelines.take { $0.key.assetID == key.assetID }  // one per asset
            k.pipelines.append(KeptPipeline(key: key, pipeline: pipeline))
            if k.pipelines.count > Session.maxKeptPipelines { dropped.append(k.pipelines.removeFirst()) }
            return (true, dropped)
        }
        for old in dropped { old.pipeline.stop() }
        return done
    }

    /// The pipeline kept for `key`'s asset when it serves `key` (it is no longer kept then); one of that asset kept
    /// for another track or other settings is stopped. Other assets' kept pipelines stay.
    func take(_ key: KeptPipeline.Key) -> TrackPipeline? {
        guard let taken = kept.withLock({ $0.pipelines.take { $0.key.assetID == key.assetID } }).first else { return nil }
        if taken.key == key { return taken.pipeline }
        taken.pipeline.stop()
        return nil
    }

    /// Drops the kept pipelines (stopped): of asset `assetID`, or all (another kind of output).
    func drop(asset assetID: UInt32? = nil) {
        let dropped = kept.withLock { $0.pipelines.take { assetID == nil || $0.key.assetID == assetID } }
        for old in dropped { old.pipeline.stop() }
    }

    /// The connection ended: every kept pipeline is stopped and none is kept again.
    func end() {
        kept.withLock { $0.ended = true }
        drop()
    }
}

extension Session {
    /// OutputStreamer's end of a completed ReadFrames (output `outputID`): keeps its pipeline for the next one (true),
    /// unless another output is reading now (it may need the memory), the asset was closed or the session is ending.
    func keep(_ pipeline: TrackPipeline, key: KeptPipeline.Key, outputID: UInt32) -> Bool {
        if outputs.streamers().contains(where: { $0.id != outputID && $0.isReading }) { return false }
        return kept.keep(pipeline, key: key) { assets.asset(key.assetID) != nil && !stopping.isStopping }
    }

    /// Counts a ReadFrames served by a kept pipeline; the count so far on this connection.
    func noteReuse() -> UInt64 { stats.pipelinesReused.add(1, ordering: .relaxed).newValue }
}
extension [KeptPipeline] {
    /// Removes the kept pipelines `matching` says to, and returns them (in order) for the caller to stop outside
    /// the session's lock.
    mutating func take(_ matching: (KeptPipeline) -> Bool) -> [KeptPipeline] {
        let taken = filter(matching)
        removeAll(where: matching)
        return taken
    }
}
