import Foundation
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's frame-index cache: blobs (IndexCacheWire) by StoreKey, in memory (least recently used first
/// out, bounded by total bytes) and on disk (one file per key in `directory`, written atomically, oldest first
/// out past the same byte budget). Every blob is checked with `IndexCacheWire.isValidBlob` before it is kept or served,
/// whether it comes from a worker or from the disk. Thread-safe; disk I/O happens on the caller's thread.
public final class IndexStore: Sendable {
    /// Counted per entry on top of its bytes, so that many tiny entries still respect the budget.
    static let entryOverhead = 128
    static let fileMagic: [UInt8] = Array("TKIC".utf8) + [1, 0, 0, 0]

    struct Memory {
        var entries: [IndexCacheWire.StoreKey: (blob: [UInt8], used: UInt64)] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        /// Disk copies: file name → (bytes, last written or read, in `clock` ticks seeded from mtimes).
        var files: [String: (bytes: Int, used: UInt64)] = [:]
        var fileBytes = 0
    }

    public let budget: Int
    /// nil: memory only.
    public let directory: String?
    private let memory = Mutex(Memory())

    /// `directory` is created (0700) when missing; when it cannot be written, the store is memory-only and
    /// `directoryProblem` says why.
    public init(budget: Int, directory: String?) {
        self.budget = max(budget, 0)
        var usable: String?
        var problem: String?
        if let directory, budget > 0 {
            if let why = Self.prepare(directory) { problem = why } else { usable = directory }
        }
        self.directory = usable
        directoryProblem = problem
        if let usable { memory.withLock { Self.scan(usable, into: &$0) } }
    }

    public let directoryProblem: String?

    /// The cache directory trackd uses: $CACHE_DIRECTORY (systemd's CacheDirectory=; the first of a colon-separated
    /// list), else $XDG_CACHE_HOME/trackd, else ~/.cache/trackd; with /index appended.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let c = environment["CACHE_DIRECTORY"], let first = c.split(separator: ":").first, !first.isEmpty {
            return String(first) + "/index"
        }
        if let x = environment["XDG_CACHE_HOME"], x.hasPrefix("/") { return x + "/trackd/index" }
        if let h = environment["HOME"], h.hasPrefix("/") { return h + "/.cache/trackd/index" }
        return nil
    }

    public func get(_ key: IndexCacheWire.StoreKey) -> [UInt8]? {
        let hit = memory.withLock { m -> [UInt8]? in
            guard let e = m.entries[key] else { return nil }
            m.clock += 1
            m.entries[key]!.used = m.clock
            return e.blob
        }
        if let hit { return hit }
        guard let blob = readFile(key) else { return nil }
        memory.withLock { remember(key, blob, in: &$0) }
        return blob
    }

    /// Keeps `blob` if it decodes; returns false (and keeps nothing) when it does not or is over the budget.
    @discardableResult
    public func put(_ key: IndexCacheWire.StoreKey, _ blob: [UInt8]) -> Bool {
        guard blob.count + Self.entryOverhead <= budget, IndexCacheWire.isValidBlob(blob) else { return false }
        memory.withLock { remember(key, blob, in: &$0) }
        writeFile(key, blob)
        return true
    }

    public var memoryBytes: Int { memory.withLock { $0.bytes } }
    public var diskBytes: Int { memory.withLock { $0.fileBytes } }

    private func remember(_ key: IndexCacheWire.StoreKey, _ blob: [UInt8], in m: inout Memory) {
        if let old = m.entries.removeValue(forKey: key) { m.bytes -= old.blob.count + Self.entryOverhead }
        let size = blob.count + Self.entryOverhead
        guard size <= budget else { return }
        if m.bytes + size > budget {
            // Drop the least recently used until a quarter of the budget is free (a scan, so not on every put).
            let target = min(budget - size, budget * 3 / 4)
            for (k, e) in m.entries.sorted(by: { $0.value.used < $1.value.used }) {
                if m.bytes <= target { break }
                m.entries[k] = nil
                m.bytes -= e.blob.count + Self.entryOverhead
            }
        }
        m.clock += 1
        m.entries[key] = (blob, m.clock)
        m.bytes += size
    }

    // ── Disk ────────────────────────────────────────────────────────────────────────────────────────────

    static func prepare(_ directory: String) -> String? {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            return "cannot create \(directory): \(error.localizedDescription)"
        }
        let probe = directory + "/.probe-\(getpid())"
        do {
            try FileDescriptor(opening: probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600).close()
        } catch {
            return "cannot write in \(directory): \(error.reason)"
        }
        PathCall.unlink(probe)
        return nil
    }

    static func scan(_ directory: String, into m: inout Memory) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var found: [(name: String, bytes: Int, mtime: Int)] = []
        for name in names {
            let path = directory + "/" + name
            guard let st = PathCall.status(path) else { continue }
            if name.hasPrefix(".tmp-") {  // left by a writer that died
                PathCall.unlink(path)
                continue
            }
            guard name.hasSuffix(".idx"), st.st_mode & S_IFMT == S_IFREG else { continue }
            found.append((name, Int(st.st_size), st.st_mtim.tv_sec))
        }
        for f in found.sorted(by: { $0.mtime < $1.mtime }) {
            m.clock += 1
            m.files[f.name] = (f.bytes, m.clock)
            m.fileBytes += f.bytes
        }
    }

    private func readFile(_ key: IndexCacheWire.StoreKey) -> [UInt8]? {
        guard let directory else { return nil }
        let name = key.hashName + ".idx"
        let path = directory + "/" + name
        let header = Self.fileMagic.count + IndexCacheWire.StoreKey.encodedBytes
        guard let fd = try? FileDescriptor(opening: path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW),
              let fileSize = try? fd.regularFileSize() else { return nil }
        let size = Int(fileSize)
        let bytes = (try? [UInt8](preading: fd, count: max(0, min(size, header + IndexCacheWire.maxBlobBytes)))) ?? []
        guard size <= header + IndexCacheWire.maxBlobBytes, bytes.count == size, size > header,
              bytes[0..<Self.fileMagic.count].elementsEqual(Self.fileMagic),
              IndexCacheWire.StoreKey(decoding: bytes[Self.fileMagic.count..<header]) == key,
              IndexCacheWire.isValidBlob(Array(bytes[header...])) else {
            // Corrupt, truncated, another key with the same hash, or an older format: drop it.
            PathCall.unlink(path)
            memory.withLock { m in
                if let f = m.files.removeValue(forKey: name) { m.fileBytes -= f.bytes }
            }
            return nil
        }
        memory.withLock { m in
            m.clock += 1
            m.files[name] = (size, m.clock)
        }
        return Array(bytes[header...])
    }

    private func writeFile(_ key: IndexCacheWire.StoreKey, _ blob: [UInt8]) {
        guard let directory else { return }
        let name = key.hashName + ".idx"
        let contents = Self.fileMagic + key.encoded + blob
        guard contents.count <= budget else { return }
        let temp = directory + "/.tmp-\(name)-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        guard let fd = try? FileDescriptor(opening: temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        else { return }
        var complete = (try? fd.writeFully(contents)) != nil
        do {
            try fd.close()  // a failed write-back shows here
        } catch {
            complete = false
        }
        guard complete, PathCall.rename(temp, to: directory + "/" + name) else {
            PathCall.unlink(temp)
            return
        }
        let drop = memory.withLock { m -> [String] in
            if let old = m.files.removeValue(forKey: name) { m.fileBytes -= old.bytes }
            m.clock += 1
            m.files[name] = (contents.count, m.clock)
            m.fileBytes += contents.count
            var drop: [String] = []
            if m.fileBytes > budget {
                for (n, f) in m.files.sorted(by: { $0.value.used < $1.value.used }) where n != name {
                    if m.fileBytes <= budget * 3 / 4 { break }
                    m.files[n] = nil
                    m.fileBytes -= f.bytes
                    drop.append(n)
                }
            }
            return drop
        }
        for n in drop { PathCall.unlink(directory + "/" + n) }
    }
}
