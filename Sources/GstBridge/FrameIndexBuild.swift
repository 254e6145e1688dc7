import MediaIndex
import TrackdProtocol

/// Where a track's frame index comes from in the worker (the index type, its rules and the MP4 table reader are in
/// MediaIndex, which needs no GStreamer): the container's sample tables when ContainerIndex reproduces them
/// exactly, else a parse-only pass — GStreamer 1.22's demuxers do not expose their sample tables.
extension FrameIndex {
    /// The index from an MP4/QuickTime file's sample tables, without demuxing the track; nil for other files and
    /// for tables ContainerIndex does not reproduce exactly (then `build`).
    public static func fromContainer(source: MediaSource, trackID: UInt32) -> FrameIndex? {
        ContainerIndex.mp4(file: source.descriptor, trackID: trackID).map { FrameIndex(frames: $0) }
    }

    /// Reads every stored sample of `trackID` (passthrough, no decoding) and indexes them; `progress` is called
    /// for each sample (a long file's pass is work in progress, not a stalled worker).
    public static func build(source: MediaSource, trackID: UInt32, progress: () -> Void = {}) throws(TrackError) -> FrameIndex {
        let pipeline = try TrackPipeline(source: source, trackID: trackID, mode: .passthrough, timeRange: .everything)
        defer { pipeline.stop() }
        var stored: [StoredSample] = []
        var timeouts = 0
        pulling: while true {
            switch pipeline.pull(timeoutNs: 1_000_000_000) {
            case .sample(let s):
                timeouts = 0
                guard let pts = s.presentationTime.nanoseconds else {
                    throw TrackError(.fileFailedToParse, "sample \(stored.count) of track \(trackID) has no presentation time; frames cannot be indexed")
                }
                stored.append(StoredSample(presentationTime: pts, duration: s.duration.nanoseconds, isSync: s.isSync))
                progress()
            case .endOfStream:
                break pulling
            case .timeout:
                timeouts += 1
                if timeouts >= 30 { throw TrackError(.failedToLoadMediaData, "indexing track \(trackID): no sample for 30 s") }
            case .failed(let error):
                throw error
            }
        }
        guard !stored.isEmpty else { throw TrackError.trackHasNoFrames(trackID) }
        return FrameIndex(parsedSamples: stored)
    }
}

extension TrackError {
    /// Indexing found no stored frame in the track: the one error that says so (callers compare with it).
    public static func trackHasNoFrames(_ trackID: UInt32) -> TrackError {
        TrackError(.operationNotSupportedForAsset, "track \(trackID) has no frames")
    }
}
