import Protocol
import Synchronization

/// Reads one track's samples, either as stored (`outputSettings` nil: passthrough, decode order, with DTS) or
/// decoded to the pixel format (video) or linear PCM layout (audio) the settings name (presentation order). Like AVAssetReaderTrackOutput.
public final class AssetReaderTrackOutput: Sendable {
    public let track: AssetTrack
    public let outputSettings: [String: SettingValue]?
    public var mediaType: MediaType { track.mediaType }

    private let state = Mutex(State())

    struct State: ~Copyable {
        weak var reader: AssetReader?
        var attached = false
        var alwaysCopiesSampleData = true
        var supportsRandomAccess = false
        var channel: OutputChannel?
        var requestID: UInt32 = 0
        var format: OutputCreated?
        var drained = false
    }

    /// Validates the settings as AVAssetReaderTrackOutput's initializer does, and throws the same messages
    /// (code -11861) for what it rejects.
    public init(track: AssetTrack, outputSettings: [String: SettingValue]?) throws(TrackError) {
        if let settings = outputSettings {
            switch track.mediaType {
            case .video:
                _ = try OutputSettings.validateVideo(settings)
            case .audio:
                _ = try OutputSettings.validateAudio(settings)
            default:
                throw TrackError(.operationNotSupportedForAsset,
                                 "decoded output of \(track.mediaType) tracks is not supported; use outputSettings nil (passthrough)")
            }
        }
        self.track = track
        self.outputSettings = outputSettings
    }

    /// When true (the default), each sample's bytes are copied out of shared memory and its slot returned at
    /// once. When false, a SampleBuffer refers to the shared slot directly (no copy) and holds it until the
    /// buffer is released — hold few at a time, the worker waits when you hold them all.
    /// Set it with `setAlwaysCopiesSampleData(_:)` before reading starts.
    public var alwaysCopiesSampleData: Bool { state.withLock { $0.alwaysCopiesSampleData } }

    /// Throws, as AVAssetReaderOutput's setter raises, once the output's reader has started reading.
    public func setAlwaysCopiesSampleData(_ value: Bool) throws(AssetReaderUsageError) {
        guard !started else {
            throw AssetReaderUsageError(.internalInconsistency,
                                        "-[AVAssetReaderOutput setAlwaysCopiesSampleData:] cannot be called after reading has started")
        }
        state.withLock { $0.alwaysCopiesSampleData = value }
    }

    /// Whether the output may be reset to other time ranges once it has returned nil
    /// (`reset(forReadingTimeRanges:)`); then the reader completes only after `markConfigurationAsFinal()`.
    /// Default false; set it with `setSupportsRandomAccess(_:)` before reading starts.
    public var supportsRandomAccess: Bool { state.withLock { $0.supportsRandomAccess } }

    /// Throws, as AVAssetReaderOutput's setter raises, once the output's reader has started reading.
    public func setSupportsRandomAccess(_ value: Bool) throws(AssetReaderUsageError) {
        guard !started else {
            throw AssetReaderUsageError(.internalInconsistency,
                                        "-[AVAssetReaderOutput setSupportsRandomAccess:] cannot be called after reading has started")
        }
        state.withLock { $0.supportsRandomAccess = value }
    }

    /// Reading has started when the output's reader has left `.unknown`. (Lock order is reader, then output:
    /// the reader's status is read without holding the output's lock.)
    private var started: Bool { (reader?.status ?? .unknown) != .unknown }

    /// The format the worker negotiated, once reading has started.
    public var outputFormat: OutputCreated? { state.withLock { $0.format } }

    var reader: AssetReader? { state.withLock { $0.attached ? $0.reader : nil } }
    var isDrained: Bool { state.withLock { $0.drained } }

    /// False when the output already belongs to a reader.
    func attach(to reader: AssetReader) -> Bool {
        state.withLock { s in
            guard !s.attached else { return false }
            s.reader = reader
            s.attached = true
            return true
        }
    }

    func start(range: MediaTimeRange) throws(TrackError) {
        guard let reader else { return }
        let asset = reader.asset
        let channel = OutputChannel(connection: asset.connection)
        let (reply, _) = try asset.connection.request(
            .createOutput(CreateOutput(assetID: asset.assetID, trackID: track.trackID, timeRange: range, settings: outputSettings)),
            channel: channel)
        guard case .outputCreated(let created) = reply else {
            throw TrackError(.protocolViolation, "trackd answered CreateOutput with \(reply.type)")
        }
        channel.outputID = created.outputID
        state.withLock { s in
            s.channel = channel
            s.format = created
        }
    }

    func stop() {
        guard let channel = state.withLock({ $0.channel }) else { return }
        channel.connection.post(.cancelOutput(outputID: channel.outputID))
        channel.drainUnread()
    }

    /// The next sample, or nil at the end, after a failure, or after cancelling; then check the reader's
    /// `status` and `error`. Blocks until the worker has the sample ready.
    /// Throws (as AVFoundation raises) when the output was not added to a reader that has started reading.
    public func copyNextSampleBuffer() throws(AssetReaderUsageError) -> SampleBuffer? {
        let (channel, reader, copies, drained, format) = state.withLock { s in
            (s.channel, s.attached ? s.reader : nil, s.alwaysCopiesSampleData, s.drained, s.format)
        }
        guard let reader, reader.status != .unknown else {
            throw AssetReaderUsageError(.internalInconsistency, "-[AVAssetReaderTrackOutput copyNextSampleBuffer] cannot copy next sample buffer before adding this output to an instance of AVAssetReader (using -addOutput:) and calling -startReading on that asset reader")
        }
        guard reader.status == .reading, !drained, let channel, let format else { return nil }
        switch channel.next() {
        case .sample(let sample, let mapping, let slotSize):
            return SampleBuffer(sample: sample, mediaType: format.mediaType, codecConfig: format.codecConfig,
                                mapping: mapping, offset: Int(UInt64(sample.slot.slot) * slotSize),
                                copy: copies, channel: channel,
                                decodedAudio: format.mediaType == .audio && outputSettings != nil)
        case .finished(let finished):
            state.withLock { $0.drained = true }
            switch finished.status {
            case .completed: reader.outputCompleted()
            case .failed: reader.fail(TrackError(rawCode: finished.code, message: finished.message))
            case .cancelled: break
            }
            return nil
        case .failed(let error):
            state.withLock { $0.drained = true }
            reader.fail(error)
            return nil
        }
    }
}
