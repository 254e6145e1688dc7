import GstBridge
import MediaIndex
import TrackdProtocol

/// The asset's and its tracks' metadata and each track's segments (PROTOCOL.md §7.5, §7.6), put into the description
/// discovery found: from the container (`ContainerMetadata`, MediaIndex); a track the container gives no edit list
/// is one segment mapping its time range onto itself, as AVFoundation reports it.
extension Session {
    static func withMetadata(_ tracks: [TrackDescription], source: MediaSource) -> ([TrackDescription], [MetadataItem]) {
        let found = source.containerMetadata()
        let described = tracks.map { track in
            var track = track
            let entry = found.track(track.id)
            if track.mediaType != .video && track.mediaType != .audio, let start = editedStart(entry?.segments, track) {
                track.timeRangeStart = start
            }
            track.segments = entry?.segments ?? identitySegment(track).map { [$0] } ?? []
            track.metadata = entry?.items ?? []
            if let language = containerLanguage(track.metadata) { track.language = language }
            return track
        }
        return (described, found.items)
    }

    /// The track's language as the container stores it (MP4/MOV mdhd, Matroska's Language element), "" for "und":
    /// read from the file, it is the same on every open, where GStreamer's language tag arrives when the demuxer
    /// gets to it — for a subtitle track, whose data discovery does not wait for, sometimes after discovery ended.
    /// nil when the container has none (the tag, if any, stays).
    static func containerLanguage(_ items: [MetadataItem]) -> String? {
        guard let item = items.first(where: { ($0.keySpace == "mdhd" && $0.key == "language") || ($0.keySpace == "mkv" && $0.key == "Language") })
        else { return nil }
        return item.value == "und" ? "" : item.value
    }

    /// Where the edit list starts showing a sparse (subtitle) track's media: the first non-empty segment's target
    /// start, on the track's timescale. Discovery does not wait for such a track's first sample, so its time range
    /// starts at 0 unless this says otherwise (PROTOCOL.md §7.2); nil without an edit list.
    static func editedStart(_ segments: [TrackSegment]?, _ track: TrackDescription) -> MediaTime? {
        guard let shown = segments?.first(where: { !$0.isEmpty }), shown.target.start.isNumeric else { return nil }
        return TimeGrid(timescale: Int64(track.naturalTimeScale)).map { $0.rounded(shown.target.start) } ?? shown.target.start
    }

    /// The track's time range (start, duration, in its timescale) as both source and target; nil when the duration
    /// is not known.
    static func identitySegment(_ track: TrackDescription) -> TrackSegment? {
        guard track.duration.isNumeric else { return nil }
        let start = track.timeRangeStart.isNumeric ? track.timeRangeStart : MediaTime(value: 0, timescale: track.duration.timescale)
        let range = MediaTimeRange(start: start, duration: track.duration)
        return TrackSegment(source: range, target: range)
    }
}
