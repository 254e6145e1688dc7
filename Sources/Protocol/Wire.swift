/// Little-endian encoding primitives with every variable-length field bounded. Decoding never traps: a short or
/// malformed payload throws `TrackError(.protocolViolation, …)` naming the field.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { littleEndian(v) }
    public mutating func u32(_ v: UInt32) { littleEndian(v) }
    public mutating func u64(_ v: UInt64) { littleEndian(v) }

    /// `v`'s bytes, least significant first.
    private mutating func littleEndian<T: FixedWidthInteger>(_ v: T) {
        for shift in stride(from: 0, to: T.bitWidth, by: 8) { bytes.append(UInt8(truncatingIfNeeded: v >> shift)) }
    }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    public mutating func f64(_ v: Double) { u64(v.bitPattern) }
    public mutating func bool(_ v: Bool) { u8(v ? 1 : 0) }
    public mutating func fourCC(_ v: FourCC) { u32(v.rawValue) }

    /// u16 byte length + UTF-8 bytes; longer strings are cut at a character boundary to `Wire.maxString`.
    public mutating func string(_ s: String) {
        var utf8 = Array(s.utf8)
        if utf8.count > Wire.maxString {
            var cut = Wire.maxString
            while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
            utf8 = Array(utf8[..<cut])
        }
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// u32 byte length + bytes.
    public mutating func blob(_ b: [UInt8]) {
        u32(UInt32(b.count))
        bytes.append(contentsOf: b)
    }

    public mutating func time(_ t: MediaTime) {
        i64(t.value)
        i32(t.timescale)
        u32(t.flags)
    }

    public mutating func timeRange(_ r: MediaTimeRange) {
        time(r.start)
        time(r.duration)
    }

    /// A u16 count, then each item. At most `max` items are written: the receiver refuses a longer list.
    public mutating func list<C: Collection>(_ items: C, max: Int, _ item: (inout ByteWriter, C.Element) -> Void) {
        let written = items.prefix(max)
        u16(UInt16(written.count))
        for element in written { item(&self, element) }
    }

    /// A presence byte (0 absent, 1 present), then the value when present.
    public mutating func optional<T>(_ value: T?, _ item: (inout ByteWriter, T) -> Void) {
        guard let value else { return u8(0) }
        u8(1)
        item(&self, value)
    }

    /// A growable record (PROTOCOL.md §4 "record"): a u32 size, then the bytes `fields` writes.
    public mutating func record(_ fields: (inout ByteWriter) -> Void) {
        let at = bytes.count
        u32(0)
        fields(&self)
        let size = UInt32(bytes.count - at - 4)
        for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: size >> (8 * i)) }
    }
}

public struct ByteReader {
    private let bytes: [UInt8]
    public private(set) var offset: Int
    private let end: Int

    public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = max(start, 0)
        // Clamped, so that bounds past the array (a caller's mistake) throw "truncated" instead of trapping.
        self.end = min(end ?? bytes.count, bytes.count)
    }

    public var remaining: Int { end - offset }

    /// True when every byte of the payload (or of the record being read) has been read: a field appended by a
    /// later revision is absent and takes its default (PROTOCOL.md §2.1), e.g.
    /// `let lost = r.atEnd ? 0 : try r.u64("outputFinished.samplesLost")`.
    public var atEnd: Bool { offset >= end }

    private mutating func take(_ n: Int, _ field: StaticString) throws(TrackError) -> Int {
        guard n >= 0, remaining >= n else {
            throw TrackError(.protocolViolation, "message truncated while reading \(field)")
        }
        defer { offset += n }
        return offset
    }

    private mutating func le<T: FixedWidthInteger>(_: T.Type, _ field: StaticString) throws(TrackError) -> T {
        let at = try take(MemoryLayout<T>.size, field)
        var v: T = 0
        for i in 0..<MemoryLayout<T>.size { v |= T(truncatingIfNeeded: bytes[at + i]) << (8 * i) }
        return v
    }

    public mutating func u8(_ f: StaticString = "u8") throws(TrackError) -> UInt8 { try le(UInt8.self, f) }
    public mutating func u16(_ f: StaticString = "u16") throws(TrackError) -> UInt16 { try le(UInt16.self, f) }
    public mutating func u32(_ f: StaticString = "u32") throws(TrackError) -> UInt32 { try le(UInt32.self, f) }
    public mutating func u64(_ f: StaticString = "u64") throws(TrackError) -> UInt64 { try le(UInt64.self, f) }
    public mutating func i32(_ f: StaticString = "i32") throws(TrackError) -> Int32 { Int32(bitPattern: try u32(f)) }
    public mutating func i64(_ f: StaticString = "i64") throws(TrackError) -> Int64 { Int64(bitPattern: try u64(f)) }
    public mutating func f64(_ f: StaticString = "f64") throws(TrackError) -> Double { Double(bitPattern: try u64(f)) }
    public mutating func fourCC(_ f: StaticString = "fourcc") throws(TrackError) -> FourCC { FourCC(rawValue: try u32(f)) }

    public mutating func bool(_ f: StaticString = "bool") throws(TrackError) -> Bool {
        switch try u8(f) {
        case 0: return false
        case 1: return true
        case let v: throw TrackError(.protocolViolation, "\(f): boolean byte \(v) is neither 0 nor 1")
        }
    }

    public mutating func string(_ f: StaticString = "string") throws(TrackError) -> String {
        let n = Int(try u16(f))
        guard n <= Wire.maxString else {
            throw TrackError(.protocolViolation, "\(f): string of \(n) bytes exceeds \(Wire.maxString)")
        }
        let at = try take(n, f)
        guard let s = String(validating: bytes[at..<at + n], as: UTF8.self) else {
            throw TrackError(.protocolViolation, "\(f): string is not valid UTF-8")
        }
        return s
    }

    public mutating func blob(_ f: StaticString = "bytes", max: Int) throws(TrackError) -> [UInt8] {
        let n = Int(try u32(f))
        guard n <= max else { throw TrackError(.protocolViolation, "\(f): \(n) bytes exceeds \(max)") }
        let at = try take(n, f)
        return Array(bytes[at..<at + n])
    }

    public mutating func time(_ f: StaticString = "time") throws(TrackError) -> MediaTime {
        MediaTime(value: try i64(f), timescale: try i32(f), flags: try u32(f))
    }

    public mutating func timeRange(_ start: StaticString, _ duration: StaticString) throws(TrackError) -> MediaTimeRange {
        MediaTimeRange(start: try time(start), duration: try time(duration))
    }

    /// A count of repeated items, bounded.
    public mutating func count(_ f: StaticString, max: Int) throws(TrackError) -> Int {
        let n = Int(try u16(f))
        guard n <= max else { throw TrackError(.protocolViolation, "\(f): count \(n) exceeds \(max)") }
        return n
    }

    /// A u16 count (`f`, at most `max`), then that many items, each read by `item`.
    public mutating func list<T>(_ f: StaticString, max: Int,
                                 _ item: (inout ByteReader) throws(TrackError) -> T) throws(TrackError) -> [T] {
        try repeated(try count(f, max: max), item)
    }

    /// `n` items, each read by `item`.
    public mutating func repeated<T>(_ n: Int, _ item: (inout ByteReader) throws(TrackError) -> T) throws(TrackError) -> [T] {
        var items: [T] = []
        items.reserveCapacity(n)
        for _ in 0..<n { items.append(try item(&self)) }
        return items
    }

    /// A presence byte (`f`: 0 absent, 1 present), then the value when present.
    public mutating func optional<T>(_ f: StaticString,
                                     _ item: (inout ByteReader) throws(TrackError) -> T) throws(TrackError) -> T? {
        switch try u8(f) {
        case 0: return nil
        case 1: return try item(&self)
        case let v: throw TrackError(.protocolViolation, "\(f): \(v) is neither 0 nor 1")
        }
    }

    /// The u32 `Wire.magic` ("TRKD") that opens Hello and HelloReply.
    public mutating func magic(_ f: StaticString, of message: StaticString) throws(TrackError) {
        guard try u32(f) == Wire.magic else {
            throw TrackError(.protocolViolation, "\(message): magic is not \"TRKD\"")
        }
    }

    /// A growable record (PROTOCOL.md §4 "record"): a u32 size (`f`), then that many bytes, from which `fields`
    /// reads the fields it knows; the bytes after them (fields a later revision appended) are skipped. A size that
    /// runs past the payload, or ends inside a field `fields` needs, is a protocol violation.
    public mutating func record<T>(_ f: StaticString, _ fields: (inout ByteReader) throws(TrackError) -> T) throws(TrackError) -> T {
        let size = Int(try u32(f))
        let at = try take(size, f)
        var inner = ByteReader(bytes, from: at, to: at + size)
        do {
            return try fields(&inner)
        } catch {
            guard error.message.hasPrefix("message truncated") else { throw error }
            throw TrackError(.protocolViolation, "\(f): a record of \(size) bytes ends inside its fields (\(error.message))")
        }
    }
}

/// Protocol constants. See docs/PROTOCOL.md.
public enum Wire {
    /// "TRKD" read as a little-endian u32 — the first four payload bytes of Hello and HelloReply.
    public static let magic: UInt32 = 0x444B_5254
    /// The one protocol version trackd speaks (PROTOCOL.md §5).
    public static let version: UInt16 = 2
    /// The revision of version 2: how many times fields were appended to it (PROTOCOL.md §2.1 lists each). Bump it
    /// with every appended field; it keys what the daemon caches in the wire layout.
    public static let revision: UInt16 = 1
    public static let headerSize = 16
    /// Largest payload either side ever accepts before Hello has agreed on a (possibly smaller) limit.
    public static let maxMessageSizeCeiling: UInt32 = 1 << 20
    /// The smallest receive limit a client may offer in Hello: every version-2 message a worker sends fits in it
    /// (the largest, an OutputCreated with a full codec configuration, is 65,557 bytes).
    public static let minMessageSize: UInt32 = 128 * 1024
    /// The receiver's default largest payload.
    public static let defaultMaxMessageSize: UInt32 = 256 * 1024
    /// Descriptors one message may carry (no message type needs more than one).
    public static let maxFdsPerMessage: UInt16 = 4
    public static let maxString = 4096
    public static let maxTracks = DescriptionBounds.tracks
    public static let maxPlanes = 4
    public static let maxSlotsPerRelease = 1024
    public static let maxResetRanges = 256
    /// Frames one ReadFrames may ask for (each is answered by one Sample).
    public static let maxFrameRequests = 1024
    public static let maxSettingsDepth = 8
    public static let maxSettingsItems = 256
    public static let maxCodecConfig = 64 * 1024
    /// Metadata items in one list (the asset's, or one track's), PROTOCOL.md §7.5.
    public static let maxMetadataItems = DescriptionBounds.metadataItems
    /// Bytes of a metadata item's keySpace, key and commonKey each.
    public static let maxMetadataKey = DescriptionBounds.metadataKeyBytes
    /// Bytes of a metadata item's value.
    public static let maxMetadataValue = DescriptionBounds.metadataValueBytes
    /// Segments of one track's edit list, PROTOCOL.md §7.6.
    public static let maxSegments = DescriptionBounds.segments
    /// Bytes of metadata items and segments in one AssetOpened, all lists together (the worker leaves out the rest).
    public static let maxMetadataBytes = 32 * 1024
}

/// The fixed 16-byte header in front of every payload.
public struct FrameHeader: Sendable, Equatable {
    public var length: UInt32
    public var type: UInt16
    public var fdCount: UInt16
    public var requestID: UInt32

    public init(length: UInt32, type: UInt16, fdCount: UInt16, requestID: UInt32) {
        self.length = length
        self.type = type
        self.fdCount = fdCount
        self.requestID = requestID
    }

    public func encode(into w: inout ByteWriter) {
        w.u32(length)
        w.u16(type)
        w.u16(fdCount)
        w.u32(requestID)
        w.u32(0)
    }

    public static func decode(_ bytes: [UInt8], at offset: Int) throws(TrackError) -> FrameHeader {
        var r = ByteReader(bytes, from: offset, to: offset + Wire.headerSize)
        let h = FrameHeader(length: try r.u32(), type: try r.u16(), fdCount: try r.u16(), requestID: try r.u32())
        guard try r.u32() == 0 else { throw TrackError(.protocolViolation, "header: reserved field is not zero") }
        return h
    }
}
