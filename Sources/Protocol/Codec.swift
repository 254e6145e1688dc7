import SystemCalls

/// Whole frames: the 16-byte header around a payload, and the dispatch from a header's type code to the payload's
/// decoder. Each payload's layout is written beside its declaration (`WireMessage`: ClientMessages.swift,
/// WorkerMessages.swift, OutputEvents.swift).
public enum Codec {
    /// Header + payload for `message` under `requestID`. The header's fd count is the type's fixed count.
    public static func frame(_ message: Message, requestID: UInt32) -> [UInt8] {
        let body = message.payload
        let messageType = Swift.type(of: body).messageType
        var payload = ByteWriter()
        body.encode(into: &payload)
        var w = ByteWriter(capacity: Wire.headerSize + payload.bytes.count)
        FrameHeader(length: UInt32(payload.bytes.count), type: messageType.rawValue,
                    fdCount: UInt16(messageType.fdCount), requestID: requestID).encode(into: &w)
        var bytes = w.bytes
        bytes.append(contentsOf: payload.bytes)
        return bytes
    }

    /// Decodes the payload of a frame whose header is already validated: the fields this revision knows. Bytes
    /// after them are fields a later revision appended, and are ignored (PROTOCOL.md §2.1).
    public static func decodePayload(type: MessageType, _ bytes: [UInt8], from start: Int, to end: Int) throws(TrackError) -> Message {
        var r = ByteReader(bytes, from: start, to: end)
        return try type.payloadType.decodeMessage(from: &r)
    }
}

extension MessageType {
    /// The dispatch table: the type that decodes each type code's payload.
    var payloadType: any WireMessage.Type {
        switch self {
        case .hello: Hello.self
        case .openAsset: OpenAsset.self
        case .closeAsset: CloseAsset.self
        case .createOutput: CreateOutput.self
        case .releaseSlots: ReleaseSlots.self
        case .cancelOutput: CancelOutput.self
        case .generateImage: GenerateImage.self
        case .getStatus: GetStatus.self
        case .resetOutput: ResetOutput.self
        case .finishOutput: FinishOutput.self
        case .readFrames: ReadFrames.self
        case .countFrames: CountFrames.self
        case .helloReply: HelloReply.self
        case .assetOpened: AssetOpened.self
        case .ack: Ack.self
        case .outputCreated: OutputCreated.self
        case .poolAdded: PoolAdded.self
        case .poolRemoved: PoolRemoved.self
        case .sample: Sample.self
        case .outputFinished: OutputFinished.self
        case .image: ImageReady.self
        case .status: StatusReport.self
        case .rangeEnded: RangeEnded.self
        case .framesResolved: FramesResolved.self
        case .frameCount: FrameCount.self
        case .outputStalled: OutputStalled.self
        case .error: TrackError.self
        }
    }
}

/// A complete frame taken off the stream: its header, the decoded message, and the descriptors it carried, owned
/// here (closed when the frame ends) until a handler takes them (`fds.takeFirst()`).
public struct ReceivedFrame: ~Copyable, Sendable {
    public var requestID: UInt32
    public var message: Message
    public var fds: ReceivedDescriptors

    public init(requestID: UInt32, message: Message, fds: consuming ReceivedDescriptors = ReceivedDescriptors()) {
        self.requestID = requestID
        self.message = message
        self.fds = fds
    }
}

/// Incremental frame decoder: feed it bytes as they arrive (one at a time or many frames at once) and take
/// complete frames out. It never traps on hostile input: an oversized length, a reserved bit, an unknown type
/// or a malformed payload throws `.protocolViolation`, after which the stream must be closed.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public var maxMessageSize: UInt32

    public init(maxMessageSize: UInt32 = Wire.defaultMaxMessageSize) {
        self.maxMessageSize = maxMessageSize
    }

    public mutating func feed<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received but not yet part of a complete frame.
    public var pendingBytes: Int { buffer.count - start }

    /// The next complete frame's header and decoded message, or nil when more bytes are needed.
    public mutating func next() throws(TrackError) -> (header: FrameHeader, message: Message)? {
        guard buffer.count - start >= Wire.headerSize else { return nil }
        let header = try FrameHeader.decode(buffer, at: start)
        guard header.length <= maxMessageSize else {
            throw TrackError(.protocolViolation, "frame of \(header.length) bytes exceeds the limit of \(maxMessageSize)")
        }
        guard let type = MessageType(rawValue: header.type) else {
            throw TrackError(.protocolViolation, "unknown message type 0x\(String(header.type, radix: 16))")
        }
        guard Int(header.fdCount) == type.fdCount else {
            throw TrackError(.protocolViolation, "\(type) must carry \(type.fdCount) descriptors, header says \(header.fdCount)")
        }
        let end = start + Wire.headerSize + Int(header.length)
        guard buffer.count >= end else { return nil }
        let message = try Codec.decodePayload(type: type, buffer, from: start + Wire.headerSize, to: end)
        start = end
        if start > 65536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return (header, message)
    }
}
