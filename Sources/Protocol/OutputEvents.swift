// Worker → client output events (docs/PROTOCOL.md §9, "output event"; §12 tells their order): each type with its
// wire layout beside it.

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

extension PoolAdded: WireMessage {
    static let messageType = MessageType.poolAdded
    var asMessage: Message { .poolAdded(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.u32(poolID)
        w.u32(slotCount)
        w.u64(slotSize)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> PoolAdded {
        PoolAdded(outputID: try r.u32("poolAdded.outputID"), poolID: try r.u32("poolAdded.poolID"),
                  slotCount: try r.u32("poolAdded.slotCount"), slotSize: try r.u64("poolAdded.slotSize"))
    }
}

/// `Message.poolRemoved`'s payload.
struct PoolRemoved: WireMessage {
    static let messageType = MessageType.poolRemoved
    var outputID: UInt32
    var poolID: UInt32
    var asMessage: Message { .poolRemoved(outputID: outputID, poolID: poolID) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.u32(poolID)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> PoolRemoved {
        PoolRemoved(outputID: try r.u32("poolRemoved.outputID"), poolID: try r.u32("poolRemoved.poolID"))
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

extension SlotRef {
    func encode(into w: inout ByteWriter) {
        w.u32(poolID)
        w.u32(slot)
    }

    /// `poolField` and `slotField` name the fields in errors (they differ between Sample and ReleaseSlots).
    static func decode(from r: inout ByteReader, _ poolField: StaticString, _ slotField: StaticString) throws(TrackError) -> SlotRef {
        SlotRef(poolID: try r.u32(poolField), slot: try r.u32(slotField))
    }
}

public struct Sample: Sendable, Equatable {
    public static let flagSync: UInt32 = 1
    public static let flagHasDecodeTime: UInt32 = 2
    /// The first sample after a discontinuity in the stream (GST_BUFFER_FLAG_DISCONT): after a seek or a gap.
    public static let flagDiscontinuity: UInt32 = 4
    /// No other sample depends on this one (GST_BUFFER_FLAG_DROPPABLE): IsDependedOnByOthers is false.
    public static let flagDroppable: UInt32 = 8
    /// Trim durations follow `frameCount` (Apple's kCMSampleBufferAttachmentKey_TrimDurationAtStart / …AtEnd): the
    /// parts of a stored sample that the track's edit list leaves out (AAC priming, the last packet's padding).
    public static let flagTrims: UInt32 = 16

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
    /// Passthrough (flag 16): how much of the sample's start and end a decoder's output must drop; nil without
    /// the flag (nothing to trim).
    public var trims: (atStart: MediaTime, atEnd: MediaTime)?

    public init(outputID: UInt32, slot: SlotRef, length: UInt64, presentationTime: MediaTime, decodeTime: MediaTime,
                duration: MediaTime, flags: UInt32, format: FourCC, width: UInt32, height: UInt32,
                colorimetry: Colorimetry, planes: [PlaneLayout], frameCount: UInt32 = 0,
                trims: (atStart: MediaTime, atEnd: MediaTime)? = nil) {
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
        self.trims = trims
        if trims != nil { self.flags |= Sample.flagTrims } else { self.flags &= ~Sample.flagTrims }
    }

    public var isSync: Bool { flags & Sample.flagSync != 0 }

    public static func == (a: Sample, b: Sample) -> Bool {
        a.outputID == b.outputID && a.slot == b.slot && a.length == b.length && a.presentationTime == b.presentationTime
            && a.decodeTime == b.decodeTime && a.duration == b.duration && a.flags == b.flags && a.format == b.format
            && a.width == b.width && a.height == b.height && a.colorimetry == b.colorimetry && a.planes == b.planes
            && a.frameCount == b.frameCount && a.trims?.atStart == b.trims?.atStart && a.trims?.atEnd == b.trims?.atEnd
    }
}

extension Sample: WireMessage {
    static let messageType = MessageType.sample
    var asMessage: Message { .sample(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        slot.encode(into: &w)
        w.u64(length)
        w.time(presentationTime)
        w.time(decodeTime)
        w.time(duration)
        w.u32(flags)
        w.fourCC(format)
        w.u32(width)
        w.u32(height)
        w.record(colorimetry.encode(into:))
        // The plane count is a single byte.
        let sent = planes.prefix(Wire.maxPlanes)
        w.u8(UInt8(sent.count))
        for plane in sent { w.record(plane.encode(into:)) }
        w.u32(frameCount)
        if let trims {
            w.time(trims.atStart)
            w.time(trims.atEnd)
        }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> Sample {
        let outputID = try r.u32("sample.outputID")
        let slot = try SlotRef.decode(from: &r, "sample.poolID", "sample.slot")
        let length = try r.u64("sample.length")
        let pts = try r.time("sample.pts"), dts = try r.time("sample.dts"), duration = try r.time("sample.duration")
        let flags = try r.u32("sample.flags")
        let format = try r.fourCC("sample.format")
        let width = try r.u32("sample.width"), height = try r.u32("sample.height")
        let color = try Colorimetry.decodeRecord(from: &r, "sample.colorimetry")
        let planeCount = Int(try r.u8("sample.planeCount"))
        guard planeCount <= Wire.maxPlanes else {
            throw TrackError(.protocolViolation, "sample.planeCount: \(planeCount) exceeds \(Wire.maxPlanes)")
        }
        let planes = try r.repeated(planeCount) { r throws(TrackError) in try r.record("plane.size", PlaneLayout.decode(from:)) }
        let frameCount = try r.u32("sample.frameCount")
        var trims: (MediaTime, MediaTime)?
        if flags & Sample.flagTrims != 0 { trims = (try r.time("sample.trimAtStart"), try r.time("sample.trimAtEnd")) }
        return Sample(outputID: outputID, slot: slot, length: length, presentationTime: pts, decodeTime: dts,
                      duration: duration, flags: flags, format: format, width: width, height: height,
                      colorimetry: color, planes: planes, frameCount: frameCount, trims: trims)
    }
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
    /// Stored samples of the track this output read that it could not deliver (revision 1; 0 before): ones the file
    /// lists but does not hold whole, and ones the decoder was given and made nothing of (damaged). Any status.
    public var samplesLost: UInt64

    public init(outputID: UInt32, status: OutputStatus, code: Int32 = 0, message: String = "", samplesLost: UInt64 = 0) {
        self.outputID = outputID
        self.status = status
        self.code = code
        self.message = message
        self.samplesLost = samplesLost
    }
}

extension OutputFinished: WireMessage {
    static let messageType = MessageType.outputFinished
    var asMessage: Message { .outputFinished(self) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.u8(status.rawValue)
        w.i32(code)
        w.string(message)
        w.u64(samplesLost)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> OutputFinished {
        let outputID = try r.u32("outputFinished.outputID")
        let rawStatus = try r.u8("outputFinished.status")
        guard let status = OutputStatus(rawValue: rawStatus) else {
            throw TrackError(.protocolViolation, "outputFinished.status: \(rawStatus) is not 2, 3 or 4")
        }
        let code = try r.i32("outputFinished.code")
        let message = try r.string("outputFinished.message")
        return OutputFinished(outputID: outputID, status: status, code: code, message: message,
                              samplesLost: r.atEnd ? 0 : try r.u64("outputFinished.samplesLost"))
    }
}

/// `Message.rangeEnded`'s payload.
struct RangeEnded: IDMessage {
    static let messageType = MessageType.rangeEnded
    static let field: StaticString = "rangeEnded.outputID"
    var id: UInt32
    var asMessage: Message { .rangeEnded(outputID: id) }
}

/// `Message.outputStalled`'s payload: sent once each time an output begins waiting because the client holds every
/// slot it may hold; `held` is how many of the output's samples the client holds then.
struct OutputStalled: WireMessage {
    static let messageType = MessageType.outputStalled
    var outputID: UInt32
    var held: UInt32
    var asMessage: Message { .outputStalled(outputID: outputID, held: held) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.u32(held)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> OutputStalled {
        OutputStalled(outputID: try r.u32("outputStalled.outputID"), held: try r.u32("outputStalled.held"))
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

/// `Message.framesResolved`'s payload.
struct FramesResolved: WireMessage {
    static let messageType = MessageType.framesResolved
    var outputID: UInt32
    var frames: [ResolvedFrame]
    var asMessage: Message { .framesResolved(outputID: outputID, frames: frames) }

    func encode(into w: inout ByteWriter) {
        w.u32(outputID)
        w.list(frames, max: Wire.maxFrameRequests) { w, frame in
            w.record { w in
                w.u64(frame.index)
                w.time(frame.presentationTime)
            }
        }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> FramesResolved {
        FramesResolved(outputID: try r.u32("framesResolved.outputID"),
                       frames: try r.list("framesResolved.count", max: Wire.maxFrameRequests) { r throws(TrackError) in
                           try r.record("framesResolved.size") { r throws(TrackError) in
                               ResolvedFrame(index: try r.u64("framesResolved.index"),
                                             presentationTime: try r.time("framesResolved.pts"))
                           }
                       })
    }
}
