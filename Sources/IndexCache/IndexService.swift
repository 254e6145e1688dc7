import CTrackSys
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's side of the frame-index cache (docs/ARCHITECTURE.md "Frame index"): every worker gets one end
/// of a SOCK_SEQPACKET socketpair as fd 6, and a thread of the supervisor serves the other end — GET a file key's
/// index, PUT one (IndexCacheWire) — from the shared IndexStore. The supervisor keys every entry with the uid of
/// the worker's client, which it knows from SO_PEERCRED; a worker never names a uid. Blobs are untrusted: the store
/// decodes each one strictly before keeping it, and a worker that breaks the channel's protocol loses its channel.
public final class IndexService: Sendable {
    public let store: IndexStore
    /// Where the service's warnings go (trackd's log).
    let warn: @Sendable (String) -> Void

    /// One worker's channel: the uid of its client (nil for a warm worker until it gets its connection).
    public final class Channel: Sendable {
        public let uid: Mutex<UInt32?>
        init(uid: UInt32?) { self.uid = Mutex(uid) }
    }

    public init(store: IndexStore, warn: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.warn = warn
    }

    /// A new channel and the worker's end (at fd ≥ 100, see trackd_spawn_with_fds; the caller passes it to the
    /// worker and closes it), with its serving thread started; nil when the socketpair cannot be made.
    public func open(uid: UInt32?) -> (channel: Channel, workerEnd: Int32)? {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { return nil }
        let high = fcntl(pair[1], F_DUPFD_CLOEXEC, 100)
        close(pair[1])
        guard high >= 0 else {
            close(pair[0])
            return nil
        }
        let channel = Channel(uid: uid)
        let fd = pair[0]
        let thread = Thread { [self] in serve(fd, channel) }
        thread.name = "index"
        thread.stackSize = 256 << 10
        thread.start()
        return (channel, high)
    }

    /// Until the worker closes its end (it exits) or breaks the protocol.
    private func serve(_ fd: Int32, _ channel: Channel) {
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: IndexCacheWire.requestBytes + 1)
        while true {
            var fds: [Int32] = [-1, -1]
            var nfds: Int32 = 0
            var truncated: Int32 = 0
            let n = buffer.withUnsafeMutableBytes {
                trackd_recv_with_fds(fd, $0.baseAddress, $0.count, &fds, Int32(fds.count), &nfds, &truncated)
            }
            let received = Array(fds.prefix(Int(max(nfds, 0))))
            defer { for f in received where f >= 0 { close(f) } }
            guard n > 0 else { return }
            guard truncated == 0, let (op, key) = IndexCacheWire.parseRequest(buffer[0..<n]),
                  received.count == (op == .put ? 1 : 0) else {
                warn("frame-index cache: a worker sent a malformed request (\(n) bytes, \(received.count) descriptors); closing its channel")
                return
            }
            let uid = channel.uid.withLock { $0 }
            switch op {
            case .get:
                let blob = uid.flatMap { store.get(IndexCacheWire.StoreKey(uid: $0, file: key)) }
                guard reply(fd, blob) else { return }
            case .put:
                var kept = false
                if let uid {  // (a warm worker has no client yet)
                    if let blob = readBlob(received[0]) {
                        kept = store.put(IndexCacheWire.StoreKey(uid: uid, file: key), blob)
                        if !kept {
                            warn("frame-index cache: a worker of uid \(uid) sent a blob that does not decode or exceeds the cache (\(blob.count) bytes); ignored")
                        }
                    } else {
                        warn("frame-index cache: a worker of uid \(uid) sent an unreadable or oversized index; ignored")
                    }
                }
                let ack: [UInt8] = [kept ? 1 : 0]
                guard ack.withUnsafeBytes({ trackd_send_with_fds(fd, $0.baseAddress, 1, nil, 0) }) == 0 else { return }
            }
        }
    }

    /// 1 byte (0 = miss, 1 = hit) and, on a hit, a sealed memfd holding the blob. False when the worker is gone.
    private func reply(_ fd: Int32, _ blob: [UInt8]?) -> Bool {
        guard let blob else {
            let miss: [UInt8] = [0]
            return miss.withUnsafeBytes { trackd_send_with_fds(fd, $0.baseAddress, 1, nil, 0) } == 0
        }
        let memfd = trackd_memfd_sealed("trackd-index", UInt64(blob.count))
        guard memfd >= 0 else {
            let miss: [UInt8] = [0]
            return miss.withUnsafeBytes { trackd_send_with_fds(fd, $0.baseAddress, 1, nil, 0) } == 0
        }
        defer { close(memfd) }
        var done = 0
        while done < blob.count {
            let w = blob.withUnsafeBytes { pwrite(memfd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if w <= 0 { break }
            done += w
        }
        let hit: [UInt8] = [done == blob.count ? 1 : 0]
        var fds = [memfd]
        return hit.withUnsafeBytes { trackd_send_with_fds(fd, $0.baseAddress, 1, &fds, done == blob.count ? 1 : 0) } == 0
    }

    /// The blob in a worker's descriptor, no larger than the store could keep.
    private func readBlob(_ fd: Int32) -> [UInt8]? {
        guard let blob = IndexCacheWire.readBlob(fd, maxBytes: min(IndexCacheWire.maxBlobBytes, store.budget)),
              blob.count >= IndexCacheWire.headerBytes else { return nil }
        return blob
    }
}

extension IndexCacheWire {
    /// A blob passed as a descriptor: a regular file (a memfd) of at most `maxBytes`, read with pread (whoever
    /// shrinks it meanwhile causes a short read, never a SIGBUS). nil when it is not that or cannot be read.
    public static func readBlob(_ fd: Int32, maxBytes: Int) -> [UInt8]? {
        var regular: Int32 = 0
        var size: UInt64 = 0
        guard trackd_fd_is_regular(fd, &regular, &size) == 0, regular == 1, size <= UInt64(maxBytes) else { return nil }
        var blob = [UInt8](repeating: 0, count: Int(size))
        var got = 0
        while got < blob.count {
            let r = blob.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, $0.count - got, off_t(got)) }
            if r <= 0 { return nil }
            got += r
        }
        return blob
    }
}
