/// Every message of protocol version 2. docs/PROTOCOL.md describes each byte by byte; keep the two in step.
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
    case countFrames = 0x000C
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
    case frameCount = 0x800D
    /// Sent only under `Capabilities.outputStalled`.
    case outputStalled = 0x800E
    case error = 0x80FF

    /// The exact number of descriptors a message of this type carries. Any other count is a protocol error.
    public var fdCount: Int {
        switch self {
        case .openAsset, .poolAdded, .image: 1
        default: 0
        }
    }
}

/// The payload of one message type: its layout, written beside its declaration (docs/PROTOCOL.md §8 and §9 give
/// each byte by byte). `decode` is strict: every count and length bounded, every enum byte checked, a
/// `.protocolViolation` naming the field otherwise. `Codec` adds the header and dispatches on the type code.
protocol WireMessage: Sendable {
    static var messageType: MessageType { get }
    /// This payload as the `Message` that carries it.
    var asMessage: Message { get }
    func encode(into w: inout ByteWriter)
    static func decode(from r: inout ByteReader) throws(TrackError) -> Self
}

extension WireMessage {
    /// `decode`, as a `Message` (called through the dispatch table's `any WireMessage.Type`).
    static func decodeMessage(from r: inout ByteReader) throws(TrackError) -> Message {
        try decode(from: &r).asMessage
    }
}

/// A payload that is one u32: the asset or output the message names. `field` names it in errors.
protocol IDMessage: WireMessage {
    static var field: StaticString { get }
    var id: UInt32 { get }
    init(id: UInt32)
}

extension IDMessage {
    func encode(into w: inout ByteWriter) { w.u32(id) }

    static func decode(from r: inout ByteReader) throws(TrackError) -> Self { Self(id: try r.u32(field)) }
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
    /// The number of frames of a video track (its frame index's size); answered with `frameCount`.
    case countFrames(assetID: UInt32, trackID: UInt32)
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
    /// CountFrames' reply: the track's frames, every one in presentation order (ReadFrames indices 0 ..< count).
    case frameCount(trackID: UInt32, count: UInt64)
    /// The output waits for a release: the client holds every slot it may hold (`held` samples). Capability bit 0.
    case outputStalled(outputID: UInt32, held: UInt32)
    case error(TrackError)

    public var type: MessageType { Swift.type(of: payload).messageType }

    /// The payload, as the type that encodes it. The cases without a public struct of their own have a small
    /// internal one beside the others (ClientMessages.swift, WorkerMessages.swift, OutputEvents.swift).
    var payload: any WireMessage {
        switch self {
        case .hello(let hello): hello
        case .openAsset(let name): OpenAsset(name: name)
        case .closeAsset(let assetID): CloseAsset(id: assetID)
        case .createOutput(let create): create
        case .releaseSlots(let outputID, let slots): ReleaseSlots(outputID: outputID, slots: slots)
        case .cancelOutput(let outputID): CancelOutput(id: outputID)
        case .generateImage(let generate): generate
        case .getStatus: GetStatus()
        case .resetOutput(let outputID, let ranges): ResetOutput(outputID: outputID, ranges: ranges)
        case .finishOutput(let outputID): FinishOutput(id: outputID)
        case .readFrames(let read): read
        case .countFrames(let assetID, let trackID): CountFrames(assetID: assetID, trackID: trackID)
        case .helloReply(let reply): reply
        case .assetOpened(let opened): opened
        case .ack: Ack()
        case .outputCreated(let created): created
        case .poolAdded(let pool): pool
        case .poolRemoved(let outputID, let poolID): PoolRemoved(outputID: outputID, poolID: poolID)
        case .sample(let sample): sample
        case .outputFinished(let finished): finished
        case .image(let image): image
        case .status(let status): status
        case .rangeEnded(let outputID): RangeEnded(id: outputID)
        case .framesResolved(let outputID, let frames): FramesResolved(outputID: outputID, frames: frames)
        case .frameCount(let trackID, let count): FrameCount(trackID: trackID, count: count)
        case .outputStalled(let outputID, let held): OutputStalled(outputID: outputID, held: held)
        case .error(let error): error
        }
    }
}
