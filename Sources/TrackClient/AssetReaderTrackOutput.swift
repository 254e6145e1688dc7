import TrackdProtocol
import Synchronization

/// Reads one track's samples, either as stored (`outputSettings` nil: passthrough, decode order, with DTS) or
/// decoded to the pixel format (video) or linear PCM layout (audio) the settings name (presentation order).
/// Like `AVAssetReaderTrackOutput`; the settings dictionary takes the same keys (docs/SETTINGS.md).
///
/// **Ownership.** Each ``SampleBuffer`` the output vends either owns a copy of its bytes
/// (``alwaysCopiesSampleData`` true, the default: the shared slot goes back to the worker at once) or refers to
/// a slot of the worker's sealed shared-memory pool and gives it back when the buffer is released (false:
/// zero-copy). Pools have few slots; while you hold them all, the worker waits, so with zero-copy hold few
/// buffers at a time and copy what you keep.
///
/// **Thread-safety.** `Sendable`: settings are immutable, state is behind a lock. Read one output from one loop
/// at a time (as with AVAssetReader); different outputs may be read on different threads concurrently.
///
/// **Blocking.** ``copyNextSampleBuffer()`` blocks until the worker has the next sample; ``samples`` does the
/// same wait on a dedicated thread and suspends the awaiting task instead.
public final class AssetReaderTrackOutput: Sendable {
    /// The track this output reads (`AVAssetReaderTrackOutput.track`).
    public let track: AssetTrack
    /// The settings given to `init`: nil for passthrough (samples as stored), else the decoded format
    /// (`AVAssetReaderTrackOutput.outputSettings`).
    public let outputSettings: [String: SettingValue]?
    /// The track's media type (`AVAssetReaderOutput.mediaType`).
    public var mediaType: MediaType { track.mediaType }

    private let state = Mutex(State())

    struct State: ~Copyable {
        weak var reader: AssetReader?
        var attached = false
        var alwaysCopiesSampleData = true
        var supportsRandomAccess = false
        /// Set with setAudioTimePitchAlgorithm: sent as TrackdAudioTimePitchAlgorithm (nil: not sent, Spectral).
        var audioTimePitchAlgorithm: AudioTimePitchAlgorithm?
        var channel: OutputChannel?
        var requestID: UInt32 = 0
        var format: OutputCreated?
        /// copyNextSampleBuffer returned nil (end of data, failure, or, with random access, end of the ranges).
        var drained = false
        /// markConfigurationAsFinal() was called.
        var finalized = false
        var samplesLost: UInt64 = 0
    }

    /// An output of `track` (`AVAssetReaderTrackOutput(track:outputSettings:)`). Validates the settings as
    /// AVAssetReaderTrackOutput's initializer does, and throws the same messages (code -11861) for what it rejects
    /// (AVFoundation raises); -11838 for decoded output of a track that is neither video nor audio. Does not
    /// contact trackd.
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

    /// How audio read at a rate other than 1 is stretched (`AVAssetReaderTrackOutput.audioTimePitchAlgorithm`);
    /// default ``AudioTimePitchAlgorithm/spectral``. trackd reads at rate 1, where every algorithm delivers the
    /// samples unchanged. Set it with `setAudioTimePitchAlgorithm(_:)` before reading starts.
    public var audioTimePitchAlgorithm: AudioTimePitchAlgorithm { state.withLock { $0.audioTimePitchAlgorithm } ?? .spectral }

    /// Throws, as AVAssetReaderTrackOutput's setter raises, once the output's reader has started reading. A decoded
    /// audio output sends the value as the setting `TrackdAudioTimePitchAlgorithm` (docs/SETTINGS.md): a value
    /// that is not one of Apple's four makes `startReading()` fail with trackd's -11861 naming them.
    public func setAudioTimePitchAlgorithm(_ value: AudioTimePitchAlgorithm) throws(AssetReaderUsageError) {
        guard !started else {
            throw AssetReaderUsageError(.internalInconsistency,
                                        "-[AVAssetReaderTrackOutput setAudioTimePitchAlgorithm:] cannot be called after reading has started")
        }
        state.withLock { $0.audioTimePitchAlgorithm = value }
    }

    /// The settings CreateOutput sends: `outputSettings`, with a decoded audio output's time-pitch algorithm.
    private var requestedSettings: [String: SettingValue]? {
        guard var settings = outputSettings, track.mediaType == .audio,
              let algorithm = state.withLock({ $0.audioTimePitchAlgorithm }) else { return outputSettings }
        settings[SettingsKey.audioTimePitchAlgorithm] = .string(algorithm.rawValue)
        return settings
    }

    /// Reading has started when the output's reader has left `.unknown`. (Lock order is reader, then output:
    /// the reader's status is read without holding the output's lock.)
    private var started: Bool { (reader?.status ?? .unknown) != .unknown }

    /// The format the worker negotiated (pixel format, size, audio layout …), once reading has started; nil
    /// before. The counterpart of the format description of the first sample.
    public var outputFormat: OutputCreated? { state.withLock { $0.format } }

    /// Once the output has ended: the stored samples of the track it could not deliver — ones the file lacks and
    /// ones the decoder made nothing of (OutputFinished `samplesLost`, PROTOCOL.md §12.5). 0 while reading; a
    /// read that completed with samples lost delivered every frame the decoder could make, but not the whole track.
    public var samplesLost: UInt64 { state.withLock { $0.samplesLost } }

    var reader: AssetReader? { state.withLock { $0.attached ? $0.reader : nil } }
    var isDrained: Bool { state.withLock { $0.drained } }
    /// Drained, and (random access) marked final: what the reader waits for to complete.
    var isDone: Bool { state.withLock { $0.drained && (!$0.supportsRandomAccess || $0.finalized) } }

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
        let (randomAccess, finalized) = state.withLock { ($0.supportsRandomAccess, $0.finalized) }
        let reply = try asset.connection.request(
            .createOutput(CreateOutput(assetID: asset.assetID, trackID: track.trackID, timeRange: range, settings: requestedSettings,
                                       supportsRandomAccess: randomAccess)),
            channel: channel).message
        guard case .outputCreated(let created) = reply else {
            throw TrackError(.protocolViolation, "trackd answered CreateOutput with \(reply.type)")
        }
        channel.outputID = created.outputID
        state.withLock { s in
            s.channel = channel
            s.format = created
        }
        if randomAccess && finalized { asset.connection.post(.finishOutput(outputID: created.outputID)) }
    }

    static let resetPrefix = "-[AVAssetReaderOutput resetForReadingTimeRanges:] "

    /// Reads `timeRanges` next, in order, once every sample so far was read (copyNextSampleBuffer returned nil):
    /// copyNextSampleBuffer then returns the samples of each range in turn, and nil after the last. Requires
    /// `supportsRandomAccess`. The ranges replace the reader's `timeRange`. Throws AVFoundation's exceptions,
    /// checked in its order: each range has a numeric start and a duration ≥ 0 or +infinity, and starts at or after
    /// the end of the one before (touching is allowed); reading has started; all samples were read; the reader
    /// has not failed; supportsRandomAccess; not yet marked final.
    public func reset(forReadingTimeRanges timeRanges: [MediaTimeRange]) throws(AssetReaderUsageError) {
        func invalid(_ text: String) -> AssetReaderUsageError { AssetReaderUsageError(.invalidArgument, Self.resetPrefix + text) }
        func inconsistent(_ text: String) -> AssetReaderUsageError { AssetReaderUsageError(.internalInconsistency, Self.resetPrefix + text) }
        guard !timeRanges.isEmpty else { throw invalid("time ranges must not be empty") }
        for (i, range) in timeRanges.enumerated() {
            guard range.start.isNumeric else { throw invalid("time range \(i) has a start that is not numeric") }
            guard range.duration.isPositiveInfinity || (range.duration.isNumeric && range.duration.value >= 0) else {
                throw invalid("time range \(i) has a negative or non-numeric duration")
            }
            if i > 0 && !timeRanges[i - 1].ends(atOrBefore: range.start) {
                throw invalid("time ranges must be in ascending order and must not overlap (time range \(i) starts before time range \(i - 1) ends)")
            }
        }
        let reader = self.reader
        let status = reader?.status ?? .unknown
        let channel = try state.withLock { (s: inout State) throws(AssetReaderUsageError) -> OutputChannel? in
            guard status != .unknown else { throw inconsistent("cannot be called before reading has started") }
            guard s.drained else {
                throw inconsistent("cannot be called until all samples have been read (i.e. copyNextSampleBuffer returns NULL)")
            }
            guard status != .failed else { throw inconsistent("cannot be called after the asset reader has failed") }
            guard s.supportsRandomAccess else { throw inconsistent("cannot be called without setting supportsRandomAccess to YES") }
            guard !s.finalized else { throw inconsistent("cannot be called after calling markConfigurationAsFinal") }
            guard status == .reading, let channel = s.channel else { return nil }  // cancelled: nothing to read
            s.drained = false
            return channel
        }
        if let channel { channel.connection.post(.resetOutput(outputID: channel.outputID, ranges: timeRanges)) }
    }

    /// No more resets will follow: with random access, the reader can complete once this output has returned nil
    /// (at once, if it already has). Never throws; calling it again does nothing.
    public func markConfigurationAsFinal() {
        let (first, channel, done) = state.withLock { s -> (Bool, OutputChannel?, Bool) in
            defer { s.finalized = true }
            return (!s.finalized, s.supportsRandomAccess ? s.channel : nil, s.drained)
        }
        guard first else { return }
        if let channel { channel.connection.post(.finishOutput(outputID: channel.outputID)) }
        if done { reader?.outputCompleted() }
    }

    func stop() {
        guard let channel = state.withLock({ $0.channel }) else { return }
        channel.connection.post(.cancelOutput(outputID: channel.outputID))
        channel.drainUnread()
    }

    /// The next sample, or nil at the end, after a failure, or after cancelling; then check the reader's
    /// `status` and `error` (`AVAssetReaderOutput.copyNextSampleBuffer()`). Blocks the calling thread until the
    /// worker has the sample ready — from async code, iterate ``samples`` instead. The returned buffer is yours;
    /// see ``alwaysCopiesSampleData`` for what it holds. Throws (as AVFoundation raises) when the output was not
    /// added to a reader that has started reading; and, at once instead of waiting forever, when zero-copy buffers
    /// you still hold fill every slot of the output and nothing is queued (trackd's OutputStalled): release one (or
    /// copy what you keep) and call again.
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
            state.withLock { ($0.drained, $0.samplesLost) = (true, finished.samplesLost) }
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
        case .rangeEnded:
            state.withLock { $0.drained = true }
            reader.outputCompleted()  // completes the reader if this output was marked final meanwhile
            return nil
        case .resolved:
            return try copyNextSampleBuffer()  // only ReadFrames outputs send it
        case .stalled(let held):
            throw AssetReaderUsageError(.internalInconsistency,
                                        "all \(held) frames of this output are held: copy them (alwaysCopiesSampleData) or release them")
        }
    }
}

/// The values of `AVAudioTimePitchAlgorithm` (Apple's string constants): how audio read at another rate is
/// stretched. A struct, as Apple's, so that any string can be given; trackd accepts these four.
public struct AudioTimePitchAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let spectral = Self(rawValue: "Spectral")
    public static let timeDomain = Self(rawValue: "TimeDomain")
    public static let varispeed = Self(rawValue: "Varispeed")
    public static let lowQualityZeroLatency = Self(rawValue: "LowQualityZeroLatency")
}
