import GstBridge
import MediaIndex
import TrackdProtocol

/// Times on the wire are in each track's own timescale (docs/PROTOCOL.md §7.1); GStreamer's nanoseconds stay inside
/// the worker. This is where a track's grid is chosen, and the track's description put on it.
extension Session {
    /// Each track's grid (by track id): the container's clock for it (`TrackTimescale`, read with pread from the
    /// client's descriptor), else an elementary stream's frame grid (`frameGrid`), else an audio track's sample rate,
    /// else nanoseconds.
    static func grids(_ tracks: [TrackDescription], clocks: [TrackTimescale.Clock],
                      container: TrackTimescale.Container) -> [UInt32: TimeGrid] {
        var ordinals: [MediaType: Int] = [:]
        var grids: [UInt32: TimeGrid] = [:]
        for track in tracks {
            let ordinal = ordinals[track.mediaType, default: 0]
            ordinals[track.mediaType] = ordinal + 1
            grids[track.id] = clock(for: track, ordinal: ordinal, in: clocks)?.grid
                ?? (container == .elementaryStream ? frameGrid(track) : nil)
                ?? (track.mediaType == .audio ? TimeGrid(timescale: Int64(track.sampleRate)) : nil) ?? .nanoseconds
        }
        return grids
    }

    /// The frame grid of an elementary stream's described video track (TimeGrid(frameRate:_:)): its timescale the
    /// rate's numerator and one frame, its `minFrameDuration`, the denominator, as `withFrameTiming` describes a
    /// track whose frames are on that grid (a cached description too); nil for a track in nanoseconds.
    static func frameGrid(_ track: TrackDescription) -> TimeGrid? {
        let (scale, frame) = (Int64(track.naturalTimeScale), track.minFrameDuration)
        guard track.mediaType == .video, scale > 0, scale != Int64(MediaTime.nanosecondTimescale), frame.isNumeric,
              frame.timescale == track.naturalTimeScale, frame.value > 0 else { return nil }
        return TimeGrid(frameRate: scale, frame.value)
    }

    /// The clock the container states for `track` (the `ordinal`-th track of its media type): by track id (MP4,
    /// Matroska's one clock for every track), else by kind and position (AVI video).
    static func clock(for track: TrackDescription, ordinal: Int, in clocks: [TrackTimescale.Clock]) -> TrackTimescale.Clock? {
        clocks.first { clock in
            if clock.kind == .any { return true }
            if let id = clock.id { return id == track.id }
            return clock.kind == .video && track.mediaType == .video && clock.ordinal == ordinal
        }
    }

    /// The track described on its grid: duration and start to the nearest tick (exact for the demuxer's times),
    /// `naturalTimeScale`, and a first `minFrameDuration` — the container's smallest frame duration when it lists
    /// them (MP4 stts, AVI), else one frame at the demuxer's frame rate on the grid — which `withFrameTiming`
    /// replaces from the frame index (kept only for a track whose index cannot be made).
    static func onGrid(_ track: TrackDescription, _ grid: TimeGrid, clock: TrackTimescale.Clock?) -> TrackDescription {
        var track = track
        track.duration = grid.rounded(track.duration)
        track.timeRangeStart = grid.rounded(track.timeRangeStart)
        track.naturalTimeScale = grid.timescale
        if track.mediaType == .video {
            if let units = clock?.minFrameDuration, units > 0 {
                track.minFrameDuration = MediaTime(value: units, timescale: grid.timescale)
            } else if track.nominalFrameRate > 0 {
                let frame = grid.time(seconds: 1 / track.nominalFrameRate)
                track.minFrameDuration = frame.value > 0 ? frame : .invalid
            }
        }
        return track
    }

    /// Each video track with AVAssetTrack's frame timing from its frame index (MediaIndex's FrameTiming): the MP4/MOV
    /// sample tables, else a parse-only pass over the track (kept in `indexes`, and given to the frame-index cache,
    /// so a read of the track does not index it again). A track whose index cannot be made keeps what `onGrid` gave
    /// it (the rate the demuxer states, the container's smallest frame duration or one frame at that rate). The span
    /// ends at the track's end when that is inside the last frame's stored duration (an MP4 edit ending early).
    /// In an MPEG-TS, an MPEG-PS or an elementary stream, which state no duration (the demuxer's is an estimate from
    /// the PCRs or SCRs and the byte rate), every audio and video track's time range is its packets' (`spansPackets`);
    /// an elementary stream's packets have no timestamps, and are timed by their durations (`FrameIndex.untimed`),
    /// on the frame grid of the rate the parser times them by (its timescale, `untimedGrid`).
    /// A Matroska audio or video track ends at its last packet's end (`endingAtLastPacket`).
    /// An MPEG-TS's or MPEG-PS's tracks are indexed by one pass over the file (`FrameIndexes.prepare`).
    static func withFrameTiming(_ tracks: [TrackDescription], grids: [UInt32: TimeGrid], source: MediaSource,
                                indexes: FrameIndexes) -> [TrackDescription] {
        let container = source.container
        let indexed = tracks.filter { $0.mediaType == .video || (container.endsAtLastPacket && $0.mediaType == .audio) }
        // An MPEG-TS's or MPEG-PS's tracks in one pass over the file, not one each.
        if FrameIndex.indexedInOnePass(container) {
            indexes.prepare(source: source, trackIDs: indexed.map(\.id))
        }
        return tracks.map { track in
            guard indexed.contains(where: { $0.id == track.id }) else { return track }
            var grid = grids[track.id] ?? .nanoseconds
            let index: FrameIndex
            do throws(TrackError) {
                // An elementary stream's frames have no timestamps: timed by their durations, for the description
                // only (one whose parser does time them is indexed as any other).
                if container == .elementaryStream, let untimed = try? indexes.untimed(source: source, trackID: track.id) {
                    index = untimed
                    grid = (try? indexes.untimedGrid(source: source, trackID: track.id)) ?? grid
                } else {
                    index = try indexes.index(source: source, trackID: track.id)
                }
            } catch {
                // Said when the track is read (a damaged file's reads warn); the description stays the demuxer's.
                Log.info("track \(track.id): no frame index (\(error.message)); its description stays the demuxer's")
                return track
            }
            // The last frame is displayed until the track's end when the container's edit ends inside it (MP4/MOV;
            // FrameIndex.endingAt), as decoded reads show it. A container that states no end spans its packets; a
            // Matroska track ends at its last packet's end.
            let shown = container.endsAtLastPacket ? index : ending(index, at: track, grid: grid)
            guard let timing = FrameTiming(shown, grid: grid), timing.span > 0 else { return track }
            var timed = track
            timed.naturalTimeScale = grid.timescale
            if container.spansPackets { timed = spanningPackets(timed, timing) } else if container.endsAtLastPacket {
                timed = endingAtLastPacket(timed, timing)
            }
            if track.mediaType == .video {
                timed.nominalFrameRate = timing.nominalFrameRate
                timed.minFrameDuration = timing.minFrameDuration
            }
            return timed
        }
    }

    /// `track` with the time range of its stored packets (`timing`, from its frame index): from the first one's
    /// presentation time to the end of the last one in presentation order (its presentation time plus its
    /// duration) — ffprobe's stream `start_pts` and `duration_ts` (PROTOCOL.md §7.2).
    static func spanningPackets(_ track: TrackDescription, _ timing: FrameTiming) -> TrackDescription {
        var track = track
        track.timeRangeStart = MediaTime(value: timing.start, timescale: timing.timescale)
        track.duration = MediaTime(value: timing.span, timescale: timing.timescale)
        return track
    }

    /// `track` (Matroska, WebM) ending at the end of its last stored packet (`timing`, from its frame index): its
    /// duration that end minus its `timeRangeStart`, where Info/Duration is the segment's, from 0 (a track whose
    /// first frame is at 0.5 s would end 0.5 s after its last frame). Its whole packet span when the start is not on
    /// the index's grid; unchanged when that end is not after the start.
    static func endingAtLastPacket(_ track: TrackDescription, _ timing: FrameTiming) -> TrackDescription {
        let start = track.timeRangeStart
        guard start.isNumeric, start.timescale == timing.timescale else { return spanningPackets(track, timing) }
        let duration = timing.start + timing.span - start.value
        guard duration > 0 else { return track }
        var track = track
        track.duration = MediaTime(value: duration, timescale: timing.timescale)
        return track
    }

    /// The asset's duration (AssetOpened, in nanoseconds): AVAsset's, the end of its longest track. In a container
    /// whose tracks span their packets (`spansPackets`: MPEG-TS, MPEG-PS, an elementary stream), the latest end
    /// (`timeRangeStart + duration`, on the track's grid) of its audio and video tracks, which the demuxer's estimate
    /// (`demuxers`) is not; elsewhere, and when no such track has a numeric range, the demuxer's: the container's
    /// stated duration (MP4/MOV `mvhd`, Matroska Info/Duration …). A track's end is its exact time, in nanoseconds
    /// rounded down (an elementary stream's 60 frames at 30 fps, `(60, 30)`: 2 s, where GStreamer's clock puts the
    /// end of its last frame at 60 × 33 333 333 ns).
    static func assetDuration(_ tracks: [TrackDescription], demuxers: MediaTime, spansPackets: Bool) -> MediaTime {
        guard spansPackets else { return demuxers }
        let ends = tracks.filter { $0.mediaType == .video || $0.mediaType == .audio }.compactMap { track -> Int64? in
            guard track.timeRangeStart.isNumeric, track.duration.isNumeric,
                  let end = FrameIndex.rangeEnd(MediaTimeRange(start: track.timeRangeStart, duration: track.duration)) else { return nil }
            return end.nanoseconds
        }
        return ends.max().map(MediaTime.nanoseconds) ?? demuxers
    }

    /// The tracks of a newly discovered asset on their grids, and the grids.
    static func placeOnGrids(_ tracks: [TrackDescription], source: MediaSource) -> ([TrackDescription], [UInt32: TimeGrid]) {
        let clocks = source.trackClocks()
        let grids = grids(tracks, clocks: clocks, container: source.container)
        let matrices = source.displayMatrices()
        var ordinals: [MediaType: Int] = [:]
        let placed = tracks.map { track in
            let ordinal = ordinals[track.mediaType, default: 0]
            ordinals[track.mediaType] = ordinal + 1
            var placed = onGrid(track, grids[track.id] ?? .nanoseconds, clock: clock(for: track, ordinal: ordinal, in: clocks))
            // The header's matrix where the container has one (MP4), else the one the rotation tag implies.
            placed.preferredTransform = matrices[track.id] ?? DisplayMatrix(clockwise: track.rotation)
            return placed
        }
        return (placed, grids)
    }

    /// The grid a decoded audio output's samples are on: its output sample rate (the requested one, else the
    /// track's), so that every sample's time is exact, and a requested time goes to the nearest sample (§12.7);
    /// passthrough and video outputs use the track's grid.
    static func outputGrid(track: TrackDescription, trackGrid: TimeGrid, audio: AudioOutputRequest?) -> TimeGrid {
        guard let audio else { return trackGrid }
        let rate = Int64(audio.sampleRate ?? Int(track.sampleRate))
        return TimeGrid(sampleRate: rate) ?? trackGrid
    }
}
