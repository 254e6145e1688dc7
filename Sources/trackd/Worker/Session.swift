import CTrackSys
import Foundation
import GstBridge
import IndexCache
import MediaIndex
import TrackdProtocol
import Synchronization
import SystemCalls

/// Counters a worker reports in Status.
final class WorkerStats: Sendable {
    let samplesSent = Atomic<UInt64>(0)
    /// Bytes of sample data the worker copied between GStreamer's buffers and the shared pool.
    let bytesCopied = Atomic<UInt64>(0)
    /// Decoded video frames the decoders gave, and those that went through conversion (videoconvert/videoscale):
    /// frames decoded only as references or preroll are dropped before it.
    let framesDecoded = Atomic<UInt64>(0)
    let framesConverted = Atomic<UInt64>(0)
    /// Stored samples outputs could not deliver (OutputFinished.samplesLost, summed).
    let samplesLost = Atomic<UInt64>(0)
    /// ReadFrames served by the pipeline kept from the one before (Session+KeptPipeline.swift).
    let pipelinesReused = Atomic<UInt64>(0)
}

/// One client connection, served by this worker process from Hello to disconnect. The receive loop runs on the
/// process's main thread (blocking reads); each output pulls on its own thread (OutputStreamer); image requests
/// run on a thread of their own so a long decode never stalls slot releases.
///
/// This file is the connection: the handshake, the receive loop and the dispatch of requests. Session+Assets.swift
/// opens assets and makes images; Session+Outputs.swift makes and steers outputs (OutputStreamer).
final class Session: Sendable {
    static let maxAssets = 16
    static let maxOutputs = 16
    /// Pipelines kept between ReadFrames, one per asset (Session+KeptPipeline.swift).
    static let maxKeptPipelines = 4

    let socket: MessageSocket
    let context: WorkerContext
    let stats = WorkerStats()
    let assets = AssetTable()
    let outputs = OutputTable()
    /// Each asset's last completed ReadFrames' pipeline, for its next one (Session+KeptPipeline.swift).
    let kept = KeptPipelines()
    /// SIGTERM was seen: new work is refused and the session ends once its reads finish (Session+Stop.swift).
    let stopping = Stopping()
    /// The capability bits HelloReply put in force (PROTOCOL.md §5.3).
    let capabilities = Atomic<UInt64>(0)

    init(socket: MessageSocket, context: WorkerContext) {
        self.socket = socket
        self.context = context
    }

    func run() {
        context.slot.arm()
        guard handshake() else {
            socket.shutdown()
            return
        }
        var lastFrameMs = trackd_monotonic_ms()
        let idleMs = context.idleTimeout * 1000
        let slot = context.slot
        while true {
            let frame: ReceivedFrame
            do throws(MessageSocket.ReceiveError) {
                // Idle timeout: no complete message for idleTimeout seconds while the client waits on nothing
                // (measured from the later of the last message and the last thing produced for the client).
                frame = try socket.receive(check: { [self] pending in
                    stopIfRequested()
                    guard idleMs > 0, !slot.isBusy, !stopping.isStopping else { return nil }
                    let since = max(lastFrameMs, slot.lastProgressMs ?? 0)
                    let now = trackd_monotonic_ms()
                    guard now > since, now - since > idleMs else { return nil }
                    let partial = pending > 0 ? " (\(pending) bytes of an incomplete message are pending)" : ""
                    Log.warning("limit: idle timeout of \(context.idleTimeout) s for client uid \(context.clientUID) pid \(context.clientPID)\(partial); closing")
                    Event.limit(kind: "idle-timeout").emit()
                    return TrackError(.limitExceeded,
                                      "no complete message from the client for \(context.idleTimeout) s while nothing was in progress\(partial) (idle timeout, --idle-timeout \(context.idleTimeout))")
                }, didRead: { slot.didRead() })
                lastFrameMs = trackd_monotonic_ms()
            } catch {
                if case .broken(let error) = error {
                    Log.warning("closing the connection of client pid \(context.clientPID): \(error.message)")
                    try? socket.send(.error(error), requestID: 0)
                }
                break
            }
            let requestID = frame.requestID
            do {
                try handle(frame)
            } catch {
                Log.warning("closing the connection of client pid \(context.clientPID): \(error.message)")
                try? socket.send(.error(error), requestID: requestID)
                break
            }
        }
        outputs.streamers().forEach { $0.cancel() }
        kept.end()
        socket.shutdown()
    }

    private func handshake() -> Bool {
        let frame: ReceivedFrame
        let limitSeconds = context.handshakeTimeout
        let deadline = trackd_monotonic_ms() + limitSeconds * 1000
        let slot = context.slot
        do throws(MessageSocket.ReceiveError) {
            frame = try socket.receive(check: { [context] pending in
                if StopRequest.isRequested { return TrackError(.daemonStopping, Self.stoppingMessage) }
                guard trackd_monotonic_ms() >= deadline else { return nil }
                let got = pending > 0 ? "\(pending) bytes of it arrived" : "nothing arrived"
                Log.warning("limit: handshake timeout of \(limitSeconds) s for client uid \(context.clientUID) pid \(context.clientPID) (\(got)); closing")
                Event.limit(kind: "handshake-timeout").emit()
                return TrackError(.limitExceeded,
                                  "no complete Hello within \(limitSeconds) s (handshake timeout, --handshake-timeout \(limitSeconds)); \(got)")
            }, didRead: { slot.didRead() })
        } catch {
            // A broken first frame gets the same best-effort Error as a broken later one.
            if case .broken(let error) = error {
                Log.write(error.knownCode == .daemonStopping ? .notice : .warning,
                          "closing the connection of client pid \(context.clientPID): \(error.message)")
                try? socket.send(.error(error), requestID: 0)
            }
            return false
        }
        guard case .hello(let hello) = frame.message else {
            try? socket.send(.error(TrackError(.protocolViolation, "the first message must be Hello, not \(frame.message.type)")),
                             requestID: frame.requestID)
            return false
        }
        if let refusal = Self.refusal(of: hello) {
            Log.warning("closing the connection of client pid \(context.clientPID): \(refusal.message)")
            try? socket.send(.error(refusal), requestID: frame.requestID)
            return false
        }
        let agreed = min(hello.maxMessageSize, Wire.defaultMaxMessageSize)
        socket.setMaxMessageSize(agreed)
        let reply = HelloReply(version: Wire.version, maxMessageSize: agreed, maxFds: min(hello.maxFds, Wire.maxFdsPerMessage),
                               workerPID: UInt32(getpid()), serverVersion: VersionLine.text,
                               capabilities: .agreed(offered: hello.capabilities))
        capabilities.store(reply.capabilities.rawValue, ordering: .relaxed)
        do {
            try socket.send(.helloReply(reply), requestID: frame.requestID)
        } catch {
            return false
        }
        return true
    }

    /// Why `hello` is refused (PROTOCOL.md §5: answered with this Error, the Hello's request id, then the close), or
    /// nil. The version comes first: a Hello of another version is read only as far as its version range.
    static func refusal(of hello: Hello) -> TrackError? {
        guard hello.offersWireVersion else { return hello.versionRefusal }
        guard hello.maxMessageSize >= Wire.minMessageSize else {
            return TrackError(.protocolViolation,
                              "Hello offers a message size of \(hello.maxMessageSize) bytes; at least \(Wire.minMessageSize) is required")
        }
        guard hello.maxFds >= 1 else {
            return TrackError(.protocolViolation, "Hello's maxFds is 0; at least 1 is required (PoolAdded and Image carry a descriptor)")
        }
        return nil
    }

    /// Handles one request. A thrown error is a protocol violation: the caller reports it and closes the
    /// connection. Errors of the request itself are answered with an Error message here.
    private func handle(_ frame: consuming ReceivedFrame) throws(TrackError) {
        let rid = frame.requestID
        let message = frame.message
        if refusedWhileStopping(frame) { return }
        @Sendable func reply(_ result: () throws(TrackError) -> Message) {
            let message: Message
            do {
                message = try result()
            } catch {
                message = .error(error)
            }
            try? socket.send(message, requestID: rid)
        }
        switch message {
        case .openAsset(let name):
            guard let fd = frame.fds.takeFirst() else { preconditionFailure("MessageSocket delivers OpenAsset with its descriptor") }
            let media = DescriptorHandoff(fd)
            background("open-asset") { [self] in
                reply { () throws(TrackError) -> Message in try openAsset(media, name: name) }
            }
        case .closeAsset(let assetID):
            reply { () throws(TrackError) -> Message in
                guard assets.remove(assetID) else { throw TrackError(.invalidArgument, "no open asset with id \(assetID)") }
                outputs.streamers(asset: assetID).forEach { $0.cancel() }
                kept.drop(asset: assetID)
                return .ack
            }
        case .createOutput, .readFrames, .releaseSlots, .cancelOutput, .resetOutput, .finishOutput:
            try handleOutputRequest(frame, reply: reply)
        case .generateImage(let request):
            let asset = assets.asset(request.assetID)
            background("image") { [self] in
                do throws(TrackError) {
                    guard let asset else { throw TrackError(.invalidArgument, "no open asset with id \(request.assetID)") }
                    let reply = try generateImage(request, asset: asset)
                    try? socket.send(.image(reply.image), requestID: rid, fds: [reply.memfd.rawValue])
                } catch {
                    try? socket.send(.error(error), requestID: rid)
                }
            }
        case .countFrames(let assetID, let trackID):
            background("count-frames") { [self] in  // the first use of a track builds its frame index
                reply { () throws(TrackError) -> Message in try countFrames(assetID: assetID, trackID: trackID) }
            }
        case .getStatus:
            reply { () throws(TrackError) -> Message in status() }
        case .hello:
            throw TrackError(.protocolViolation, "Hello was already exchanged")
        case .helloReply, .assetOpened, .ack, .outputCreated, .poolAdded, .poolRemoved, .sample, .outputFinished,
             .image, .status, .rangeEnded, .framesResolved, .frameCount, .outputStalled, .error:
            throw TrackError(.protocolViolation, "\(message.type) is sent by the worker, not the client")
        }
    }

    /// Requests that may block for seconds (discovery, preroll, decoding an image) run on a thread of their own,
    /// so the receive loop keeps taking slot releases and cancellations meanwhile. Each replies when done;
    /// replies to different requests may therefore come in any order.
    func background(_ name: String, _ work: @escaping @Sendable () -> Void) {
        let slot = context.slot
        slot.beginBusy()  // the client waits for the reply: the watchdog may judge this request
        stopping.requestBegan()
        let thread = Thread { [self] in
            work()
            stopping.requestEnded()
            slot.endBusy()
        }
        thread.name = name
        thread.start()
    }

    private func status() -> Message {
        let (supervisorPID, startedMs, accepted, active, crashes) = context.statistics.map(SharedStatistics.read) ?? (0, 0, 0, 0, 0)
        let now = Supervisor.nowMs()
        let interventions = context.statistics.map(SharedStatistics.interventions) ?? SharedStatistics.Interventions()
        // Daemon-wide: what ended workers sent, plus every live worker's slot (this one's included).
        var daemon = context.statistics.map(SharedStatistics.retired) ?? SharedStatistics.Retired()
        if let table = context.slot.table {
            daemon.samples &+= table.total(.samplesSent)
            daemon.copied &+= table.total(.bytesCopied)
            daemon.shared &+= table.total(.bytesShared)
        } else {  // a worker started without a table (by hand): just this session
            daemon = .init(samples: stats.samplesSent.load(ordering: .relaxed), copied: stats.bytesCopied.load(ordering: .relaxed))
        }
        return .status(StatusReport(
            workerPID: UInt32(getpid()), supervisorPID: UInt32(truncatingIfNeeded: supervisorPID),
            supervisorUptimeMs: startedMs > 0 && now > startedMs ? now - startedMs : 0,
            connectionsAccepted: accepted, activeConnections: UInt32(truncatingIfNeeded: active), workerCrashes: crashes,
            openAssets: UInt32(assets.count), activeOutputs: UInt32(outputs.count),
            samplesSent: stats.samplesSent.load(ordering: .relaxed), bytesCopied: stats.bytesCopied.load(ordering: .relaxed),
            daemonSamplesSent: daemon.samples, daemonBytesCopied: daemon.copied, daemonBytesShared: daemon.shared,
            gstreamerVersion: Gst.versionString, framesDecoded: stats.framesDecoded.load(ordering: .relaxed),
            framesConverted: stats.framesConverted.load(ordering: .relaxed), watchdogKills: interventions.watchdogKills,
            connectionsRefused: interventions.refused, connectionsRateLimited: interventions.rateLimited,
            samplesLost: stats.samplesLost.load(ordering: .relaxed)))
    }
}
