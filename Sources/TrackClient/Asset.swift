import Protocol

#if canImport(Glibc)
import Glibc
#endif

/// A media file, opened by this process and handed to trackd as a descriptor (trackd never opens paths).
/// Like AVURLAsset; its tracks are loaded when it is created.
///
/// Each Asset has its own connection and so its own trackd worker process: a crash while decoding it affects
/// nothing else. Thread-safe.
public final class Asset: Sendable {
    public let path: String
    /// The asset's duration (the longest track's).
    public let duration: MediaTime
    public let tracks: [AssetTrack]
    let connection: Connection
    let assetID: UInt32

    /// Opens `path` for reading and asks trackd (at `socketPath`, default `SocketPath.resolveDefault()`) to
    /// discover its tracks. Errors: the file cannot be opened (-11822 with the system's reason), trackd cannot be
    /// reached (-11903), or the file is not media trackd understands (-11828 / -11829 …).
    public init(path: String, socketPath: String? = nil) throws(TrackError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TrackError(.invalidSourceMedia, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let reply: Message
        do {
            (reply, _) = try connection.request(.openAsset(name: name), fds: [fd])
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
    }

    deinit { connection.close() }

    public func tracks(withMediaType type: MediaType) -> [AssetTrack] { tracks.filter { $0.mediaType == type } }

    public func track(withTrackID id: UInt32) -> AssetTrack? { tracks.first { $0.trackID == id } }

    /// Facts about the worker serving this asset, and the daemon behind it.
    public func serverStatus() throws(TrackError) -> StatusReport {
        let (reply, _) = try connection.request(.getStatus)
        guard case .status(let status) = reply else {
            throw TrackError(.protocolViolation, "trackd answered GetStatus with \(reply.type)")
        }
        return status
    }
}

/// One track of an asset (AVAssetTrack). Zero means unknown for numeric fields.
public struct AssetTrack: Sendable, Hashable {
    public let trackID: UInt32
    public let mediaType: MediaType
    /// The codec's four-char code (avc1, hvc1, mp4a …): CMFormatDescriptionGetMediaSubType.
    public let codec: FourCC
    public let naturalSize: (width: UInt32, height: UInt32)
    public let nominalFrameRate: Double
    public let duration: MediaTime
    /// Start of the track's time range (its first presentation time).
    public let timeRangeStart: MediaTime
    public let sampleRate: UInt32
    public let channelCount: UInt32
    /// Format-description depth: 32 when the video carries alpha.
    public let depth: UInt32
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
    public let languageCode: String?

    init(_ d: TrackDescription) {
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
        languageCode = d.language.isEmpty ? nil : d.language
    }

    public static func == (a: AssetTrack, b: AssetTrack) -> Bool { a.trackID == b.trackID && a.codec == b.codec }
    public func hash(into h: inout Hasher) { h.combine(trackID) }
}

/// The frame shown at a time, as an encoded image (AVAssetImageGenerator with zero tolerance).
public struct GeneratedImage: Sendable {
    /// The presentation time of the frame the image shows (≤ the requested time).
    public let actualTime: MediaTime
    public let width: UInt32
    public let height: UInt32
    /// PNG bytes, encoded by GStreamer's pngenc in the worker.
    public let png: [UInt8]
}

extension Asset {
    /// The exact frame displayed at `time` on `track` (not the nearest keyframe), as a PNG.
    public func generateImage(track: AssetTrack, at time: MediaTime) throws(TrackError) -> GeneratedImage {
        let (reply, fds) = try connection.request(.generateImage(GenerateImage(assetID: assetID, trackID: track.trackID, time: time)))
        defer { fds.forEach { close($0) } }
        guard case .image(let image) = reply, let fd = fds.first else {
            throw TrackError(.protocolViolation, "trackd answered GenerateImage with \(reply.type)")
        }
        guard image.length < (1 << 31), SharedMapping.verifySealed(fd: fd, size: Int(image.length)) else {
            throw TrackError(.protocolViolation, "the image memory is not a sealed memfd of \(image.length) bytes")
        }
        do {
            let mapping = try SharedMapping(fd: fd, size: max(Int(image.length), 1), writable: false)
            let bytes = [UInt8](UnsafeRawBufferPointer(start: mapping.base, count: Int(image.length)))
            return GeneratedImage(actualTime: image.actualTime, width: image.width, height: image.height, png: bytes)
        } catch {
            throw TrackError(.limitExceeded, "cannot map the image: \(error)")
        }
    }
}
