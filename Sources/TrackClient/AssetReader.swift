import TrackdProtocol
import Synchronization

/// Reads samples from an asset's tracks, like `AVAssetReader`: add outputs, call ``startReading()``, then pull
/// from each output with ``AssetReaderTrackOutput/copyNextSampleBuffer()`` (or iterate
/// ``AssetReaderTrackOutput/samples``) until it returns nil, and check ``status`` and ``error``.
///
/// Misuse AVFoundation answers with an exception (adding after start, copying before start …) throws
/// ``AssetReaderUsageError`` here with the same message. A reader reads once, like AVAssetReader: to read again
/// (or elsewhere, without random access) make a new reader on the same ``Asset`` — it reuses the asset's
/// connection and worker.
///
/// **Ownership.** The reader holds its asset and its outputs. Each started output has a pipeline in the worker
/// and shared-memory pools mapped read-only into this process; they end with the output (at the end of its
/// data, on failure, or on ``cancelReading()``). Samples already vended stay valid after that.
///
/// **Thread-safety.** `Sendable`: its mutable state is behind a lock. Different outputs may be read on different
/// threads at the same time. As with AVAssetReader, read each output from one loop at a time, and do not let
/// ``cancelReading()`` race with a `copyNextSampleBuffer()` on the same output (cancelling the task that
/// iterates ``AssetReaderTrackOutput/samples`` is the supported way to cancel while waiting).
///
/// **Blocking.** ``startReading()`` waits for every output's pipeline to start in the worker;
/// `copyNextSampleBuffer()` waits for the next sample. The other members do not block.
public final class AssetReader: Sendable {
    /// `AVAssetReader.Status`, with the same raw values.
    public enum Status: Int, Sendable {
        /// Not started yet: outputs and the time range may still be set.
        case unknown = 0
        /// ``AssetReader/startReading()`` succeeded; samples are being read.
        case reading
        /// Every output returned all its samples (and every random-access output was marked final).
        case completed
        /// Reading failed; ``AssetReader/error`` says why.
        case failed
        /// ``AssetReader/cancelReading()`` was called (or a task iterating ``AssetReaderTrackOutput/samples`` was
        /// cancelled).
        case cancelled
    }

    /// The asset this reader reads (`AVAssetReader.asset`).
    public let asset: Asset
    private let state = Mutex(State())

    struct State: ~Copyable {
        var status: Status = .unknown
        var error: TrackError?
        var timeRange = MediaTimeRange.everything
        var outputs: [AssetReaderTrackOutput] = []
    }

    /// A reader of `asset` with no outputs (`AVAssetReader(asset:)`; it cannot fail here, as nothing is sent
    /// to trackd until ``startReading()``).
    public init(asset: Asset) {
        self.asset = asset
    }

    /// Where reading stands (`AVAssetReader.status`). Check it when an output returns nil.
    public var status: Status { state.withLock { $0.status } }
    /// Why reading failed, with an AVError-style code and a message naming the problem (`AVAssetReader.error`).
    /// Set only when `status` is `.failed`.
    public var error: TrackError? { state.withLock { $0.error } }
    /// The outputs added so far, in order (`AVAssetReader.outputs`).
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

    /// Whether ``add(_:)`` would accept `output` (`AVAssetReader.canAdd(_:)`): reading has not started, the
    /// output belongs to no reader yet, and its track is one of this reader's asset.
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

    /// Stops reading (`AVAssetReader.cancelReading()`); never fails and never blocks for long (it sends
    /// CancelOutput for each output and returns). `status` becomes `.cancelled` unless reading had already
    /// ended; outputs then return nil. Samples already vended stay valid; samples that arrive afterwards have their
    /// shared slots released unread.
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
