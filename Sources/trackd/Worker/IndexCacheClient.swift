import CTrackSys
import GstBridge
import IndexCache
import MediaIndex
import Protocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The worker's end of the supervisor's frame-index cache (fd 6; IndexService): GET before building a track's
/// index or discovering a file, PUT after. One request at a time per worker (each waits for its reply). Any failure is a miss: the
/// worker then builds the index itself, as it would without the cache.
enum IndexCacheClient {
    static let fd: Int32 = 6
    private static let lock = Mutex(())

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

    /// What opening the file found, kept under the file's key with track id 0: the payload of the AssetOpened
    /// that discovery answered (asset id 0), after the GStreamer version that found it — a description made by
    /// another GStreamer is a miss.
    static func getDescription(_ key: IndexCacheWire.FileKey) -> AssetOpened? {
        guard let blob = getBlob(key), let payload = IndexCacheWire.decodeDescription(blob) else { return nil }
        let stamp = Array(Gst.versionString.utf8)
        guard payload.count > stamp.count, payload[0] == UInt8(stamp.count), payload[1...stamp.count].elementsEqual(stamp),
              case .assetOpened(let opened)? = try? Codec.decodePayload(type: .assetOpened, payload,
                                                                        from: stamp.count + 1, to: payload.count)
        else { return nil }
        return opened
    }

    static func putDescription(_ key: IndexCacheWire.FileKey, duration: MediaTime, tracks: [TrackDescription]) {
        let stamp = Array(Gst.versionString.utf8)
        guard stamp.count < 256 else { return }
        let frame = Codec.frame(.assetOpened(AssetOpened(assetID: 0, duration: duration, tracks: tracks)), requestID: 0)
        guard let blob = IndexCacheWire.encodeDescription([UInt8(stamp.count)] + stamp + frame.dropFirst(Wire.headerSize))
        else { return }
        putBlob(key, blob)
    }

    /// GET: the blob of a hit, nil on a miss or any failure.
    private static func getBlob(_ key: IndexCacheWire.FileKey) -> [UInt8]? {
        let memfd: Int32? = lock.withLock { _ in
            let request = IndexCacheWire.request(.get, key)
            guard request.withUnsafeBytes({ trackd_send_with_fds(fd, $0.baseAddress, $0.count, nil, 0) }) == 0 else { return nil }
            var reply: [UInt8] = [0, 0]
            var fds: [Int32] = [-1, -1]
            var nfds: Int32 = 0
            var truncated: Int32 = 0
            let n = reply.withUnsafeMutableBytes {
                trackd_recv_with_fds(fd, $0.baseAddress, $0.count, &fds, Int32(fds.count), &nfds, &truncated)
            }
            let received = fds.prefix(Int(max(nfds, 0)))
            guard n == 1, reply[0] == 1, truncated == 0, received.count == 1 else {
                for f in received where f >= 0 { close(f) }
                return nil
            }
            return received[0]
        }
        guard let memfd else { return nil }
        defer { close(memfd) }
        return IndexCacheWire.readBlob(memfd, maxBytes: IndexCacheWire.maxBlobBytes)
    }

    /// PUT, waiting for the acknowledgement.
    private static func putBlob(_ key: IndexCacheWire.FileKey, _ blob: [UInt8]) {
        let memfd = trackd_memfd_sealed("trackd-index", UInt64(blob.count))
        guard memfd >= 0 else { return }
        defer { close(memfd) }
        var done = 0
        while done < blob.count {
            // write, not pwrite: the sandbox allows the one (the memfd is new, its offset 0).
            let w = blob.withUnsafeBytes { write(memfd, $0.baseAddress! + done, $0.count - done) }
            if w <= 0 { return }
            done += w
        }
        let request = IndexCacheWire.request(.put, key)
        var fds = [memfd]
        lock.withLock { _ in
            guard request.withUnsafeBytes({ trackd_send_with_fds(fd, $0.baseAddress, $0.count, &fds, 1) }) == 0 else { return }
            // The acknowledgement: once it arrives, every other worker's GET finds the entry.
            var ack: UInt8 = 0
            _ = recv(fd, &ack, 1, 0)
        }
    }
}
