import GstBridge
import IndexCache
import MediaIndex
import TrackdProtocol
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The worker's end of the supervisor's frame-index cache (fd 6; IndexService): GET before building a track's
/// index or discovering a file, PUT after. One request at a time per worker (each waits for its reply). Any failure is a miss: the
/// worker then builds the index itself, as it would without the cache.
enum IndexCacheClient {
    static let fd: Int32 = 6
    /// The channel, open for the worker's life; one request and its reply at a time.
    private static let channel = Mutex(SharedDescriptor(FileDescriptor(taking: fd)))

    static func key(_ status: MediaSource.FileStatus, trackID: UInt32) -> IndexCacheWire.FileKey {
        IndexCacheWire.FileKey(device: status.device, inode: status.inode, size: status.size,
                               mtimeSeconds: status.mtimeSeconds, mtimeNanoseconds: status.mtimeNanoseconds, trackID: trackID)
    }

    static func get(_ key: IndexCacheWire.FileKey) -> FrameIndex? {
        guard let blob = getBlob(key), let frames = try? IndexCacheWire.decode(blob) else { return nil }
        return FrameIndex(frames: frames)
    }

    static func put(_ key: IndexCacheWire.FileKey, _ index: FrameIndex) {
        guard let blob = IndexCacheWire.encode(index.frames) else { return }
        putBlob(key, blob)
    }

    /// What a cached description is stamped with: the GStreamer version that found it, the wire layout it is kept
    /// in (the protocol version and revision: a description cached in another layout is a miss, never read with
    /// the wrong one), and what it holds (descriptions cached before tracks carried their timescale, in
    /// nanoseconds, or before they carried metadata and segments, or before FLAC, WAV, AVI and MP3 tags were read,
    /// or before Matroska tracks started at the container's first timestamp, or before a track's start was put on
    /// the demuxer's segment (an MKV's video started at 0 or 23 ms), or before AVI frames were indexed at their
    /// decode times and a frame-timing span ended at an edit inside the last frame, or before colour code points that
    /// state nothing were sent as unspecified, or before an MPEG-PS track's packets were read from the stream's
    /// start and its MPEG video pictures given the times ffmpeg gives them, or before a raw MPEG-4 Part 2 stream was
    /// timed by its VOL's rate, or before one at a rate of more than one tick was, or before a Matroska track ended
    /// at its last packet's end, or before an elementary stream's track was on its frame rate's timescale, or before
    /// a track's codec configuration was the container's stored record, are misses): what it holds is
    /// `descriptionRevision`, one more for each of those. The stamp's length is one byte: a stamp of 256 bytes or
    /// more is never cached (the list of each change's name, which the stamp was, grew to 268 bytes).
    static var descriptionStamp: [UInt8] {
        Array("\(Gst.versionString); protocol \(Wire.version).\(Wire.revision); description \(descriptionRevision)".utf8)
    }

    /// What a cached description holds, counted in the changes listed at `descriptionStamp`.
    static let descriptionRevision = 14

    /// What opening the file found, kept under the file's key with track id 0: the payload of the AssetOpened
    /// that discovery answered (asset id 0), after the GStreamer version that found it — a description made by
    /// another GStreamer is a miss.
    static func getDescription(_ key: IndexCacheWire.FileKey) -> AssetOpened? {
        guard let blob = getBlob(key), let payload = IndexCacheWire.decodeDescription(blob) else { return nil }
        let stamp = descriptionStamp
        guard stamp.count < 256, payload.count > stamp.count, payload[0] == UInt8(stamp.count),
              payload[1...stamp.count].elementsEqual(stamp),
              case .assetOpened(let opened)? = try? Codec.decodePayload(type: .assetOpened, payload,
                                                                        from: stamp.count + 1, to: payload.count)
        else { return nil }
        return opened
    }

    static func putDescription(_ key: IndexCacheWire.FileKey, _ description: AssetOpened) {
        let stamp = descriptionStamp
        guard stamp.count < 256 else { return }
        let frame = Codec.frame(.assetOpened(description), requestID: 0)
        guard let blob = IndexCacheWire.encodeDescription([UInt8(stamp.count)] + stamp + frame.dropFirst(Wire.headerSize))
        else { return }
        putBlob(key, blob)
    }

    /// GET: the blob of a hit, nil on a miss or any failure.
    private static func getBlob(_ key: IndexCacheWire.FileKey) -> [UInt8]? {
        let memfd: FileDescriptor? = channel.withLock { socket in
            guard (try? socket.descriptor.send(IndexCacheWire.request(.get, key))) != nil else { return nil }
            var answer: [UInt8] = [0, 0]
            guard var message = try? socket.descriptor.receive(into: &answer, maxDescriptors: 2),
                  message.count == 1, answer[0] == 1, !message.truncated, message.descriptors.count == 1 else { return nil }
            return message.descriptors.takeFirst()
        }
        guard let memfd else { return nil }
        return IndexCacheWire.readBlob(memfd, maxBytes: IndexCacheWire.maxBlobBytes)
    }

    /// PUT, waiting for the acknowledgement.
    private static func putBlob(_ key: IndexCacheWire.FileKey, _ blob: [UInt8]) {
        guard let memfd = try? FileDescriptor.sealedMemfd(name: "trackd-index", size: blob.count),
              // write, not pwrite: the sandbox allows the one (the memfd is new, its offset 0).
              (try? memfd.writeFully(blob)) != nil
        else { return }
        let request = IndexCacheWire.request(.put, key)
        channel.withLock { socket in
            guard (try? socket.descriptor.send(request, passing: memfd)) != nil else { return }
            // The acknowledgement: once it arrives, every other worker's GET finds the entry.
            var acknowledgement: [UInt8] = [0]
            _ = try? socket.descriptor.receive(into: &acknowledgement, maxDescriptors: 0)
        }
    }
}
