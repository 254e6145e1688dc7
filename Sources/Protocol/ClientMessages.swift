// Client → worker messages (docs/PROTOCOL.md §8): each type with its wire layout beside it.

/// The first message. Its layout is shared by every protocol version (a later version only appends to it), so
/// that a worker can read any client's version range and answer one it does not speak with a clean Error.
public struct Hello: Sendable, Equatable {
    public var minVersion: UInt16
    public var maxVersion: UInt16
    public var maxMessageSize: UInt32
    public var maxFds: UInt16
    public var clientName: String
    /// What the client understands (PROTOCOL.md §5.3); 0 when the Hello ends before it (a version-1 Hello).
    public var capabilities: Capabilities

    public init(minVersion: UInt16 = Wire.version, maxVersion: UInt16 = Wire.version,
                maxMessageSize: UInt32 = Wire.defaultMaxMessageSize, maxFds: UInt16 = Wire.maxFdsPerMessage,
                clientName: String, capabilities: Capabilities = []) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.maxMessageSize = maxMessageSize
        self.maxFds = maxFds
        self.clientName = clientName
        self.capabilities = capabilities
    }

    /// Whether the client's range includes the version trackd speaks.
    public var offersWireVersion: Bool { minVersion <= Wire.version && Wire.version <= maxVersion }

    /// The Error (−11900) that answers a Hello whose range leaves out `Wire.version` (PROTOCOL.md §5).
    public var versionRefusal: TrackError {
        TrackError(.protocolViolation,
                   "trackd speaks protocol version \(Wire.version); this client offers \(minVersion)…\(maxVersion)")
    }
}

extension Hello: WireMessage {
    static let messageType = MessageType.hello
    var asMessage: Message { .hello(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(Wire.magic)
        w.u16(minVersion)
        w.u16(maxVersion)
        w.u32(maxMessageSize)
        w.u16(maxFds)
        w.string(clientName)
        w.u64(capabilities.rawValue)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> Hello {
        try r.magic("hello.magic", of: "hello")
        var hello = Hello(minVersion: try r.u16("hello.minVersion"), maxVersion: try r.u16("hello.maxVersion"),
                          maxMessageSize: try r.u32("hello.maxMessageSize"), maxFds: try r.u16("hello.maxFds"),
                          clientName: try r.string("hello.clientName"))
        hello.capabilities = Capabilities(rawValue: r.atEnd ? 0 : try r.u64("hello.capabilities"))
        return hello
    }
}

/// `Message.openAsset`'s payload. The file itself travels as the message's descriptor.
struct OpenAsset: WireMessage {
    static let messageType = MessageType.openAsset
    var name: String
    var asMessage: Message { .openAsset(name: name) }

    func encode(into w: inout ByteWriter) { w.string(name) }

    static func decode(from r: inout ByteReader) throws(TrackError) -> OpenAsset {
        OpenAsset(name: try r.string("openAsset.name"))
    }
}

/// `Message.closeAsset`'s payload.
struct CloseAsset: IDMessage {
    static let messageType = MessageType.closeAsset
    static let field: StaticString = "closeAsset.assetID"
    var id: UInt32
    var asMessage: Message { .closeAsset(assetID: id) }
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

extension CreateOutput: WireMessage {
    static let messageType = MessageType.createOutput
    var asMessage: Message { .createOutput(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(assetID)
        w.u32(trackID)
        w.timeRange(timeRange)
        w.u8(supportsRandomAccess ? CreateOutput.flagSupportsRandomAccess : 0)
        w.optional(settings) { w, settings in SettingValue.encodeDictionary(settings, into: &w) }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> CreateOutput {
        let assetID = try r.u32("createOutput.assetID")
        let trackID = try r.u32("createOutput.trackID")
        let range = try r.timeRange("createOutput.start", "createOutput.duration")
        let flags = try r.u8("createOutput.flags")
        guard flags & ~flagSupportsRandomAccess == 0 else {
            throw TrackError(.protocolViolation, "createOutput.flags: unknown bits in 0x\(String(flags, radix: 16))")
        }
        let settings = try r.optional("createOutput.hasSettings") { r throws(TrackError) in
            try SettingValue.decodeDictionary(from: &r, depth: 1)
        }
        return CreateOutput(assetID: assetID, trackID: trackID, timeRange: range, settings: settings,
                            supportsRandomAccess: flags & flagSupportsRandomAccess != 0)
    }
}

/// `Message.releaseSlots`'s payload.
struct ReleaseSlots: WireMessage {
    static let messageType = MessageType.releaseSlots
    var outputID: UInt32
    var slots: [SlotRef]
    var asMessage: Message { .releaseSlots(outputID: outputID, slots: slots) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.list(slots, max: Wire.maxSlotsPerRelease) { w, slot in slot.encode(into: &w) }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> ReleaseSlots {
        let outputID = try r.u32("releaseSlots.outputID")
        let slots = try r.list("releaseSlots.count", max: Wire.maxSlotsPerRelease) { r throws(TrackError) in
            try SlotRef.decode(from: &r, "releaseSlots.poolID", "releaseSlots.slot")
        }
        guard !slots.isEmpty else { throw TrackError(.protocolViolation, "releaseSlots.count: 0; at least one slot is required") }
        return ReleaseSlots(outputID: outputID, slots: slots)
    }
}

/// `Message.cancelOutput`'s payload.
struct CancelOutput: IDMessage {
    static let messageType = MessageType.cancelOutput
    static let field: StaticString = "cancelOutput.outputID"
    var id: UInt32
    var asMessage: Message { .cancelOutput(outputID: id) }
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

extension GenerateImage: WireMessage {
    static let messageType = MessageType.generateImage
    var asMessage: Message { .generateImage(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(assetID)
        w.u32(trackID)
        w.time(time)
        w.fourCC(imageFormat)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> GenerateImage {
        GenerateImage(assetID: try r.u32("generateImage.assetID"), trackID: try r.u32("generateImage.trackID"),
                      time: try r.time("generateImage.time"), imageFormat: try r.fourCC("generateImage.format"))
    }
}

/// `Message.getStatus`'s payload: none.
struct GetStatus: WireMessage {
    static let messageType = MessageType.getStatus
    var asMessage: Message { .getStatus }
    func encode(into w: inout ByteWriter) {}
    static func decode(from r: inout ByteReader) throws(TrackError) -> GetStatus { GetStatus() }
}

/// `Message.resetOutput`'s payload: at least one range.
struct ResetOutput: WireMessage {
    static let messageType = MessageType.resetOutput
    var outputID: UInt32
    var ranges: [MediaTimeRange]
    var asMessage: Message { .resetOutput(outputID: outputID, ranges: ranges) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.list(ranges, max: Wire.maxResetRanges) { w, range in w.timeRange(range) }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> ResetOutput {
        let outputID = try r.u32("resetOutput.outputID")
        let ranges = try r.list("resetOutput.count", max: Wire.maxResetRanges) { r throws(TrackError) in
            try r.timeRange("resetOutput.start", "resetOutput.duration")
        }
        guard !ranges.isEmpty else { throw TrackError(.protocolViolation, "resetOutput.count: 0; at least one range is required") }
        return ResetOutput(outputID: outputID, ranges: ranges)
    }
}

/// `Message.finishOutput`'s payload.
struct FinishOutput: IDMessage {
    static let messageType = MessageType.finishOutput
    static let field: StaticString = "finishOutput.outputID"
    var id: UInt32
    var asMessage: Message { .finishOutput(outputID: id) }
}

extension FrameRequest {
    /// A kind byte (0 time, 1 index), then a time, or an index and a reserved u64 0: 17 bytes either way.
    func encode(into w: inout ByteWriter) {
        switch self {
        case .time(let time):
            w.u8(0)
            w.time(time)
        case .index(let index):
            w.u8(1)
            w.u64(index)
            w.u64(0)
        }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> FrameRequest {
        switch try r.u8("readFrames.kind") {
        case 0:
            return .time(try r.time("readFrames.time"))
        case 1:
            let index = try r.u64("readFrames.index")
            guard try r.u64("readFrames.reserved") == 0 else {
                throw TrackError(.protocolViolation, "readFrames.reserved: must be 0")
            }
            return .index(index)
        case let kind:
            throw TrackError(.protocolViolation, "readFrames.kind: \(kind) is neither 0 (time) nor 1 (index)")
        }
    }
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

extension ReadFrames: WireMessage {
    static let messageType = MessageType.readFrames
    var asMessage: Message { .readFrames(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(assetID)
        w.u32(trackID)
        w.list(frames, max: Wire.maxFrameRequests) { w, frame in frame.encode(into: &w) }
        SettingValue.encodeDictionary(settings, into: &w)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> ReadFrames {
        let assetID = try r.u32("readFrames.assetID")
        let trackID = try r.u32("readFrames.trackID")
        let frames = try r.list("readFrames.count", max: Wire.maxFrameRequests, FrameRequest.decode(from:))
        guard !frames.isEmpty else { throw TrackError(.protocolViolation, "readFrames.count: 0; at least one frame is required") }
        return ReadFrames(assetID: assetID, trackID: trackID, frames: frames,
                          settings: try SettingValue.decodeDictionary(from: &r, depth: 1))
    }
}

/// `Message.countFrames`'s payload.
struct CountFrames: WireMessage {
    static let messageType = MessageType.countFrames
    var assetID: UInt32
    var trackID: UInt32
    var asMessage: Message { .countFrames(assetID: assetID, trackID: trackID) }

    func encode(into w: inout ByteWriter) {
        w.u32(assetID)
        w.u32(trackID)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> CountFrames {
        CountFrames(assetID: try r.u32("countFrames.assetID"), trackID: try r.u32("countFrames.trackID"))
    }
}
