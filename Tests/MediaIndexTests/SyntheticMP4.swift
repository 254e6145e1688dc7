import Foundation
import MediaIndex

/// ISO BMFF boxes built in a test, big-endian as in a file.
enum Box {
    static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }
    static func u64(_ v: UInt64) -> [UInt8] { u32(UInt32(v >> 32)) + u32(UInt32(truncatingIfNeeded: v)) }

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] { u32(UInt32(8 + body.count)) + Array(type.utf8) + body }
    /// A box with a 64-bit size (size field 1).
    static func large(_ type: String, _ body: [UInt8]) -> [UInt8] { u32(1) + Array(type.utf8) + u64(UInt64(16 + body.count)) + body }
    static func full(_ type: String, version: UInt8 = 0, _ body: [UInt8]) -> [UInt8] { box(type, [version, 0, 0, 0] + body) }
    /// A full box whose body is an entry count and entries.
    static func table(_ type: String, version: UInt8 = 0, _ entries: [[UInt8]]) -> [UInt8] {
        full(type, version: version, u32(UInt32(entries.count)) + entries.flatMap { $0 })
    }
    /// mvhd, tkhd, mdhd: creation and modification times (32- or 64-bit) then `field` (timescale or track_ID).
    static func timed(_ type: String, version: UInt8, field: UInt32) -> [UInt8] {
        let times = version == 1 ? u64(3_000_000_000) + u64(3_000_000_001) : u32(1) + u32(2)
        let duration = version == 1 ? u64(0) : u32(0)
        return full(type, version: version, times + u32(field) + duration + u32(0))
    }
}

/// One trak: every table a test may change; its samples are one chunk of `sampleSize`-byte samples.
struct SyntheticTrack {
    var id: UInt32 = 1
    var timescale: UInt32 = 1000
    var handler = "vide"
    var boxVersion: UInt8 = 0                                        // tkhd, mdhd
    var deltas: [(count: UInt32, delta: UInt32)] = [(4, 100)]        // stts
    var offsets: [(count: UInt32, offset: Int32)]?                   // ctts
    var cttsVersion: UInt8 = 0
    var syncs: [UInt32]?                                             // stss
    var edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)]? // elst
    var elstVersion: UInt8 = 0
    var sampleSize: UInt32 = 16
    var co64 = false
    /// stsz's sample count; nil: the number stts lists.
    var sampleCount: UInt32?
    /// Replaces a table's box (by type) with other bytes, e.g. a truncated one.
    var replaced: [String: [UInt8]] = [:]

    var samples: UInt32 { sampleCount ?? deltas.reduce(0) { $0 + $1.count } }
    var dataBytes: UInt64 { UInt64(samples) * UInt64(sampleSize) }

    func trak(dataOffset: UInt64) -> [UInt8] {
        var tables: [(String, [UInt8])] = [
            ("stsd", Box.table("stsd", [])),
            ("stts", Box.table("stts", deltas.map { Box.u32($0.count) + Box.u32($0.delta) })),
        ]
        if let offsets {
            tables.append(("ctts", Box.table("ctts", version: cttsVersion,
                                             offsets.map { Box.u32($0.count) + Box.u32(UInt32(bitPattern: $0.offset)) })))
        }
        if let syncs { tables.append(("stss", Box.table("stss", syncs.map(Box.u32)))) }
        tables.append(("stsz", Box.full("stsz", Box.u32(sampleSize) + Box.u32(samples))))
        tables.append(("stsc", Box.table("stsc", [Box.u32(1) + Box.u32(samples) + Box.u32(1)])))
        tables.append(co64 ? ("co64", Box.table("co64", [Box.u64(dataOffset)]))
                           : ("stco", Box.table("stco", [Box.u32(UInt32(dataOffset))])))
        let stbl = Box.box("stbl", tables.flatMap { replaced[$0.0] ?? $0.1 })
        let hdlr = Box.full("hdlr", Box.u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13))
        let mdia = Box.box("mdia", Box.timed("mdhd", version: boxVersion, field: timescale) + hdlr
                                   + Box.box("minf", stbl))
        var trak = Box.timed("tkhd", version: boxVersion, field: id)
        if let edits { trak += Box.box("edts", replaced["elst"] ?? elst(edits)) }
        return Box.box("trak", trak + mdia)
    }

    private func elst(_ edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)]) -> [UInt8] {
        Box.table("elst", version: elstVersion, edits.map { e in
            elstVersion == 1 ? Box.u64(e.duration) + Box.u64(UInt64(bitPattern: e.mediaTime)) + Box.u32(e.rate)
                             : Box.u32(UInt32(e.duration)) + Box.u32(UInt32(bitPattern: Int32(e.mediaTime))) + Box.u32(e.rate)
        })
    }
}

/// A whole file: ftyp, moov (mvhd, the traks, `extra` boxes), mdat holding each track's samples in turn.
struct SyntheticMovie {
    var movieTimescale: UInt32 = 1000
    var tracks: [SyntheticTrack] = [SyntheticTrack()]
    var extra: [[UInt8]] = []
    /// Bytes instead of the ftyp (a file that does not start like an MP4).
    var first = Box.box("ftyp", Array("isom".utf8) + Box.u32(0x200) + Array("isommp41".utf8))
    /// moov with a 64-bit size.
    var largeMoov = false

    /// The moov box's body given where the mdat's data starts.
    func moovBody(dataStart: UInt64) -> [UInt8] {
        var offset = dataStart
        var body = Box.timed("mvhd", version: 0, field: movieTimescale)
        for track in tracks {
            body += track.trak(dataOffset: offset)
            offset += track.dataBytes
        }
        return body + extra.flatMap { $0 }
    }

    /// The file and its moov box's body.
    var layout: (file: [UInt8], moovBody: [UInt8]) {
        let moovSize = (largeMoov ? 16 : 8) + moovBody(dataStart: 0).count  // the offsets' width does not depend on them
        let body = moovBody(dataStart: UInt64(first.count + moovSize + 8))
        let moov = largeMoov ? Box.large("moov", body) : Box.box("moov", body)
        let data = [UInt8](repeating: 0xAB, count: Int(tracks.reduce(0) { $0 + $1.dataBytes }))
        return (first + moov + Box.box("mdat", data), body)
    }

    var bytes: [UInt8] { layout.file }

    /// What ContainerIndex reads from the moov body (no file).
    func frames(trackID: UInt32 = 1) -> [FrameIndex.Frame]? {
        let (file, body) = layout
        return ContainerIndex.frames(movie: body[...], fileSize: UInt64(file.count), trackID: trackID)
    }
}

/// Writes `bytes` to a temporary file and reads it with ContainerIndex.mp4 (pread on the descriptor).
func framesFromFile(_ bytes: [UInt8], trackID: UInt32 = 1) throws -> [FrameIndex.Frame]? {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("mediaindex-\(UUID().uuidString).mp4")
    try Data(bytes).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    let fd = open(url.path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CocoaError(.fileReadNoPermission) }
    defer { close(fd) }
    return ContainerIndex.mp4(fd: fd, trackID: trackID)
}
