import Dispatch
import Foundation
import TrackdProtocol
import Synchronization
import SystemCalls

extension AssetReaderTrackOutput {
    /// The output's samples as an asynchronous sequence: `for try await sample in output.samples { … }`.
    ///
    /// The async counterpart of calling ``copyNextSampleBuffer()`` until it returns nil (AVFoundation 26 offers
    /// the same loop as `AVAssetReaderOutput.Provider`, whose `next()` is async). Each element is exactly what
    /// `copyNextSampleBuffer()` would have returned next, with the same ownership (``alwaysCopiesSampleData``).
    ///
    /// - The sequence ends (`next()` returns nil) when the output has returned all its samples (the reader
    ///   completes as with the blocking API), when the reader was cancelled, or — with random access — at the end
    ///   of the current ranges.
    /// - When the reader fails, iteration throws the reader's ``AssetReader/error`` (a `TrackError`) instead of
    ///   ending quietly, so a `for try await` loop cannot mistake a failure for the end of the track.
    /// - Iterating before the reader has started, or while zero-copy buffers you hold fill every slot of the output,
    ///   throws the ``AssetReaderUsageError`` that `copyNextSampleBuffer()` throws (and ends this iterator).
    /// - Cancelling the task that iterates cancels the reader (``AssetReader/cancelReading()``: status
    ///   `.cancelled`, every output stops, samples in flight have their shared slots released) and the pending
    ///   `next()` returns nil at once, without waiting for the worker.
    ///
    /// Waiting for a sample is a blocking wait on the connection; it never runs on Swift's cooperative thread
    /// pool. Each iterator has one dedicated thread that performs `copyNextSampleBuffer()` when `next()` asks for
    /// a sample (no read-ahead: a sample is fetched only on demand, so no shared slot is held for you unasked)
    /// and resumes the awaiting task through a continuation. The thread ends when the sequence ends or the
    /// iterator is discarded.
    ///
    /// Use one iterator per output at a time, and do not mix it with `copyNextSampleBuffer()` calls on the same
    /// output (as with AVAssetReader, an output is read by one loop).
    public var samples: SampleSequence { SampleSequence(output: self) }
}

/// The samples of one ``AssetReaderTrackOutput``, in order, as an `AsyncSequence` (see
/// ``AssetReaderTrackOutput/samples``). Sendable: it only names the output; each iterator made from it has its
/// own dedicated waiting thread.
///
/// Errors are `TrackError` (the reader failed) or ``AssetReaderUsageError`` (the reader has not started).
public struct SampleSequence: AsyncSequence, Sendable {
    /// Each element is one sample, owned as ``AssetReaderTrackOutput/alwaysCopiesSampleData`` says.
    public typealias Element = SampleBuffer
    /// `TrackError` or ``AssetReaderUsageError`` (two unrelated types, so not a typed throw).
    public typealias Failure = any Error

    /// The output whose samples this sequence yields.
    public let output: AssetReaderTrackOutput

    /// Makes an iterator; its dedicated thread starts on the first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(pump: SamplePump(output: output)) }

    /// Pulls samples from the output through a dedicated thread. Not Sendable: use it from one task.
    public struct Iterator: AsyncIteratorProtocol {
        /// One sample.
        public typealias Element = SampleBuffer
        /// `TrackError` or ``AssetReaderUsageError``.
        public typealias Failure = any Error

        let pump: SamplePump

        /// The next sample, or nil at the end (completed, cancelled, or end of the ranges). Throws the reader's
        /// error when it failed.
        public mutating func next() async throws -> SampleBuffer? {
            try await pump.next()
        }
    }
}

/// What the dedicated thread hands back for one request.
private enum Outcome: Sendable {
    case sample(SampleBuffer)
    case end
    case failure(any Error)
}

/// Owned by one iterator: when the iterator is discarded, the pump's deinit lets the thread go.
final class SamplePump: Sendable {
    private let core: PumpCore

    init(output: AssetReaderTrackOutput) { core = PumpCore(output: output) }

    deinit { core.shutDown() }

    func next() async throws -> SampleBuffer? {
        if Task.isCancelled {
            core.cancel()
            return nil
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                core.request(continuation)
            }
        } onCancel: {
            core.cancel()
        }
        core.received()
        switch outcome {
        case .sample(let sample): return sample
        case .end: return nil
        case .failure(let error): throw error
        }
    }
}

/// The state shared between the awaiting task, the cancellation handler and the dedicated thread.
private final class PumpCore: Sendable {
    let output: AssetReaderTrackOutput
    private let wake = DispatchSemaphore(value: 0)
    private let state = Mutex(State())

    struct State: ~Copyable {
        var waiting: CheckedContinuation<Outcome, Never>?
        var threadStarted = false
        /// The sequence ended (nil, failure or cancel): every later request answers `.end` (or the failure).
        var finished: Outcome?
        /// The iterator is gone: the thread exits when it wakes.
        var shutDown = false
    }

    init(output: AssetReaderTrackOutput) { self.output = output }

    /// Registers the awaiting continuation and wakes the thread (starting it on first use).
    func request(_ continuation: CheckedContinuation<Outcome, Never>) {
        enum Action { case resume(Outcome), wake, start }
        let action = state.withLock { s -> Action in
            if let finished = s.finished { return .resume(finished) }
            s.waiting = continuation
            if s.threadStarted { return .wake }
            s.threadStarted = true
            return .start
        }
        switch action {
        case .resume(let outcome):
            deliver(outcome, to: continuation)
        case .wake:
            wake.signal()
        case .start:
            let thread = Thread { [self] in run() }
            thread.name = "trackd-samples"
            thread.start()
            wake.signal()
        }
    }

    /// Task cancelled: cancel the reader and answer the waiting task with the end at once.
    func cancel() {
        let waiting = state.withLock { s -> CheckedContinuation<Outcome, Never>? in
            guard s.finished == nil else { return nil }
            s.finished = .end
            defer { s.waiting = nil }
            return s.waiting
        }
        // The reader's status is `.cancelled` before the task resumes; stopping the outputs (CancelOutput, a socket
        // write) happens on a thread of its own.
        let outputs = output.reader?.markCancelled() ?? []
        if let waiting { deliver(.end, to: waiting) }
        if !outputs.isEmpty {
            Thread.detachNewThread { outputs.forEach { $0.stop() } }
        }
    }

    /// Resumes the awaiting task with `outcome`, which this thread may have just built (a SampleBuffer, an error).
    /// The runtime orders the resume before the task's next step, but ThreadSanitizer cannot see that order when
    /// the resume comes before the task has suspended (CTrackSys/TsanMutex.c): the release here and the acquire in
    /// `received()` show it. No-ops outside a TSan build.
    private func deliver(_ outcome: Outcome, to continuation: CheckedContinuation<Outcome, Never>) {
        TsanHandoff.release(handoffTag)
        continuation.resume(returning: outcome)
    }

    /// The awaiting task got its outcome: the other half of `deliver`.
    func received() { TsanHandoff.acquire(handoffTag) }

    /// The tag the hand-off is annotated on: this object's address.
    private var handoffTag: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    func shutDown() {
        state.withLock { $0.shutDown = true }
        wake.signal()
    }

    /// The dedicated thread: one blocking copyNextSampleBuffer per request.
    private func run() {
        while true {
            wake.wait()
            let stop = state.withLock { $0.shutDown || $0.finished != nil }
            if stop { return }
            let outcome: Outcome
            do {
                if let sample = try output.copyNextSampleBuffer() {
                    outcome = .sample(sample)
                } else if let reader = output.reader, reader.status == .failed {
                    outcome = .failure(reader.error ?? TrackError(.unknown, "the asset reader failed"))
                } else {
                    outcome = .end
                }
            } catch {
                outcome = .failure(error)
            }
            let waiting = state.withLock { s -> CheckedContinuation<Outcome, Never>? in
                if case .sample = outcome {} else if s.finished == nil { s.finished = outcome }
                defer { s.waiting = nil }
                return s.waiting
            }
            // A cancel that came first already answered the task; a sample fetched meanwhile is dropped here,
            // which releases its shared slot.
            if let waiting { deliver(outcome, to: waiting) }
            if case .sample = outcome { continue }
            return
        }
    }
}
