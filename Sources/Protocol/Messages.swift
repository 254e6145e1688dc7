/// Every message of protocol version 1. docs/PROTOCOL.md describes each byte by byte; keep the two in step.
public enum MessageType: UInt16, Sendable, CaseIterable {
    // client → worker
    case hello = 0x0001
    case openAsset = 0x0002
    case closeAsset = 0x0003
    case createOutput = 0x0004
    case releaseSlots = 0x0005
    case cancelOutput = 0x0006
    case generateImage = 0x0007
    case getStatus = 0x0008
    case resetOutput = 0x0009
    case finishOutput = 0x000A
    case readFrames = 0x000B
    // worker → client
    case helloReply = 0x8001
    case assetOpened = 0x8002
    case ack = 0x8003
    case outputCreated = 0x8004
    case poolAdded = 0x8005
    case poolRemoved = 0x8006
    case sample = 0x8007
    case outputFinished = 0x8008
    case image = 0x8009
    case status = 0x800A
    case rangeEnded = 0x800B
    case framesResolved = 0x800C
    case error = 0x80FF

    /// The exact number of descriptors a message of this type carries. Any other count is a protocol error.
    public var fdCount: Int {
        switch self {
        case .openAsset, .poolAdded, .image: 1
        default: 0
        }
    }
}

public struct Hello: Sendable, Equatable {
    public var minVersion: UInt16
    public var maxVersion: UInt16
    public var maxMessageSize: UInt32
    public var maxFds: UInt16
    public var clientName: String

    public init(minVersion: UInt16 = Wire.version, maxVersion: UInt16 = Wire.version,
                maxMessageSize: UInt32 = Wire.defaultMaxMessageSize, maxFds: UInt16 = Wire.maxFdsPerMessage,
                clientName: String) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.maxMessageSize = maxMessageSize
        self.maxFds = maxFds
        self.clientName = clientName
    }
}

public struct HelloReply: Sendable, Equatable {
    public var version: UInt16
    public var maxMessageSize: UInt32
    public var maxFds: UInt16
    public var workerPID: UInt32
    public var serverVersion: String

    public init(version: UInt16, maxMessageSize: UInt32, maxFds: UInt16, workerPID: UInt32, serverVersion: String) {
        self.version = version
        self.maxMessageSize = maxMessageSize
        self.maxFds = maxFds
        self.workerPID = workerPID
        self.serverVersion = serverVersion
    }
}

public struct AssetOpened: Sendable, Equatable {
    public var assetID: UInt32
    public var duration: MediaTime
    public var tracks: [TrackDescription]

    public init(assetID: UInt32, duration: MediaTime, tracks: [TrackDescription]) {
        self.assetID = assetID
        self.duration = duration
        self.tracks = tracks
    }
}

public struct CreateOutput: Sendable, Equatable {
    public var assetID: UInt32
    public var trackID: UInt32
    public var timeRange: MediaTimeRange
    /// nil: passthrough (samples as stored). Otherwise the output-settings dictionary.
    public var settings: [String: SettingValue]?
    /// AVAssetReaderOutput.supportsRandomAccess: the output ends each batch of ranges with RangeEnded and waits
    /// for ResetOutput or FinishOutput instead of finishing.
    public var supportsRandomAccess: Bool

    /// Bits of the `flags` byte.
    public static let flagSupportsRandomAccess: UInt8 = 1

    public init(assetID: UInt32, trackID: UInt32, timeRange: MediaTimeRange, settings: [String: SettingValue]?,
                supportsRandomAccess: Bool = false) {
        self.assetID = assetID
        self.trackID = trackID
        self.timeRange = timeRange
        self.settings = settings
        self.supportsRandomAccess = supportsRandomAccess
    }
}

/// One frame asked for by ReadFrames: the frame shown at a time, or the frame with an index (0-based, in
/// presentation order, counting every frame of the track).
public enum FrameRequest: Sendable, Equatable, Hashable {
    case time(MediaTime)
    case index(UInt64)
}

/// Exact random access: an output that delivers exactly the requested frames, decoded, in request order (each GOP
/// decoded once), then finishes.
public struct ReadFrames: Sendable, Equatable {
    public var assetID: UInt32
    public var trackID: UInt32
    public var frames: [FrameRequest]
    /// The output settings, as for CreateOutput; nil is not allowed (frames are decoded).
    public var settings: [String: SettingValue]

    public init(assetID: UInt32, trackID: UInt32, frames: [FrameRequest], settings: [String: SettingValue]) {
        self.assetID = assetID
        self.trackID = trackID
        self.frames = frames
        self.settings = settings
    }
}

/// What each ReadFrames request turned out to be: the frame's index and presentation time, in request order.
public struct ResolvedFrame: Sendable, Equatable {
    public var index: UInt64
    public var presentationTime: MediaTime

    public init(index: UInt64, presentationTime: MediaTime) {
        self.index = index
        self.presentationTime = presentationTime
    }
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

public struct PoolAdded: Sendable, Equatable {
    public var outputID: UInt32
    public var poolID: UInt32
    public var slotCount: UInt32
    public var slotSize: UInt64

    public init(outputID: UInt32, poolID: UInt32, slotCount: UInt32, slotSize: UInt64) {
        self.outputID = outputID
        self.poolID = poolID
        self.slotCount = slotCount
        self.slotSize = slotSize
    }
}

public struct SlotRef: Sendable, Hashable {
    public var poolID: UInt32
    public var slot: UInt32

    public init(poolID: UInt32, slot: UInt32) {
        self.poolID = poolID
        self.slot = slot
    }
}

public struct Sample: Sendable, Equatable {
    public static let flagSync: UInt32 = 1
    public static let flagHasDecodeTime: UInt32 = 2
    /// The first sample after a discontinuity in the stream (GST_BUFFER_FLAG_DISCONT): after a seek or a gap.
    public static let flagDiscontinuity: UInt32 = 4
    /// No other sample depends on this one (GST_BUFFER_FLAG_DROPPABLE): IsDependedOnByOthers is false.
    public static let flagDroppable: UInt32 = 8

    public var outputID: UInt32
    public var slot: SlotRef
    /// Bytes of this sample, starting at the slot's offset (slot × slotSize) in the pool.
    public var length: UInt64
    public var presentationTime: MediaTime
    public var decodeTime: MediaTime
    public var duration: MediaTime
    public var flags: UInt32
    /// Pixel format code when decoded, codec code when passthrough.
    public var format: FourCC
    public var width: UInt32
    public var height: UInt32
    public var colorimetry: Colorimetry
    public var planes: [PlaneLayout]
    /// Decoded audio: the number of frames (one sample per channel) in this sample; 0 for video and passthrough.
    public var frameCount: UInt32

    public init(outputID: UInt32, slot: SlotRef, length: UInt64, presentationTime: MediaTime, decodeTime: MediaTime,
                duration: MediaTime, flags: UInt32, format: FourCC, width: UInt32, height: UInt32,
                colorimetry: Colorimetry, planes: [PlaneLayout], frameCount: UInt32 = 0) {
        self.outputID = outputID
        self.slot = slot
        self.length = length
        self.presentationTime = presentationTime
        self.decodeTime = decodeTime
        self.duration = duration
        self.flags = flags
        self.format = format
        self.width = width
        self.height = height
        self.colorimetry = colorimetry
        self.planes = planes
        self.frameCount = frameCount
    }

    public var isSync: Bool { flags & Sample.flagSync != 0 }
}

/// Final state of an output, with AVAssetReaderStatus numbering.
public enum OutputStatus: UInt8, Sendable {
    case completed = 2, failed = 3, cancelled = 4
}

public struct OutputFinished: Sendable, Equatable {
    public var outputID: UInt32
    public var status: OutputStatus
    /// 0 unless failed.
    public var code: Int32
    public var message: String

    public init(outputID: UInt32, status: OutputStatus, code: Int32 = 0, message: String = "") {
        self.outputID = outputID
        self.status = status
        self.code = code
        self.message = message
    }
}

public struct GenerateImage: Sendable, Equatable {
    public var assetID: UInt32
    public var trackID: UInt32
    public var time: MediaTime
    /// 'png ' is the only image format of version 1.
    public var imageFormat: FourCC

    public init(assetID: UInt32, trackID: UInt32, time: MediaTime, imageFormat: FourCC = "png ") {
        self.assetID = assetID
        self.trackID = trackID
        self.time = time
        self.imageFormat = imageFormat
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

    public init(workerPID: UInt32, supervisorPID: UInt32, supervisorUptimeMs: UInt64, connectionsAccepted: UInt64,
                activeConnections: UInt32, workerCrashes: UInt64, openAssets: UInt32, activeOutputs: UInt32,
                samplesSent: UInt64, bytesCopied: UInt64, daemonSamplesSent: UInt64 = 0, daemonBytesCopied: UInt64 = 0,
                daemonBytesShared: UInt64 = 0, gstreamerVersion: String) {
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
    }
}

/// One decoded message. The descriptors a message carries travel beside it (see `MessageSocket`).
public enum Message: Sendable, Equatable {
    case hello(Hello)
    case openAsset(name: String)
    case closeAsset(assetID: UInt32)
    case createOutput(CreateOutput)
    case releaseSlots(outputID: UInt32, slots: [SlotRef])
    case cancelOutput(outputID: UInt32)
    case generateImage(GenerateImage)
    case getStatus
    /// Reads `ranges` next, in order (a random-access output that sent RangeEnded).
    case resetOutput(outputID: UInt32, ranges: [MediaTimeRange])
    /// markConfigurationAsFinal: the output completes at the end of its current ranges.
    case finishOutput(outputID: UInt32)
    case readFrames(ReadFrames)
    case helloReply(HelloReply)
    case assetOpened(AssetOpened)
    case ack
    case outputCreated(OutputCreated)
    case poolAdded(PoolAdded)
    case poolRemoved(outputID: UInt32, poolID: UInt32)
    case sample(Sample)
    case outputFinished(OutputFinished)
    case image(ImageReady)
    case status(StatusReport)
    /// A random-access output delivered every sample of its ranges and waits for ResetOutput or FinishOutput.
    case rangeEnded(outputID: UInt32)
    /// A ReadFrames output's first event: the frame each request resolved to, in request order.
    case framesResolved(outputID: UInt32, frames: [ResolvedFrame])
    case error(TrackError)

    public var type: MessageType {
        switch self {
        case .hello: .hello
        case .openAsset: .openAsset
        case .closeAsset: .closeAsset
        case .createOutput: .createOutput
        case .releaseSlots: .releaseSlots
        case .cancelOutput: .cancelOutput
        case .generateImage: .generateImage
        case .getStatus: .getStatus
        case .resetOutput: .resetOutput
        case .finishOutput: .finishOutput
        case .readFrames: .readFrames
        case .helloReply: .helloReply
        case .assetOpened: .assetOpened
        case .ack: .ack
        case .outputCreated: .outputCreated
        case .poolAdded: .poolAdded
        case .poolRemoved: .poolRemoved
        case .sample: .sample
        case .outputFinished: .outputFinished
        case .image: .image
        case .status: .status
        case .rangeEnded: .rangeEnded
        case .framesResolved: .framesResolved
        case .error: .error
        }
    }
}
