import CTrackSys
import Foundation
import Synchronization
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM in a worker (the supervisor forwards its own when trackd stops): the handler only sets a flag, which
/// the session's receive loop reads before every wait (Session.stopIfRequested).
enum StopRequest {
    private static let requested = Atomic<Bool>(false)

    static var isRequested: Bool { requested.load(ordering: .relaxed) }

    /// Installed first thing, before any thread exists. Without SA_RESTART: the main thread's poll returns EINTR, so
    /// its receive loop sees the flag at once (Linux gives a signal sent to the process to its main thread first).
    static func install() {
        _ = isRequested  // the static is initialised here, not in the handler
        installSignalHandler(SIGTERM) { _ in StopRequest.requested.store(true, ordering: .relaxed) }
    }
}

/// A graceful stop (docs/PROTOCOL.md §13, "trackd is stopping"): once SIGTERM is seen, requests that would start
/// new work — OpenAsset, CreateOutput, ReadFrames, GenerateImage — are answered with Error −11904; reads in flight
/// (requests being served, outputs still producing) get `--stop-timeout` seconds to finish; then every output still
/// producing ends with OutputFinished status 3 (failed), code −11904, and the session with an Error −11904 of
/// request id 0 before the worker closes the connection and exits. Slot releases and cancellations are taken
/// meanwhile, so a client that keeps reading finishes its read.
extension Session {
    static let stoppingMessage = "trackd is stopping"

    /// The receive loop's check: the first time it sees the stop requested, the session starts stopping.
    func stopIfRequested() {
        guard StopRequest.isRequested, stopping.begin() else { return }
        let reading = readsInFlight
        Log.notice("stopping: client uid \(context.clientUID) pid \(context.clientPID) has \(reading) reads in flight; they get \(context.stopTimeout) s (--stop-timeout)")
        Event.sessionStopping(reads: reading).emit()
        let thread = Thread { [self] in finishStopping() }
        thread.name = "stop"
        thread.start()
    }

    /// Answers a request that would start new work with Error −11904 while the session stops. True when it did.
    func refusedWhileStopping(_ frame: borrowing ReceivedFrame) -> Bool {
        guard stopping.isStopping else { return false }
        switch frame.message {
        case .openAsset, .createOutput, .readFrames, .generateImage: break
        default: return false
        }
        try? socket.send(.error(TrackError(.daemonStopping, "\(Self.stoppingMessage); it takes no new requests")),
                         requestID: frame.requestID)
        return true
    }

    /// Requests being served plus outputs still producing (not finished, not waiting after RangeEnded).
    var readsInFlight: Int {
        stopping.requestsRunning + outputs.streamers().filter(\.isReading).count
    }

    /// The stop thread: waits for the reads in flight, at most `--stop-timeout` seconds, ends those left, says why
    /// the session ends and closes the connection (which ends the receive loop, and the worker).
    private func finishStopping() {
        let seconds = context.stopTimeout
        let deadline = trackd_monotonic_ms() + seconds * 1000
        while readsInFlight > 0 && trackd_monotonic_ms() < deadline {
            usleep(10_000)  // a bounded wait on the session's own state; nothing signals "the last read ended"
        }
        let left = outputs.streamers().filter(\.isReading)
        let cut = TrackError(.daemonStopping,
                             "\(Self.stoppingMessage); this read did not finish within the grace of \(seconds) s (--stop-timeout)")
        for streamer in left {
            streamer.finish(.failed, cut)
            streamer.cancel()
        }
        let pending = stopping.requestsRunning
        if !left.isEmpty || pending > 0 {
            Log.notice("stopping: ended \(left.count) outputs and \(pending) requests of client pid \(context.clientPID) after \(seconds) s (--stop-timeout)")
        }
        try? socket.send(.error(TrackError(.daemonStopping, Self.stoppingMessage)), requestID: 0)
        socket.shutdown()
    }
}
