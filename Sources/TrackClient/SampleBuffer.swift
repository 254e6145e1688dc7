import TrackdProtocol

/// One sample, like a `CMSampleBuffer` (with its `CVPixelBuffer` for decoded video): timing, format, plane
/// layout and the bytes.
///
/// **Ownership.** The bytes are either copied into this process (the output's `alwaysCopiesSampleData`, the
/// default) or a read-only view of a slot in the worker's sealed shared-memory pool. A shared slot belongs to this
/// object: the worker does not reuse it until the object is released (its deinit sends ReleaseSlots), so drop
/// buffers you are done with — a reader whose slots are all held waits. The bytes passed to
/// ``withUnsafeBytes(_:)`` must not escape the closure; ``packedBytes()`` copies them.
///
/// **Thread-safety.** Immutable after creation, hence `Sendable` (checked by hand: the shared memory is mapped
/// read-only and the worker does not write a slot it has not got back). Buffers may be passed to and read from
/// any thread, and released on any thread.
public final class SampleBuffer: @unchecked Sendable {
    // @unchecked: `storage` is immutable after init; a shared slot is read-only memory that the worker does not
    // touch until this object's deinit releases it.
    /// When the sample is presented (`CMSampleBufferGetPresentationTimeStamp`), on the track's timeline.
    public let presentationTimeStamp: MediaTime
    /// Valid for passthrough samples (stored order); invalid when decoded.
    public let decodeTimeStamp: MediaTime
    /// How long the sample is presented (`CMSampleBufferGetDuration`).
    public let duration: MediaTime
    /// A sync sample (keyframe); decoded frames are all sync.
    public let isSync: Bool
    /// kCMSampleAttachmentKey_DependsOnOthers: decoding needs other samples (not a sync sample).
    public var dependsOnOthers: Bool { !isSync }
    /// kCMSampleAttachmentKey_IsDependedOnByOthers where known: false when the demuxer or parser marked the sample
    /// droppable (no other sample refers to it), nil when unknown.
    public let isDependedOnByOthers: Bool?
    /// The first sample after a discontinuity: the start of the read, after a seek (each range of
    /// reset(forReadingTimeRanges:)) or after a gap in the stream.
    public let isDiscontinuity: Bool
    /// The track's media type.
    public let mediaType: MediaType
    /// Decoded: the pixel format's code (420v, BGRA …). Passthrough: the codec's (avc1 …).
    public let format: FourCC
    /// Video: the picture width in pixels (`CVPixelBufferGetWidth`); 0 for audio.
    public let width: UInt32
    /// Video: the picture height in pixels (`CVPixelBufferGetHeight`); 0 for audio.
    public let height: UInt32
    /// Video: matrix, primaries, transfer function and range (the pixel buffer's color attachments).
    public let colorimetry: Colorimetry
    /// Passthrough: the codec configuration (avcC …). Empty for decoded samples.
    public let codecConfig: [UInt8]
    /// Plane layout within `bytes`: offset, bytesPerRow (stride), rowBytes (visible bytes per row), height.
    public let planes: [PlaneLayout]
    /// The number of bytes ``withUnsafeBytes(_:)`` passes (`CMSampleBufferGetTotalSampleSize`), padding
    /// included.
    public let dataLength: Int
    /// Decoded audio: the number of frames (CMSampleBufferGetNumSamples: one sample of every channel). Video and
    /// passthrough samples: 1.
    public let numberOfSamples: Int
    /// Passthrough: how much of the sample's start a decoder's output must drop (`kCMSampleBufferAttachmentKey_
    /// TrimDurationAtStart`: encoder priming before the track's edit), nil when nothing.
    public let trimDurationAtStart: MediaTime?
    /// Passthrough: how much of the sample's end must be dropped (`kCMSampleBufferAttachmentKey_TrimDurationAtEnd`:
    /// the last packet's padding after the edit), nil when nothing.
    public let trimDurationAtEnd: MediaTime?

    /// The attachment keys ``attachment(forKey:)`` knows: Core Media's constants' string values.
    public static let trimDurationAtStartKey = "TrimDurationAtStart"
    public static let trimDurationAtEndKey = "TrimDurationAtEnd"

    /// A sample buffer attachment, as `CMGetAttachment(sbuf, key, nil)` gives it: the trim durations under
    /// ``trimDurationAtStartKey`` and ``trimDurationAtEndKey`` (absent, nil, when zero — Core Media attaches only
    /// what trims something).
    public func attachment(forKey key: String) -> MediaTime? {
        let value = switch key {
        case Self.trimDurationAtStartKey: trimDurationAtStart
        case Self.trimDurationAtEndKey: trimDurationAtEnd
        default: MediaTime?.none
        }
        return value.flatMap { $0.value != 0 ? $0 : nil }
    }

    private enum Storage {
        case owned([UInt8])
        case shared(SharedMapping, offset: Int, slot: SlotRef, channel: OutputChannel)
    }
    private let storage: Storage

    init(sample: Sample, mediaType: MediaType, codecConfig: [UInt8], mapping: SharedMapping, offset: Int,
         copy: Bool, channel: OutputChannel, decodedAudio: Bool = false) {
        presentationTimeStamp = sample.presentationTime
        decodeTimeStamp = sample.decodeTime
        duration = sample.duration
        isSync = sample.isSync
        isDependedOnByOthers = sample.flags & Sample.flagDroppable != 0 ? false : nil
        isDiscontinuity = sample.flags & Sample.flagDiscontinuity != 0
        self.mediaType = mediaType
        format = sample.format
        width = sample.width
        height = sample.height
        colorimetry = sample.colorimetry
        self.codecConfig = codecConfig
        planes = sample.planes
        dataLength = Int(sample.length)
        numberOfSamples = decodedAudio ? Int(sample.frameCount) : 1
        trimDurationAtStart = sample.trims.flatMap { $0.atStart.value != 0 ? $0.atStart : nil }
        trimDurationAtEnd = sample.trims.flatMap { $0.atEnd.value != 0 ? $0.atEnd : nil }
        if copy {
            storage = .owned(mapping.bytes(at: offset, count: dataLength))
            channel.release(sample.slot)
        } else {
            storage = .shared(mapping, offset: offset, slot: sample.slot, channel: channel)
        }
    }

    deinit {
        if case .shared(_, _, let slot, let channel) = storage { channel.release(slot) }
    }

    /// The sample's bytes (all planes, with any row padding; ``planes`` says where each plane is), valid only
    /// inside `body`. With zero-copy this is the shared slot itself: no copy is made.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .owned(let bytes):
            return try bytes.withUnsafeBytes(body)
        case .shared(let mapping, let offset, _, _):
            return try body(UnsafeRawBufferPointer(start: mapping.base + offset, count: dataLength))
        }
    }

    /// Calls `body` with each visible row of each plane in order: rows packed tightly (no padding), the bytes
    /// `trackctl read --md5` hashes. Passthrough samples are one row of all their bytes.
    public func forEachPackedRow(_ body: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeBytes { all in
            if planes.isEmpty {
                body(all)
                return
            }
            for plane in planes {
                for row in 0..<Int(plane.height) {
                    let start = Int(plane.offset) + row * Int(plane.bytesPerRow)
                    body(UnsafeRawBufferPointer(rebasing: all[start..<start + Int(plane.rowBytes)]))
                }
            }
        }
    }

    /// `forEachPackedRow` with each row as a `RawSpan`: bounds-checked, and it cannot outlive the call, so the caller
    /// needs no pointer (trackctl writes and hashes rows through it).
    public func forEachPackedSpan(_ body: (RawSpan) -> Void) {
        unsafe forEachPackedRow { row in body(unsafe RawSpan(_unsafeBytes: row)) }
    }

    /// The tightly packed bytes (see `forEachPackedRow`), copied into a new array that the caller owns.
    public func packedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(planes.reduce(0) { $0 + Int($1.rowBytes) * Int($1.height) })
        forEachPackedRow { out.append(contentsOf: $0) }
        return out
    }
}
