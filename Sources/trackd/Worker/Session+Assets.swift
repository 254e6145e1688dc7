import CTrackSys
import Foundation
import GstBridge
import IndexCache
import MediaIndex
import TrackdProtocol
import Synchronization
import SystemCalls

extension Session {
    struct Asset {
        let source: MediaSource
        let tracks: [TrackDescription]
        /// Each track's time grid (by track id): what its times on the wire are in (§7.1).
        let grids: [UInt32: TimeGrid]
        let indexes: FrameIndexes

        func grid(_ trackID: UInt32) -> TimeGrid { grids[trackID] ?? .nanoseconds }
    }

    /// Frame indexes of one asset's tracks, kept while it is open: on the first ReadFrames of a track, from the
    /// supervisor's cache (shared by all workers, IndexCacheClient), else built and then given to the cache.
    final class FrameIndexes: Sendable {
        private let built = Mutex<[UInt32: FrameIndex]>([:])
        /// Tracks found to carry (false) or not to carry (true) presentation times (carriesNoTimes).
        private let timeless = Mutex<[UInt32: Bool]>([:])
        /// Elementary streams' untimed frames timed by their durations (`untimed`), with the frame grid they are on
        /// (`untimedGrid`), and AVI tracks' with B-pictures at their decode times (`decodeTimed`), apart from `built`:
        /// their times are not the stored samples'.
        private let timedByDurations = Mutex<[UInt32: (index: FrameIndex, grid: TimeGrid)]>([:])
        private let timedByDecodeTimes = Mutex<[UInt32: FrameIndex]>([:])
        private let building = Mutex(())  // one build at a time: a second request for the track waits for the first
        /// The worker's slot: a parse-only pass marks progress for each sample, so that the watchdog does not take
        /// indexing a long file (at open, or at the first ReadFrames) for a stalled worker.
        private let slot: WorkerSlot

        init(slot: WorkerSlot) { self.slot = slot }

        func index(source: MediaSource, trackID: UInt32) throws(TrackError) -> FrameIndex {
            if let index = built.withLock({ $0[trackID] }) { return index }
            return try building.withLock { (_: inout ()) throws(TrackError) -> FrameIndex in
                if let index = built.withLock({ $0[trackID] }) { return index }
                let before = source.status()
                if let index = fromCache(before, trackID: trackID) { return index }
                if let fromTables = FrameIndex.fromContainer(source: source, trackID: trackID) {
                    Log.info("frame index for track \(trackID): made from the container's sample tables (\(fromTables.frames.count) frames)")
                    Event.frameIndex(track: trackID, source: "sample-tables", frames: fromTables.frames.count).emit()
                    keep(fromTables, trackID: trackID, source: source, before: before)
                    return fromTables
                }
                let index = try FrameIndex.build(source: source, trackID: trackID) { slot.progress() }
                Log.info("frame index for track \(trackID): made by a parse-only pass (\(index.frames.count) frames)")
                Event.frameIndex(track: trackID, source: "parse-pass", frames: index.frames.count).emit()
                keep(index, trackID: trackID, source: source, before: before)
                return index
            }
        }

        /// Whether no stored sample of the track carries a presentation time (FrameIndex.carriesNoTimes), found once
        /// per track: false at once for a track with a frame index (every frame timed). A pass that fails answers
        /// false (not kept): the read goes on and meets the failure itself.
        func carriesNoTimes(source: MediaSource, trackID: UInt32) -> Bool {
            if built.withLock({ $0[trackID] }) != nil { return false }
            if let known = timeless.withLock({ $0[trackID] }) { return known }
            do {
                let found = try FrameIndex.carriesNoTimes(source: source, trackID: trackID) { slot.progress() }
                timeless.withLock { $0[trackID] = found }
                if found { Log.info("track \(trackID): no stored sample carries a presentation time") }
                return found
            } catch {
                Log.warning("track \(trackID): whether its samples carry times is not known (\(error.message))")
                return false
            }
        }

        /// The indexes of several tracks of an MPEG-TS or MPEG-PS, ahead of `index`: those neither kept nor in the
        /// cache are made by one parse-only pass over the file for all of them (FrameIndex.buildAll), not one pass
        /// per track. A track that pass leaves out is indexed alone by `index` when it is asked for.
        func prepare(source: MediaSource, trackIDs: [UInt32]) {
            building.withLock { _ in
                let before = source.status()
                let wanted = trackIDs.filter { trackID in
                    built.withLock { $0[trackID] } == nil && fromCache(before, trackID: trackID) == nil
                }
                guard wanted.count > 1 else { return }
                let slot = slot
                let made = FrameIndex.buildAll(source: source, trackIDs: wanted) { slot.progress() }
                for (trackID, index) in made.sorted(by: { $0.key < $1.key }) {
                    Log.info("frame index for track \(trackID): made by a parse-only pass of tracks \(wanted.map(String.init).joined(separator: ", ")) (\(index.frames.count) frames)")
                    Event.frameIndex(track: trackID, source: "parse-pass", frames: index.frames.count).emit()
                    keep(index, trackID: trackID, source: source, before: before)
                }
            }
        }

        /// The track's index from the supervisor's cache (kept), for a file whose fstat gave `before`; nil: a miss.
        private func fromCache(_ before: MediaSource.FileStatus?, trackID: UInt32) -> FrameIndex? {
            guard let key = before.map({ IndexCacheClient.key($0, trackID: trackID) }), let index = IndexCacheClient.get(key) else {
                return nil
            }
            Log.info("frame index for track \(trackID): from the cache (\(index.frames.count) frames)")
            Event.frameIndex(track: trackID, source: "cache", frames: index.frames.count).emit()
            built.withLock { $0[trackID] = index }
            return index
        }

        /// Keeps a made index, and gives it to the cache — only when the file did not change while it was read
        /// (else the key would not match the frames).
        private func keep(_ index: FrameIndex, trackID: UInt32, source: MediaSource, before: MediaSource.FileStatus?) {
            built.withLock { $0[trackID] = index }
            if let before, source.status() == before { IndexCacheClient.put(IndexCacheClient.key(before, trackID: trackID), index) }
        }

        /// An AVI track's index (`index`), or, when that is refused because the track holds B-pictures (a sample
        /// without a presentation time, .fileFailedToParse), its frames at their decode times (FrameIndex.decodeTimed),
        /// found once and never given to the cache: what ReadFrames and CountFrames resolve requests against.
        func storedOrDecodeTimed(source: MediaSource, trackID: UInt32) throws(TrackError) -> FrameIndex {
            if let index = timedByDecodeTimes.withLock({ $0[trackID] }) { return index }
            do {
                return try index(source: source, trackID: trackID)
            } catch where error.knownCode == .fileFailedToParse {
                let index = try FrameIndex.decodeTimed(source: source, trackID: trackID) { slot.progress() }
                timedByDecodeTimes.withLock { $0[trackID] = index }
                Log.info("frame index for track \(trackID): its \(index.frames.count) frames at their decode times (B-pictures: \(error.message))")
                Event.frameIndex(track: trackID, source: "decode-times", frames: index.frames.count).emit()
                return index
            }
        }

        /// An elementary stream's frames timed by their durations (FrameIndex.untimed): for the track's description,
        /// for decoded reads from the stream's beginning (TrackPipeline's `readsFromStart`) and for ReadFrames, which
        /// reads its frames in one such read; never given to the cache; it tells carriesNoTimes that the track has no
        /// times.
        func untimed(source: MediaSource, trackID: UInt32) throws(TrackError) -> FrameIndex {
            try timedByTheirDurations(source: source, trackID: trackID).index
        }

        /// The frame grid an elementary stream's untimed frames are on (FrameIndex.untimed: the rate its parser
        /// states, frame k at k frames), the track's grid (Session.grids); nanoseconds when they are not on one.
        func untimedGrid(source: MediaSource, trackID: UInt32) throws(TrackError) -> TimeGrid {
            try timedByTheirDurations(source: source, trackID: trackID).grid
        }

        private func timedByTheirDurations(source: MediaSource,
                                           trackID: UInt32) throws(TrackError) -> (index: FrameIndex, grid: TimeGrid) {
            if let timed = timedByDurations.withLock({ $0[trackID] }) { return timed }
            let timed = try FrameIndex.untimed(source: source, trackID: trackID) { slot.progress() }
            timedByDurations.withLock { $0[trackID] = timed }
            timeless.withLock { $0[trackID] = true }  // every stored sample untimed (FrameIndex.untimed)
            Log.info("track \(trackID): timed \(timed.index.frames.count) untimed frames by their durations, on the grid \(timed.grid)")
            return timed
        }
    }

    /// OpenAsset: the media descriptor (taken from `media`, which the request's background thread received) becomes a
    /// MediaSource, which is described and kept as a new asset.
    func openAsset(_ media: DescriptorHandoff, name: String) throws(TrackError) -> Message {
        guard let fd = media.take() else { preconditionFailure("an OpenAsset's descriptor is taken once") }
        let source = try MediaSource(fd)  // owns fd from here, even when it throws
        let indexes = FrameIndexes(slot: context.slot)
        let opened = try describe(source, indexes: indexes)
        let tracks = opened.tracks
        let grids = Self.grids(tracks, clocks: source.trackClocks(), container: source.container)
        let assetID = try assets.add(Asset(source: source, tracks: tracks, grids: grids, indexes: indexes))
        Log.info("opened asset \(assetID) \"\(name)\": \(tracks.count) tracks")
        return .assetOpened(AssetOpened(assetID: assetID, duration: opened.duration, tracks: tracks, metadata: opened.metadata))
    }

    /// What discovery finds in `source` — from the daemon's cache when this uid opened the same unchanged file
    /// before (same device, inode, size and mtime, as for frame indexes), which saves the discovery pipeline
    /// (10–20 ms); else discovered, and given to the cache. The tracks come in ascending track-id order, as
    /// AVAsset lists them (a demuxer exposes its pads in its own order: a MOV's tracks 1, 2, 3 as 1, 3, 2), and each
    /// track's times are on its grid (Session+TimeGrids.swift). The metadata and segments (Session+Metadata.swift)
    /// are bounded to `Wire.maxMetadataBytes` (the answer's asset id is 0). A video track's frame timing comes from
    /// its frame index (`withFrameTiming`), which is kept in `indexes` for the reads that follow.
    func describe(_ source: MediaSource, indexes: FrameIndexes) throws(TrackError) -> AssetOpened {
        let before = source.status()
        let key = before.map { IndexCacheClient.key($0, trackID: IndexCacheWire.descriptionTrackID) }
        if let key, let cached = IndexCacheClient.getDescription(key) {
            Log.info("asset description from the cache: \(cached.tracks.count) tracks")
            Event.assetFromCache(tracks: cached.tracks.count).emit()
            // Ordered here too: a description cached before tracks were ordered is still in the demuxer's order.
            var ordered = cached
            ordered.tracks = Self.inTrackIDOrder(cached.tracks)
            return ordered
        }
        let discovered = try source.discover()
        let (onGrids, grids) = Self.placeOnGrids(Self.inTrackIDOrder(discovered.tracks), source: source)
        let timed = Self.withFrameTiming(onGrids, grids: grids, source: source, indexes: indexes)
        let (tracks, metadata) = Self.withMetadata(timed, source: source)
        let duration = Self.assetDuration(tracks, demuxers: discovered.duration, spansPackets: source.container.spansPackets)
        // What is cached and answered.
        let found = AssetOpened(assetID: 0, duration: duration, tracks: tracks, metadata: metadata).boundingMetadata()
        // Only when the file did not change while it was read (else the key would not match what was found), and
        // only audio and video: discovery does not wait for a subtitle track's data, so its language tag may not
        // have arrived yet — a description without it must not be the answer for every later open.
        if let key, source.status() == before, found.tracks.allSatisfy({ $0.mediaType == .video || $0.mediaType == .audio }) {
            IndexCacheClient.putDescription(key, found)
        }
        return found
    }

    /// Tracks by ascending id; tracks with the same id (none in a valid container) keep their discovery order.
    static func inTrackIDOrder(_ tracks: [TrackDescription]) -> [TrackDescription] {
        tracks.enumerated().sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }.map(\.element)
    }

    /// The open asset and one of its tracks, or the error that names what does not exist.
    func assetTrack(_ assetID: UInt32, _ trackID: UInt32) throws(TrackError) -> (Asset, TrackDescription) {
        guard let asset = assets.asset(assetID) else {
            throw TrackError(.invalidArgument, "no open asset with id \(assetID)")
        }
        guard let track = asset.tracks.first(where: { $0.id == trackID }) else {
            let ids = asset.tracks.map { String($0.id) }.joined(separator: ", ")
            throw TrackError(.invalidArgument, "the asset has no track with id \(trackID) (its tracks: \(ids))")
        }
        return (asset, track)
    }

    /// Decodes the frame shown at the requested time, encodes it as PNG (GStreamer's pngenc) and puts the bytes
    /// in a sealed memfd. Returns the reply and the memfd (the caller sends it; it closes when the reply goes).
    func generateImage(_ request: GenerateImage, asset: Asset) throws(TrackError) -> ImageReply {
        guard request.imageFormat == "png " else {
            throw TrackError(.unsupportedOutputSettings, "image format \(request.imageFormat) is not supported; use 'png '")
        }
        guard asset.tracks.contains(where: { $0.id == request.trackID && $0.mediaType == .video }) else {
            throw TrackError(.invalidArgument, "the asset has no video track with id \(request.trackID)")
        }
        guard request.time.isNumeric, request.time.value >= 0 else {
            throw TrackError(.invalidArgument, "image time \(request.time) is not a valid time")
        }
        // The requested time on the track's grid, in the demuxer's nanoseconds; the frame's time back on the grid.
        let grid = asset.grid(request.trackID)
        let time = MediaTime.nanoseconds(grid.nanoseconds(request.time) ?? 0)
        if let track = asset.tracks.first(where: { $0.id == request.trackID }) {
            try context.sandbox.decode.checkFrame(width: UInt64(track.width), height: UInt64(track.height), "track \(track.id)")
        }
        let index: FrameIndex?
        do {
            index = try decodingFrameIndex(asset, trackID: request.trackID)
        } catch where error == .trackHasNoFrames(request.trackID) {
            // Said here: with nothing to decode, the image pipeline would wait for a preroll that never comes
            // (decodebin exposes no pad without data) until the watchdog ended the worker.
            throw TrackError(.invalidArgument, "Cannot generate an image of track \(request.trackID): no frame at \(request.time): the track has no frames")
        } catch {
            Log.warning("image of track \(request.trackID): no frame index (\(error.message)); the frame is found by a seek")
            index = nil
        }
        let image = try generatePNG(source: asset.source, trackID: request.trackID, at: time, index: index,
                                    limits: context.sandbox.decode)
        stats.framesDecoded.add(image.framesDecoded, ordering: .relaxed)
        stats.framesConverted.add(image.framesConverted, ordering: .relaxed)
        let mapping: SharedMapping
        let raw: Int32
        do {
            (mapping, raw) = try SharedMapping.create(name: "trackd-image", size: max(image.png.count, 1))
        } catch {
            throw TrackError(.limitExceeded, "cannot create shared memory for the image: \(error)")
        }
        let memfd = FileDescriptor(taking: raw)
        mapping.copy(image.png, toOffset: 0)
        stats.bytesCopied.add(UInt64(image.png.count), ordering: .relaxed)
        context.slot.countCopied(UInt64(image.png.count))
        return ImageReply(image: ImageReady(actualTime: grid.rounded(image.actualTime), width: image.width, height: image.height,
                                            length: UInt64(image.png.count)), memfd: memfd)
    }
}

/// GenerateImage's reply and the sealed memfd that holds the PNG (sent with it, closed when this goes).
struct ImageReply: ~Copyable {
    let image: ImageReady
    let memfd: FileDescriptor
}
