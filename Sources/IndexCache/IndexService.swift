import Foundation
import Synchronization
import SystemCalls

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

    /// A new channel and its worker's end, which the supervisor passes to the worker (as fd 6) and then closes.
    public struct WorkerChannel: ~Copyable {
        public let channel: Channel
        /// At fd ≥ 100 (see trackd_spawn_with_fds).
        public var workerEnd: FileDescriptor
    }

    /// A new channel with its serving thread started.
    public func openChannel(uid: UInt32?) throws(SystemError) -> WorkerChannel {
        let pair = try SocketPair(.sequencedPackets)
        let workerEnd = try pair.second.duplicate(atLeast: 100)
        let channel = Channel(uid: uid)
        let serviceEnd = DescriptorHandoff(pair.first)
        let thread = Thread { [self] in
            guard let socket = serviceEnd.take() else { return }
            serve(socket, channel)  // closed when the worker is gone
        }
        thread.name = "index"
        thread.stackSize = 256 << 10
        thread.start()
        return WorkerChannel(channel: channel, workerEnd: workerEnd)
    }

    /// `openChannel` with the worker's end as a raw descriptor the caller owns; nil when the socketpair cannot be made.
    public func open(uid: UInt32?) -> (channel: Channel, workerEnd: Int32)? {
        guard let opened = try? openChannel(uid: uid) else { return nil }
        let channel = opened.channel
        return (channel, opened.workerEnd.take())
    }

    /// Until the worker closes its end (it exits) or breaks the protocol.
    private func serve(_ socket: borrowing FileDescriptor, _ channel: Channel) {
        var buffer = [UInt8](repeating: 0, count: IndexCacheWire.requestBytes + 1)
        while true {
            guard var message = try? socket.receive(into: &buffer, maxDescriptors: 2), message.count > 0 else { return }
            let n = message.count
            guard !message.truncated, let (op, key) = IndexCacheWire.parseRequest(buffer[0..<n]),
                  message.descriptors.count == (op == .put ? 1 : 0) else {
                warn("frame-index cache: a worker sent a malformed request (\(n) bytes, \(message.descriptors.count) descriptors); closing its channel")
                return
            }
            let uid = channel.uid.withLock { $0 }
            switch op {
            case .get:
                let blob = uid.flatMap { store.get(IndexCacheWire.StoreKey(uid: $0, file: key)) }
                guard reply(socket, blob) else { return }
            case .put:
                var kept = false
                if let uid, let memfd = message.descriptors.takeFirst() {  // (a warm worker has no client yet)
                    kept = keep(memfd, uid: uid, key: key)
                }
                guard (try? socket.send([kept ? 1 : 0])) != nil else { return }
            }
        }
    }

    /// A PUT's blob, kept when it decodes and fits.
    private func keep(_ memfd: borrowing FileDescriptor, uid: UInt32, key: IndexCacheWire.FileKey) -> Bool {
        guard let blob = IndexCacheWire.readBlob(memfd, maxBytes: min(IndexCacheWire.maxBlobBytes, store.budget)),
              blob.count >= IndexCacheWire.headerBytes else {
            warn("frame-index cache: a worker of uid \(uid) sent an unreadable or oversized index; ignored")
            return false
        }
        guard store.put(IndexCacheWire.StoreKey(uid: uid, file: key), blob) else {
            warn("frame-index cache: a worker of uid \(uid) sent a blob that does not decode or exceeds the cache (\(blob.count) bytes); ignored")
            return false
        }
        return true
    }

    /// 1 byte (0 = miss, 1 = hit) and, on a hit, a sealed memfd holding the blob. False when the worker is gone.
    private func reply(_ socket: borrowing FileDescriptor, _ blob: [UInt8]?) -> Bool {
        do throws(SystemError) {
            guard let blob else {
                try socket.send([0])
                return true
            }
            guard let memfd = try? Self.memfd(holding: blob) else {
                try socket.send([0])
                return true
            }
            try socket.send([1], passing: memfd)
            return true
        } catch {
            return false
        }
    }

    /// A new sealed memfd holding `blob` (written with pwrite: the sandbox of the other end allows it).
    static func memfd(holding blob: [UInt8]) throws(SystemError) -> FileDescriptor {
        let memfd = try FileDescriptor.sealedMemfd(name: "trackd-index", size: blob.count)
        try memfd.pwriteFully(blob)
        return memfd
    }
}

extension IndexCacheWire {
    /// A blob passed as a descriptor: a regular file (a memfd) of at most `maxBytes`, read with pread (whoever
    /// shrinks it meanwhile causes a short read, never a SIGBUS). nil when it is not that or cannot be read.
    public static func readBlob(_ fd: borrowing FileDescriptor, maxBytes: Int) -> [UInt8]? {
        guard let size = try? fd.regularFileSize(), size <= UInt64(maxBytes),
              let blob = try? [UInt8](preading: fd, count: Int(size)), blob.count == Int(size) else { return nil }
        return blob
    }
}
