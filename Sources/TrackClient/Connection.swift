import Dispatch
import Foundation
import TrackdProtocol
import Synchronization
import SystemCalls

/// One connection to trackd, which is one session with one isolated worker process. Requests are synchronous
/// for the caller (as AVAssetReader's API is); a dedicated thread receives every frame and routes it: replies to
/// the waiting request, output events (PoolAdded, Sample, OutputFinished — they carry the request id of the
/// CreateOutput that started the output) to that output's channel.
final class Connection: Sendable {
    let socket: MessageSocket
    let hello: HelloReply
    private let state = Mutex(State())
    /// Signalled once the receive thread has ended (and set `failure`); each waiter passes the signal on.
    private let receiveEnded = DispatchSemaphore(value: 0)

    struct State: ~Copyable {
        var nextRequestID: UInt32 = 2  // 1 is Hello's
        var waiters: [UInt32: Waiter] = [:]
        var channels: [UInt32: OutputChannel] = [:]
        var failure: TrackError?
    }

    final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<ReceivedFrame?>(nil)
    }

    static func unreachable(_ path: String, _ reason: String) -> TrackError {
        TrackError(.daemonUnreachable,
                   "cannot reach trackd at \(path): \(reason). Is trackd running? Start it with `make serve` or `systemctl start trackd.socket`, or pass --socket PATH / set TRACKD_SOCKET.")
    }

    /// How long `init` waits for HelloReply (as the Python client's HANDSHAKE_TIMEOUT): a stopped or stuck trackd,
    /// a trackd.service failing behind trackd.socket, or another program on the socket accepts the connection (the
    /// kernel's backlog) and never answers. A worker answers at once; later requests are not bounded by it.
    static let handshakeTimeout: Duration = .seconds(30)

    /// Connects and performs the Hello handshake, waiting at most `handshakeTimeout` for the answer (then -11903).
    init(socketPath: String, clientName: String, handshakeTimeout: Duration = Connection.handshakeTimeout) throws(TrackError) {
        do {
            // Until HelloReply the receive limit is the default (PROTOCOL.md §5), then the agreed size.
            socket = MessageSocket(fd: try UnixSocket.connected(to: socketPath), maxMessageSize: Wire.defaultMaxMessageSize)
        } catch {
            throw Self.unreachable(socketPath, error.reason)
        }
        do {
            // A refusal (a connection limit) may be sent and the connection closed before Hello goes out: then
            // sending fails, but the Error is waiting to be read, so it is read either way.
            var sendError: SystemError?
            do {
                try socket.send(.hello(Hello(clientName: clientName, capabilities: .outputStalled)), requestID: 1)
            } catch {
                sendError = error
            }
            let frame: ReceivedFrame
            let deadline = ContinuousClock.now + handshakeTimeout
            let silent = Self.unreachable(socketPath, """
                connected, but no answer to Hello within \(handshakeTimeout) (a stopped or stuck trackd, a trackd.service \
                that fails to start behind trackd.socket, or another program on the socket: see `systemctl status \
                trackd` or trackd's log)
                """)
            do {
                frame = try socket.receive(pollMs: 100) { _ in ContinuousClock.now < deadline ? nil : silent }
            } catch {
                if let sendError { throw sendError }
                throw error
            }
            switch frame.message {
            case .helloReply(let reply):
                guard reply.version == Wire.version else {
                    throw TrackError(.protocolViolation, "trackd answered Hello with protocol version \(reply.version); this client speaks \(Wire.version)")
                }
                guard (Wire.minMessageSize...Wire.defaultMaxMessageSize).contains(reply.maxMessageSize) else {
                    throw TrackError(.protocolViolation, "trackd agreed on \(reply.maxMessageSize) bytes per message; this client offered \(Wire.defaultMaxMessageSize)")
                }
                socket.setMaxMessageSize(reply.maxMessageSize)
                hello = reply
            case .error(let e):
                throw e
            default:
                throw TrackError(.protocolViolation, "trackd answered Hello with \(frame.message.type)")
            }
        } catch let e as TrackError {
            throw e
        } catch MessageSocket.ReceiveError.broken(let e) {
            throw e
        } catch {
            throw Self.unreachable(socketPath, "the connection closed during the handshake (\(error))")
        }
        let thread = Thread { [self] in receiveLoop() }
        thread.name = "trackd-receive"
        thread.start()
    }

    /// Closing wakes the receive thread, which then fails everything still waiting.
    func close() { socket.shutdown() }

    var failure: TrackError? { state.withLock { $0.failure } }

    /// Sends a request and waits for its reply (with the descriptors it carried, which are the caller's). `channel`,
    /// when given, receives the request's later output events.
    func request(_ message: Message, fds: [Int32] = [], channel: OutputChannel? = nil) throws(TrackError) -> ReceivedFrame {
        let waiter = Waiter()
        let rid = try state.withLock { (s: inout State) throws(TrackError) -> UInt32 in
            if let failure = s.failure { throw failure }
            let rid = s.nextRequestID
            s.nextRequestID = s.nextRequestID &+ 1 == 0 ? 2 : s.nextRequestID &+ 1
            s.waiters[rid] = waiter
            if let channel { s.channels[rid] = channel }
            return rid
        }
        do {
            try socket.send(message, requestID: rid, fds: fds)
        } catch {
            state.withLock { s in
                s.waiters[rid] = nil
                s.channels[rid] = nil
            }
            // The peer has closed: the receive thread reads what it sent first (why it closed: an Error with
            // request id 0) and ends at once; its failure is the answer.
            if receiveEnded.wait(timeout: .now() + .seconds(5)) == .success { receiveEnded.signal() }
            throw failure ?? TrackError(.mediaServicesWereReset, "the connection to trackd was lost (\(error))")
        }
        waiter.done.wait()
        guard let reply = waiter.result.withLock({ $0.take() }) else {
            throw failure ?? TrackError(.mediaServicesWereReset, "the connection to trackd was lost")
        }
        if case .error(let e) = reply.message {
            _ = state.withLock { $0.channels.removeValue(forKey: rid) }
            throw e
        }
        return reply
    }

    /// Fire-and-forget messages (ReleaseSlots, CancelOutput). Errors mean the connection is gone, which the
    /// receive thread reports.
    func post(_ message: Message) {
        try? socket.send(message, requestID: 0)
    }

    func forget(channelOf requestID: UInt32) {
        _ = state.withLock { $0.channels.removeValue(forKey: requestID) }
    }

    private func receiveLoop() {
        var reason: TrackError?
        var broken: TrackError?
        while true {
            let frame: ReceivedFrame
            do throws(MessageSocket.ReceiveError) {
                frame = try socket.receive()
            } catch {
                if case .broken(let e) = error { broken = e }
                break
            }
            if case .error(let e) = frame.message, frame.requestID == 0 {
                reason = e  // the worker explains why it is about to close the connection
                continue
            }
            let requestID = frame.requestID
            let target = state.withLock { s -> (Waiter?, OutputChannel?) in
                if let w = s.waiters.removeValue(forKey: requestID) { return (w, nil) }
                return (nil, s.channels[requestID])
            }
            if let waiter = target.0 {
                var reply = Optional(frame)
                waiter.result.withLock { $0 = reply.take() }
                waiter.done.signal()
            } else if let channel = target.1 {
                let finished = if case .outputFinished = frame.message { true } else { false }
                channel.deliver(frame)
                if finished { forget(channelOf: requestID) }
            }  // else nobody waits for it: its descriptors close with it
        }
        let failure: TrackError
        if let reason, reason.knownCode == .daemonStopping || reason.knownCode == .mediaServicesWereReset {
            failure = reason  // "trackd is stopping", or why the supervisor ended the worker (its watchdog): as sent
        } else if let reason {
            failure = TrackError(.mediaServicesWereReset, "the trackd worker serving this connection closed it: \(reason.message)")
        } else if let broken, !broken.message.hasPrefix("recvmsg:"), !broken.message.hasPrefix("connection closed") {
            failure = TrackError(.mediaServicesWereReset, "the trackd worker serving this connection broke the protocol: \(broken.message)")
        } else {
            // End of file or a reset (the worker died with requests unread): it crashed or was killed.
            failure = TrackError(.mediaServicesWereReset,
                                 "the trackd worker serving this connection stopped unexpectedly (it crashed, or trackd's watchdog killed it because it made no progress; trackd's log says which)"
                                     + (broken.map { " [\($0.message)]" } ?? ""))
        }
        let (waiters, channels) = state.withLock { s -> ([Waiter], [OutputChannel]) in
            s.failure = failure
            defer {
                s.waiters = [:]
                s.channels = [:]
            }
            return (Array(s.waiters.values), Array(s.channels.values))
        }
        waiters.forEach { $0.done.signal() }
        channels.forEach { $0.fail(failure) }
        receiveEnded.signal()
    }
}

