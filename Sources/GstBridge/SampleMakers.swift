// The second layer of the output path: what becomes of one GstSample appsink hands out. One maker per mode
// (passthrough, decoded video, decoded audio in AudioSamples.swift) decides the sample's layout, its times and its
// CopyPlan — or that it shares the frame's memfd (zero-copy). TrackPipeline.pull calls the output's maker.
import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol

/// What a maker made of one pulled GstSample.
enum MadeSample {
    case sample(PulledSample)
    /// Nothing of it is delivered (audio entirely outside the range): pull the next one.
    case skip
    /// The range ended before it (passthrough): pull reports the end until the next seek.
    case endOfRange
}

/// Turns the GstSamples of one output into PulledSamples, and keeps what that needs across seeks. Called only
/// from the pulling thread (TrackPipeline.pull and seek).
protocol SampleMaker: AnyObject {
    /// Decoded outputs seek ACCURATE: the first sample is the one shown at the range start. Passthrough seeks
    /// KEY_UNIT|SNAP_BEFORE: the first sample is the sync sample at or before the range start (what a decoder needs
    /// to show the range, as AVAssetReader returns); its maker ends the range (see PassthroughSamples).
    var seeksToKeyUnits: Bool { get }
    /// After preroll: how far the demuxer's stops must be moved later (ns); 0 but for audio (AudioSamples).
    func prerolled(sink: GstRef<GstElementObject>) -> Int64
    /// A flush-seek to `range` whose end is `stop` (stream time, ns; nil: to the end) is about to be made. Returns
    /// the stop to give the demuxer (nil: none).
    func seeking(to range: MediaTimeRange, stop: Int64?) -> Int64?
    /// Then, the position the seek starts at (stream time, ns) for a range starting at `start`: `start` but for
    /// decoded audio, which starts earlier (AudioRangePlan).
    func seekStart(_ start: Int64) -> Int64
    /// appsink reached the end of the stream (or of a range): a last sample made from what the maker still holds
    /// (decoded audio: the resampler's tail), else .skip.
    func endOfInput() -> MadeSample
    /// A sample the maker made ahead (passthrough: several stored samples for one pulled), delivered before pulling.
    func queued() -> PulledSample?
    /// Decoded audio: a range starting at the track's start needs no seek after preroll, because the maker ends the
    /// range itself (.endOfRange) instead of the demuxer's stop.
    var endsRangesItself: Bool { get }
    /// The range ended (passthrough): pull reports the end without pulling.
    var rangeEnded: Bool { get }
    /// What appsink negotiated, known after preroll.
    func negotiated(_ format: OutputFormat)
    func make(_ sample: GstRef<GstSampleObject>) -> MadeSample
    /// MPEG-PS: the range is read from the stream's beginning, without a demuxer seek (TrackPipeline.readsFromStart),
    /// after seeking(to:stop:): the maker cuts it — it keeps the segment widened to the beginning and lets out only
    /// the range's samples.
    func readingFromStart(_ range: MediaTimeRange)
    /// Decoded video, before a seek: what the decoder is given in the next range (ReadFrames; see DecodeStop).
    func arm(neededSamples: [Int64]?, lastNeededSample: Int64?)
    /// Decoded video, before a seek: the frames the next range delivers (FrameGate); an empty selection ends the
    /// range at once (rangeEnded).
    func select(_ selection: FrameSelection?)
    /// Decoded video: stored samples handed to the decoder and dropped before it, all ranges.
    var samplesDecoded: UInt64 { get }
    var samplesSkipped: UInt64 { get }
    /// Decoded outputs: stored samples the decoder was given and made nothing of (damaged), all ranges.
    var samplesUndecodable: UInt64 { get }
    /// Decoded video: frames the decoder gave, and frames converted (the others were not delivered), all ranges.
    var framesDecoded: UInt64 { get }
    var framesConverted: UInt64 { get }
    /// Zero-copy: the ids of memfd memories freed since the last call. Thread-safe.
    func takeFreedSharedMemories() -> [UInt32]
}

extension SampleMaker {
    var seeksToKeyUnits: Bool { false }
    func prerolled(sink: GstRef<GstElementObject>) -> Int64 { 0 }
    func seeking(to range: MediaTimeRange, stop: Int64?) -> Int64? { stop }
    func seekStart(_ start: Int64) -> Int64 { start }
    func endOfInput() -> MadeSample { .skip }
    func queued() -> PulledSample? { nil }
    var endsRangesItself: Bool { false }
    var rangeEnded: Bool { false }
    func negotiated(_ format: OutputFormat) {}
    func arm(neededSamples: [Int64]?, lastNeededSample: Int64?) {}
    func readingFromStart(_ range: MediaTimeRange) {}
    func select(_ selection: FrameSelection?) {}
    var samplesDecoded: UInt64 { 0 }
    var samplesSkipped: UInt64 { 0 }
    var samplesUndecodable: UInt64 { 0 }
    var framesDecoded: UInt64 { 0 }
    var framesConverted: UInt64 { 0 }
    func takeFreedSharedMemories() -> [UInt32] { [] }
}

/// Passthrough: the stored sample as it is, one plane; codec headers pushed as buffers are left out. The seek has
/// no stop: the range ends at the first sample whose decode time (PTS when there is none) is at or after its end,
/// so that every sample a frame shown before the end depends on is delivered (a demuxer's stop, by PTS, drops the
/// P-frame that the last B-frames reference). An MP4 audio track with an edit: the priming packets before the edit,
/// which qtdemux leaves out, are read from the file and delivered first (PassthroughEdit; the last packet after the
/// edit comes from StoredSampleFeeder), each sample with the trims its edit implies (Opus in MP4: its edit starts at
/// the pre-skip). Opus from Ogg and Matroska:
/// the pre-skip and end padding as trims (OpusTrims). Vorbis from Ogg and Matroska: ffmpeg's durations, and in Ogg its
/// times and end padding as a trim (VorbisPacketTimes).
final class PassthroughSamples: SampleMaker {
    private var format = OutputFormat(format: "????", width: 0, height: 0, codecConfig: [])
    /// The current range's end (stream time, ns; nil: to the end).
    private var end: Int64?
    private(set) var rangeEnded = false
    private let edit: PassthroughEdit
    /// Matroska: the decode times and durations its blocks do not state (nil for other containers).
    private let matroska: MatroskaPacketTimes?
    /// Opus: the pre-skip and end padding as trims, with ffmpeg's times (nil for other codecs).
    private var opus: OpusTrims?
    /// Vorbis from Ogg or Matroska: ffmpeg's packet durations, times and end trim (nil for other codecs).
    private var vorbis: VorbisPacketTimes?
    /// Matroska, every codec but Opus (OpusTrims): the blocks with a DiscardPadding, read at the first sample.
    private var padded: [MatroskaTail.Block]?
    private let fd: Int32, trackID: UInt32
    /// Ogg Opus: the last packet delivered (its bytes and caps, where it ends in ns), for endOfInput.
    private var oggLast: (bytes: [UInt8], caps: GstRef<GstCapsObject>?, end: Int64)?
    /// What keeps appsink from clipping the first stored samples (attached to it by PassthroughChain).
    let segment = StartSegment()
    /// The current range reads from the track's start.
    private var fromStart = true
    /// Where a range that does not start at the track's start begins (SyncStartGate): audio after a seek into the
    /// track (the demuxer starts at its own unit: an Ogg page, a Matroska cluster); MPEG-PS, every track of a range
    /// read from the stream's beginning (readingFromStart).
    private let gatedStart = GatedStart()

    init(fd: Int32, trackID: UInt32) {
        (self.fd, self.trackID) = (fd, trackID)
        edit = PassthroughEdit(fd: fd, trackID: trackID)
        matroska = MatroskaPacketTimes.forFile(fd: fd)
    }

    func negotiated(_ format: OutputFormat) {
        self.format = format
        matroska?.negotiated(format)
        // Opus in MP4: its edit skips the pre-skip and ends inside the last packet, so PassthroughEdit's trims are
        // the Opus trims (qtdemux's clipping of the first packet is the edit's start, not an Ogg pre-skip).
        let trimsItself = format.format == "Opus" && TrackTimescale.container(fd: fd) != .mp4
        opus = trimsItself ? opus ?? OpusTrims(fd: fd, trackID: trackID, matroskaTick: matroska?.tick) : nil
        let vorbisTimes = format.format == "vorb" && (matroska != nil || OggLastPacket.isOgg(fd: fd))
        vorbis = vorbisTimes
            ? vorbis ?? VorbisPacketTimes(matroska: matroska != nil, fd: fd, fromStart: fromStart) : nil
    }

    var seeksToKeyUnits: Bool { true }

    func seeking(to range: MediaTimeRange, stop: Int64?) -> Int64? {
        (end, rangeEnded) = (stop, false)
        fromStart = (range.start.nanoseconds ?? 0) <= 0
        edit.seeking(fromStart: fromStart)
        matroska?.seeking()
        opus?.seeking()
        vorbis?.seeking(fromStart: fromStart)
        oggLast = nil
        segment.seeking(fromStart: fromStart)
        gatedStart.arm(start: fromStart ? nil : range.start.nanoseconds, audioOnly: true)
        return nil
    }

    func readingFromStart(_ range: MediaTimeRange) {
        segment.seeking(fromStart: true)
        gatedStart.arm(start: range.start.nanoseconds)  // every track's range, audio too
    }

    func queued() -> PulledSample? {
        gatedStart.queued() ?? edit.queued()
    }

    /// Ogg Opus read to its end: oggdemux never pushes a last packet that the last page's granule position leaves
    /// wholly out (GStreamer's opusenc with 2.5 ms frames ends on one); ffmpeg lists it, all of it discard padding.
    /// It is read from the file (OggLastPacket) and delivered where the packets before it end, lasting 0, trimmed
    /// whole at its end — when its page's granule position is exactly where those end (OpusHead's pre-skip on).
    func endOfInput() -> MadeSample {
        if let held = gatedStart.flush() { return .sample(held) }  // the stream ended before the range's start passed
        guard end == nil, !rangeEnded, let last = oggLast else { return .skip }
        oggLast = nil
        let preSkip = CapsView(last.caps)?.streamHeaders.first.flatMap(AudioPackets.opusPreSkip(head:)) ?? 0
        guard let (packet, granule) = OggLastPacket.lastPacket(fd: fd), packet != last.bytes,
              let frames = AudioPackets.opusSamples(packet),
              granule == OpusTrims.frames(nanoseconds: last.end) + Int64(preSkip),
              let made = GstRef<GstSampleObject>.holding(packet, caps: last.caps) else { return .skip }
        let trims = (MediaTime(value: 0, timescale: Int32(OpusTrims.rate)), MediaTime(value: Int64(frames), timescale: Int32(OpusTrims.rate)))
        return .sample(PulledSample(made, layout: layout(size: packet.count), copy: .bytes,
                                    timing: (.nanoseconds(last.end), .nanoseconds(0)), trims: trims))
    }

    func make(_ sample: GstRef<GstSampleObject>) -> MadeSample {
        // Codec headers are no samples: what a decoder needs of them is the codec configuration. Parsers push the
        // headers of their caps' `streamheader` (FLAC's metadata blocks, Vorbis/Opus/Theora headers) as buffers
        // flagged HEADER; those are left out. HEADER alone does not make a codec header: h264parse flags every
        // access unit that carries an SPS/PPS (an MPEG-TS keyframe), which is a stored sample. flacparse also
        // pushes, for FLAC in Matroska, a VORBIS_COMMENT block it made up, unflagged — so for FLAC only frames
        // (sync code 0xFFF8/0xFFF9) are samples.
        if sample.flags & GST_BUFFER_FLAG_HEADER.rawValue != 0, isStreamHeader(sample) { return .skip }
        if format.format == "fLaC" {
            let sync = sample.bytes(count: 2)
            if sync.count < 2 || sync[0] != 0xFF || sync[1] & 0xFE != 0xF8 { return .skip }
        }
        let size = sample.size
        var plain = PulledSample(sample, layout: layout(size: size), copy: .bytes)
        if format.format == "fLaC" { plain = flacFrame(plain, sample) }
        if let vorbis {
            plain = vorbis.place(plain, sample: sample, remake: retimed(sample, plain))
        }
        if let matroska {
            let pts = plain.presentationTime
            plain = matroska.place(plain, bytes: sample.bytes(count: min(size, 16)), rate: CapsView(sample.caps)?.int("rate")) {
                PulledSample(sample, layout: layout(size: size), copy: .bytes, timing: (pts: pts, duration: $1), decode: $0)
            }
        }
        if let opus {
            let clipping = sample.audioClipping
            let preSkip = (clipping?.start ?? 0) > 0
                ? CapsView(sample.caps)?.streamHeaders.first.flatMap(AudioPackets.opusPreSkip(head:)) : nil
            plain = opus.place(plain, bytes: sample.bytes(count: min(size, 16)), clipping: clipping, preSkip: preSkip,
                               remake: retimed(sample, plain))
            if matroska == nil, let pts = plain.presentationTime.nanoseconds, let length = plain.duration.nanoseconds {
                oggLast = (sample.bytes(count: size), sample.caps, pts + length)
            }
        } else if matroska != nil, let trims = paddingTrims(sample) {
            plain = retimed(sample, plain)((plain.presentationTime, plain.duration), trims)
        }
        if let end {
            let time = plain.decodeTime.isNumeric ? plain.decodeTime : plain.presentationTime
            if let ns = time.nanoseconds, ns >= end {
                rangeEnded = true
                if let held = gatedStart.flush() { return .sample(held) }
                return .endOfRange
            }
        }
        let placed = edit.place(plain, sample: sample, layout: layout(size:))
        return gatedStart.admit(placed, isAudio: CapsView(sample.caps)?.int("rate") != nil)
    }

    /// How OpusTrims and VorbisPacketTimes remake `plain` (stored `sample`) with new times and trims; audio's DTS
    /// is its PTS, when it has one.
    private func retimed(_ sample: GstRef<GstSampleObject>, _ plain: PulledSample)
        -> (_ timing: (pts: MediaTime, duration: MediaTime), _ trims: (atStart: MediaTime, atEnd: MediaTime)?) -> PulledSample {
        let decodes = plain.decodeTime.isValid
        let size = plain.size
        return { [self] timing, trims in
            PulledSample(sample, layout: layout(size: size), copy: .bytes, timing: timing, trims: trims,
                         decode: decodes ? timing.pts : .invalid)
        }
    }

    /// A FLAC frame lasts the block size its header states (FLACFrame): flacparse gives the last frame of a
    /// fixed-blocksize stream the whole block size as its duration.
    private func flacFrame(_ plain: PulledSample, _ sample: GstRef<GstSampleObject>) -> PulledSample {
        guard let blockSize = FLACFrame.blockSize(header: sample.bytes(count: 16)),
              let rate = CapsView(sample.caps)?.int("rate"), rate > 0, plain.presentationTime.isNumeric else { return plain }
        let duration = MediaTime.nanoseconds(Int64(blockSize) * 1_000_000_000 / Int64(rate))
        guard duration != plain.duration else { return plain }
        return PulledSample(sample, layout: layout(size: plain.size), copy: .bytes,
                            timing: (pts: plain.presentationTime, duration: duration))
    }

    /// A Matroska block's DiscardPadding as its TrimDurationAtEnd, in frames of the stream's rate as ffmpeg's demuxer
    /// converts it (ffprobe's `discard_padding`): matroskademux 1.22 states it for Opus only. nil without one.
    private func paddingTrims(_ sample: GstRef<GstSampleObject>) -> (atStart: MediaTime, atEnd: MediaTime)? {
        if padded == nil { padded = MatroskaTail.paddedBlocks(fd: fd, trackNumber: trackID) }
        guard let rate = CapsView(sample.caps)?.int("rate"), rate > 0, sample.pts != clockTimeNone,
              let block = padded?.first(where: { GstClockTime($0.time) == sample.pts }) else { return nil }
        return (MediaTime(value: 0, timescale: Int32(rate)), MediaTime(value: block.paddingFrames(rate: Int(rate)), timescale: Int32(rate)))
    }

    /// Whether the buffer is one of its caps' `streamheader` buffers.
    private func isStreamHeader(_ sample: GstRef<GstSampleObject>) -> Bool {
        let headers = CapsView(sample.caps)?.streamHeaders ?? []
        guard headers.contains(where: { $0.count == sample.size }) else { return false }
        return headers.contains(sample.bytes(count: sample.size))
    }

    private func layout(size: Int) -> SampleLayout {
        let plane = PlaneLayout(offset: 0, bytesPerRow: UInt32(clamping: size), rowBytes: UInt32(clamping: size), height: 1)
        return SampleLayout(format: format.format, width: format.width, height: format.height, planes: [plane])
    }
}

/// Decoded video: planes from the caps and the buffer's video meta; zero-copy when the frame is in a memfd memory
/// of the output's allocator and needs no rewrite, else a CopyPlan.
final class VideoSamples: SampleMaker, @unchecked Sendable {
    // @unchecked: only `takeFreedSharedMemories` is called from another thread, and it reads immutable state (the
    // allocator keeps its own lock); the rest runs on the pulling thread.
    private let format: FourCC
    /// 420v/420f/x420/xf20: the range the output must have (converted while copying when the decoder's differs). nil
    /// for every other format: their samples carry the decoder's range.
    private let targetRange: PixelFormat.Range?
    private let allocator: SharedAllocator
    private let restorer: ClipRestorer
    /// Ends a range after its last needed sample (ReadFrames, ranges).
    private let stop: DecodeStop
    /// Drops the frames a range does not deliver before conversion; their display intervals are the durations.
    private let gate: FrameGate
    /// What the decoder owes (DecodeTally).
    private let tally: DecodeTally
    /// What keeps the decoder from clipping the first frames of a read from the start (StartSegment).
    private let segment: StartSegment
    /// The range delivers no frame: pull reports the end until the next seek.
    private(set) var rangeEnded = false
    /// The layout of the last caps seen (the cache holds a ref, so the pointer stays unique).
    private var layoutCache: (caps: GstRef<GstCapsObject>, layout: SwiftGstVideoLayout)?

    init(format: FourCC, targetRange: PixelFormat.Range?, allocator: SharedAllocator, restorer: ClipRestorer,
         stop: DecodeStop, gate: FrameGate, tally: DecodeTally, segment: StartSegment, selection: FrameSelection?) {
        self.gate = gate
        self.tally = tally
        self.segment = segment
        rangeEnded = selection?.frames?.isEmpty == true
        self.format = format
        self.targetRange = targetRange
        self.allocator = allocator
        self.restorer = restorer
        self.stop = stop
    }

    func arm(neededSamples: [Int64]?, lastNeededSample: Int64?) {
        stop.arm(needed: neededSamples, lastNeeded: lastNeededSample)
    }

    func seeking(to range: MediaTimeRange, stop: Int64?) -> Int64? {
        segment.seeking(fromStart: (range.start.nanoseconds ?? 0) <= 0)
        return stop
    }

    /// The selection and DecodeStop cut the range (every selected read has a selection: TrackPipeline.readFromStart).
    func readingFromStart(_ range: MediaTimeRange) { segment.seeking(fromStart: true) }

    func select(_ selection: FrameSelection?) {
        gate.select(selection)
        stop.deliver(selection)
        rangeEnded = selection?.frames?.isEmpty == true
    }

    var samplesDecoded: UInt64 { stop.samplesDecoded }
    var samplesSkipped: UInt64 { stop.samplesSkipped }
    var samplesUndecodable: UInt64 { tally.undecodable }
    var framesDecoded: UInt64 { gate.framesDecoded }
    var framesConverted: UInt64 { gate.framesConverted }

    /// The duration rule for PulledSample: displayed until the next frame, by the index.
    private var displayEnd: (Int64) -> Int64? { { [gate] in gate.displayEnd(at: $0) } }

    func takeFreedSharedMemories() -> [UInt32] { allocator.freed.take() }

    func make(_ sample: GstRef<GstSampleObject>) -> MadeSample {
        var layout = videoLayout(sample.caps)
        sample.applyVideoMeta(to: &layout)
        var colorimetry = Colorimetry(range: layout.range, matrix: layout.matrix, primaries: layout.primaries,
                                      transfer: layout.transfer)
        guard let target = targetRange,
              layout.format == GST_VIDEO_FORMAT_NV12 || layout.format == GST_VIDEO_FORMAT_I420 else {
            return .sample(plainFrame(sample, layout: layout, colorimetry: colorimetry))
        }
        // 420v/420f: NV12 made in the frame's memfd (nv12InPlace), else written as tight NV12 by copyBytes, the
        // range converted when the decoder's differs (videoconvert 1.22 keeps the range between YCbCr formats of
        // one matrix).
        let conversion = Self.conversion(from: layout.range, to: target)
        colorimetry.range = target.rawValue
        if layout.format == GST_VIDEO_FORMAT_NV12 && conversion == SWIFT_GST_RANGE_KEEP {
            // Already NV12 in the right range (a decoder that outputs NV12): as is, shared when it can be.
            return .sample(plainFrame(sample, layout: layout, colorimetry: colorimetry))
        }
        if let nv12 = nv12InPlace(sample, layout: layout, conversion: conversion, colorimetry: colorimetry) {
            return .sample(nv12)
        }
        let w = layout.width, h = layout.height, chromaRow = (w + 1) / 2 * 2
        let planes = [PlaneLayout(offset: 0, bytesPerRow: w, rowBytes: w, height: h),
                      PlaneLayout(offset: UInt64(w) * UInt64(h), bytesPerRow: chromaRow, rowBytes: chromaRow,
                                  height: (h + 1) / 2)]
        let tight = SampleLayout(format: format, width: w, height: h, colorimetry: colorimetry, planes: planes,
                                 size: nv12Size(width: w, height: h))
        return .sample(PulledSample(sample, layout: tight, copy: .tightNV12(layout, conversion), restorer: restorer, displayEnd: displayEnd))
    }

    /// The conversion from a decoder's CICP range (0: unknown, GStreamer's default, video) to `target`.
    static func conversion(from range: UInt8, to target: PixelFormat.Range) -> SwiftGstRangeConversion {
        let source = range == 0 ? PixelFormat.Range.video.rawValue : range
        if source == target.rawValue { return SWIFT_GST_RANGE_KEEP }
        return target == .full ? SWIFT_GST_RANGE_TO_FULL : SWIFT_GST_RANGE_TO_VIDEO
    }

    /// 420v/420f with zero copies: the frame made NV12 where it lies in its memfd (swift_gst_memfd_make_nv12) — the
    /// luma plane as the decoder wrote it, the CbCr plane in the memory's tail (I420) or in place (NV12). nil when the
    /// frame is not in a memfd memory with room: it is then written as tight NV12 into a copy pool.
    private func nv12InPlace(_ sample: GstRef<GstSampleObject>, layout: SwiftGstVideoLayout, conversion: SwiftGstRangeConversion,
                             colorimetry: Colorimetry) -> PulledSample? {
        var layout = layout
        guard let (uvOffset, uvStride) = allocator.makeNV12(sample, layout: &layout, conversion: conversion),
              let memory = allocator.describe(sample) else { return nil }
        let w = layout.width, h = layout.height, chromaRow = (w + 1) / 2 * 2, chromaHeight = (h + 1) / 2
        let planes = [PlaneLayout(offset: tuple(layout.offset, 0), bytesPerRow: UInt32(clamping: tuple(layout.stride, 0) as Int32),
                                  rowBytes: w, height: h),
                      PlaneLayout(offset: uvOffset, bytesPerRow: uvStride, rowBytes: chromaRow, height: chromaHeight)]
        let end = planes.map { $0.offset + UInt64($0.bytesPerRow) * UInt64(max($0.height, 1) - 1) + UInt64($0.rowBytes) }.max()!
        let made = SampleLayout(format: format, width: w, height: h, colorimetry: colorimetry, planes: planes, size: Int(end))
        return PulledSample(sample, layout: made, copy: .memoryWithTail,
                            shared: (memory, allocator), restorer: restorer, displayEnd: displayEnd)
    }

    /// A decoded frame delivered as GStreamer wrote it (planes from its video meta), shared when it is in a memfd
    /// memory, except for the rewrites below.
    private func plainFrame(_ sample: GstRef<GstSampleObject>, layout: SwiftGstVideoLayout, colorimetry: Colorimetry) -> PulledSample {
        var colorimetry = colorimetry
        let planes = (0..<Int(min(layout.n_planes, 4))).map { i in
            PlaneLayout(offset: tuple(layout.offset, i), bytesPerRow: UInt32(clamping: abs(tuple(layout.stride, i))),
                        rowBytes: tuple(layout.row_bytes, i), height: tuple(layout.plane_height, i))
        }
        var copy = CopyPlan.bytes
        if let target = targetRange, layout.format == GST_VIDEO_FORMAT_P010_10LE {
            // x420/xf20: copyBytes converts the range in the slot after copying (swift_gst_p010_convert_range), for
            // the reason above.
            let conversion = Self.conversion(from: layout.range, to: target)
            if conversion != SWIFT_GST_RANGE_KEEP { copy = .bytesConvertingRange(layout, conversion) }
            colorimetry.range = target.rawValue
        }
        if layout.format == GST_VIDEO_FORMAT_v210, let plane = planes.first {
            // v210 rows are 128 bytes per 48 pixels, but videoconvert writes only the ⌈width/6⌉ 16-byte groups that
            // hold pixels: the rest of each row is whatever the recycled pool buffer held. CoreVideo and ffmpeg's
            // v210 have zeros there, so the copy clears it (rowBytes covers the whole 128-byte-aligned row).
            let visible = (Int(layout.width) + 5) / 6 * 16
            if visible < Int(plane.rowBytes) {
                copy = .bytesClearingPadding(.init(offset: Int(plane.offset), stride: Int(plane.bytesPerRow),
                                                   start: visible, end: Int(plane.rowBytes), rows: Int(plane.height)))
            }
        }
        var shared: (SharedMemory, SharedAllocator)?
        // Frames the worker must rewrite (v210 padding, a P010 range conversion) are copied into a copy pool.
        if case .bytes = copy, let memory = allocator.describe(sample) { shared = (memory, allocator) }
        let made = SampleLayout(format: format, width: layout.width, height: layout.height, colorimetry: colorimetry,
                                planes: planes)
        return PulledSample(sample, layout: made, copy: copy, shared: shared, restorer: restorer, displayEnd: displayEnd)
    }

    /// The layout for `caps`, parsed once per caps object.
    private func videoLayout(_ caps: GstRef<GstCapsObject>?) -> SwiftGstVideoLayout {
        guard let caps else { return SwiftGstVideoLayout() }
        if let cached = layoutCache, cached.caps.isSame(as: caps) { return cached.layout }
        let layout = caps.videoLayout
        layoutCache = (caps, layout)
        return layout
    }
}

/// Element `i` of a homogeneous C array imported as a tuple.
func tuple<T, E>(_ t: T, _ i: Int) -> E {
    precondition(i >= 0 && (i + 1) * MemoryLayout<E>.stride <= MemoryLayout<T>.size, "element \(i) is outside the C array")
    return unsafe withUnsafeBytes(of: t) { unsafe $0.load(fromByteOffset: i * MemoryLayout<E>.stride, as: E.self) }
}
