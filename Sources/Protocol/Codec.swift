/// Encoding and decoding of message payloads, and of whole frames (header + payload).
public enum Codec {
    /// Header + payload for `message` under `requestID`. The header's fd count is the type's fixed count.
    public static func frame(_ message: Message, requestID: UInt32) -> [UInt8] {
        var payload = ByteWriter()
        encodePayload(message, into: &payload)
        var w = ByteWriter(capacity: Wire.headerSize + payload.bytes.count)
        FrameHeader(length: UInt32(payload.bytes.count), type: message.type.rawValue,
                    fdCount: UInt16(message.type.fdCount), requestID: requestID).encode(into: &w)
        var bytes = w.bytes
        bytes.append(contentsOf: payload.bytes)
        return bytes
    }

    static func encodePayload(_ message: Message, into w: inout ByteWriter) {
        switch message {
        case .hello(let h):
            w.u32(Wire.magic)
            w.u16(h.minVersion)
            w.u16(h.maxVersion)
            w.u32(h.maxMessageSize)
            w.u16(h.maxFds)
            w.string(h.clientName)
        case .openAsset(let name):
            w.string(name)
        case .closeAsset(let id), .cancelOutput(let id), .finishOutput(let id), .rangeEnded(let id):
            w.u32(id)
        case .resetOutput(let outputID, let ranges):
            w.u32(outputID)
            w.u16(UInt16(min(ranges.count, Wire.maxResetRanges)))
            for range in ranges.prefix(Wire.maxResetRanges) {
                w.time(range.start)
                w.time(range.duration)
            }
        case .createOutput(let c):
            w.u32(c.assetID)
            w.u32(c.trackID)
            w.time(c.timeRange.start)
            w.time(c.timeRange.duration)
            w.u8(c.supportsRandomAccess ? CreateOutput.flagSupportsRandomAccess : 0)
            if let settings = c.settings {
                w.u8(1)
                encodeDictionary(settings, into: &w)
            } else {
                w.u8(0)
            }
        case .readFrames(let r):
            w.u32(r.assetID)
            w.u32(r.trackID)
            w.u16(UInt16(min(r.frames.count, Wire.maxFrameRequests)))
            for frame in r.frames.prefix(Wire.maxFrameRequests) {
                switch frame {
                case .time(let t):
                    w.u8(0)
                    w.time(t)
                case .index(let i):
                    w.u8(1)
                    w.u64(i)
                    w.u64(0)
                }
            }
            encodeDictionary(r.settings, into: &w)
        case .framesResolved(let outputID, let frames):
            w.u32(outputID)
            w.u16(UInt16(min(frames.count, Wire.maxFrameRequests)))
            for f in frames.prefix(Wire.maxFrameRequests) {
                w.u64(f.index)
                w.time(f.presentationTime)
            }
        case .releaseSlots(let outputID, let slots):
            w.u32(outputID)
            w.u16(UInt16(min(slots.count, Wire.maxSlotsPerRelease)))
            for s in slots.prefix(Wire.maxSlotsPerRelease) {
                w.u32(s.poolID)
                w.u32(s.slot)
            }
        case .generateImage(let g):
            w.u32(g.assetID)
            w.u32(g.trackID)
            w.time(g.time)
            w.fourCC(g.imageFormat)
        case .getStatus, .ack:
            break
        case .helloReply(let h):
            w.u32(Wire.magic)
            w.u16(h.version)
            w.u32(h.maxMessageSize)
            w.u16(h.maxFds)
            w.u32(h.workerPID)
            w.string(h.serverVersion)
        case .assetOpened(let a):
            w.u32(a.assetID)
            w.time(a.duration)
            w.u16(UInt16(min(a.tracks.count, Wire.maxTracks)))
            for t in a.tracks.prefix(Wire.maxTracks) { t.encode(into: &w) }
        case .outputCreated(let o):
            w.u32(o.outputID)
            w.u8(o.mediaType.rawValue)
            w.fourCC(o.format)
            w.u32(o.width)
            w.u32(o.height)
            w.blob(Array(o.codecConfig.prefix(Wire.maxCodecConfig)))
        case .poolAdded(let p):
            w.u32(p.outputID)
            w.u32(p.poolID)
            w.u32(p.slotCount)
            w.u64(p.slotSize)
        case .poolRemoved(let outputID, let poolID):
            w.u32(outputID)
            w.u32(poolID)
        case .sample(let s):
            w.u32(s.outputID)
            w.u32(s.slot.poolID)
            w.u32(s.slot.slot)
            w.u64(s.length)
            w.time(s.presentationTime)
            w.time(s.decodeTime)
            w.time(s.duration)
            w.u32(s.flags)
            w.fourCC(s.format)
            w.u32(s.width)
            w.u32(s.height)
            w.u8(s.colorimetry.range)
            w.u8(s.colorimetry.matrix)
            w.u8(s.colorimetry.primaries)
            w.u8(s.colorimetry.transfer)
            w.u8(UInt8(min(s.planes.count, Wire.maxPlanes)))
            for p in s.planes.prefix(Wire.maxPlanes) {
                w.u64(p.offset)
                w.u32(p.bytesPerRow)
                w.u32(p.rowBytes)
                w.u32(p.height)
            }
            w.u32(s.frameCount)
        case .outputFinished(let f):
            w.u32(f.outputID)
            w.u8(f.status.rawValue)
            w.i32(f.code)
            w.string(f.message)
        case .image(let i):
            w.time(i.actualTime)
            w.u32(i.width)
            w.u32(i.height)
            w.u64(i.length)
        case .status(let s):
            w.u32(s.workerPID)
            w.u32(s.supervisorPID)
            w.u64(s.supervisorUptimeMs)
            w.u64(s.connectionsAccepted)
            w.u32(s.activeConnections)
            w.u64(s.workerCrashes)
            w.u32(s.openAssets)
            w.u32(s.activeOutputs)
            w.u64(s.samplesSent)
            w.u64(s.bytesCopied)
            w.u64(s.daemonSamplesSent)
            w.u64(s.daemonBytesCopied)
            w.u64(s.daemonBytesShared)
            w.string(s.gstreamerVersion)
        case .error(let e):
            w.i32(e.code)
            w.string(e.message)
        }
    }

    /// Decodes the payload of a frame whose header is already validated.
    public static func decodePayload(type: MessageType, _ bytes: [UInt8], from start: Int, to end: Int) throws(TrackError) -> Message {
        var r = ByteReader(bytes, from: start, to: end)
        let message: Message
        switch type {
        case .hello:
            guard try r.u32("hello.magic") == Wire.magic else {
                throw TrackError(.protocolViolation, "hello: magic is not \"TRKD\"")
            }
            message = .hello(Hello(minVersion: try r.u16("hello.minVersion"), maxVersion: try r.u16("hello.maxVersion"),
                                   maxMessageSize: try r.u32("hello.maxMessageSize"), maxFds: try r.u16("hello.maxFds"),
                                   clientName: try r.string("hello.clientName")))
        case .openAsset:
            message = .openAsset(name: try r.string("openAsset.name"))
        case .closeAsset:
            message = .closeAsset(assetID: try r.u32("closeAsset.assetID"))
        case .cancelOutput:
            message = .cancelOutput(outputID: try r.u32("cancelOutput.outputID"))
        case .createOutput:
            let assetID = try r.u32("createOutput.assetID")
            let trackID = try r.u32("createOutput.trackID")
            let range = MediaTimeRange(start: try r.time("createOutput.start"), duration: try r.time("createOutput.duration"))
            let flags = try r.u8("createOutput.flags")
            guard flags & ~CreateOutput.flagSupportsRandomAccess == 0 else {
                throw TrackError(.protocolViolation, "createOutput.flags: unknown bits in 0x\(String(flags, radix: 16))")
            }
            let settings: [String: SettingValue]?
            switch try r.u8("createOutput.hasSettings") {
            case 0: settings = nil
            case 1: settings = try decodeDictionary(&r, depth: 1)
            case let v: throw TrackError(.protocolViolation, "createOutput.hasSettings: \(v) is neither 0 nor 1")
            }
            message = .createOutput(CreateOutput(assetID: assetID, trackID: trackID, timeRange: range, settings: settings,
                                                 supportsRandomAccess: flags & CreateOutput.flagSupportsRandomAccess != 0))
        case .resetOutput:
            let outputID = try r.u32("resetOutput.outputID")
            let n = try r.count("resetOutput.count", max: Wire.maxResetRanges)
            guard n > 0 else { throw TrackError(.protocolViolation, "resetOutput.count: 0; at least one range is required") }
            var ranges: [MediaTimeRange] = []
            for _ in 0..<n {
                ranges.append(MediaTimeRange(start: try r.time("resetOutput.start"), duration: try r.time("resetOutput.duration")))
            }
            message = .resetOutput(outputID: outputID, ranges: ranges)
        case .finishOutput:
            message = .finishOutput(outputID: try r.u32("finishOutput.outputID"))
        case .readFrames:
            let assetID = try r.u32("readFrames.assetID")
            let trackID = try r.u32("readFrames.trackID")
            let n = try r.count("readFrames.count", max: Wire.maxFrameRequests)
            guard n > 0 else { throw TrackError(.protocolViolation, "readFrames.count: 0; at least one frame is required") }
            var frames: [FrameRequest] = []
            frames.reserveCapacity(n)
            for _ in 0..<n {
                switch try r.u8("readFrames.kind") {
                case 0:
                    frames.append(.time(try r.time("readFrames.time")))
                case 1:
                    frames.append(.index(try r.u64("readFrames.index")))
                    guard try r.u64("readFrames.reserved") == 0 else {
                        throw TrackError(.protocolViolation, "readFrames.reserved: must be 0")
                    }
                case let kind:
                    throw TrackError(.protocolViolation, "readFrames.kind: \(kind) is neither 0 (time) nor 1 (index)")
                }
            }
            message = .readFrames(ReadFrames(assetID: assetID, trackID: trackID, frames: frames,
                                             settings: try decodeDictionary(&r, depth: 1)))
        case .framesResolved:
            let outputID = try r.u32("framesResolved.outputID")
            let n = try r.count("framesResolved.count", max: Wire.maxFrameRequests)
            var frames: [ResolvedFrame] = []
            for _ in 0..<n {
                frames.append(ResolvedFrame(index: try r.u64("framesResolved.index"),
                                            presentationTime: try r.time("framesResolved.pts")))
            }
            message = .framesResolved(outputID: outputID, frames: frames)
        case .rangeEnded:
            message = .rangeEnded(outputID: try r.u32("rangeEnded.outputID"))
        case .releaseSlots:
            let outputID = try r.u32("releaseSlots.outputID")
            let n = try r.count("releaseSlots.count", max: Wire.maxSlotsPerRelease)
            var slots: [SlotRef] = []
            slots.reserveCapacity(n)
            for _ in 0..<n { slots.append(SlotRef(poolID: try r.u32("releaseSlots.poolID"), slot: try r.u32("releaseSlots.slot"))) }
            message = .releaseSlots(outputID: outputID, slots: slots)
        case .generateImage:
            message = .generateImage(GenerateImage(assetID: try r.u32("generateImage.assetID"), trackID: try r.u32("generateImage.trackID"),
                                                   time: try r.time("generateImage.time"), imageFormat: try r.fourCC("generateImage.format")))
        case .getStatus:
            message = .getStatus
        case .ack:
            message = .ack
        case .helloReply:
            guard try r.u32("helloReply.magic") == Wire.magic else {
                throw TrackError(.protocolViolation, "helloReply: magic is not \"TRKD\"")
            }
            message = .helloReply(HelloReply(version: try r.u16("helloReply.version"), maxMessageSize: try r.u32("helloReply.maxMessageSize"),
                                             maxFds: try r.u16("helloReply.maxFds"), workerPID: try r.u32("helloReply.workerPID"),
                                             serverVersion: try r.string("helloReply.serverVersion")))
        case .assetOpened:
            let assetID = try r.u32("assetOpened.assetID")
            let duration = try r.time("assetOpened.duration")
            let n = try r.count("assetOpened.trackCount", max: Wire.maxTracks)
            var tracks: [TrackDescription] = []
            for _ in 0..<n { tracks.append(try TrackDescription.decode(&r)) }
            message = .assetOpened(AssetOpened(assetID: assetID, duration: duration, tracks: tracks))
        case .outputCreated:
            let outputID = try r.u32("outputCreated.outputID")
            let mediaType = MediaType(rawValue: try r.u8("outputCreated.mediaType")) ?? .other
            message = .outputCreated(OutputCreated(outputID: outputID, mediaType: mediaType, format: try r.fourCC("outputCreated.format"),
                                                   width: try r.u32("outputCreated.width"), height: try r.u32("outputCreated.height"),
                                                   codecConfig: try r.blob("outputCreated.codecConfig", max: Wire.maxCodecConfig)))
        case .poolAdded:
            message = .poolAdded(PoolAdded(outputID: try r.u32("poolAdded.outputID"), poolID: try r.u32("poolAdded.poolID"),
                                           slotCount: try r.u32("poolAdded.slotCount"), slotSize: try r.u64("poolAdded.slotSize")))
        case .poolRemoved:
            message = .poolRemoved(outputID: try r.u32("poolRemoved.outputID"), poolID: try r.u32("poolRemoved.poolID"))
        case .sample:
            let outputID = try r.u32("sample.outputID")
            let slot = SlotRef(poolID: try r.u32("sample.poolID"), slot: try r.u32("sample.slot"))
            let length = try r.u64("sample.length")
            let pts = try r.time("sample.pts"), dts = try r.time("sample.dts"), duration = try r.time("sample.duration")
            let flags = try r.u32("sample.flags")
            let format = try r.fourCC("sample.format")
            let width = try r.u32("sample.width"), height = try r.u32("sample.height")
            let color = Colorimetry(range: try r.u8("sample.range"), matrix: try r.u8("sample.matrix"),
                                    primaries: try r.u8("sample.primaries"), transfer: try r.u8("sample.transfer"))
            let planeCount = Int(try r.u8("sample.planeCount"))
            guard planeCount <= Wire.maxPlanes else {
                throw TrackError(.protocolViolation, "sample.planeCount: \(planeCount) exceeds \(Wire.maxPlanes)")
            }
            var planes: [PlaneLayout] = []
            for _ in 0..<planeCount {
                planes.append(PlaneLayout(offset: try r.u64("plane.offset"), bytesPerRow: try r.u32("plane.bytesPerRow"),
                                          rowBytes: try r.u32("plane.rowBytes"), height: try r.u32("plane.height")))
            }
            let frameCount = try r.u32("sample.frameCount")
            message = .sample(Sample(outputID: outputID, slot: slot, length: length, presentationTime: pts, decodeTime: dts,
                                     duration: duration, flags: flags, format: format, width: width, height: height,
                                     colorimetry: color, planes: planes, frameCount: frameCount))
        case .outputFinished:
            let outputID = try r.u32("outputFinished.outputID")
            let rawStatus = try r.u8("outputFinished.status")
            guard let status = OutputStatus(rawValue: rawStatus) else {
                throw TrackError(.protocolViolation, "outputFinished.status: \(rawStatus) is not 2, 3 or 4")
            }
            message = .outputFinished(OutputFinished(outputID: outputID, status: status, code: try r.i32("outputFinished.code"),
                                                     message: try r.string("outputFinished.message")))
        case .image:
            message = .image(ImageReady(actualTime: try r.time("image.actualTime"), width: try r.u32("image.width"),
                                        height: try r.u32("image.height"), length: try r.u64("image.length")))
        case .status:
            message = .status(StatusReport(
                workerPID: try r.u32("status.workerPID"), supervisorPID: try r.u32("status.supervisorPID"),
                supervisorUptimeMs: try r.u64("status.uptime"), connectionsAccepted: try r.u64("status.accepted"),
                activeConnections: try r.u32("status.active"), workerCrashes: try r.u64("status.crashes"),
                openAssets: try r.u32("status.assets"), activeOutputs: try r.u32("status.outputs"),
                samplesSent: try r.u64("status.samples"), bytesCopied: try r.u64("status.copied"),
                daemonSamplesSent: try r.u64("status.daemonSamples"), daemonBytesCopied: try r.u64("status.daemonCopied"),
                daemonBytesShared: try r.u64("status.daemonShared"),
                gstreamerVersion: try r.string("status.gstreamerVersion")))
        case .error:
            let code = try r.i32("error.code")
            let text = try r.string("error.message")
            message = .error(TrackError(rawCode: code, message: text))
        }
        try r.expectEnd("\(type)")
        return message
    }

    // Settings values: a tag byte, then the value. See docs/PROTOCOL.md § Settings.
    static func encodeValue(_ v: SettingValue, into w: inout ByteWriter) {
        switch v {
        case .int(let i): w.u8(1); w.i64(i)
        case .double(let d): w.u8(2); w.f64(d)
        case .bool(let b): w.u8(3); w.bool(b)
        case .string(let s): w.u8(4); w.string(s)
        case .array(let a):
            w.u8(5)
            w.u16(UInt16(min(a.count, Wire.maxSettingsItems)))
            for e in a.prefix(Wire.maxSettingsItems) { encodeValue(e, into: &w) }
        case .dictionary(let d): w.u8(6); encodeDictionary(d, into: &w)
        }
    }

    static func encodeDictionary(_ d: [String: SettingValue], into w: inout ByteWriter) {
        let keys = d.keys.sorted().prefix(Wire.maxSettingsItems)
        w.u16(UInt16(keys.count))
        for k in keys {
            w.string(k)
            encodeValue(d[k]!, into: &w)
        }
    }

    /// `depth` is the nesting depth of the container that holds this value (the top-level dictionary is 1).
    /// Every array or dictionary value is one level deeper than its container; none may be deeper than
    /// `Wire.maxSettingsDepth`.
    static func decodeValue(_ r: inout ByteReader, depth: Int) throws(TrackError) -> SettingValue {
        switch try r.u8("settings.tag") {
        case 1: return .int(try r.i64("settings.int"))
        case 2: return .double(try r.f64("settings.double"))
        case 3: return .bool(try r.bool("settings.bool"))
        case 4: return .string(try r.string("settings.string"))
        case 5:
            guard depth + 1 <= Wire.maxSettingsDepth else {
                throw TrackError(.protocolViolation, "settings: nesting deeper than \(Wire.maxSettingsDepth)")
            }
            let n = try r.count("settings.arrayCount", max: Wire.maxSettingsItems)
            var a: [SettingValue] = []
            for _ in 0..<n { a.append(try decodeValue(&r, depth: depth + 1)) }
            return .array(a)
        case 6: return .dictionary(try decodeDictionary(&r, depth: depth + 1))
        case let t: throw TrackError(.protocolViolation, "settings: unknown value tag \(t)")
        }
    }

    static func decodeDictionary(_ r: inout ByteReader, depth: Int) throws(TrackError) -> [String: SettingValue] {
        guard depth <= Wire.maxSettingsDepth else {
            throw TrackError(.protocolViolation, "settings: nesting deeper than \(Wire.maxSettingsDepth)")
        }
        let n = try r.count("settings.dictionaryCount", max: Wire.maxSettingsItems)
        var d: [String: SettingValue] = [:]
        for _ in 0..<n {
            let key = try r.string("settings.key")
            guard d[key] == nil else { throw TrackError(.protocolViolation, "settings: key \"\(key)\" appears twice") }
            d[key] = try decodeValue(&r, depth: depth)
        }
        return d
    }
}

/// A complete frame taken off the stream: its header, the decoded message, and the descriptors it carried.
public struct ReceivedFrame: Sendable {
    public var requestID: UInt32
    public var message: Message
    public var fds: [Int32]
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
