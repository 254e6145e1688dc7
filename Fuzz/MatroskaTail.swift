// libFuzzer target `mkvtail`: MatroskaTail, which the worker runs on a client's Matroska/WebM file at the end of an
// Opus range (MatroskaTailFeeder): it walks the Segment's top-level elements, reads Info's TimestampScale and
// Duration, and reads the blocks stored at or after the Duration from the last Cluster. Input: one byte, the track
// number asked for (its low 2 bits, plus 1), then the file, which the harness writes to a memfd and hands over as
// the worker does (a descriptor read with pread). Invariants, beyond "never traps":
//  - every block's frame lies in the file (offset ≥ 0, size ≥ 0, offset + size ≤ the file's size);
//  - its time is ≥ 0, its BlockDuration ≥ 0 when stated, its DiscardPadding ≥ 0, and the padding in 48 kHz samples
//    (what the feeder hands GStreamer) is at most what ⌈padding × 48 kHz⌉ gives;
//  - the walk stays within its bound (MatroskaTail.maxElements elements) and reads each byte of the file once at
//    most, window overlaps aside.
#if canImport(Glibc)
import Glibc
#endif
import MediaIndex
import SystemCalls

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // One Cluster at the Duration (3 s at 1 ms ticks) with a SimpleBlock and a BlockGroup (BlockDuration,
        // DiscardPadding); scripts/fuzz.sh adds GStreamer's and ffmpeg's WebM/MKV Opus files.
        func element(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] { id + [0x01] + be(UInt64(body.count), 7) + body }
        func be(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64(n - 1 - $0))) } }
        let info = element([0x15, 0x49, 0xA9, 0x66], element([0x2A, 0xD7, 0xB1], be(1_000_000, 3))
            + element([0x44, 0x89], be(UInt64(Double(3000).bitPattern), 8)))
        let simple = element([0xA3], [0x81, 0, 0, 0x80, 0xFC, 1, 2, 3])
        let group = element([0xA0], element([0xA1], [0x81, 0, 20, 0, 0xFC, 4, 5]) + element([0x9B], [20])
            + element([0x75, 0xA2], be(3_500_000, 4)))
        let cluster = element([0x1F, 0x43, 0xB6, 0x75], element([0xE7], be(3000, 2)) + simple + group)
        let file = element([0x1A, 0x45, 0xDF, 0xA3], element([0x42, 0x82], Array("webm".utf8)))
            + element([0x18, 0x53, 0x80, 0x67], element([0xEC], [0, 0]) + info + cluster)
        return [[0] + file, [1] + file]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMatroskaTail(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzInput(data, size)
    guard let first = input.first else { return 0 }
    let file = Array(input.dropFirst())
    guard let fd = try? FileDescriptor.unsealedMemfd(name: "fuzz-mkvtail"), (try? fd.writeFully(file)) != nil else {
        printError("fuzz-mkvtail: no memfd\n")
        abort()
    }
    var work = MatroskaTail.Work()
    let blocks = MatroskaTail.blocks(fd: fd.rawValue, trackNumber: UInt32(first & 3) + 1, work: &work)
    check(work.elements <= MatroskaTail.maxElements, "walked \(work.elements) elements")
    check(work.bytesRead <= file.count + 12 * work.reads, "read \(work.bytesRead) bytes of \(file.count) in \(work.reads) reads")
    for block in blocks {
        check(block.offset >= 0 && block.size >= 0 && block.offset + block.size <= file.count, "a block at \(block.offset), \(block.size) bytes")
        check(block.time >= 0 && (block.duration ?? 0) >= 0 && block.discardPadding >= 0, "\(block)")
        let samples = block.discardPaddingSamples(rate: 48000)
        check(samples <= UInt64(block.discardPadding / 1_000_000_000 + 1) * 48000, "\(block.discardPadding) ns of padding: \(samples) samples")
    }
    return 0
}
