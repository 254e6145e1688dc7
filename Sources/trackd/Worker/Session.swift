import CTrackSys
import Foundation
import GstBridge
import IndexCache
import MediaIndex
import Protocol
import Synchronization

/// One client connection, served by this worker process from Hello to disconnect. The receive loop runs on the
/// process's main thread (blocking reads); each output pulls on its own thread (OutputStreamer); image requests
/// run on a thread of their own so a long decode never stalls slot releases.
final class Session: Sendable {
    static let maxAssets = 16
    static let maxOutputs = 16

    struct Asset {
        let source: MediaSource
        let tracks: [TrackDescription]
        let indexes = FrameIndexes()
    }

    /// Frame indexes of one asset's tracks, kept while it is open: on the first ReadFrames of a track, from the
    /// supervisor's cache (shared by all workers, IndexCacheClient), else built and then given to the cache.
    final class FrameIndexes: Sendable {
        private let built = Mutex<[UInt32: FrameIndex]>([:])
        private let building = Mutex(())  // one build at a time: a second request for the track waits for the first

        func index(source: MediaSource, trackID: UInt32) throws(TrackError) -> FrameIndex {
            if let index = built.withLock({ $0[trackID] }) { return index }
            return try building.withLock { (_: inout ()) throws(TrackError) -> FrameIndex in
                if let index = built.withLock({ $0[trackID] }) { return index }
                let before = source.status()
                let key = before.map { IndexCacheClient.key($0, trackID: trackID) }
                if let key, let index = IndexCacheClient.get(key) {
                    Log.info("frame index for track \(trackID): from the cache (\(index.frames.count) frames)")
                    built.withLock { $0[trackID] = index }
                    return index
                }
                let index: FrameIndex
                if let fromTables = FrameIndex.fromContainer(source: source, trackID: trackID) {
                    index = fromTables
                    Log.info("frame index for track \(trackID): made from the container's sample tables (\(index.frames.count) frames)")
                } else {
                    index = try FrameIndex.build(source: source, trackID: trackID)
                    Log.info("frame index for track \(trackID): made by a parse-only pass (\(index.frames.count) frames)")
                }
                built.withLock { $0[trackID] = index }
                // Only when the file did not change while it was read (else the key would not match the frames).
                if let key, source.status() == before { IndexCacheClient.put(key, index) }
                return index
            }
        }
    }

    struct State: ~Copyable {
        var assets: [UInt32: Asset] = [:]
        var outputs: [UInt32: (assetID: UInt32, streamer: OutputStreamer)] = [:]
        var nextAssetID: UInt32 = 1
        var nextOutputID: UInt32 = 1
    }

    let socket: MessageSocket
    let context: WorkerContext
    let stats = WorkerStats()
    private let state = Mutex(State())

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
                frame = try socket.receive(check: { [context] pending in
                    guard idleMs > 0, !slot.isBusy else { return nil }
                    let since = max(lastFrameMs, slot.lastProgressMs ?? 0)
                    let now = trackd_monotonic_ms()
                    guard now > since, now - since > idleMs else { return nil }
                    let partial = pending > 0 ? " (\(pending) bytes of an incomplete message are pending)" : ""
                    Log.warning("limit: idle timeout of \(context.idleTimeout) s for client uid \(context.clientUID) pid \(context.clientPID)\(partial); closing")
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
            do {
                try handle(frame)
            } catch {
                Log.warning("closing the connection of client pid \(context.clientPID): \(error.message)")
                try? socket.send(.error(error), requestID: frame.requestID)
                break
            }
        }
        let streamers = state.withLock { $0.outputs.values.map(\.streamer) }
        streamers.forEach { $0.cancel() }
        socket.shutdown()
    }

    private func handshake() -> Bool {
        let frame: ReceivedFrame
        let limitSeconds = context.handshakeTimeout
        let deadline = trackd_monotonic_ms() + limitSeconds * 1000
        let slot = context.slot
        do throws(MessageSocket.ReceiveError) {
            frame = try socket.receive(check: { [context] pending in
                guard trackd_monotonic_ms() >= deadline else { return nil }
                let got = pending > 0 ? "\(pending) bytes of it arrived" : "nothing arrived"
                Log.warning("limit: handshake timeout of \(limitSeconds) s for client uid \(context.clientUID) pid \(context.clientPID) (\(got)); closing")
                return TrackError(.limitExceeded,
                                  "no complete Hello within \(limitSeconds) s (handshake timeout, --handshake-timeout \(limitSeconds)); \(got)")
            }, didRead: { slot.didRead() })
        } catch {
            // A broken first frame gets the same best-effort Error as a broken later one.
            if case .broken(let error) = error {
                Log.warning("closing the connection of client pid \(context.clientPID): \(error.message)")
                try? socket.send(.error(error), requestID: 0)
            }
            return false
        }
        guard case .hello(let hello) = frame.message else {
            frame.fds.forEach { close($0) }
            try? socket.send(.error(TrackError(.protocolViolation, "the first message must be Hello, not \(frame.message.type)")),
                             requestID: frame.requestID)
            return false
        }
        guard hello.minVersion <= Wire.version && Wire.version <= hello.maxVersion else {
            try? socket.send(.error(TrackError(.protocolViolation,
                                               "protocol versions \(hello.minVersion)–\(hello.maxVersion) are not supported; this trackd speaks \(Wire.version)")),
                             requestID: frame.requestID)
            return false
        }
        guard hello.maxMessageSize >= Wire.minMessageSize else {
            try? socket.send(.error(TrackError(.protocolViolation,
                                               "Hello offers a message size of \(hello.maxMessageSize) bytes; at least \(Wire.minMessageSize) is required")),
                             requestID: frame.requestID)
            return false
        }
        let agreed = min(hello.maxMessageSize, Wire.defaultMaxMessageSize)
        socket.setMaxMessageSize(agreed)
        do {
            try socket.send(.helloReply(HelloReply(version: Wire.version, maxMessageSize: agreed,
                                                   maxFds: min(hello.maxFds, Wire.maxFdsPerMessage),
                                                   workerPID: UInt32(getpid()), serverVersion: "trackd 0.1 (\(Gst.versionString))")),
                            requestID: frame.requestID)
        } catch {
            return false
        }
        return true
    }

    /// Handles one request. A thrown error is a protocol violation: the caller reports it and closes the
    /// connection. Errors of the request itself are answered with an Error message here.
    private func handle(_ frame: ReceivedFrame) throws(TrackError) {
        let rid = frame.requestID
        @Sendable func reply(_ result: () throws(TrackError) -> Message) {
            let message: Message
            do {
                message = try result()
            } catch {
                message = .error(error)
            }
            try? socket.send(message, requestID: rid)
        }
        switch frame.message {
        case .openAsset(let name):
            let fd = frame.fds[0]
            background("open-asset") { [self] in
                reply { () throws(TrackError) -> Message in try openAsset(fd: fd, name: name) }
            }
        case .closeAsset(let assetID):
            reply { () throws(TrackError) -> Message in
                let streamers = try state.withLock { (s: inout State) throws(TrackError) -> [OutputStreamer] in
                    guard s.assets.removeValue(forKey: assetID) != nil else {
                        throw TrackError(.invalidArgument, "no open asset with id \(assetID)")
                    }
                    return s.outputs.values.filter { $0.assetID == assetID }.map(\.streamer)
                }
                streamers.forEach { $0.cancel() }
                return .ack
            }
        case .createOutput(let request):
            // The reply must precede the output's first PoolAdded/Sample, so the streamer starts after it.
            background("create-output") { [self] in
                var streamer: OutputStreamer?
                reply { () throws(TrackError) -> Message in
                    let (created, s) = try createOutput(request, requestID: rid)
                    streamer = s
                    return created
                }
                streamer?.start()
            }
        case .readFrames(let request):
            background("read-frames") { [self] in
                var streamer: OutputStreamer?
                reply { () throws(TrackError) -> Message in
                    let (created, s) = try readFrames(request, requestID: rid)
                    streamer = s
                    return created
                }
                streamer?.start()
            }
        case .releaseSlots(let outputID, let slots):
            guard let streamer = state.withLock({ $0.outputs[outputID]?.streamer }) else {
                throw TrackError(.protocolViolation, "ReleaseSlots names output \(outputID), which holds no slots")
            }
            do {
                try streamer.release(slots)
            } catch {
                guard case .notHeld(let ref) = error else { return }
                throw TrackError(.protocolViolation, "ReleaseSlots: slot \(ref.slot) of pool \(ref.poolID) of output \(outputID) is not held by the client")
            }
        case .cancelOutput(let outputID):
            state.withLock { $0.outputs[outputID]?.streamer }?.cancel()
        case .resetOutput(let outputID, let ranges):
            guard MediaTimeRange.areAscendingAndDisjoint(ranges) else {
                throw TrackError(.protocolViolation,
                                 "ResetOutput: the ranges of output \(outputID) are not ascending, non-overlapping ranges with numeric starts ≥ 0 and durations ≥ 0 or +infinity")
            }
            guard let streamer = state.withLock({ $0.outputs[outputID]?.streamer }) else { return }  // finished: ignored
            do {
                try streamer.reset(ranges)
            } catch {
                switch error {
                case .notRandomAccess:
                    throw TrackError(.protocolViolation, "ResetOutput: output \(outputID) was not created with supportsRandomAccess")
                case .notAwaiting:
                    throw TrackError(.protocolViolation, "ResetOutput: output \(outputID) has not sent RangeEnded since it was last reset, or was finished")
                }
            }
        case .finishOutput(let outputID):
            state.withLock { $0.outputs[outputID]?.streamer }?.markFinal()
        case .generateImage(let request):
            let asset = state.withLock { $0.assets[request.assetID] }
            background("image") { [self] in
                do throws(TrackError) {
                    guard let asset else { throw TrackError(.invalidArgument, "no open asset with id \(request.assetID)") }
                    let (image, fd) = try generateImage(request, asset: asset)
                    defer { close(fd) }
                    try? socket.send(.image(image), requestID: rid, fds: [fd])
                } catch {
                    try? socket.send(.error(error), requestID: rid)
                }
            }
        case .getStatus:
            reply { () throws(TrackError) -> Message in status() }
        case .hello:
            throw TrackError(.protocolViolation, "Hello was already exchanged")
        case .helloReply, .assetOpened, .ack, .outputCreated, .poolAdded, .poolRemoved, .sample, .outputFinished,
             .image, .status, .rangeEnded, .framesResolved, .error:
            throw TrackError(.protocolViolation, "\(frame.message.type) is sent by the worker, not the client")
        }
    }

    /// Requests that may block for seconds (discovery, preroll, decoding an image) run on a thread of their own,
    /// so the receive loop keeps taking slot releases and cancellations meanwhile. Each replies when done;
    /// replies to different requests may therefore come in any order.
    private func background(_ name: String, _ work: @escaping @Sendable () -> Void) {
        let slot = context.slot
        slot.beginBusy()  // the client waits for the reply: the watchdog may judge this request
        let thread = Thread {
            work()
            slot.endBusy()
        }
        thread.name = name
        thread.start()
    }

    private func openAsset(fd: Int32, name: String) throws(TrackError) -> Message {
        let source = try MediaSource(fd: fd)  // owns fd from here, even when it throws
        let (duration, tracks) = try describe(source)
        let assetID = try state.withLock { (s: inout State) throws(TrackError) -> UInt32 in
            guard s.assets.count < Self.maxAssets else {
                throw TrackError(.limitExceeded, "a session may hold at most \(Self.maxAssets) open assets")
            }
            defer { s.nextAssetID += 1 }
            s.assets[s.nextAssetID] = Asset(source: source, tracks: tracks)
            return s.nextAssetID
        }
        Log.info("opened asset \(assetID) \"\(name)\": \(tracks.count) tracks")
        return .assetOpened(AssetOpened(assetID: assetID, duration: duration, tracks: tracks))
    }

    /// What discovery finds in `source` — from the daemon's cache when this uid opened the same unchanged file
    /// before (same device, inode, size and mtime, as for frame indexes), which saves the discovery pipeline
    /// (10–20 ms); else discovered, and given to the cache.
    private func describe(_ source: MediaSource) throws(TrackError) -> (MediaTime, [TrackDescription]) {
        let before = source.status()
        let key = before.map { IndexCacheClient.key($0, trackID: IndexCacheWire.descriptionTrackID) }
        if let key, let cached = IndexCacheClient.getDescription(key) {
            Log.info("asset description from the cache: \(cached.tracks.count) tracks")
            return (cached.duration, cached.tracks)
        }
        let found = try source.discover()
        // Only when the file did not change while it was read (else the key would not match what was found), and
        // only audio and video: discovery does not wait for a subtitle track's data, so its language tag may not
        // have arrived yet — a description without it must not be the answer for every later open.
        if let key, source.status() == before, found.tracks.allSatisfy({ $0.mediaType == .video || $0.mediaType == .audio }) {
            IndexCacheClient.putDescription(key, duration: found.duration, tracks: found.tracks)
        }
        return found
    }

    /// The open asset and one of its tracks, or the error that names what does not exist.
    private func assetTrack(_ assetID: UInt32, _ trackID: UInt32) throws(TrackError) -> (Asset, TrackDescription) {
        guard let asset = state.withLock({ $0.assets[assetID] }) else {
            throw TrackError(.invalidArgument, "no open asset with id \(assetID)")
        }
        guard let track = asset.tracks.first(where: { $0.id == trackID }) else {
            let ids = asset.tracks.map { String($0.id) }.joined(separator: ", ")
            throw TrackError(.invalidArgument, "the asset has no track with id \(trackID) (its tracks: \(ids))")
        }
        return (asset, track)
    }

    /// Registers a new output over `pipeline` and answers OutputCreated; the caller starts the streamer after the
    /// reply is sent.
    private func addOutput(assetID: UInt32, requestID: UInt32, pipeline: TrackPipeline, mediaType: MediaType,
                           passthrough: Bool, supportsRandomAccess: Bool, frames: FramePlan? = nil)
        throws(TrackError) -> (Message, OutputStreamer) {
        let format = pipeline.outputFormat
        let outputID = try state.withLock { (s: inout State) throws(TrackError) -> UInt32 in
            guard s.outputs.count < Self.maxOutputs else {
                throw TrackError(.limitExceeded, "a session may run at most \(Self.maxOutputs) outputs at once")
            }
            defer { s.nextOutputID += 1 }
            return s.nextOutputID
        }
        let streamer = OutputStreamer(
            id: outputID, requestID: requestID, pipeline: pipeline, passthrough: passthrough,
            supportsRandomAccess: supportsRandomAccess, frames: frames, socket: socket, stats: stats, slot: context.slot,
            onDrained: { [weak self] id in self?.state.withLock { _ = $0.outputs.removeValue(forKey: id) } })
        state.withLock { $0.outputs[outputID] = (assetID, streamer) }
        return (.outputCreated(OutputCreated(outputID: outputID, mediaType: mediaType, format: format.format,
                                             width: format.width, height: format.height, codecConfig: format.codecConfig)),
                streamer)
    }

    private func createOutput(_ request: CreateOutput, requestID: UInt32) throws(TrackError) -> (Message, OutputStreamer) {
        let (asset, track) = try assetTrack(request.assetID, request.trackID)
        let range = request.timeRange
        guard range.isValidReadingRange else {
            throw TrackError(.invalidArgument, "time range \(range.start) + \(range.duration) is not a valid range")
        }
        let mode: OutputMode
        if let settings = request.settings {
            switch track.mediaType {
            case .video:
                mode = .decode(try OutputSettings.validateVideo(settings))
            case .audio:
                let request = try OutputSettings.validateAudio(settings)
                let channels = request.channels ?? Int(track.channels)
                if request.isNonInterleaved && channels > AudioOutputRequest.maxNonInterleavedChannels {
                    throw TrackError(.unsupportedOutputSettings,
                                     "AVLinearPCMIsNonInterleaved output has one plane per channel; trackd supports at most \(AudioOutputRequest.maxNonInterleavedChannels), not \(channels)")
                }
                mode = .audio(request)
            default:
                throw TrackError(.operationNotSupportedForAsset,
                                 "decoded output of \(track.mediaType) tracks is not supported; read track \(track.id) with outputSettings nil (passthrough)")
            }
        } else {
            mode = .passthrough
        }
        let limits = context.sandbox.decode
        if case .decode(let video) = mode { try checkDecodeLimits(limits, track: track, video: video) }
        let pipeline: TrackPipeline
        do {
            var threads: Int?
            if case .decode = mode { threads = decodeThreads() }
            pipeline = try TrackPipeline(source: asset.source, trackID: track.id, mode: mode, timeRange: range, limits: limits,
                                         threads: threads)
        } catch where error.knownCode == .invalidArgument {
            // Discovery found the track; the demuxer did not expose it this time: the file is damaged (or changed).
            throw TrackError(.fileFailedToParse,
                             "track \(track.id) was found when the asset was opened but not when reading it again; the file is damaged or was changed (\(error.message))")
        }
        return try addOutput(assetID: request.assetID, requestID: requestID, pipeline: pipeline, mediaType: track.mediaType,
                             passthrough: request.settings == nil, supportsRandomAccess: request.supportsRandomAccess)
    }

    /// Threads for a decoded video output's decoder and converter, from how many other workers are busy now.
    private func decodeThreads() -> Int? {
        let others = context.slot.othersBusy
        let threads = Self.decodeThreads(cpus: context.cpus, othersBusy: others)
        if let threads { Log.info("decoder threads: \(threads) (\(others) other workers busy, \(context.cpus) CPUs)") }
        return threads
    }

    /// nil (the decoder's automatic count: one per CPU, and frame threading) when no other worker is busy; else the
    /// CPUs shared out, at least 1. Frame threading lets one decode use idle CPUs, but when every CPU has a decode
    /// already it only adds threads and hand-offs: 8 decoders at once on 2 CPUs took 7–13% less time single-threaded
    /// (gst-launch, 1080p H.264). Chosen when the output is created; a decode does not change it later.
    static func decodeThreads(cpus: Int, othersBusy: Int) -> Int? {
        othersBusy > 0 ? max(1, cpus / (othersBusy + 1)) : nil
    }

    /// Before anything is decoded: the container's declared size, then the requested output size, against
    /// --max-frame-pixels.
    private func checkDecodeLimits(_ limits: DecodeLimits, track: TrackDescription, video: VideoOutputRequest) throws(TrackError) {
        try limits.checkFrame(width: UInt64(track.width), height: UInt64(track.height), "track \(track.id)")
        if let size = Self.outputSize(video, source: (UInt64(track.width), UInt64(track.height))) {
            try limits.checkFrame(width: size.width, height: size.height, "the requested output size")
        }
    }

    /// ReadFrames: resolves each request against the track's frame index (built on first use), plans the ranges
    /// that decode every GOP once, and starts the output at the first range.
    private func readFrames(_ request: ReadFrames, requestID: UInt32) throws(TrackError) -> (Message, OutputStreamer) {
        let (asset, track) = try assetTrack(request.assetID, request.trackID)
        guard track.mediaType == .video else {
            throw TrackError(.operationNotSupportedForAsset,
                             "ReadFrames reads video frames; track \(track.id) is \(track.mediaType) (read it with CreateOutput and a time range)")
        }
        let video = try OutputSettings.validateVideo(request.settings)
        let limits = context.sandbox.decode
        try checkDecodeLimits(limits, track: track, video: video)
        let index = try asset.indexes.index(source: asset.source, trackID: track.id)
        var order: [Int] = []
        for (i, frame) in request.frames.enumerated() {
            do {
                order.append(try index.resolve(frame))
            } catch {
                throw TrackError(rawCode: error.code, message: "ReadFrames request \(i): \(error.message)")
            }
        }
        let plan = FramePlan(index: index, order: order)
        // A first range that starts near the beginning needs no seek: the pipeline prerolls from the start anyway, and
        // the samples before the range are dropped before the decoder.
        let first = plan.ranges[0]
        let start = first.firstPosition <= FrameIndex.maxSkippedSamples && first.neededSamples != nil ? .everything : first.range
        let pipeline = try TrackPipeline(source: asset.source, trackID: track.id, mode: .decode(video), timeRange: start,
                                         neededSamples: first.neededSamples, lastNeededSample: first.lastNeededSample,
                                         limits: limits, threads: decodeThreads())
        Log.info("ReadFrames on track \(track.id): \(order.count) frames, \(plan.ranges.count) decode ranges")
        return try addOutput(assetID: request.assetID, requestID: requestID, pipeline: pipeline, mediaType: .video,
                             passthrough: false, supportsRandomAccess: false, frames: plan)
    }

    /// The frame size a decoded output with Width and/or Height delivers (one missing side follows the source's
    /// aspect ratio, as videoscale's); nil when neither is requested.
    static func outputSize(_ request: VideoOutputRequest, source: (width: UInt64, height: UInt64))
        -> (width: UInt64, height: UInt64)? {
        let w = request.width.map { UInt64(max(0, $0)) }, h = request.height.map { UInt64(max(0, $0)) }
        switch (w, h) {
        case let (w?, h?): return (w, h)
        case let (w?, nil): return (w, source.width > 0 ? w.multipliedFullWidth(by: source.height).low / source.width : 0)
        case let (nil, h?): return (source.height > 0 ? h.multipliedFullWidth(by: source.width).low / source.height : 0, h)
        case (nil, nil): return nil
        }
    }

    /// Decodes the frame shown at the requested time, encodes it as PNG (GStreamer's pngenc) and puts the bytes
    /// in a sealed memfd. Returns the reply and the fd (the caller sends it, then closes it).
    private func generateImage(_ request: GenerateImage, asset: Asset) throws(TrackError) -> (ImageReady, Int32) {
        guard request.imageFormat == "png " else {
            throw TrackError(.unsupportedOutputSettings, "image format \(request.imageFormat) is not supported; use 'png '")
        }
        guard asset.tracks.contains(where: { $0.id == request.trackID && $0.mediaType == .video }) else {
            throw TrackError(.invalidArgument, "the asset has no video track with id \(request.trackID)")
        }
        guard request.time.isNumeric, request.time.seconds >= 0 else {
            throw TrackError(.invalidArgument, "image time \(request.time) is not a valid time")
        }
        if let track = asset.tracks.first(where: { $0.id == request.trackID }) {
            try context.sandbox.decode.checkFrame(width: UInt64(track.width), height: UInt64(track.height), "track \(track.id)")
        }
        let image = try generatePNG(source: asset.source, trackID: request.trackID, at: request.time,
                                    limits: context.sandbox.decode)
        let mapping: SharedMapping
        let fd: Int32
        do {
            (mapping, fd) = try SharedMapping.create(name: "trackd-image", size: max(image.png.count, 1))
        } catch {
            throw TrackError(.limitExceeded, "cannot create shared memory for the image: \(error)")
        }
        image.png.withUnsafeBytes { mapping.base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        stats.bytesCopied.add(UInt64(image.png.count), ordering: .relaxed)
        context.slot.countCopied(UInt64(image.png.count))
        return (ImageReady(actualTime: image.actualTime, width: image.width, height: image.height,
                           length: UInt64(image.png.count)), fd)
    }

    private func status() -> Message {
        let (assets, outputs) = state.withLock { ($0.assets.count, $0.outputs.count) }
        let (supervisorPID, startedMs, accepted, active, crashes) = context.statistics.map(SharedStatistics.read) ?? (0, 0, 0, 0, 0)
        let now = Supervisor.nowMs()
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
            openAssets: UInt32(assets), activeOutputs: UInt32(outputs),
            samplesSent: stats.samplesSent.load(ordering: .relaxed), bytesCopied: stats.bytesCopied.load(ordering: .relaxed),
            daemonSamplesSent: daemon.samples, daemonBytesCopied: daemon.copied, daemonBytesShared: daemon.shared,
            gstreamerVersion: Gst.versionString))
    }
}
