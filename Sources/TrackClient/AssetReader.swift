import Protocol
import Synchronization

/// Reads samples from an asset's tracks, like AVAssetReader: add outputs, call `startReading()`, then pull from
/// each output with `copyNextSampleBuffer()` until it returns nil, and check `status` and `error`.
///
/// Misuse AVFoundation answers with an exception (adding after start, copying before start …) stops the program
/// here with the same message, as an uncaught NSException would. Thread-safe, but as with AVAssetReader,
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

    /// The range to read; defaults to everything. Cannot change after reading has started.
    public var timeRange: MediaTimeRange {
        get { state.withLock { $0.timeRange } }
        set {
            state.withLock { s in
                precondition(s.status == .unknown, "-[AVAssetReader setTimeRange:] cannot be called after reading has started")
                s.timeRange = newValue
            }
        }
    }

    public func canAdd(_ output: AssetReaderTrackOutput) -> Bool {
        state.withLock { s in
            s.status == .unknown && output.reader == nil && asset.track(withTrackID: output.track.trackID) == output.track
        }
    }

    public func add(_ output: AssetReaderTrackOutput) {
        state.withLock { s in
            precondition(!s.outputs.contains { $0 === output },
                         "-[AVAssetReader addOutput:] cannot add an output that has already been added to the receiver")
            precondition(s.status == .unknown, "-[AVAssetReader addOutput:] cannot add an output after reading has started")
            precondition(output.reader == nil,
                         "-[AVAssetReader addOutput:] cannot add an output that has already been added to another AVAssetReader")
            s.outputs.append(output)
        }
        output.attach(to: self)
    }

    /// Starts every output's pipeline in the worker. Returns false, with `status` failed and `error` set, when
    /// any output cannot start (undecodable track, unsupported settings, lost connection).
    @discardableResult
    public func startReading() -> Bool {
        let (outputs, range) = state.withLock { s in
            precondition(s.status == .unknown, "-[AVAssetReader startReading] cannot be called again after reading has already started")
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
        let outputs = state.withLock { s -> [AssetReaderTrackOutput] in
            guard s.status == .unknown || s.status == .reading else { return [] }
            s.status = .cancelled
            return s.outputs
        }
        outputs.forEach { $0.stop() }
    }

    func fail(_ error: TrackError) {
        state.withLock { s in
            guard s.status == .reading || s.status == .unknown else { return }
            s.status = .failed
            s.error = error
        }
    }

    /// Called when an output has returned its last sample; the reader completes when every output has.
    func outputCompleted() {
        let outputs = self.outputs
        guard outputs.allSatisfy({ $0.isDrained }) else { return }
        state.withLock { s in
            if s.status == .reading { s.status = .completed }
        }
    }
}
