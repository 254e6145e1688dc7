// Worker → client replies (docs/PROTOCOL.md §9; the output events are in OutputEvents.swift): each type with its
// wire layout beside it.

public struct HelloReply: Sendable, Equatable {
    public var version: UInt16
    public var maxMessageSize: UInt32
    public var maxFds: UInt16
    public var workerPID: UInt32
    public var serverVersion: String
    /// The capabilities in force (PROTOCOL.md §5.3): of the client's, those the worker will use, and the requests
    /// the worker accepts.
    public var capabilities: Capabilities

    public init(version: UInt16, maxMessageSize: UInt32, maxFds: UInt16, workerPID: UInt32, serverVersion: String,
                capabilities: Capabilities = []) {
        self.version = version
        self.maxMessageSize = maxMessageSize
        self.maxFds = maxFds
        self.workerPID = workerPID
        self.serverVersion = serverVersion
        self.capabilities = capabilities
    }
}

extension HelloReply: WireMessage {
    static let messageType = MessageType.helloReply
    var asMessage: Message { .helloReply(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(Wire.magic)
        w.u16(version)
        w.u32(maxMessageSize)
        w.u16(maxFds)
        w.u32(workerPID)
        w.string(serverVersion)
        w.u64(capabilities.rawValue)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> HelloReply {
        try r.magic("helloReply.magic", of: "helloReply")
        return HelloReply(version: try r.u16("helloReply.version"), maxMessageSize: try r.u32("helloReply.maxMessageSize"),
                          maxFds: try r.u16("helloReply.maxFds"), workerPID: try r.u32("helloReply.workerPID"),
                          serverVersion: try r.string("helloReply.serverVersion"),
                          capabilities: Capabilities(rawValue: try r.u64("helloReply.capabilities")))
    }
}

public struct AssetOpened: Sendable, Equatable {
    public var assetID: UInt32
    public var duration: MediaTime
    public var tracks: [TrackDescription]
    /// The asset's metadata (AVAsset.metadata), PROTOCOL.md §7.5.
    public var metadata: [MetadataItem]

    public init(assetID: UInt32, duration: MediaTime, tracks: [TrackDescription], metadata: [MetadataItem] = []) {
        self.assetID = assetID
        self.duration = duration
        self.tracks = tracks
        self.metadata = metadata
    }
}

extension AssetOpened: WireMessage {
    static let messageType = MessageType.assetOpened
    var asMessage: Message { .assetOpened(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(assetID)
        w.time(duration)
        w.list(tracks, max: Wire.maxTracks) { w, track in w.record(track.encode(into:)) }
        w.list(metadata, max: Wire.maxMetadataItems) { w, item in w.record(item.encode(into:)) }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> AssetOpened {
        AssetOpened(assetID: try r.u32("assetOpened.assetID"), duration: try r.time("assetOpened.duration"),
                    tracks: try r.list("assetOpened.trackCount", max: Wire.maxTracks) { r throws(TrackError) in
                        try r.record("track.size", TrackDescription.decode(from:))
                    },
                    metadata: try MetadataItem.decodeList(from: &r, "assetOpened.metadataCount"))
    }
}

/// `Message.ack`'s payload: none.
struct Ack: WireMessage {
    static let messageType = MessageType.ack
    var asMessage: Message { .ack }
    func encode(into w: inout ByteWriter) {}
    static func decode(from r: inout ByteReader) throws(TrackError) -> Ack { Ack() }
}

public struct OutputCreated: Sendable, Equatable {
    public var outputID: UInt32
    public var mediaType: MediaType
    /// Decoded: the pixel format's code. Passthrough: the codec's code (avc1, …).
    public var format: FourCC
    public var width: UInt32
    public var height: UInt32
    /// Passthrough: the codec configuration record (avcC, hvcC, …) from the container; empty otherwise.
    public var codecConfig: [UInt8]

    public init(outputID: UInt32, mediaType: MediaType, format: FourCC, width: UInt32, height: UInt32,
                codecConfig: [UInt8]) {
        self.outputID = outputID
        self.mediaType = mediaType
        self.format = format
        self.width = width
        self.height = height
        self.codecConfig = codecConfig
    }
}

extension OutputCreated: WireMessage {
    static let messageType = MessageType.outputCreated
    var asMessage: Message { .outputCreated(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.u8(mediaType.rawValue)
        w.fourCC(format)
        w.u32(width)
        w.u32(height)
        w.blob(Array(codecConfig.prefix(Wire.maxCodecConfig)))
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> OutputCreated {
        OutputCreated(outputID: try r.u32("outputCreated.outputID"),
                      mediaType: MediaType(rawValue: try r.u8("outputCreated.mediaType")) ?? .other,
                      format: try r.fourCC("outputCreated.format"),
                      width: try r.u32("outputCreated.width"), height: try r.u32("outputCreated.height"),
                      codecConfig: try r.blob("outputCreated.codecConfig", max: Wire.maxCodecConfig))
    }
}

public struct ImageReady: Sendable, Equatable {
    public var actualTime: MediaTime
    public var width: UInt32
    public var height: UInt32
    public var length: UInt64

    public init(actualTime: MediaTime, width: UInt32, height: UInt32, length: UInt64) {
        self.actualTime = actualTime
        self.width = width
        self.height = height
        self.length = length
    }
}

extension ImageReady: WireMessage {
    static let messageType = MessageType.image
    var asMessage: Message { .image(self) }

    func encode(into w: inout ByteWriter) {
        w.time(actualTime)
        w.u32(width)
        w.u32(height)
        w.u64(length)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> ImageReady {
        ImageReady(actualTime: try r.time("image.actualTime"), width: try r.u32("image.width"),
                   height: try r.u32("image.height"), length: try r.u64("image.length"))
    }
}

/// The Status reply: the supervisor's counters, this session's, and the whole daemon's sample traffic.
public struct StatusReport: Sendable, Equatable {
    public var workerPID: UInt32
    public var supervisorPID: UInt32
    public var supervisorUptimeMs: UInt64
    public var connectionsAccepted: UInt64
    public var activeConnections: UInt32
    public var workerCrashes: UInt64
    public var openAssets: UInt32
    public var activeOutputs: UInt32
    /// This session's Sample messages and the bytes its worker copied (into pools and image memfds).
    public var samplesSent: UInt64
    public var bytesCopied: UInt64
    /// Every connection since the supervisor started, this one included: Sample messages, bytes copied, and bytes
    /// of sample data sent zero-copy (frames GStreamer wrote straight into shared memory).
    public var daemonSamplesSent: UInt64
    public var daemonBytesCopied: UInt64
    public var daemonBytesShared: UInt64
    public var gstreamerVersion: String
    /// This session's decoded video frames: those the decoders gave, and those converted to the output format
    /// (the others were decoded only as references or preroll and dropped before conversion).
    public var framesDecoded: UInt64
    public var framesConverted: UInt64
    /// Since the supervisor started: workers its watchdog killed (not in `workerCrashes`), connections refused by
    /// a connection limit or the per-uid rate limit, and of those the ones the rate limit refused.
    public var watchdogKills: UInt64
    public var connectionsRefused: UInt64
    public var connectionsRateLimited: UInt64
    /// This session's stored samples its outputs could not deliver: the sum of its OutputFinished `samplesLost`
    /// (revision 1; 0 before).
    public var samplesLost: UInt64

    public init(workerPID: UInt32, supervisorPID: UInt32, supervisorUptimeMs: UInt64, connectionsAccepted: UInt64,
                activeConnections: UInt32, workerCrashes: UInt64, openAssets: UInt32, activeOutputs: UInt32,
                samplesSent: UInt64, bytesCopied: UInt64, daemonSamplesSent: UInt64 = 0, daemonBytesCopied: UInt64 = 0,
                daemonBytesShared: UInt64 = 0, gstreamerVersion: String, framesDecoded: UInt64 = 0,
                framesConverted: UInt64 = 0, watchdogKills: UInt64 = 0, connectionsRefused: UInt64 = 0,
                connectionsRateLimited: UInt64 = 0, samplesLost: UInt64 = 0) {
        self.workerPID = workerPID
        self.supervisorPID = supervisorPID
        self.supervisorUptimeMs = supervisorUptimeMs
        self.connectionsAccepted = connectionsAccepted
        self.activeConnections = activeConnections
        self.workerCrashes = workerCrashes
        self.openAssets = openAssets
        self.activeOutputs = activeOutputs
        self.samplesSent = samplesSent
        self.bytesCopied = bytesCopied
        self.daemonSamplesSent = daemonSamplesSent
        self.daemonBytesCopied = daemonBytesCopied
        self.daemonBytesShared = daemonBytesShared
        self.gstreamerVersion = gstreamerVersion
        self.framesDecoded = framesDecoded
        self.framesConverted = framesConverted
        self.watchdogKills = watchdogKills
        self.connectionsRefused = connectionsRefused
        self.connectionsRateLimited = connectionsRateLimited
        self.samplesLost = samplesLost
    }
}

extension StatusReport: WireMessage {
    static let messageType = MessageType.status
    var asMessage: Message { .status(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(workerPID)
        w.u32(supervisorPID)
        w.u64(supervisorUptimeMs)
        w.u64(connectionsAccepted)
        w.u32(activeConnections)
        w.u64(workerCrashes)
        w.u32(openAssets)
        w.u32(activeOutputs)
        w.u64(samplesSent)
        w.u64(bytesCopied)
        w.u64(daemonSamplesSent)
        w.u64(daemonBytesCopied)
        w.u64(daemonBytesShared)
        w.string(gstreamerVersion)
        w.u64(framesDecoded)
        w.u64(framesConverted)
        w.u64(watchdogKills)
        w.u64(connectionsRefused)
        w.u64(connectionsRateLimited)
        w.u64(samplesLost)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> StatusReport {
        StatusReport(
            workerPID: try r.u32("status.workerPID"), supervisorPID: try r.u32("status.supervisorPID"),
            supervisorUptimeMs: try r.u64("status.uptime"), connectionsAccepted: try r.u64("status.accepted"),
            activeConnections: try r.u32("status.active"), workerCrashes: try r.u64("status.crashes"),
            openAssets: try r.u32("status.assets"), activeOutputs: try r.u32("status.outputs"),
            samplesSent: try r.u64("status.samples"), bytesCopied: try r.u64("status.copied"),
            daemonSamplesSent: try r.u64("status.daemonSamples"), daemonBytesCopied: try r.u64("status.daemonCopied"),
            daemonBytesShared: try r.u64("status.daemonShared"),
            gstreamerVersion: try r.string("status.gstreamerVersion"),
            framesDecoded: try r.u64("status.framesDecoded"), framesConverted: try r.u64("status.framesConverted"),
            watchdogKills: try r.u64("status.watchdogKills"),
            connectionsRefused: try r.u64("status.refused"), connectionsRateLimited: try r.u64("status.rateLimited"),
            samplesLost: r.atEnd ? 0 : try r.u64("status.samplesLost"))
    }
}

/// An Error message is a `TrackError`: its code and message — version 1's layout, which a client of any version
/// reads: an Error may answer a Hello before a version is agreed (PROTOCOL.md §5), and the supervisor writes Errors
/// without knowing the version. A field appended to Error must never be sent before HelloReply.
extension TrackError: WireMessage {
    static let messageType = MessageType.error
    var asMessage: Message { .error(self) }

    func encode(into w: inout ByteWriter) {
        w.i32(code)
        w.string(message)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> TrackError {
        let code = try r.i32("error.code")
        return TrackError(rawCode: code, message: try r.string("error.message"))
    }
}

/// `Message.frameCount`'s payload: the reply to CountFrames.
struct FrameCount: WireMessage {
    static let messageType = MessageType.frameCount
    var trackID: UInt32
    var count: UInt64
    var asMessage: Message { .frameCount(trackID: trackID, count: count) }

    func encode(into w: inout ByteWriter) {
        w.u32(trackID)
        w.u64(count)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> FrameCount {
        FrameCount(trackID: try r.u32("frameCount.trackID"), count: try r.u64("frameCount.count"))
    }
}
