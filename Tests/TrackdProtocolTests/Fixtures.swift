import TrackdProtocol

/// Messages covering every case of `Message`, with edge values in every field kind.
enum Fixtures {
    static let unicode = "naïve café — 日本語 — 🎬🎞️ — e\u{301}"
    /// Exactly `Wire.maxString` UTF-8 bytes, made of 1-, 2-, 3- and 4-byte scalars.
    static let maxLengthString: String = {
        var s = String(repeating: "🎬", count: 1000)  // 4000 bytes
        s += String(repeating: "日", count: 30)  // 90
        s += "éé"  // 4
        s += "ab"  // 2
        precondition(s.utf8.count == Wire.maxString)
        return s
    }()

    static let allSettingValues: [String: SettingValue] = [
        "int": .int(42), "intMin": .int(.min), "intMax": .int(.max), "negative": .int(-1),
        "double": .double(1.5), "negZero": .double(-0.0), "inf": .double(.infinity), "tiny": .double(.leastNonzeroMagnitude),
        "true": .bool(true), "false": .bool(false),
        "string": .string(unicode), "emptyString": .string(""), "longString": .string(maxLengthString),
        "emptyArray": .array([]), "emptyDict": .dictionary([:]),
        "mixed": .array([.int(1), .double(2), .bool(true), .string("x"), .array([.array([])]), .dictionary(["k": .int(1)])]),
        "nested": .dictionary(["a": .dictionary(["b": .array([.dictionary(["c": .string("deep")])])])]),
        "": .string("empty key"),
        unicode: .string("unicode key"),
    ]

    static func track(_ id: UInt32) -> TrackDescription {
        TrackDescription(id: id, mediaType: .video, codec: "avc1", width: 1920, height: 1080, nominalFrameRate: 29.97,
                         duration: MediaTime(value: 3003, timescale: 30000), timeRangeStart: .zero, sampleRate: 0,
                         channels: 0, depth: 24, hasAlpha: false, bitsPerComponent: 10,
                         chromaSubsampling: .yuv420, rotation: -90, language: "und", naturalTimeScale: 30000,
                         minFrameDuration: MediaTime(value: 1001, timescale: 30000))
    }

    static let sample = Sample(
        outputID: 3, slot: SlotRef(poolID: 1, slot: 7), length: 3_110_400,
        presentationTime: .nanoseconds(1_001_000_000), decodeTime: MediaTime(value: -1, timescale: 90000),
        duration: MediaTime(value: 1001, timescale: 30000), flags: Sample.flagSync | Sample.flagHasDecodeTime,
        format: "420v", width: 1920, height: 1080,
        colorimetry: Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1),
        planes: [PlaneLayout(offset: 0, bytesPerRow: 2048, rowBytes: 1920, height: 1080),
                 PlaneLayout(offset: 2048 * 1080, bytesPerRow: 2048, rowBytes: 1920, height: 540)])

    /// Non-interleaved stereo S16, 1024 frames: one plane per channel and the frame count.
    static let audioSample = Sample(
        outputID: 2, slot: SlotRef(poolID: 1, slot: 1), length: 4096, presentationTime: .nanoseconds(21_333_333),
        decodeTime: .invalid, duration: .nanoseconds(21_333_333), flags: Sample.flagSync, format: "lpcm",
        width: 0, height: 0, colorimetry: Colorimetry(),
        planes: [PlaneLayout(offset: 0, bytesPerRow: 2048, rowBytes: 2048, height: 1),
                 PlaneLayout(offset: 2048, bytesPerRow: 2048, rowBytes: 2048, height: 1)],
        frameCount: 1024)

    static let messages: [Message] = [
        .hello(Hello(clientName: "tests")),
        .hello(Hello(minVersion: 0, maxVersion: .max, maxMessageSize: .max, maxFds: 0, clientName: "")),
        .hello(Hello(clientName: maxLengthString)),
        .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "v1", capabilities: Capabilities(rawValue: .max))),
        .openAsset(name: "/media/clip.mov"),
        .openAsset(name: unicode),
        .openAsset(name: ""),
        .closeAsset(assetID: 0xFFFF_FFFF),
        .createOutput(CreateOutput(assetID: 1, trackID: 2, timeRange: .everything, settings: nil)),
        .createOutput(CreateOutput(assetID: 1, trackID: 2, timeRange: .everything, settings: [:])),
        .createOutput(CreateOutput(assetID: 1, trackID: 2,
                                   timeRange: MediaTimeRange(start: MediaTime(seconds: 1.5), duration: MediaTime(value: 5, timescale: 1)),
                                   settings: ["PixelFormatType": .int(0x3432_3076), "Width": .int(640), "Height": .double(360)])),
        .createOutput(CreateOutput(assetID: 9, trackID: 9, timeRange: MediaTimeRange(start: .invalid, duration: .invalid),
                                   settings: allSettingValues)),
        .releaseSlots(outputID: 1, slots: [SlotRef(poolID: 1, slot: 0), SlotRef(poolID: 2, slot: 0xFFFF_FFFF)]),
        .releaseSlots(outputID: 2, slots: (0..<UInt32(Wire.maxSlotsPerRelease)).map { SlotRef(poolID: $0 / 8, slot: $0 % 8) }),
        .createOutput(CreateOutput(assetID: 1, trackID: 2, timeRange: .everything, settings: [:], supportsRandomAccess: true)),
        .createOutput(CreateOutput(assetID: 1, trackID: 2, timeRange: .everything, settings: nil, supportsRandomAccess: true)),
        .cancelOutput(outputID: 5),
        .resetOutput(outputID: 3, ranges: [MediaTimeRange(start: .zero, duration: .positiveInfinity)]),
        .resetOutput(outputID: 0xFFFF_FFFF, ranges: [MediaTimeRange(start: MediaTime(value: 1, timescale: 3), duration: MediaTime(value: 1, timescale: 3)),
                                                     MediaTimeRange(start: .invalid, duration: .invalid)]),
        .resetOutput(outputID: 1, ranges: (0..<Int64(Wire.maxResetRanges)).map {
            MediaTimeRange(start: MediaTime(value: $0, timescale: 1), duration: MediaTime(value: 1, timescale: 1))
        }),
        .finishOutput(outputID: 7),
        .readFrames(ReadFrames(assetID: 1, trackID: 1, frames: [.index(0)], settings: [:])),
        .readFrames(ReadFrames(assetID: 2, trackID: 3,
                               frames: [.time(MediaTime(value: 1001, timescale: 30000)), .index(.max), .time(.invalid), .index(7)],
                               settings: ["PixelFormatType": .int(0x7934_3230)])),
        .readFrames(ReadFrames(assetID: 1, trackID: 1, frames: (0..<UInt64(Wire.maxFrameRequests)).map { .index($0 * 3) },
                               settings: allSettingValues)),
        .countFrames(assetID: 1, trackID: 1),
        .countFrames(assetID: .max, trackID: 0),
        .generateImage(GenerateImage(assetID: 1, trackID: 1, time: MediaTime(value: 12, timescale: 1))),
        .generateImage(GenerateImage(assetID: 1, trackID: 1, time: .zero, imageFormat: FourCC(rawValue: 0))),
        .getStatus,
        .helloReply(HelloReply(version: 2, maxMessageSize: 262_144, maxFds: 4, workerPID: 4242, serverVersion: "trackd 0.1")),
        .helloReply(HelloReply(version: .max, maxMessageSize: 1, maxFds: 0, workerPID: 0, serverVersion: unicode,
                               capabilities: Capabilities(rawValue: 0x8000_0000_0000_0001))),
        .assetOpened(AssetOpened(assetID: 1, duration: MediaTime(value: 10_010, timescale: 1000), tracks: [])),
        .assetOpened(AssetOpened(
            assetID: 2, duration: .positiveInfinity,
            tracks: [track(1),
                     TrackDescription(id: 2, mediaType: .audio, codec: "mp4a", sampleRate: 48000, channels: 2, language: "eng",
                                      profile: "lc", level: "2", bitRate: 128_000, channelLayout: "5.1(side)",
                                      naturalTimeScale: 48000),
                     TrackDescription(id: 5, mediaType: .video, codec: "hvc1", width: 3840, height: 2160, profile: "main-10",
                                      level: "5.1", pixelAspectRatio: PixelAspectRatio(numerator: 4, denominator: 3),
                                      colorimetry: Colorimetry(range: 2, matrix: 9, primaries: 9, transfer: 16),
                                      bitRate: .max, channelLayout: unicode),
                     TrackDescription(id: 3, mediaType: .subtitle, codec: "tx3g", language: unicode),
                     TrackDescription(id: 4, mediaType: .other, codec: FourCC(rawValue: 0), nominalFrameRate: .infinity,
                                      depth: 32, hasAlpha: true, bitsPerComponent: .max, chromaSubsampling: .yuv400,
                                      rotation: .min)])),
        .assetOpened(AssetOpened(assetID: 3, duration: .zero, tracks: (1...UInt32(Wire.maxTracks)).map(track))),
        .assetOpened(AssetOpened(
            assetID: 4, duration: MediaTime(value: 2000, timescale: 1000),
            tracks: [TrackDescription(id: 1, mediaType: .video, codec: "avc1", naturalTimeScale: 15360,
                                      segments: [.empty(target: MediaTimeRange(start: MediaTime(value: 0, timescale: 1000),
                                                                               duration: MediaTime(value: 500, timescale: 1000)),
                                                        sourceDuration: MediaTime(value: 7680, timescale: 15360)),
                                                 TrackSegment(source: MediaTimeRange(start: MediaTime(value: 1024, timescale: 15360),
                                                                                     duration: MediaTime(value: 30720, timescale: 15360)),
                                                              target: MediaTimeRange(start: MediaTime(value: 500, timescale: 1000),
                                                                                     duration: MediaTime(value: 2000, timescale: 1000)))],
                                      metadata: (0..<Wire.maxMetadataItems).map {
                                          MetadataItem(keySpace: "mkvtag", key: "K\($0)", value: $0 == 0 ? unicode : "")
                                      })],
            metadata: [MetadataItem(keySpace: "itsk", key: "©nam", commonKey: "title", value: "Title"),
                       MetadataItem(keySpace: "mvhd", key: "creationTime", commonKey: "creationDate", value: "2021-03-04T05:06:07Z")])),
        .ack,
        .outputCreated(OutputCreated(outputID: 1, mediaType: .video, format: "420v", width: 1920, height: 1080, codecConfig: [])),
        .outputCreated(OutputCreated(outputID: 2, mediaType: .video, format: "avc1", width: 1920, height: 1080,
                                     codecConfig: [0x01, 0x64, 0x00, 0x28, 0xFF, 0xE1])),
        .outputCreated(OutputCreated(outputID: 3, mediaType: .audio, format: "mp4a", width: 0, height: 0,
                                     codecConfig: (0..<Wire.maxCodecConfig).map { UInt8(truncatingIfNeeded: $0 * 7) })),
        .poolAdded(PoolAdded(outputID: 1, poolID: 1, slotCount: 8, slotSize: 3_112_960)),
        .poolRemoved(outputID: 1, poolID: 1),
        .sample(sample),
        .sample(Sample(outputID: 1, slot: SlotRef(poolID: 1, slot: 0), length: 0, presentationTime: .invalid,
                       decodeTime: .invalid, duration: .invalid, flags: 0, format: "avc1", width: 0, height: 0,
                       colorimetry: Colorimetry(), planes: [])),
        .sample(audioSample),
        .sample(Sample(outputID: 1, slot: SlotRef(poolID: 1, slot: 0), length: .max, presentationTime: .zero,
                       decodeTime: .zero, duration: .zero, flags: .max, format: "y420", width: .max, height: .max,
                       colorimetry: Colorimetry(range: .max, matrix: .max, primaries: .max, transfer: .max),
                       planes: (0..<UInt64(Wire.maxPlanes)).map { PlaneLayout(offset: $0 << 40, bytesPerRow: .max, rowBytes: 1, height: 2) },
                       frameCount: .max)),
        .outputFinished(OutputFinished(outputID: 1, status: .completed)),
        .outputFinished(OutputFinished(outputID: 1, status: .failed, code: AVErrorCode.decodeFailed.rawValue, message: unicode)),
        .outputFinished(OutputFinished(outputID: 1, status: .cancelled)),
        .image(ImageReady(actualTime: MediaTime(value: 1001, timescale: 30000), width: 1920, height: 1080, length: 123_456)),
        .status(StatusReport(workerPID: 1, supervisorPID: 2, supervisorUptimeMs: .max, connectionsAccepted: 4,
                             activeConnections: 5, workerCrashes: 6, openAssets: 7, activeOutputs: 8, samplesSent: 9,
                             bytesCopied: 10, daemonSamplesSent: 11, daemonBytesCopied: 12, daemonBytesShared: .max,
                             gstreamerVersion: "GStreamer 1.22.0", framesDecoded: .max, framesConverted: 13,
                             watchdogKills: 14, connectionsRefused: 15, connectionsRateLimited: .max)),
        .rangeEnded(outputID: 1),
        .rangeEnded(outputID: 0xFFFF_FFFF),
        .framesResolved(outputID: 1, frames: []),
        .framesResolved(outputID: 2, frames: [ResolvedFrame(index: 59, presentationTime: .nanoseconds(1_966_666_667)),
                                              ResolvedFrame(index: .max, presentationTime: .invalid)]),
        .frameCount(trackID: 1, count: 300),
        .frameCount(trackID: .max, count: .max),
        .outputStalled(outputID: 1, held: 8),
        .outputStalled(outputID: .max, held: .max),
        .error(TrackError(.protocolViolation, "bad")),
        .error(TrackError(rawCode: 12345, message: maxLengthString)),
    ]
}

/// Little-endian helpers for hand-built frames.
func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8((v >> (8 * UInt64($0))) & 0xFF) } }

/// A frame with an arbitrary header around `payload`.
func rawFrame(type: UInt16, payload: [UInt8], fdCount: UInt16 = 0, requestID: UInt32 = 1, reserved: UInt32 = 0,
              length: UInt32? = nil) -> [UInt8] {
    le32(length ?? UInt32(payload.count)) + le16(type) + le16(fdCount) + le32(requestID) + le32(reserved) + payload
}

/// The payload of a message as Codec encodes it.
func payload(of message: Message) -> [UInt8] {
    Array(Codec.frame(message, requestID: 1).dropFirst(Wire.headerSize))
}

/// Decodes every complete frame in `bytes`; throws the first protocol error.
func decodeAll(_ bytes: [UInt8], maxMessageSize: UInt32 = Wire.maxMessageSizeCeiling) throws(TrackError)
    -> [(header: FrameHeader, message: Message)]
{
    var decoder = FrameDecoder(maxMessageSize: maxMessageSize)
    decoder.feed(bytes)
    var out: [(header: FrameHeader, message: Message)] = []
    while let next = try decoder.next() { out.append(next) }
    return out
}

/// The error decoding `bytes` as one frame produces, or nil when it decodes (or needs more bytes).
func decodeError(_ bytes: [UInt8], maxMessageSize: UInt32 = Wire.maxMessageSizeCeiling) -> TrackError? {
    do throws(TrackError) {
        _ = try decodeAll(bytes, maxMessageSize: maxMessageSize)
        return nil
    } catch {
        return error
    }
}
