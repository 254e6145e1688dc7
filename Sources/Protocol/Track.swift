/// How a video track's chroma is subsampled relative to luma, as the stream's parser reports it.
public enum ChromaSubsampling: UInt8, Sendable, CustomStringConvertible, CaseIterable {
    case unknown = 0
    /// 4:2:0: chroma at half the luma width and height.
    case yuv420 = 1
    /// 4:2:2: chroma at half the luma width, full height.
    case yuv422 = 2
    /// 4:4:4: chroma at full resolution.
    case yuv444 = 3
    /// 4:0:0: luma only (monochrome).
    case yuv400 = 4

    /// "4:2:0", "4:2:2", "4:4:4", "4:0:0", or "unknown".
    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .yuv420: "4:2:0"
        case .yuv422: "4:2:2"
        case .yuv444: "4:4:4"
        case .yuv400: "4:0:0"
        }
    }

    /// Parses the spelling of `description` (GStreamer's `chroma-format` caps field uses the same one).
    public init?(text: String) {
        guard let match = Self.allCases.first(where: { $0 != .unknown && $0.description == text }) else { return nil }
        self = match
    }
}

/// A pixel's width : height (1:1 square pixels; 0:0 unknown).
public struct PixelAspectRatio: Sendable, Hashable {
    public var numerator: UInt32
    public var denominator: UInt32

    public init(numerator: UInt32 = 0, denominator: UInt32 = 0) {
        self.numerator = numerator
        self.denominator = denominator
    }

    public var isKnown: Bool { numerator > 0 && denominator > 0 }
}

/// One track of an asset as the worker discovered it. Zero means unknown for every numeric field.
public struct TrackDescription: Sendable, Hashable {
    public var id: UInt32
    public var mediaType: MediaType
    /// Codec as a four-char code: avc1, hvc1, hev1, vp09, jpeg, apch…, mp4a, Opus, fLaC, lpcm.
    public var codec: FourCC
    public var width: UInt32
    public var height: UInt32
    public var nominalFrameRate: Double
    public var duration: MediaTime
    public var timeRangeStart: MediaTime
    public var sampleRate: UInt32
    public var channels: UInt32
    /// Format-description depth: 24 for ordinary video, 32 when the track carries alpha (ProRes 4444).
    public var depth: UInt32
    public var hasAlpha: Bool
    /// Video: bits per luma sample as coded (8, 10, 12 …; CMFormatDescription's BitsPerComponent), 0 unknown.
    public var bitsPerComponent: UInt8
    /// Video: the chroma subsampling as coded.
    public var chromaSubsampling: ChromaSubsampling
    /// Clockwise rotation in degrees from the track's transform (0, 90, 180, 270).
    public var rotation: Int32
    /// ISO 639 language code, or "" when unknown.
    public var language: String
    /// The codec profile as the stream's parser names it ("high", "main-10", "4444" …), or "".
    public var profile: String
    /// The codec level as the parser names it ("4.1", "5" …), or "".
    public var level: String
    /// Video: the pixel aspect ratio (width of a pixel : its height); 0:0 unknown.
    public var pixelAspectRatio: PixelAspectRatio
    /// Video: the colorimetry the stream declares (H.273 code points; range 0 and the others 2 when unknown).
    public var colorimetry: Colorimetry
    /// Average bit rate in bits per second from the container's tags, 0 unknown.
    public var bitRate: UInt32
    /// Audio: the channel layout in ffmpeg's spelling ("mono", "stereo", "5.1", "5.1(side)", "7.1" …), or "".
    public var channelLayout: String
    /// The track's timescale (AVAssetTrack.naturalTimeScale): units per second of every time of the track — the
    /// container's own (MP4 mdhd, Matroska 10⁹/TimestampScale, AVI strh rate, the sample rate of audio without one),
    /// or 1,000,000,000 (nanoseconds) where the container has none (docs/PROTOCOL.md §7.1). 0: unknown.
    public var naturalTimeScale: Int32
    /// Video: the shortest frame duration (AVAssetTrack.minFrameDuration), in `naturalTimeScale`; invalid when not
    /// known.
    public var minFrameDuration: MediaTime
    /// The track's edit list as AVAssetTrack.segments (PROTOCOL.md §7.6): one segment mapping the track onto
    /// itself when the container has no edit list.
    public var segments: [TrackSegment]
    /// The track's metadata (AVAssetTrack.metadata), PROTOCOL.md §7.5.
    public var metadata: [MetadataItem]
    /// The track's display matrix (AVAssetTrack.preferredTransform), revision 1: MP4's tkhd matrix, else derived from
    /// the rotation tag; identity when the container states none.
    public var preferredTransform: DisplayMatrix
    /// The track's codec configuration record, revision 1 (PROTOCOL.md §7.2): the one the container stores (MP4/MOV's
    /// avcC, hvcC or esds DecoderSpecificInfo, Matroska's CodecPrivate: ffprobe's extradata), else the parser's (the
    /// avcC or hvcC it writes from an Annex B stream's parameter sets), else FLAC's STREAMINFO; empty when none.
    public var codecConfiguration: [UInt8]

    public init(id: UInt32, mediaType: MediaType, codec: FourCC, width: UInt32 = 0, height: UInt32 = 0,
                nominalFrameRate: Double = 0, duration: MediaTime = .invalid, timeRangeStart: MediaTime = .invalid,
                sampleRate: UInt32 = 0, channels: UInt32 = 0, depth: UInt32 = 0, hasAlpha: Bool = false,
                bitsPerComponent: UInt8 = 0, chromaSubsampling: ChromaSubsampling = .unknown,
                rotation: Int32 = 0, language: String = "", profile: String = "", level: String = "",
                pixelAspectRatio: PixelAspectRatio = PixelAspectRatio(), colorimetry: Colorimetry = Colorimetry(),
                bitRate: UInt32 = 0, channelLayout: String = "", naturalTimeScale: Int32 = 0,
                minFrameDuration: MediaTime = .invalid, segments: [TrackSegment] = [], metadata: [MetadataItem] = [],
                preferredTransform: DisplayMatrix = .identity, codecConfiguration: [UInt8] = []) {
        self.preferredTransform = preferredTransform
        self.codecConfiguration = codecConfiguration
        self.segments = segments
        self.metadata = metadata
        self.naturalTimeScale = naturalTimeScale
        self.minFrameDuration = minFrameDuration
        self.profile = profile
        self.level = level
        self.pixelAspectRatio = pixelAspectRatio
        self.colorimetry = colorimetry
        self.bitRate = bitRate
        self.channelLayout = channelLayout
        self.id = id
        self.mediaType = mediaType
        self.codec = codec
        self.width = width
        self.height = height
        self.nominalFrameRate = nominalFrameRate
        self.duration = duration
        self.timeRangeStart = timeRangeStart
        self.sampleRate = sampleRate
        self.channels = channels
        self.depth = depth
        self.hasAlpha = hasAlpha
        self.bitsPerComponent = bitsPerComponent
        self.chromaSubsampling = chromaSubsampling
        self.rotation = rotation
        self.language = language
    }

    func encode(into w: inout ByteWriter) {
        w.u32(id)
        w.u8(mediaType.rawValue)
        w.fourCC(codec)
        w.u32(width)
        w.u32(height)
        w.f64(nominalFrameRate)
        w.time(duration)
        w.time(timeRangeStart)
        w.u32(sampleRate)
        w.u32(channels)
        w.u32(depth)
        w.bool(hasAlpha)
        w.u8(bitsPerComponent)
        w.u8(chromaSubsampling.rawValue)
        w.i32(rotation)
        w.string(language)
        w.string(profile)
        w.string(level)
        w.u32(pixelAspectRatio.numerator)
        w.u32(pixelAspectRatio.denominator)
        w.record(colorimetry.encode(into:))
        w.u32(bitRate)
        w.string(channelLayout)
        w.i32(naturalTimeScale)
        w.time(minFrameDuration)
        w.list(segments, max: Wire.maxSegments) { w, segment in w.record(segment.encode(into:)) }
        w.list(metadata, max: Wire.maxMetadataItems) { w, item in w.record(item.encode(into:)) }
        preferredTransform.encode(into: &w)
        w.blob(Array(codecConfiguration.prefix(Wire.maxCodecConfig)))
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> TrackDescription {
        TrackDescription(
            id: try r.u32("track.id"), mediaType: MediaType(rawValue: try r.u8("track.mediaType")) ?? .other,
            codec: try r.fourCC("track.codec"), width: try r.u32("track.width"), height: try r.u32("track.height"),
            nominalFrameRate: try r.f64("track.nominalFrameRate"), duration: try r.time("track.duration"),
            timeRangeStart: try r.time("track.timeRangeStart"), sampleRate: try r.u32("track.sampleRate"),
            channels: try r.u32("track.channels"), depth: try r.u32("track.depth"), hasAlpha: try r.bool("track.hasAlpha"),
            bitsPerComponent: try r.u8("track.bitsPerComponent"),
            chromaSubsampling: ChromaSubsampling(rawValue: try r.u8("track.chromaSubsampling")) ?? .unknown,
            rotation: try r.i32("track.rotation"), language: try r.string("track.language"),
            profile: try r.string("track.profile"), level: try r.string("track.level"),
            pixelAspectRatio: PixelAspectRatio(numerator: try r.u32("track.parNumerator"),
                                               denominator: try r.u32("track.parDenominator")),
            colorimetry: try Colorimetry.decodeRecord(from: &r, "track.colorimetry"),
            bitRate: try r.u32("track.bitRate"), channelLayout: try r.string("track.channelLayout"),
            naturalTimeScale: try r.i32("track.naturalTimeScale"), minFrameDuration: try r.time("track.minFrameDuration"),
            segments: try r.list("track.segmentCount", max: Wire.maxSegments) { r throws(TrackError) in
                try r.record("segment.size", TrackSegment.decode(from:))
            },
            metadata: try MetadataItem.decodeList(from: &r, "track.metadataCount"),
            preferredTransform: r.atEnd ? .identity : try DisplayMatrix.decode(from: &r),
            codecConfiguration: r.atEnd ? [] : try r.blob("track.codecConfiguration", max: Wire.maxCodecConfig))
    }
}

extension DisplayMatrix {
    func encode(into w: inout ByteWriter) {
        for value in values { w.i32(value) }
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> DisplayMatrix {
        DisplayMatrix(values: try r.repeated(9) { r throws(TrackError) in try r.i32("track.preferredTransform") })
    }
}

extension Colorimetry {
    /// Four bytes: range, matrix, primaries, transfer.
    func encode(into w: inout ByteWriter) {
        w.u8(range)
        w.u8(matrix)
        w.u8(primaries)
        w.u8(transfer)
    }

    /// The record (a u32 size, then the four bytes); `size` names it in errors (it says whose colorimetry it is).
    static func decodeRecord(from r: inout ByteReader, _ size: StaticString) throws(TrackError) -> Colorimetry {
        try r.record(size) { r throws(TrackError) in
            Colorimetry(range: try r.u8("colorimetry.range"), matrix: try r.u8("colorimetry.matrix"),
                        primaries: try r.u8("colorimetry.primaries"), transfer: try r.u8("colorimetry.transfer"))
        }
    }
}

/// Where one plane of a sample lies inside its slot.
public struct PlaneLayout: Sendable, Hashable {
    /// Byte offset of the plane's first row from the start of the sample.
    public var offset: UInt64
    /// Distance in bytes between the starts of two rows (≥ rowBytes; may include padding).
    public var bytesPerRow: UInt32
    /// Bytes of visible data in each row: visible width × bytes per pixel of this plane.
    public var rowBytes: UInt32
    /// Number of rows.
    public var height: UInt32

    public init(offset: UInt64, bytesPerRow: UInt32, rowBytes: UInt32, height: UInt32) {
        self.offset = offset
        self.bytesPerRow = bytesPerRow
        self.rowBytes = rowBytes
        self.height = height
    }

    func encode(into w: inout ByteWriter) {
        w.u64(offset)
        w.u32(bytesPerRow)
        w.u32(rowBytes)
        w.u32(height)
    }

    static func decode(from r: inout ByteReader) throws(TrackError) -> PlaneLayout {
        PlaneLayout(offset: try r.u64("plane.offset"), bytesPerRow: try r.u32("plane.bytesPerRow"),
                    rowBytes: try r.u32("plane.rowBytes"), height: try r.u32("plane.height"))
    }
}
