/// The boxes of one level of an ISO BMFF / QuickTime file: 32- and 64-bit sizes, size 0 running to the end of the
/// parent; `isValid` turns false, and iteration stops, at a box that does not fit in its parent.
struct BoxReader {
    let bytes: ArraySlice<UInt8>
    private var at: Int
    private(set) var isValid = true
    /// The raw type of the box `next()` returned last (an ilst item's type is a key index in `mdta` lists).
    private(set) var lastType: UInt32 = 0

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        at = bytes.startIndex
    }

    mutating func next() -> (type: String, body: ArraySlice<UInt8>)? {
        guard isValid, bytes.endIndex - at >= 8 else { return nil }
        var size = Int(be32(bytes[at...], 0))
        let type = fourCC(bytes[at...], 4)
        var header = 8
        if size == 1 {
            guard bytes.endIndex - at >= 16 else { isValid = false; return nil }
            let large = be64(bytes[at...], 8)
            guard large <= UInt64(Int.max) else { isValid = false; return nil }
            size = Int(large)
            header = 16
        } else if size == 0 {
            size = bytes.endIndex - at
        }
        guard size >= header, size <= bytes.endIndex - at else { isValid = false; return nil }
        let body = bytes[(at + header)..<(at + size)]
        lastType = be32(bytes[at...], 4)
        at += size
        return (type, body)
    }
}

/// The big-endian u32 at `at` (from the collection's start); the caller has checked that 4 bytes are there.
func be32(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt32 {
    let i = b.index(b.startIndex, offsetBy: at)
    return b[i..<b.index(i, offsetBy: 4)].reduce(0) { $0 << 8 | UInt32($1) }
}

/// The big-endian u64 at `at`.
func be64(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt64 {
    UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4))
}

/// The four bytes at `at` as a box type.
func fourCC(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> String {
    let i = b.index(b.startIndex, offsetBy: at)
    return String(decoding: b[i..<b.index(i, offsetBy: 4)], as: UTF8.self)
}
