// libFuzzer target `vorbis`: VorbisPackets (VorbisBlocks, VorbisDurations: libvorbis reading a stream's three headers
// and the header bits of each audio packet, in the worker, for every passthrough Vorbis packet from Ogg and Matroska)
// and OggVorbisStart (the first pages of an Ogg file, read by the worker). Input: one byte choosing the mode — bit 0
// clear: the rest is the head of an Ogg file; set: three headers and then packets, each after a two-byte
// little-endian length (bit 1 chooses Matroska's first block over Ogg's; a zero-length packet is a seek).
// Invariants, beyond "never traps": block sizes are libvorbis's (64 … 8192, short ≤ long), a packet's block and
// the one it states before it are one of them, a duration is a quarter of two of them; an Ogg start places the first
// page's packets in order, each but the last lasting at least a quarter of two of the smallest blocks, the last
// ending at the page's granule position (never negative), the packets after the first from 0 on when the page is
// the stream's last.
import MediaIndex

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // Pages without a valid setup header (scripts/fuzz.sh adds ffmpeg-made Ogg Vorbis files): an identification
        // header alone, and the framed mode with headers libvorbis refuses.
        let id: [UInt8] = [1] + Array("vorbis".utf8) + [0, 0, 0, 0, 1, 0x44, 0xAC, 0, 0] + [UInt8](repeating: 0, count: 12)
            + [0xB8, 1]
        let lacing: [UInt8] = [UInt8(id.count)]
        let page: [UInt8] = Array("OggS".utf8) + [0, 2] + [UInt8](repeating: 0, count: 8) + [7, 0, 0, 0]
            + [UInt8](repeating: 0, count: 8) + [1] + lacing + id
        func framed(_ parts: [[UInt8]]) -> [UInt8] {
            parts.flatMap { [UInt8($0.count & 0xFF), UInt8($0.count >> 8)] + $0 }
        }
        return [[0] + page, [1] + framed([id, [3] + Array("vorbis".utf8), [5] + Array("vorbis".utf8), [0, 0], [1, 2]])]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVorbis(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = FuzzBytes(fuzzInput(data, size))
    let mode = r.u8()
    if mode & 1 == 0 {
        checkOggStart(Array(r.bytes.dropFirst()))
        return 0
    }
    func next() -> [UInt8] { r.take(Int(r.u16())) }
    let headers = [next(), next(), next()]
    guard let blocks = VorbisBlocks(headers: headers),
          var durations = VorbisDurations(headers: headers, container: mode & 2 == 0 ? .ogg : .matroska) else { return 0 }
    check(64 <= blocks.short && blocks.short <= blocks.long && blocks.long <= 8192, "block sizes \(blocks.short), \(blocks.long)")
    while !r.isAtEnd {
        let packet = next()
        if packet.isEmpty {
            durations.reset()
            continue
        }
        if let (block, previous) = blocks.packet(packet) {
            check([blocks.short, blocks.long].contains(block), "a block of \(block)")
            check(previous.map { [blocks.short, blocks.long].contains($0) } ?? true, "a previous block of \(previous ?? 0)")
        }
        if let frames = durations.next(packet) {
            check(blocks.short / 2 <= frames && frames <= blocks.long / 2, "a packet of \(frames) frames")
        }
    }
    return 0
}

/// OggVorbisStart on `head`: the page's packets in order, each but the last at least 32 frames (a quarter of two
/// 64-frame blocks), the last ending at a granule position (not negative); on the stream's last page, the first
/// packet ends at 0 or later.
func checkOggStart(_ head: [UInt8]) {
    guard let start = OggVorbisStart.read(head: head) else { return }
    check(!start.ends.isEmpty && start.ends[start.ends.count - 1] >= 0, "ends \(start.ends)")
    check(!start.isLast || start.ends.count < 2 || start.ends[0] >= 0, "a last page's first packet ending at \(start.ends[0])")
    var previous = start.start
    for end in start.ends.dropLast() {
        check(end - previous >= 32, "a packet from \(previous) to \(end)")
        previous = end
    }
}
