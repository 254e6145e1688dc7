import TrackdProtocol

/// A frame delivered by exact random access (``Asset/frames(at:track:outputSettings:)``): its index in the track
/// and the decoded sample, whose presentation time is the frame's own. AVFoundation has no direct equivalent;
/// it replaces an `AVAssetImageGenerator` with zero tolerance or a reader per time, for many frames at once.
///
/// `Sendable`; the sample owns a copy of its bytes (no shared slot is held).
public struct IndexedFrame: Sendable {
    /// The frame's number in the track: 0-based, presentation order, every frame counted.
    public let index: UInt64
    /// The decoded frame, in the pixel format the output settings asked for.
    public let sample: SampleBuffer
}

extension Asset {
    /// The frames displayed at `times` on a video `track` — each the frame whose display interval
    /// [pts, pts + duration) contains the time (a time before the first frame gives the first frame) — decoded
    /// into `outputSettings` (as for AssetReaderTrackOutput; not nil), in the order asked. Exact: the same bytes a
    /// full sequential decode gives for that frame. trackd builds the track's frame index on first use (a pass over
    /// the stored samples, no decoding) and decodes every GOP the batch needs once. Each sample is copied out of
    /// shared memory. Blocks until every frame is decoded. Errors: -11901 for a time after the last frame or an
    /// unknown track, -11838 for a track that is not video, -11861 for rejected settings, decoder errors.
    public func frames(at times: [MediaTime], track: AssetTrack,
                       outputSettings: [String: SettingValue]) throws(TrackError) -> [IndexedFrame] {
        try readFrames(times.map(FrameRequest.time), track: track, outputSettings: outputSettings)
    }

    /// The frames with `indices` (0-based, presentation order) on a video `track`, in the order asked; otherwise as
    /// `frames(at:track:outputSettings:)`. An index past the last frame is -11901.
    public func frames(atIndices indices: [UInt64], track: AssetTrack,
                       outputSettings: [String: SettingValue]) throws(TrackError) -> [IndexedFrame] {
        try readFrames(indices.map(FrameRequest.index), track: track, outputSettings: outputSettings)
    }

    /// The number of frames of a video `track`: every frame, in presentation order, as trackd's frame index counts
    /// them — the indices `frames(atIndices:track:outputSettings:)` takes are 0 ..< this (CountFrames). trackd builds
    /// the index on first use, as for a ReadFrames (a pass over the stored samples on a file that is not an
    /// MP4/MOV). Errors: -11901 for an unknown track, -11838 for a track that is not video, demuxer errors.
    public func frameCount(track: AssetTrack) throws(TrackError) -> UInt64 {
        let reply = try connection.request(.countFrames(assetID: assetID, trackID: track.trackID)).message
        guard case .frameCount(let trackID, let count) = reply, trackID == track.trackID else {
            throw TrackError(.protocolViolation, "trackd answered CountFrames of track \(track.trackID) with \(reply.type)")
        }
        return count
    }

    private func readFrames(_ requests: [FrameRequest], track: AssetTrack,
                            outputSettings: [String: SettingValue]) throws(TrackError) -> [IndexedFrame] {
        guard !requests.isEmpty else { return [] }
        _ = try OutputSettings.validateVideo(outputSettings)
        var frames: [IndexedFrame] = []
        frames.reserveCapacity(requests.count)
        var start = 0
        while start < requests.count {  // batches of what one ReadFrames may carry
            let batch = Array(requests[start..<min(start + Wire.maxFrameRequests, requests.count)])
            frames += try readBatch(batch, track: track, outputSettings: outputSettings)
            start += batch.count
        }
        return frames
    }

    private func readBatch(_ requests: [FrameRequest], track: AssetTrack,
                           outputSettings: [String: SettingValue]) throws(TrackError) -> [IndexedFrame] {
        let channel = OutputChannel(connection: connection)
        let reply = try connection.request(
            .readFrames(ReadFrames(assetID: assetID, trackID: track.trackID, frames: requests, settings: outputSettings)),
            channel: channel).message
        guard case .outputCreated(let created) = reply else {
            throw TrackError(.protocolViolation, "trackd answered ReadFrames with \(reply.type)")
        }
        channel.outputID = created.outputID
        var resolved: [ResolvedFrame] = []
        var frames: [IndexedFrame] = []
        while true {
            switch channel.next() {
            case .resolved(let list):
                resolved = list
            case .sample(let sample, let mapping, let slotSize):
                guard frames.count < resolved.count else {
                    throw TrackError(.protocolViolation, "ReadFrames: more samples than frames resolved (\(resolved.count))")
                }
                let buffer = SampleBuffer(sample: sample, mediaType: .video, codecConfig: [], mapping: mapping,
                                          offset: Int(UInt64(sample.slot.slot) * slotSize), copy: true,
                                          channel: channel, decodedAudio: false)
                frames.append(IndexedFrame(index: resolved[frames.count].index, sample: buffer))
            case .finished(let finished):
                guard finished.status == .completed else {
                    throw TrackError(rawCode: finished.code, message: finished.message)
                }
                guard frames.count == requests.count else {
                    throw TrackError(.protocolViolation, "ReadFrames: \(frames.count) samples for \(requests.count) frames")
                }
                return frames
            case .failed(let error):
                throw error
            case .rangeEnded:
                throw TrackError(.protocolViolation, "ReadFrames: RangeEnded from an output that is not random-access")
            case .stalled:
                throw TrackError(.protocolViolation, "ReadFrames: the worker waits for a release, but every sample was copied and released")
            }
        }
    }
}
