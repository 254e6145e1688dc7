// libFuzzer target `ogg`: OggLastPacket, which the worker runs on a client's Ogg file: the serial numbers of its
// logical streams from its first pages (streamSerials, Gst's stream order) and the last packet of a stream from its
// last pages (lastPacket, chained after oggdemux's last Opus packet). Input: one byte choosing the stream (bit 0
// set: the serial number in the next four bytes, little-endian; clear: the last page's), then the bytes, read both
// as a file's head and as its tail. Invariants, beyond "never traps":
//  - serials are distinct, each one of a BOS page's, at most one per 27 bytes of the head (a page without segments);
//  - a last packet is no longer than the tail, its bytes the tail's (each lacing segment a piece of it, in order);
//    asked for a serial, it is that stream's; the last page's stream otherwise;
//  - the answer on the bytes is the answer on them after any garbage before the first page (the tail may start
//    inside a page).
import MediaIndex

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // Two streams' BOS pages, then pages of one packet laced over two pages and one of 255 bytes (a 0 ends it);
        // scripts/fuzz.sh adds ffmpeg's and GStreamer's Ogg Opus and Vorbis files.
        func page(_ serial: UInt32, _ granule: UInt64, flags: UInt8, lacing: [UInt8]) -> [UInt8] {
            func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
            let body = lacing.enumerated().flatMap { [UInt8](repeating: UInt8($0.offset & 0xFF), count: Int($0.element)) }
            return Array("OggS".utf8) + [0, flags] + le(granule, 8) + le(UInt64(serial), 4) + le(0, 8)
                + [UInt8(lacing.count)] + lacing + body
        }
        let file = page(7, 0, flags: 2, lacing: [19]) + page(9, 0, flags: 2, lacing: [30])
            + page(7, 960, flags: 0, lacing: [20, 255]) + page(7, 1920, flags: 1, lacing: [45, 255, 0])
            + page(9, 5, flags: 4, lacing: [3])
        return [[0] + file, [1, 7, 0, 0, 0] + file]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOgg(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = FuzzBytes(fuzzInput(data, size))
    let mode = r.u8()
    let serial: UInt32? = mode & 1 == 1 ? r.u32() : nil
    let bytes = r.take(r.bytes.count)
    checkSerials(bytes)
    let last = OggLastPacket.lastPacket(tail: bytes, serial: serial)
    if let (packet, _) = last {
        check(packet.count <= bytes.count, "a packet of \(packet.count) bytes in \(bytes.count)")
        check(containsInOrder(bytes, packet), "a packet whose bytes are not the tail's")
    }
    // The same pages after bytes that are no page: the tail read from inside a page finds the same last packet.
    let shifted = OggLastPacket.lastPacket(tail: [0, 0, 0] + bytes, serial: serial)
    check(shifted?.packet == last?.packet && shifted?.granule == last?.granule, "garbage before the pages changed the answer")
    return 0
}

/// streamSerials: distinct, at most one per 27 bytes (a page header without segments), the first the first page's.
func checkSerials(_ head: [UInt8]) {
    let serials = OggLastPacket.streamSerials(head: head)
    check(Set(serials).count == serials.count, "serials \(serials) repeat")
    check(serials.count <= head.count / 27, "\(serials.count) serials in \(head.count) bytes")
    guard let first = serials.first else { return }
    let bos = head.count >= 27 && head[5] & 2 != 0
    let firstSerial = bos ? UInt32(head[14]) | UInt32(head[15]) << 8 | UInt32(head[16]) << 16 | UInt32(head[17]) << 24 : nil
    check(firstSerial == first, "the first serial \(first) is not the first page's")
}

/// Whether `needle`'s bytes occur in `hay` in order (a packet is its pages' segments, pieces of the tail in order).
func containsInOrder(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
    var at = 0
    for byte in needle {
        while at < hay.count, hay[at] != byte { at += 1 }
        guard at < hay.count else { return false }
        at += 1
    }
    return true
}
