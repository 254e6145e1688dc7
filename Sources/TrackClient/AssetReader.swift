import Protocol
import Synchronization

/// Reads samples from an asset's tracks, like AVAssetReader: add outputs, call `startReading()`, then pull from
/// each output with `copyNextSampleBuffer()` until it returns nil, and check `status` and `error`.
///
/// Misuse AVFoundation answers with an exception (adding after start, copying before start …) throws
/// `AssetReaderUsageError` here with the same message. Thread-safe, but as with AVAssetReader,
/// `cancelReading()` must not race with `copyNextSampleBuffer()` on the same output.
public final class AssetReader: Sendable {
    public enum Status: Int, Sendable {
        case unknown = 0, reading, completed, failed, cancelled
    }

    public let asset: Asset
    private let state = Mutex(State())

    struct State: ~Copyable {
        var status: Status = .unknown
        var error: TrackError?
        var timeRange = MediaTimeRange.everything
        var outputs: [AssetReaderTrackOutput] = []
    }

    public init(asset: Asset) {
        self.asset = asset
    }

    public var status: Status { state.withLock { $0.status } }
    /// Set only when `status` is `.failed`.
    public var error: TrackError? { state.withLock { $0.error } }
    public var outputs: [AssetReaderTrackOutput] { state.withLock { $0.outputs } }

    /// The range to read; defaults to everything. Set it with `setTimeRange(_:)` before reading starts.
    public var timeRange: MediaTimeRange { state.withLock { $0.timeRange } }

    /// Throws, as AVAssetReader's setter raises, after reading has started.
    public func setTimeRange(_ range: MediaTimeRange) throws(AssetReaderUsageError) {
        try state.withLock { (s: inout State) throws(AssetReaderUsageError) in
            guard s.status == .unknown else {
                throw AssetReaderUsageError(.internalInconsistency, "-[AVAssetReader setTimeRange:] cannot be called after reading has started")
            }
            s.timeRange = range
        }
    }

    public func canAdd(_ output: AssetReaderTrackOutput) -> Bool {
        state.withLock { s in
            s.status == .unknown && output.reader == nil && asset.track(withTrackID: output.track.trackID) == output.track
        }
    }

    /// Throws AVAssetReader's exceptions: the output was already added here, reading has started, or the output
    /// belongs to another reader (checked in that order).
    public func add(_ output: AssetReaderTrackOutput) throws(AssetReaderUsageError) {
        try state.withLock { (s: inout State) throws(AssetReaderUsageError) in
            guard !s.outputs.contains(where: { $0 === output }) else {
                throw AssetReaderUsageError(.internalInconsistency,
                                            "-[AVAssetReader addOutput:] cannot add an output that has already been added to the receiver")
            }
            guard s.status == .unknown else {
                throw AssetReaderUsageError(.internalInconsistency, "-[AVAssetReader addOutput:] cannot add an output after reading has started")
            }
            guard output.attach(to: self) else {
                throw AssetReaderUsageError(.internalInconsistency,
                                            "-[AVAssetReader addOutput:] cannot add an output that has already been added to another AVAssetReader")
            }
            s.outputs.append(output)
        }
    }

    /// Starts every output's pipeline in the worker. Returns false, with `status` failed and `error` set, when
    /// any output cannot start (undecodable track, unsupported settings, lost connection). Throws when called
    /// again after reading has started (AVAssetReader raises).
    @discardableResult
    public func startReading() throws(AssetReaderUsageError) -> Bool {
        let (outputs, range) = try state.withLock { (s: inout State) throws(AssetReaderUsageError) in
            guard s.status == .unknown else {
                throw AssetReaderUsageError(.internalInconsistency,
                                            "-[AVAssetReader startReading] cannot be called again after reading has already started")
            }
            s.status = .reading
            return (s.outputs, s.timeRange)
        }
        if outputs.isEmpty {
            state.withLock { $0.status = .completed }
            return true
        }
        for output in outputs {
            do {
                try output.start(range: range)
            } catch {
                outputs.forEach { $0.stop() }
                fail(error)
                return false
            }
        }
        return true
    }

    /// Stops reading; never fails. Samples already vended stay valid.
    public func cancelReading() {
        markCancelled().forEach { $0.stop() }
    }

    /// The status half of cancelReading(): `.cancelled` at once; returns the outputs still to stop (CancelOutput,
    /// a socket write), or none when reading had already ended.
    func markCancelled() -> [AssetReaderTrackOutput] {
        state.withLock { s -> [AssetReaderTrackOutput] in
            guard s.status == .unknown || s.status == .reading else { return [] }
            s.status = .cancelled
            return s.outputs
        }
    }

    func fail(_ error: TrackError) {
        state.withLock { s in
            guard s.status == .reading || s.status == .unknown else { return }
            s.status = .failed
            s.error = error
        }
    }

    /// Called when an output has returned nil at the end of its data, or was marked final; the reader completes
    /// when every output has returned nil and every random-access output was marked final.
    func outputCompleted() {
        let outputs = self.outputs
        guard outputs.allSatisfy({ $0.isDone }) else { return }
        state.withLock { s in
            if s.status == .reading { s.status = .completed }
        }
    }
}
