import MediaIndex

/// The frame-index cache's internal protocol between a worker and the supervisor (never seen by clients), and the
/// blob both ends and the disk copy share. Pure Swift, no GStreamer: the supervisor decodes blobs only to check
/// them — it treats every blob as untrusted data from a possibly compromised worker (docs/SECURITY.md).
///
/// Blob, version 8, little-endian: "TKFI", u16 version = 8, u16 0, u64 frame count n (1 … maxFrames), then n
/// frames of 21 bytes in presentation order: i64 presentation time ns, i64 duration ns, u32 decode position,
/// u8 flags (bit 0 = sync sample; the other bits 0). Exactly 16 + 21 n bytes. Checked on decode: times within
/// ±2^62 ns, durations 0 … 2^62 ns, presentation times non-decreasing, decode positions a permutation of 0 ..< n.
///
/// The cache also keeps each file's description (what opening it found: duration and track records), under the
/// file's key with track id 0 (no container numbers a track 0): "TKAD", u16 version = 8, u16 0, u64 length n
/// (1 … maxDescriptionBytes), then n bytes the worker writes and checks (the AssetOpened payload, prefixed with the
/// GStreamer version that found it). The supervisor checks only this framing.
public enum IndexCacheWire {
    /// 2: a Matroska track's times are its block timestamps (stream time from the first timestamp in version 1, so
    /// a disk copy of a version-1 index is not used). 3: MPEG-PS tracks are on 90 kHz, and MPEG-TS, MPEG-PS and
    /// elementary-stream descriptions span their packets (track and asset durations; a version-2 description is
    /// the demuxer's estimate). 4: an MPEG-PS track is indexed from the stream's start (mpegpsdemux's first segment
    /// cost GStreamer's MP2 its first frames). 5: an MPEG-TS track's id is its PID and an MPEG-PS track's its PES
    /// stream id, as ffprobe's (containerTrackID): an index or description kept under a version-4 id may be
    /// another track's. 6: an MPEG-1/2 picture of an MPEG-PS is a sync sample exactly when it is an I-picture
    /// (mpegvideoparse left the stream's last picture unflagged, a sync sample, whatever its type). 7: an Ogg track's
    /// id is its place in ffprobe's stream order (its first page's), not parsebin's pad order nor a serial number
    /// read as decimal: an index or description kept under a version-6 id may be another track's. 8: an untimed
    /// MPEG-1/2 I- or P-picture of an MPEG-PS is shown at the next one's DTS (MPEGVideoTimes), no longer one frame
    /// after the picture before it: a version-7 index of a variable-rate PS has other times.
    public static let version: UInt16 = 8
    /// At most this many frames per index (about 3.8 days at 30 fps).
    public static let maxFrames = 10_000_000
    public static let headerBytes = 16
    public static let frameBytes = 21
    /// The largest valid blob.
    public static let maxBlobBytes = headerBytes + maxFrames * frameBytes
    static let magic: [UInt8] = Array("TKFI".utf8)
    static let descriptionMagic: [UInt8] = Array("TKAD".utf8)
    /// A file description's track id in a FileKey.
    public static let descriptionTrackID: UInt32 = 0
    /// At most this many bytes of description (a file with a hundred tracks needs a few kilobytes).
    public static let maxDescriptionBytes = 1 << 20

    /// A file description blob around `payload`; nil when it is empty or too large.
    public static func encodeDescription(_ payload: [UInt8]) -> [UInt8]? {
        guard !payload.isEmpty, payload.count <= maxDescriptionBytes else { return nil }
        var out = header(descriptionMagic, count: payload.count)
        out += payload
        return out
    }

    /// The payload of a file description blob, or nil when the framing is wrong.
    public static func decodeDescription(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count > headerBytes, let length = try? readHeader(bytes, magic: descriptionMagic),
              length >= 1, length <= UInt64(maxDescriptionBytes), bytes.count == headerBytes + Int(length) else { return nil }
        return Array(bytes[headerBytes...])
    }

    /// The 16-byte header both blob kinds open with: `magic`, u16 version, u16 0, u64 count (frames or bytes).
    static func header(_ magic: [UInt8], count: Int) -> [UInt8] {
        var out = magic
        put(&out, UInt64(version), 2)
        put(&out, 0, 2)
        put(&out, UInt64(count), 8)
        return out
    }

    /// The count field of a header opening with `magic` at this version; throws what is wrong with it otherwise.
    static func readHeader<C: RandomAccessCollection>(_ bytes: C, magic: [UInt8]) throws(DecodeError) -> UInt64
    where C.Element == UInt8, C.Index == Int {
        guard bytes.count >= headerBytes else { throw .tooShort }
        let base = bytes.startIndex
        guard bytes[base..<base + 4].elementsEqual(magic) else { throw .badMagic }
        let v = UInt16(read(bytes, base + 4, 2))
        guard v == version, read(bytes, base + 6, 2) == 0 else { throw .unsupportedVersion(v) }
        return read(bytes, base + 8, 8)
    }

    /// Whether the cache may keep `blob`: a frame index that decodes, or a well-framed file description.
    public static func isValidBlob(_ blob: [UInt8]) -> Bool {
        if blob.count >= 4, blob[0..<4].elementsEqual(descriptionMagic) { return decodeDescription(blob) != nil }
        return (try? decode(blob)) != nil
    }
    static let timeBound: Int64 = 1 << 62

    /// One frame of a track's index (MediaIndex owns the type; the blob holds its four fields).
    public typealias Frame = FrameIndex.Frame

    public enum DecodeError: Error, Equatable {
        case tooShort, badMagic, unsupportedVersion(UInt16), badFrameCount(UInt64), lengthMismatch(expected: Int, actual: Int)
        case badFrame(Int, String)
    }

    /// nil when the frames break a rule `decode` checks (then they are not cached).
    public static func encode(_ frames: [Frame]) -> [UInt8]? {
        guard (try? validate(frames)) != nil else { return nil }
        var out = header(magic, count: frames.count)
        out.reserveCapacity(headerBytes + frames.count * frameBytes)
        for f in frames {
            put(&out, UInt64(bitPattern: f.presentationTime), 8)
            put(&out, UInt64(bitPattern: f.duration), 8)
            put(&out, UInt64(f.decodePosition), 4)
            out.append(f.isSync ? 1 : 0)
        }
        return out
    }

    /// Strict, bounded decoding: never traps, whatever the bytes.
    public static func decode<C: RandomAccessCollection>(_ bytes: C) throws(DecodeError) -> [Frame] where C.Element == UInt8, C.Index == Int {
        let count = try readHeader(bytes, magic: magic)
        guard count >= 1, count <= UInt64(maxFrames) else { throw .badFrameCount(count) }
        let expected = headerBytes + Int(count) * frameBytes
        guard bytes.count == expected else { throw .lengthMismatch(expected: expected, actual: bytes.count) }
        var frames = [Frame]()
        frames.reserveCapacity(Int(count))
        var at = bytes.startIndex + headerBytes
        for i in 0..<Int(count) {
            let flags = bytes[at + 20]
            guard flags & ~1 == 0 else { throw .badFrame(i, "unknown flags \(flags)") }
            frames.append(Frame(presentationTime: Int64(bitPattern: read(bytes, at, 8)),
                                duration: Int64(bitPattern: read(bytes, at + 8, 8)),
                                isSync: flags & 1 == 1, decodePosition: Int(read(bytes, at + 16, 4))))
            at += frameBytes
        }
        try validate(frames)
        return frames
    }

    static func validate(_ frames: [Frame]) throws(DecodeError) {
        guard !frames.isEmpty, frames.count <= maxFrames else { throw .badFrameCount(UInt64(frames.count)) }
        var seen = [Bool](repeating: false, count: frames.count)
        var previous = Int64.min
        for (i, f) in frames.enumerated() {
            guard f.presentationTime > -timeBound, f.presentationTime < timeBound else { throw .badFrame(i, "presentation time out of range") }
            guard f.duration >= 0, f.duration < timeBound else { throw .badFrame(i, "duration out of range") }
            guard f.presentationTime >= previous else { throw .badFrame(i, "presentation times not in order") }
            previous = f.presentationTime
            guard f.decodePosition >= 0, f.decodePosition < frames.count, !seen[f.decodePosition] else {
                throw .badFrame(i, "decode positions are not a permutation")
            }
            seen[f.decodePosition] = true
        }
    }

    /// What identifies a file's track for the cache: the file's device, inode, size and modification time (as the
    /// worker's fstat of the client's descriptor reports them) and the track ID. The supervisor adds the client's
    /// uid (`StoreKey`); a worker never names a uid.
    public struct FileKey: Hashable, Sendable {
        public var device: UInt64
        public var inode: UInt64
        public var size: UInt64
        public var mtimeSeconds: Int64
        public var mtimeNanoseconds: Int64
        public var trackID: UInt32
        public init(device: UInt64, inode: UInt64, size: UInt64, mtimeSeconds: Int64, mtimeNanoseconds: Int64, trackID: UInt32) {
            (self.device, self.inode, self.size) = (device, inode, size)
            (self.mtimeSeconds, self.mtimeNanoseconds, self.trackID) = (mtimeSeconds, mtimeNanoseconds, trackID)
        }

        public static let encodedBytes = 44
        public var encoded: [UInt8] {
            var out = [UInt8]()
            put(&out, device, 8)
            put(&out, inode, 8)
            put(&out, size, 8)
            put(&out, UInt64(bitPattern: mtimeSeconds), 8)
            put(&out, UInt64(bitPattern: mtimeNanoseconds), 8)
            put(&out, UInt64(trackID), 4)
            return out
        }
        /// nil unless exactly 44 bytes with nanoseconds 0 … 999 999 999.
        public init?<C: RandomAccessCollection>(decoding b: C) where C.Element == UInt8, C.Index == Int {
            guard b.count == Self.encodedBytes else { return nil }
            let s = b.startIndex
            let nsec = Int64(bitPattern: read(b, s + 32, 8))
            guard nsec >= 0, nsec < 1_000_000_000 else { return nil }
            self.init(device: read(b, s, 8), inode: read(b, s + 8, 8), size: read(b, s + 16, 8),
                      mtimeSeconds: Int64(bitPattern: read(b, s + 24, 8)), mtimeNanoseconds: nsec,
                      trackID: UInt32(read(b, s + 40, 4)))
        }
    }

    /// A cache entry's full key: the client's uid (known to the supervisor, from SO_PEERCRED) and the file key.
    public struct StoreKey: Hashable, Sendable {
        public var uid: UInt32
        public var file: FileKey
        public init(uid: UInt32, file: FileKey) {
            self.uid = uid
            self.file = file
        }
        public static let encodedBytes = 48
        public var encoded: [UInt8] {
            var out = [UInt8]()
            put(&out, UInt64(uid), 4)
            return out + file.encoded
        }
        public init?<C: RandomAccessCollection>(decoding b: C) where C.Element == UInt8, C.Index == Int {
            guard b.count == Self.encodedBytes, let file = FileKey(decoding: b[(b.startIndex + 4)...]) else { return nil }
            self.init(uid: UInt32(read(b, b.startIndex, 4)), file: file)
        }
        /// FNV-1a 64 of the encoded key, as 16 hex digits: the disk copy's file name (the file holds the full key,
        /// checked on read, so a collision is a miss).
        public var hashName: String {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in encoded { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            let hex = String(h, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }
    }

    // ── The worker ↔ supervisor channel (SOCK_SEQPACKET, worker fd 6) ──────────────────────────────────────
    // Request, 48 bytes: u8 op (1 = GET, 2 = PUT), 3 bytes 0, the 44-byte FileKey. A PUT carries one descriptor:
    // a sealed memfd holding the blob. GET's reply, 1 byte: 0 = miss, 1 = hit with one descriptor (a sealed memfd
    // holding the blob). PUT's reply, 1 byte, once the entry is stored (memory and disk): 1 = kept, 0 = refused.
    public enum Op: UInt8, Sendable { case get = 1, put = 2 }
    public static let requestBytes = 48

    public static func request(_ op: Op, _ key: FileKey) -> [UInt8] {
        [op.rawValue, 0, 0, 0] + key.encoded
    }

    public static func parseRequest<C: RandomAccessCollection>(_ b: C) -> (Op, FileKey)? where C.Element == UInt8, C.Index == Int {
        guard b.count == requestBytes, let op = Op(rawValue: b[b.startIndex]),
              b[(b.startIndex + 1)..<(b.startIndex + 4)].allSatisfy({ $0 == 0 }),
              let key = FileKey(decoding: b[(b.startIndex + 4)...]) else { return nil }
        return (op, key)
    }

    static func put(_ out: inout [UInt8], _ value: UInt64, _ bytes: Int) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    static func read<C: RandomAccessCollection>(_ b: C, _ at: Int, _ bytes: Int) -> UInt64 where C.Element == UInt8, C.Index == Int {
        var v: UInt64 = 0
        for i in (0..<bytes).reversed() { v = v << 8 | UInt64(b[at + i]) }
        return v
    }
}
