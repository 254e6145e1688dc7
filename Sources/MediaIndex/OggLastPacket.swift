import SystemCalls

/// The last packet of an Ogg logical stream, read from the file's last pages (RFC 3533): oggdemux (GStreamer 1.22)
/// never pushes an Opus packet that its last page's granule position leaves wholly out (its end padding covers all
/// of it: GStreamer's opusenc with 2.5 ms frames ends on such a packet), where ffmpeg lists it (with a discard
/// padding of all of it). Bounded: only the file's last `tailBytes` are read.
public enum OggLastPacket {
    /// An Ogg page is at most 27 + 255 + 255 × 255 = 65 307 bytes; the last packet lies in the last two pages at most
    /// as trackd meets it (a few hundred bytes), so two pages' worth is read.
    public static let tailBytes = 2 * 65_307

    /// One page's header fields and where its body is in `bytes`.
    struct Page: Equatable {
        var granule: Int64
        var serial: UInt32
        var continued: Bool
        /// The stream's first page (BOS) and its last (EOS).
        var isFirst: Bool, isLast: Bool
        var lacing: [UInt8]
        var body: Range<Int>
    }

    /// The page starting at `at` in `bytes`, when a whole, well-formed one does (capture pattern "OggS", version 0).
    static func page(_ bytes: [UInt8], at: Int) -> Page? {
        guard at >= 0, at + 27 <= bytes.count, bytes[at..<at + 4].elementsEqual("OggS".utf8), bytes[at + 4] == 0 else {
            return nil
        }
        let segments = Int(bytes[at + 26])
        guard at + 27 + segments <= bytes.count else { return nil }
        let lacing = Array(bytes[(at + 27)..<(at + 27 + segments)])
        let start = at + 27 + segments, size = lacing.reduce(0) { $0 + Int($1) }
        guard start + size <= bytes.count else { return nil }
        func le(_ offset: Int, _ count: Int) -> UInt64 {
            (0..<count).reduce(UInt64(0)) { $0 | UInt64(bytes[at + offset + $1]) << (8 * UInt64($1)) }
        }
        let flags = bytes[at + 5]
        return Page(granule: Int64(bitPattern: le(6, 8)), serial: UInt32(le(14, 4)), continued: flags & 1 != 0,
                    isFirst: flags & 2 != 0, isLast: flags & 4 != 0, lacing: lacing, body: start..<(start + size))
    }

    /// The last complete packet of stream `serial` (nil: the stream of the last page) in `tail` (the file's last
    /// bytes), and the granule position of the page it ends on; nil when `tail` holds no whole page ending that
    /// stream's packet (a packet that starts before `tail` is not returned).
    public static func lastPacket(tail: [UInt8], serial: UInt32? = nil) -> (packet: [UInt8], granule: Int64)? {
        // The pages in `tail`, found from its start: after a page the next is looked for where it ends (a capture
        // pattern inside a body is no page); `tail` may start inside one, so the first is the first that parses.
        var pages: [Page] = []
        var at = 0
        while at + 27 <= tail.count {
            if let p = page(tail, at: at) {
                pages.append(p)
                at = p.body.upperBound
            } else {
                at += 1
            }
        }
        guard let wanted = serial ?? pages.last?.serial else { return nil }
        let mine = pages.filter { $0.serial == wanted }
        // Walk back to the page where the last complete packet ends: a packet ends at a lacing value below 255.
        for (k, p) in mine.enumerated().reversed() {
            guard let end = p.lacing.lastIndex(where: { $0 < 255 }) else { continue }
            // Its start: after the previous value below 255 on this page, else it began on earlier pages.
            let before = p.lacing[..<end].lastIndex(where: { $0 < 255 })
            let offset = p.lacing[..<(before.map { $0 + 1 } ?? 0)].reduce(0) { $0 + Int($1) }
            let length = p.lacing[(before.map { $0 + 1 } ?? 0)...end].reduce(0) { $0 + Int($1) }
            var bytes = Array(tail[(p.body.lowerBound + offset)..<(p.body.lowerBound + offset + length)])
            if before == nil, p.continued {
                // It began on the earlier pages: their trailing segments (all 255s after their last packet end).
                var earlier = k - 1
                while earlier >= 0 {
                    let q = mine[earlier]
                    let from = (q.lacing.lastIndex(where: { $0 < 255 }).map { $0 + 1 }) ?? 0
                    let skip = q.lacing[..<from].reduce(0) { $0 + Int($1) }
                    bytes = Array(tail[(q.body.lowerBound + skip)..<q.body.upperBound]) + bytes
                    if from > 0 || !q.continued { break }
                    earlier -= 1
                }
                guard earlier >= 0 else { return nil }
            }
            return (bytes, p.granule)
        }
        return nil
    }

    /// Whether the file `fd` is Ogg: it starts with a page header (capture pattern "OggS", version 0; read with
    /// pread, the caller keeps it open).
    public static func isOgg(fd: Int32) -> Bool {
        let file = FileDescriptor(taking: fd)
        let head = (try? [UInt8](preading: file, count: 27, at: 0)) ?? []
        _ = file.take()  // the caller's descriptor: not closed here
        return head.count == 27 && head.starts(with: Array("OggS".utf8)) && head[4] == 0
    }

    /// The serial numbers of an Ogg file's logical streams, in the order their first pages (BOS) come at its start
    /// (`head`: its first bytes), which is ffprobe's stream order: every BOS page of a chain comes before any other
    /// page (RFC 3533). Empty when `head` does not start with a page.
    public static func streamSerials(head: [UInt8]) -> [UInt32] {
        var (serials, at): ([UInt32], Int) = ([], 0)
        while let p = page(head, at: at), p.isFirst {
            if !serials.contains(p.serial) { serials.append(p.serial) }
            at = p.body.upperBound
        }
        return serials
    }

    /// streamSerials of the Ogg file `fd`, from its first 64 KiB (a BOS page holds one header packet: a chain's
    /// first pages are a few hundred bytes; read with pread, the caller keeps it open).
    public static func streamSerials(fd: Int32) -> [UInt32] {
        let file = FileDescriptor(taking: fd)
        var head: [UInt8] = []
        if let size = try? file.regularFileSize(), size > 27 {
            head = (try? [UInt8](preading: file, count: Int(min(size, 65_536)), at: 0)) ?? []
        }
        _ = file.take()  // the caller's descriptor: not closed here
        return streamSerials(head: head)
    }

    /// lastPacket of the Ogg file `fd` (read with pread; the caller keeps it open).
    public static func lastPacket(fd: Int32, serial: UInt32? = nil) -> (packet: [UInt8], granule: Int64)? {
        let file = FileDescriptor(taking: fd)
        var tail: [UInt8] = []
        if let size = try? file.regularFileSize(), size > 27 {
            let count = Int(min(size, UInt64(tailBytes)))
            tail = (try? [UInt8](preading: file, count: count, at: Int(size) - count)) ?? []
        }
        _ = file.take()  // the caller's descriptor: not closed here
        return lastPacket(tail: tail, serial: serial)
    }
}
