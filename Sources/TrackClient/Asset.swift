import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A media file, opened by this process and handed to trackd as a descriptor (trackd never opens paths).
///
/// Mirrors `AVURLAsset`, with its tracks already loaded: `init(path:socketPath:)` does what
/// `AVURLAsset(url:)` followed by `load(.tracks, .duration)` does, synchronously.
///
/// **Sources.** A path (``init(path:socketPath:)``), bytes in memory (``init(data:name:socketPath:maxBytes:)``,
/// ``init(bytes:name:socketPath:maxBytes:)``) or an open file descriptor
/// (``init(fileDescriptor:name:socketPath:maxBytes:)``). A path is opened read-only and a regular file's
/// descriptor is duplicated; bytes, and a descriptor that is not a regular file (a pipe, a socket), are copied into
/// a sealed memfd — anonymous memory, never a file on disk, sealed against writing, shrinking and growing — so the
/// worker reads exactly the bytes given. Such a copy is memory for as long as the asset is open, limited to
/// `maxBytes` (default ``maxSourceBytes``, 4 GiB), and may not be empty. The same rules as the Python client's
/// `trackd.open()`.
///
/// **Ownership.** Each Asset owns one connection to trackd, and so one trackd worker process, used by every
/// reader, image request and frame request made from it; a crash while decoding it affects nothing else. The
/// connection (and the worker) ends when the last reference to the Asset goes away — readers and outputs hold
/// their asset, so reading keeps it alive. The file descriptor is closed as soon as trackd has it.
///
/// **Thread-safety.** `Sendable`: every stored property is immutable, and the connection multiplexes requests
/// by id (several threads may use one asset at once; each caller gets its own reply).
///
/// **Blocking.** The initializer and every method wait for trackd's reply (discovery and decoding may take
/// a while for large files); call them from a thread that may block, not from inside async code on the
/// cooperative pool. ``AssetReaderTrackOutput/samples`` is the async way to read.
public final class Asset: Sendable {
    /// The default limit, 4 GiB, on a source copied into a memfd (bytes, a pipe): a memfd is memory, counted
    /// against the process and its cgroup for as long as the asset is open. Pass `maxBytes:` to lower or raise it.
    /// Paths and regular files are not copied and have no limit here. (Python: `trackd.MAX_SOURCE_BYTES`.)
    public static let maxSourceBytes = 4 << 30

    /// The path given to ``init(path:socketPath:)``, as given; for bytes or a descriptor, their ``name``.
    public let path: String
    /// The name trackd logs for this asset: the path's last component, or the `name:` given with bytes or a
    /// descriptor (by default `<N bytes>` or `fd N`).
    public let name: String
    /// The size in bytes of what trackd reads, when the asset was opened: the file's, or the memfd's holding a copy.
    public let byteCount: UInt64
    /// The asset's duration (the longest track's), like `AVAsset.duration`.
    public let duration: MediaTime
    /// Every track trackd found, in ascending track-id order (`AVAsset.tracks`).
    public let tracks: [AssetTrack]
    /// The asset's metadata (`AVAsset.metadata`): every item the container stores, in its key space; PROTOCOL.md §7.5.
    public let metadata: [MetadataItem]
    let connection: Connection
    let assetID: UInt32

    /// Opens `path` for reading and asks trackd (at `socketPath`, default `SocketPath.resolveDefault()`) to
    /// discover its tracks. Errors: the file cannot be opened (-11822 with the system's reason), trackd cannot be
    /// reached (-11903), or the file is not media trackd understands (-11828 / -11829 …).
    public convenience init(path: String, socketPath: String? = nil) throws(TrackError) {
        let fd = try SourceDescriptor.open(path: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        try self.init(owning: fd, path: path, name: name, socketPath: socketPath)
    }

    /// Media given as bytes: copied into a sealed memfd (never a temporary file) and read like a file. `name` is
    /// what trackd logs and ``path`` holds (default `<N bytes>`). Errors besides ``init(path:socketPath:)``'s:
    /// empty bytes (-11901, "the media source is empty (0 bytes)"), more than `maxBytes` (-11902).
    public convenience init(data: [UInt8], name: String? = nil, socketPath: String? = nil,
                            maxBytes: Int = Asset.maxSourceBytes) throws(TrackError) {
        let name = name ?? "<\(data.count) bytes>"
        var copied: Result<FileDescriptor, TrackError>?
        data.withUnsafeBytes { bytes in
            copied = Result { () throws(TrackError) in try SourceDescriptor.memfd(copying: bytes, name: name, maxBytes: maxBytes) }
        }
        guard case .some(let result) = consume copied else { preconditionFailure("withUnsafeBytes ran its body") }
        try self.init(owning: result.get(), path: name, name: name, socketPath: socketPath)
    }

    /// Media in memory the caller owns (a mapping, a `Data`'s or `ContiguousBytes`' `withUnsafeBytes`): copied into
    /// a sealed memfd before this returns, so `bytes` need only live for the call. As ``init(data:name:socketPath:maxBytes:)``.
    public convenience init(bytes: UnsafeRawBufferPointer, name: String? = nil, socketPath: String? = nil,
                            maxBytes: Int = Asset.maxSourceBytes) throws(TrackError) {
        let name = name ?? "<\(bytes.count) bytes>"
        let fd = try SourceDescriptor.memfd(copying: bytes, name: name, maxBytes: maxBytes)
        try self.init(owning: fd, path: name, name: name, socketPath: socketPath)
    }

    /// Media behind an open descriptor, which stays the caller's (to close when it likes; trackd gets its own).
    /// A regular file is duplicated, not copied: trackd reads it with pread, so the caller's file offset does not
    /// move. A pipe, socket or character device is read to its end (a pipe: until every writer has closed it) into
    /// a sealed memfd, limited to `maxBytes`. `name` defaults to `fd N`. Errors: a descriptor that is not open or
    /// is write-only, or nothing read from a pipe (-11901); a directory (-11822); more than `maxBytes` (-11902).
    public convenience init(fileDescriptor: Int32, name: String? = nil, socketPath: String? = nil,
                            maxBytes: Int = Asset.maxSourceBytes) throws(TrackError) {
        let name = name ?? "fd \(fileDescriptor)"
        let fd = try SourceDescriptor.descriptor(from: fileDescriptor, name: name, maxBytes: maxBytes)
        try self.init(owning: fd, path: name, name: name, socketPath: socketPath)
    }

    /// Takes `fd` (closed here whatever happens), connects and opens it in a worker.
    private init(owning fd: consuming FileDescriptor, path: String, name: String, socketPath: String?) throws(TrackError) {
        self.path = path
        self.name = name
        self.byteCount = SourceDescriptor.size(of: fd)
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        let reply: Message
        do {
            reply = try connection.request(.openAsset(name: name), fds: [fd.rawValue]).message
        } catch {
            connection.close()
            throw error
        }
        guard case .assetOpened(let opened) = reply else {
            connection.close()
            throw TrackError(.protocolViolation, "trackd answered OpenAsset with \(reply.type)")
        }
        self.connection = connection
        self.assetID = opened.assetID
        self.duration = opened.duration
        self.tracks = opened.tracks.map(AssetTrack.init)
        self.metadata = opened.metadata
    }

    deinit { connection.close() }

    /// The tracks of one media type, in order (`AVAsset.tracks(withMediaType:)`). Does not block.
    public func tracks(withMediaType type: MediaType) -> [AssetTrack] { tracks.filter { $0.mediaType == type } }

    /// The track with this id, or nil (`AVAsset.track(withTrackID:)`). Does not block.
    public func track(withTrackID id: UInt32) -> AssetTrack? { tracks.first { $0.trackID == id } }

    /// Facts about the worker serving this asset, and the daemon behind it (what `trackctl status` shows).
    /// Blocks for one round trip. Throws -11819 when the worker has gone.
    public func serverStatus() throws(TrackError) -> StatusReport {
        let reply = try connection.request(.getStatus).message
        guard case .status(let status) = reply else {
            throw TrackError(.protocolViolation, "trackd answered GetStatus with \(reply.type)")
        }
        return status
    }
}

/// One track of an asset, as trackd discovered it: the properties of `AVAssetTrack` (and of its format
/// description) that a reader needs. Zero means unknown for numeric fields.
///
/// A plain value: `Sendable`, immutable, owns nothing. Equal tracks have the same id and codec; a track is only
/// meaningful with the ``Asset`` it came from (readers check that).
public struct AssetTrack: Sendable, Hashable {
    /// The container's track id (`AVAssetTrack.trackID`), as `trackctl tracks` prints it.
    public let trackID: UInt32
    /// Video, audio, subtitle … (`AVAssetTrack.mediaType`).
    public let mediaType: MediaType
    /// The codec's four-char code (avc1, hvc1, mp4a …): CMFormatDescriptionGetMediaSubType.
    public let codec: FourCC
    /// Video: the coded picture size in pixels, before rotation (`AVAssetTrack.naturalSize`).
    public let naturalSize: (width: UInt32, height: UInt32)
    /// Video: frames per second (`AVAssetTrack.nominalFrameRate`): the frame count over the track's span, the same
    /// rule in every container (PROTOCOL.md §7.2); 0 when unknown.
    public let nominalFrameRate: Double
    /// The track's duration (`AVAssetTrack.timeRange.duration`).
    public let duration: MediaTime
    /// Start of the track's time range (its first presentation time).
    public let timeRangeStart: MediaTime
    /// Audio: samples per second per channel (the format description's `mSampleRate`).
    public let sampleRate: UInt32
    /// Audio: the number of channels (`mChannelsPerFrame`).
    public let channelCount: UInt32
    /// Format-description depth: 32 when the video carries alpha.
    public let depth: UInt32
    /// Video: the coded pictures carry an alpha channel (ProRes 4444 with alpha, VP9 with alpha …).
    public let hasAlpha: Bool
    /// Video: bits per luma sample as coded (kCMFormatDescriptionExtension_BitsPerComponent); 0 when unknown.
    public let bitsPerComponent: UInt8
    /// Video: the chroma subsampling as coded (4:2:0, 4:2:2, 4:4:4, 4:0:0), or .unknown.
    public let chromaSubsampling: ChromaSubsampling
    /// Video: the pixel format whose layout is the decoder's native output (RecommendedPixelFormat): asking for it
    /// makes decoding a lossless repack with no conversion. nil when not video or unknown.
    public let recommendedPixelFormat: PixelFormat?
    /// Clockwise rotation in degrees from the track's transform.
    public let rotation: Int32
    /// The track's display matrix (`AVAssetTrack.preferredTransform`): MP4's track header matrix as stored, else the
    /// rotation tag's matrix (no translation); the identity when the container states neither.
    public let preferredTransform: AffineTransform
    /// The track's codec configuration record (`CMFormatDescription`'s SampleDescriptionExtensionAtoms value): the
    /// avcC, hvcC, esds DecoderSpecificInfo … the container stores, byte for byte, else the parser's avcC or hvcC
    /// of an Annex B stream (PROTOCOL.md §7.2); a passthrough output's codecConfig. Empty when there is none.
    public let codecConfiguration: [UInt8]
    /// The track's language as the container states it (ISO 639-2, `AVAssetTrack.languageCode`), or nil.
    public let languageCode: String?
    /// The codec profile as the stream's parser names it ("high", "main-10", "4444" …), or nil.
    public let profile: String?
    /// The codec level as the parser names it ("4.1" …), or nil.
    public let level: String?
    /// Video: the pixel aspect ratio (width : height of one pixel; 1:1 square), or nil when not stated.
    public let pixelAspectRatio: PixelAspectRatio?
    /// Video: the colorimetry the stream declares (H.273 code points; `CMFormatDescription`'s color extensions).
    public let colorimetry: Colorimetry
    /// Average bit rate in bits per second from the container (`AVAssetTrack.estimatedDataRate`), 0 unknown.
    public let estimatedDataRate: UInt32
    /// Audio: the channel layout in ffmpeg's spelling ("stereo", "5.1(side)" …), or nil.
    public let channelLayout: String?
    /// The track's timescale (`AVAssetTrack.naturalTimeScale`): every time of the track — sample times, `duration`,
    /// `timeRangeStart` — is in these units per second, the container's own (MP4 mdhd, Matroska 10⁹/TimestampScale,
    /// AVI strh rate, an audio track's sample rate; 1,000,000,000 where the container has none). PROTOCOL.md §7.1.
    public let naturalTimeScale: Int32
    /// Video: the shortest frame duration (`AVAssetTrack.minFrameDuration`): the smallest interval between
    /// consecutive presentation times, in `naturalTimeScale` (PROTOCOL.md §7.2); invalid when not known.
    public let minFrameDuration: MediaTime
    /// The track's edit list (`AVAssetTrack.segments`): source ranges in the media timescale, target ranges in the
    /// presentation timescale; one segment mapping the track onto itself when the container has none. PROTOCOL.md §7.6.
    public let segments: [TrackSegment]
    /// The track's metadata (`AVAssetTrack.metadata`): language, handler name, tags …; PROTOCOL.md §7.5.
    public let metadata: [MetadataItem]

    init(_ d: TrackDescription) {
        segments = d.segments
        metadata = d.metadata
        naturalTimeScale = d.naturalTimeScale
        minFrameDuration = d.minFrameDuration
        profile = d.profile.isEmpty ? nil : d.profile
        level = d.level.isEmpty ? nil : d.level
        pixelAspectRatio = d.pixelAspectRatio.isKnown ? d.pixelAspectRatio : nil
        colorimetry = d.colorimetry
        estimatedDataRate = d.bitRate
        channelLayout = d.channelLayout.isEmpty ? nil : d.channelLayout
        trackID = d.id
        mediaType = d.mediaType
        codec = d.codec
        naturalSize = (d.width, d.height)
        nominalFrameRate = d.nominalFrameRate
        duration = d.duration
        timeRangeStart = d.timeRangeStart
        sampleRate = d.sampleRate
        channelCount = d.channels
        depth = d.depth
        hasAlpha = d.hasAlpha
        bitsPerComponent = d.bitsPerComponent
        chromaSubsampling = d.chromaSubsampling
        recommendedPixelFormat = RecommendedPixelFormat.forTrack(d)
        rotation = d.rotation
        preferredTransform = AffineTransform(d.preferredTransform)
        codecConfiguration = d.codecConfiguration
        languageCode = d.language.isEmpty ? nil : d.language
    }

    /// The time nearest `seconds` in the track's timescale (`CMTimeMakeWithSeconds(seconds, naturalTimeScale)`):
    /// the tick, so a frame's time in seconds names that frame. A time between two ticks moves to the nearer one —
    /// on a coarse timescale (an AVI's, one tick a frame) to the next frame's time past the middle of a frame; to
    /// ask for the frame shown at `seconds`, send `MediaTime(seconds:)` (PROTOCOL.md §7.1). Nanoseconds when the
    /// timescale is unknown.
    public func time(seconds: Double) -> MediaTime {
        naturalTimeScale > 0 ? MediaTime(seconds: seconds, preferredTimescale: naturalTimeScale) : MediaTime(seconds: seconds)
    }

    /// Same track id and codec.
    public static func == (a: AssetTrack, b: AssetTrack) -> Bool { a.trackID == b.trackID && a.codec == b.codec }
    /// Hashes the track id.
    public func hash(into h: inout Hasher) { h.combine(trackID) }
}

/// The frame shown at a time, as an encoded image: what `AVAssetImageGenerator` with zero tolerance
/// (`requestedTimeToleranceBefore/After = .zero`) gives, encoded as PNG.
///
/// A plain value: `Sendable`; the PNG bytes are copied out of trackd's shared memory, so it owns them.
public struct GeneratedImage: Sendable {
    /// The presentation time of the frame the image shows (≤ the requested time).
    public let actualTime: MediaTime
    /// The image's width in pixels.
    public let width: UInt32
    /// The image's height in pixels.
    public let height: UInt32
    /// PNG bytes, encoded by GStreamer's pngenc in the worker.
    public let png: [UInt8]
}

extension Asset {
    /// The exact frame displayed at `time` on `track` (not the nearest keyframe), as a PNG
    /// (`AVAssetImageGenerator.image(at:)` with zero tolerance). Blocks while the worker decodes from the
    /// preceding keyframe. Errors: -11901 when `track` is not a video track of this asset or `time` is not a
    /// valid time, decoder errors.
    public func generateImage(track: AssetTrack, at time: MediaTime) throws(TrackError) -> GeneratedImage {
        let reply = try connection.request(.generateImage(GenerateImage(assetID: assetID, trackID: track.trackID, time: time)))
        guard case .image(let image) = reply.message, reply.fds.count == 1 else {
            throw TrackError(.protocolViolation, "trackd answered GenerateImage with \(reply.message.type)")
        }
        let fd = reply.fds.rawValue(at: 0)  // (closed with the reply)
        guard image.length < (1 << 31), SharedMapping.verifySealed(fd: fd, size: Int(image.length)) else {
            throw TrackError(.protocolViolation, "the image memory is not a sealed memfd of \(image.length) bytes")
        }
        do {
            let mapping = try SharedMapping(fd: fd, size: max(Int(image.length), 1), writable: false)
            let bytes = mapping.bytes(at: 0, count: Int(image.length))
            return GeneratedImage(actualTime: image.actualTime, width: image.width, height: image.height, png: bytes)
        } catch {
            throw TrackError(.limitExceeded, "cannot map the image: \(error)")
        }
    }
}
