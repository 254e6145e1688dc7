import Synchronization
import TrackdProtocol

// The parts a Session coordinates, each owning one kind of state behind its own lock (or none): the open assets,
// the outputs, the kept pipelines (Session+KeptPipeline.swift) and the graceful stop (Session+Stop.swift). A step
// that needs more than one is the session's: CloseAsset closes the asset, then cancels its outputs and drops its
// kept pipeline; keeping a pipeline asks, under the kept pipelines' lock, whether its asset is still open.

/// The connection's open assets, by id (OpenAsset … CloseAsset).
final class AssetTable: Sendable {
    private struct Table {
        var assets: [UInt32: Session.Asset] = [:]
        var nextID: UInt32 = 1
    }

    private let table = Mutex(Table())

    /// Adds `asset` under a new id; at most `Session.maxAssets` are open at once.
    func add(_ asset: Session.Asset) throws(TrackError) -> UInt32 {
        try table.withLock { (t: inout Table) throws(TrackError) -> UInt32 in
            guard t.assets.count < Session.maxAssets else {
                throw TrackError(.limitExceeded, "a session may hold at most \(Session.maxAssets) open assets")
            }
            defer { t.nextID += 1 }
            t.assets[t.nextID] = asset
            return t.nextID
        }
    }

    func asset(_ id: UInt32) -> Session.Asset? { table.withLock { $0.assets[id] } }

    /// Closes asset `id`; false when none is open under it.
    func remove(_ id: UInt32) -> Bool { table.withLock { $0.assets.removeValue(forKey: id) != nil } }

    var count: Int { table.withLock { $0.assets.count } }
}

/// The connection's outputs, by id, each with the asset it reads. An output leaves when it has finished and every
/// slot is back (OutputOwner.outputDrained).
final class OutputTable: Sendable {
    private struct Table {
        var outputs: [UInt32: (assetID: UInt32, streamer: OutputStreamer)] = [:]
        var nextID: UInt32 = 1
    }

    private let table = Mutex(Table())

    /// Adds the output `make` builds for a new id; at most `Session.maxOutputs` run at once.
    func add(assetID: UInt32, _ make: (UInt32) -> OutputStreamer) throws(TrackError) -> OutputStreamer {
        try table.withLock { (t: inout Table) throws(TrackError) -> OutputStreamer in
            guard t.outputs.count < Session.maxOutputs else {
                throw TrackError(.limitExceeded, "a session may run at most \(Session.maxOutputs) outputs at once")
            }
            defer { t.nextID += 1 }
            let streamer = make(t.nextID)
            t.outputs[t.nextID] = (assetID, streamer)
            return streamer
        }
    }

    func streamer(_ id: UInt32) -> OutputStreamer? { table.withLock { $0.outputs[id]?.streamer } }

    func remove(_ id: UInt32) { table.withLock { _ = $0.outputs.removeValue(forKey: id) } }

    /// The outputs (of asset `assetID`, or all).
    func streamers(asset assetID: UInt32? = nil) -> [OutputStreamer] {
        table.withLock { t in t.outputs.values.filter { assetID == nil || $0.assetID == assetID }.map(\.streamer) }
    }

    var count: Int { table.withLock { $0.outputs.count } }
}

/// The graceful stop's state (Session+Stop.swift): whether the session is stopping, and the requests running on a
/// thread of their own (`Session.background`), which are reads in flight for the stop's grace. Atomics, no lock.
final class Stopping: Sendable {
    private let started = Atomic<Bool>(false)
    private let requests = Atomic<Int>(0)

    var isStopping: Bool { started.load(ordering: .acquiring) }

    /// Marks the session stopping; true only the first time.
    func begin() -> Bool { !started.exchange(true, ordering: .acquiringAndReleasing) }

    func requestBegan() { requests.add(1, ordering: .relaxed) }
    func requestEnded() { requests.subtract(1, ordering: .relaxed) }
    var requestsRunning: Int { requests.load(ordering: .relaxed) }
}
