import CGStreamer
import CGstShim
import TrackdProtocol
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A decoded frame that already lives in shared memory: a memfd of `mapSize` bytes, the frame at its offset 0.
/// Its descriptor is asked for when an output announces it (PulledSample.sharedDescriptor).
public struct SharedMemory: Sendable {
    /// Names the memory for its whole life (TrackPipeline.takeFreedSharedMemories reports it when freed).
    public var id: UInt32
    public var mapSize: Int
}

/// How a sample's bytes are written into a slot (PulledSample.copyBytes). One case per way; the sample makers
/// (SampleMakers.swift, AudioSamples.swift) choose it.
indirect enum CopyPlan {
    /// Bytes [start, end) of each of `rows` rows (from `offset`, `stride` apart) that a copy sets to zero.
    struct RowPadding {
        var offset: Int, stride: Int, start: Int, end: Int, rows: Int
    }

    /// Interleaved audio with AVChannelLayoutKey: the copied frames are reordered in place (gst_audio_reorder_channels).
    struct Reorder {
        var format: GstAudioFormat
        var from: [GstAudioChannelPosition]
        var to: [GstAudioChannelPosition]
    }

    /// The buffer's bytes from 0 (`size` of them).
    case bytes
    /// v210: the bytes, then each row's padding cleared (videoconvert leaves whatever the recycled buffer held).
    case bytesClearingPadding(RowPadding)
    /// x420/xf20 from a source of the other range: the bytes, then the P010 frame's range converted in place.
    case bytesConvertingRange(SwiftGstVideoLayout, SwiftGstRangeConversion)
    /// 420v/420f from the decoder's I420/NV12: written as tight NV12, the range converted on the way
    /// (swift_gst_copy_as_nv12).
    case tightNV12(SwiftGstVideoLayout, SwiftGstRangeConversion)
    /// 420v/420f made NV12 in its memfd: the CbCr plane is past the buffer's size, in the memory's tail, so the copy
    /// reads the memory rather than the buffer (swift_gst_memfd_copy).
    case memoryWithTail
    /// Decoded audio: these byte ranges of the buffer, each to its place (nil: the buffer from 0), then the channels
    /// reordered when asked.
    case audio(pieces: [(from: Int, to: Int, length: Int)]?, reorder: Reorder?)
    /// kCVPixelBufferBytesPerRowAlignmentKey: the sample as `inner` writes it (`innerSize` bytes, planes `from`),
    /// then each row moved to the aligned layout (PulledSample.aligningRows), the padding zeroed.
    case restride(inner: CopyPlan, innerSize: Int, from: [PlaneLayout])
}

/// What a sample maker says about a sample besides its bytes.
struct SampleLayout {
    /// Pixel format code (decode) or codec code (passthrough); "lpcm" for audio.
    var format: FourCC
    var width: UInt32 = 0
    var height: UInt32 = 0
    var colorimetry = Colorimetry()
    /// Offsets from the start of what copyBytes writes.
    var planes: [PlaneLayout]
    /// The bytes copyBytes writes (nil: the buffer's size).
    var size: Int?
    /// Decoded audio: frames (one sample per channel); 0 otherwise.
    var frameCount: UInt32 = 0
}

/// One sample pulled from appsink; holds a ref on the GstSample until deinit. Times are stream time (the asset's
/// timeline), in nanoseconds.
public final class PulledSample: @unchecked Sendable {
    // @unchecked: immutable; the GstSample and its buffer are read-only once pulled, and refcounted thread-safely.
    let sample: GstRef<GstSampleObject>
    private let copy: CopyPlan
    /// Nanosecond timescale; .invalid when GStreamer has no timestamp.
    public let presentationTime: MediaTime
    public let decodeTime: MediaTime
    public let duration: MediaTime
    /// !GST_BUFFER_FLAG_DELTA_UNIT
    public let isSync: Bool
    /// GST_BUFFER_FLAG_DISCONT: the first buffer after a discontinuity (a seek, a gap).
    public let isDiscontinuity: Bool
    /// GST_BUFFER_FLAG_DROPPABLE: no other buffer depends on this one.
    public let isDroppable: Bool
    /// Pixel format code (decode) or codec code (passthrough).
    public let format: FourCC
    public let width: UInt32
    public let height: UInt32
    public let colorimetry: Colorimetry
    /// Offsets from the start of what copyBytes writes. Passthrough: one plane covering the whole sample.
    public let planes: [PlaneLayout]
    /// The bytes copyBytes writes: gst_buffer_get_size, except for 420v/420f (tight NV12, see swift_gst_nv12_size).
    public let size: Int
    /// Decoded audio: frames (one sample per channel); 0 otherwise.
    public let frameCount: UInt32
    /// Passthrough: the parts of the stored sample the track's edit list leaves out (Apple's TrimDurationAtStart /
    /// TrimDurationAtEnd), nil when none.
    public let trims: (atStart: MediaTime, atEnd: MediaTime)?
    /// Zero-copy: the frame is already in a memfd memory (`size` bytes from its offset 0); keeping this object
    /// keeps the memory out of the buffer pool, so nothing writes it while the client reads.
    public let shared: SharedMemory?
    /// The allocator of `shared`, which gives its descriptor.
    private let sharedAllocator: SharedAllocator?

    /// `shared`: the memfd memory the frame is in and its allocator, or nil.
    /// `timing`: trimmed audio's exact times, instead of the buffer's; `decode`: the decode time, instead of theirs. `restorer`: undoes the decoder's clipping of
    /// the first frame after an accurate seek. `displayEnd`: until when the frame at a stream time is displayed (the
    /// frame index's rule, FrameGate): the duration when it knows.
    init(_ sample: GstRef<GstSampleObject>, layout: SampleLayout, copy: CopyPlan,
         shared: (memory: SharedMemory, allocator: SharedAllocator)? = nil, timing: (pts: MediaTime, duration: MediaTime)? = nil,
         restorer: ClipRestorer? = nil, displayEnd: ((Int64) -> Int64?)? = nil,
         trims: (atStart: MediaTime, atEnd: MediaTime)? = nil, decode: MediaTime? = nil) {
        self.trims = trims
        self.sample = sample
        self.copy = copy
        self.shared = shared?.memory
        sharedAllocator = shared?.allocator
        // Buffer timestamps are in the demuxer's media time; the sample's segment maps them to the asset timeline
        // (edit lists: an H.264 track with B-frames starts at PTS 0 there, not at the composition offset).
        let segment = sample.segment
        var pts = sample.pts, length = sample.duration
        if let restorer { (pts, length) = restorer.restore(pts: pts, duration: length, segment: segment) }
        presentationTime = timing?.pts ?? streamTime(pts, segment: segment)
        let dts = streamTime(sample.dts, segment: segment)
        // `decode`: a decode time the demuxer does not give (MatroskaPacketTimes); trimmed audio: DTS = PTS.
        decodeTime = decode ?? (timing != nil && dts.isValid ? timing!.pts : dts)
        if timing == nil, let ns = presentationTime.nanoseconds, let end = displayEnd?(ns), end > ns {
            duration = .nanoseconds(end - ns)  // decoded video: displayed until the next frame (FrameGate)
        } else {
            duration = timing?.duration ?? mediaTime(length)
        }
        isSync = !sample.isDeltaUnit
        let flags = sample.flags
        isDiscontinuity = flags & GST_BUFFER_FLAG_DISCONT.rawValue != 0
        isDroppable = flags & GST_BUFFER_FLAG_DROPPABLE.rawValue != 0
        format = layout.format
        width = layout.width
        height = layout.height
        colorimetry = layout.colorimetry
        planes = layout.planes
        size = layout.size ?? sample.size
        frameCount = layout.frameCount
    }

    /// A descriptor of `shared`'s memfd, to send in PoolAdded when an output announces the memory (the caller
    /// closes it); nil when the allocator has none left for it (its own went to an earlier output) or this sample
    /// is not in shared memory: the frame is copied then.
    public func sharedDescriptor() -> FileDescriptor? {
        sharedAllocator?.descriptor(sample)
    }

    /// The first `count` bytes of the stored buffer (fewer when it is shorter).
    func leadingBytes(_ count: Int) -> [UInt8] { sample.bytes(count: count) }

    /// Copies the whole sample (`size` bytes) to `destination`, as its CopyPlan says.
    public func copyBytes(to destination: UnsafeMutableRawPointer) {
        unsafe write(copy, size: size, to: destination)
    }

    /// The same frame with every plane's bytesPerRow and offset a multiple of `alignment`
    /// (kCVPixelBufferBytesPerRowAlignmentKey): itself when they already are, else a copy that moves each row
    /// (never zero-copy: the frame's own memory has GStreamer's layout). Rows keep their visible bytes; the padding
    /// after them is zero.
    public func aligningRows(to alignment: Int) -> PulledSample {
        let a = UInt64(max(alignment, 1))
        guard a > 1, !planes.allSatisfy({ UInt64($0.bytesPerRow) % a == 0 && $0.offset % a == 0 }) else { return self }
        var aligned: [PlaneLayout] = []
        var end: UInt64 = 0
        for plane in planes {
            let offset = (end + a - 1) / a * a
            let stride = (UInt64(plane.rowBytes) + a - 1) / a * a
            aligned.append(PlaneLayout(offset: offset, bytesPerRow: UInt32(clamping: stride), rowBytes: plane.rowBytes,
                                       height: plane.height))
            end = offset + stride * UInt64(plane.height)
        }
        return PulledSample(restriding: self, planes: aligned, size: Int(end))
    }

    /// aligningRows' copy of `original`.
    private init(restriding original: PulledSample, planes: [PlaneLayout], size: Int) {
        sample = original.sample
        copy = .restride(inner: original.copy, innerSize: original.size, from: original.planes)
        presentationTime = original.presentationTime
        decodeTime = original.decodeTime
        duration = original.duration
        isSync = original.isSync
        isDiscontinuity = original.isDiscontinuity
        isDroppable = original.isDroppable
        format = original.format
        width = original.width
        height = original.height
        colorimetry = original.colorimetry
        self.planes = planes
        self.size = size
        frameCount = original.frameCount
        trims = original.trims
        shared = nil
        sharedAllocator = nil
    }

    /// The copy engine: writes the buffer into `destination` (which holds `size` bytes) as `copy` says. Together with
    /// copyBytes, the one place a sample's bytes are touched through pointers.
    private func write(_ copy: CopyPlan, size: Int, to destination: UnsafeMutableRawPointer) {
        let buffer = unsafe sample.buffer
        switch copy {
        case .bytes:
            _ = unsafe gst_buffer_extract(buffer, 0, destination, gsize(size))
        case .bytesClearingPadding(let p):
            _ = unsafe gst_buffer_extract(buffer, 0, destination, gsize(size))
            for row in 0..<p.rows {
                let start = p.offset + row * p.stride + p.start
                let end = min(p.offset + row * p.stride + p.end, size)
                if start < end { unsafe (destination + start).initializeMemory(as: UInt8.self, repeating: 0, count: end - start) }
            }
        case .bytesConvertingRange(var layout, let range):
            _ = unsafe gst_buffer_extract(buffer, 0, destination, gsize(size))
            _ = unsafe swift_gst_p010_convert_range(destination, gsize(size), &layout, range)
        case .tightNV12(var layout, let range):
            _ = unsafe swift_gst_copy_as_nv12(buffer, &layout, destination, range)
        case .memoryWithTail:
            _ = unsafe swift_gst_memfd_copy(buffer, destination, gsize(size))
        case .audio(let pieces, let reorder):
            if let pieces {
                for piece in pieces {
                    _ = unsafe gst_buffer_extract(buffer, gsize(piece.from), destination + piece.to, gsize(piece.length))
                }
            } else {
                _ = unsafe gst_buffer_extract(buffer, 0, destination, gsize(size))
            }
            if let reorder {
                _ = unsafe gst_audio_reorder_channels(destination, gsize(size), reorder.format, gint(reorder.from.count),
                                               reorder.from, reorder.to)
            }
        case .restride(let inner, let innerSize, let from):
            let packed = UnsafeMutableRawPointer.allocate(byteCount: max(innerSize, 1), alignment: 64)
            defer { unsafe packed.deallocate() }
            unsafe write(inner, size: innerSize, to: packed)
            unsafe destination.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            for (source, target) in zip(from, planes) {
                for row in 0..<Int(source.height) {
                    let from = Int(source.offset) + row * Int(source.bytesPerRow)
                    guard from + Int(source.rowBytes) <= innerSize else { break }
                    unsafe (destination + Int(target.offset) + row * Int(target.bytesPerRow))
                        .copyMemory(from: packed + from, byteCount: Int(source.rowBytes))
                }
            }
        }
    }
}
