import CTrackSys
import Foundation
import IndexCache
import Synchronization
import XCTest

/// The supervisor's IndexService against a hostile worker: the test holds the worker's end of each channel and
/// sends what a compromised worker could. The service must refuse it, keep serving everyone else, and keep uids apart.
final class HostileWorkerTests: XCTestCase {
    typealias Wire = IndexCacheWire
    static let key = IndexCacheTests.key

    var service: IndexService!
    var opened: [Int32] = []
    final class Warnings: Sendable {
        let list = Mutex<[String]>([])
    }
    let warningBox = Warnings()
    var warnings: [String] { warningBox.list.withLock { $0 } }

    override func setUp() {
        let box = warningBox
        service = IndexService(store: IndexStore(budget: 1 << 20, directory: nil), warn: { m in box.list.withLock { $0.append(m) } })
    }

    override func tearDown() {
        for fd in opened { close(fd) }
    }

    func channel(uid: UInt32?) throws -> (IndexService.Channel, Int32) {
        let c = try XCTUnwrap(service.open(uid: uid))
        opened.append(c.workerEnd)
        return c
    }

    func send(_ fd: Int32, _ bytes: [UInt8], _ fds: [Int32] = []) {
        var fds = fds
        // One sendmsg: these messages are far smaller than a socket's buffer, so it sends them whole.
        XCTAssertEqual(bytes.withUnsafeBytes { trackd_send_with_fds(fd, $0.baseAddress, $0.count, &fds, Int32(fds.count)) },
                       bytes.count)
    }

    /// (bytes read, first byte, the blob in the descriptor if one came); bytes read 0 = the service closed it.
    func receive(_ fd: Int32) -> (n: Int, byte: UInt8, blob: [UInt8]?) {
        var reply: [UInt8] = [0, 0]
        var fds: [Int32] = [-1, -1]
        var nfds: Int32 = 0
        var truncated: Int32 = 0
        let n = reply.withUnsafeMutableBytes { trackd_recv_with_fds(fd, $0.baseAddress, $0.count, &fds, 2, &nfds, &truncated) }
        var blob: [UInt8]?
        if nfds == 1 {
            var regular: Int32 = 0
            var size: UInt64 = 0
            _ = trackd_fd_is_regular(fds[0], &regular, &size)
            var b = [UInt8](repeating: 0, count: Int(size))
            _ = b.withUnsafeMutableBytes { pread(fds[0], $0.baseAddress, $0.count, 0) }
            blob = b
        }
        for f in fds.prefix(Int(max(nfds, 0))) { close(f) }
        return (n, reply[0], blob)
    }

    func memfd(_ bytes: [UInt8], size: Int? = nil) -> Int32 {
        let fd = trackd_memfd_sealed("test", UInt64(size ?? bytes.count))
        XCTAssertGreaterThanOrEqual(fd, 0)
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        opened.append(fd)
        return fd
    }

    func put(_ fd: Int32, _ blob: [UInt8], key: Wire.FileKey = key) -> (n: Int, byte: UInt8, blob: [UInt8]?) {
        send(fd, Wire.request(.put, key), [memfd(blob)])
        return receive(fd)
    }

    func get(_ fd: Int32, key: Wire.FileKey = key) -> [UInt8]? {
        send(fd, Wire.request(.get, key))
        let r = receive(fd)
        XCTAssertEqual(r.n, 1)
        return r.byte == 1 ? r.blob : nil
    }

    func testSharedPerUIDAndNeverAcrossUIDs() throws {
        let blob = try XCTUnwrap(Wire.encode(IndexCacheTests.frames))
        let (_, a) = try channel(uid: 1000)
        XCTAssertNil(get(a))
        XCTAssertEqual(put(a, blob).byte, 1)
        let (_, b) = try channel(uid: 1000)
        XCTAssertEqual(get(b), blob, "another worker of the same uid")
        let (_, other) = try channel(uid: 1001)
        XCTAssertNil(get(other), "another uid's worker")
        // A warm worker (no client yet) gets nothing and stores nothing, until it is given a client.
        let (warmChannel, warm) = try channel(uid: nil)
        XCTAssertNil(get(warm))
        XCTAssertEqual(put(warm, blob, key: Wire.FileKey(device: 9, inode: 9, size: 9, mtimeSeconds: 9, mtimeNanoseconds: 9, trackID: 9)).byte, 0)
        warmChannel.uid.withLock { $0 = 1000 }
        XCTAssertEqual(get(warm), blob)
    }

    func testBadBlobsAreRefusedAndTheChannelStays() throws {
        let good = try XCTUnwrap(Wire.encode(IndexCacheTests.frames))
        let (_, fd) = try channel(uid: 1000)
        var huge = Array(good[0..<16])
        huge.replaceSubrange(8..<16, with: [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])
        var permutation = good
        permutation[good.count - 5] ^= 1
        for (what, blob) in [("garbage", [UInt8](repeating: 0xAB, count: 100)), ("empty", []), ("truncated", Array(good.dropLast())),
                             ("a count of 2^32 - 1 in 16 bytes", huge), ("decode positions", permutation)] {
            XCTAssertEqual(put(fd, blob).byte, 0, what)
        }
        // Larger than the cache: refused without being read (a sparse memfd of 2 MiB).
        send(fd, Wire.request(.put, Self.key), [memfd([], size: 2 << 20)])
        XCTAssertEqual(receive(fd).byte, 0)
        // Not a regular file: a pipe (reading it could block the service).
        var pipeFDs: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        opened += pipeFDs
        send(fd, Wire.request(.put, Self.key), [pipeFDs[0]])
        XCTAssertEqual(receive(fd).byte, 0)
        XCTAssertNil(get(fd), "nothing was kept")
        XCTAssertEqual(put(fd, good).byte, 1, "the channel still works")
        XCTAssertEqual(get(fd), good)
    }

    func testProtocolViolationsCloseOnlyThatChannel() throws {
        let good = try XCTUnwrap(Wire.encode(IndexCacheTests.frames))
        let (_, keeper) = try channel(uid: 1000)
        XCTAssertEqual(put(keeper, good).byte, 1)
        var requests: [(String, [UInt8], [Int32])] = [
            ("short", [1, 2, 3], []),
            ("long", Wire.request(.get, Self.key) + [0], []),
            ("unknown op", [9, 0, 0, 0] + Self.key.encoded, []),
            ("nonzero padding", [1, 0, 7, 0] + Self.key.encoded, []),
            ("nanoseconds ≥ 10^9", Array(Wire.request(.get, Self.key)[0..<36]) + [0, 0xca, 0x9a, 0x3b, 0, 0, 0, 0] + [1, 0, 0, 0], []),
            ("GET with a descriptor", Wire.request(.get, Self.key), [memfd(good)]),
            ("PUT without a descriptor", Wire.request(.put, Self.key), []),
        ]
        requests.append(("PUT with two descriptors", Wire.request(.put, Self.key), [memfd(good), memfd(good)]))
        for (what, bytes, fds) in requests {
            let (_, fd) = try channel(uid: 1000)
            send(fd, bytes, fds)
            XCTAssertEqual(receive(fd).n, 0, "\(what): the service closes the channel")
        }
        XCTAssertEqual(warnings.filter { $0.contains("malformed request") }.count, requests.count)
        XCTAssertEqual(get(keeper), good, "other channels and the cache are unaffected")
    }
}
