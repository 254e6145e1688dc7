import MediaVocabulary
import SystemCalls

/// The container's own clock of each track, read with pread from the client's descriptor (no GStreamer): what
/// ffprobe reports as a stream's `time_base`, and what trackd's times are expressed in (docs/PROTOCOL.md §7.1).
///
/// - MP4/MOV: each trak's mdhd timescale (tick 1), its edit's media time (qtdemux's timeline starts there), and the
///   smallest stts delta of a video track as its minimum frame duration;
/// - Matroska/WebM: Segment/Info/TimestampScale (default 1,000,000 ns), one grid of 10⁹/TimestampScale per second
///   for every track;
/// - AVI: a video stream's strh rate and scale (its frames are `scale/rate` s apart), the minimum frame duration one
///   tick; audio streams are left to the sample rate;
/// - MPEG-TS and MPEG-PS: 90 kHz for every track (the PTS/DTS clock).
/// A track this finds nothing for is left to the caller (audio: its sample rate; an elementary stream's video: the
/// frame grid of the rate its parser states, TimeGrid(frameRate:_:); else nanoseconds).
public enum TrackTimescale {
    /// One stream's clock. `id`: the container's track number (MP4 track_ID, Matroska TrackNumber), nil when
    /// streams are matched by kind and position (`kind`, `ordinal` among streams of that kind: AVI).
    public struct Clock: Sendable, Equatable {
        public enum Kind: Sendable { case video, audio, other, any }
        public var id: UInt32?
        public var kind: Kind
        public var ordinal: Int
        public var grid: TimeGrid
        /// The smallest frame duration in `grid.timescale` units, when the container lists every frame's (MP4 stts).
        public var minFrameDuration: Int64?

        public init(id: UInt32?, kind: Kind, ordinal: Int = 0, grid: TimeGrid, minFrameDuration: Int64? = nil) {
            self.id = id
            self.kind = kind
            self.ordinal = ordinal
            self.grid = grid
            self.minFrameDuration = minFrameDuration
        }
    }

    /// The first bytes read to recognise the container (and for AVI and Matroska, their headers).
    static let headBytes = 256 << 10

    /// Every stream clock the file's container states; empty for containers without one (or a damaged header).
    public static func read(file: borrowing FileDescriptor) -> [Clock] {
        guard let size = try? file.regularFileSize(), size > 12,
              let head = try? [UInt8](preading: file, count: Int(min(size, UInt64(headBytes))), at: 0) else { return [] }
        switch container(head: head) {
        case .avi: return avi(head)
        case .matroska: return matroska(head)
        case .transportStream, .programStream: return [Clock(id: nil, kind: .any, grid: TimeGrid.orNanoseconds(timescale: 90_000))]
        case .mp4:
            guard let moov = ContainerIndex.readMovie(file, fileSize: size) else { return [] }
            return mp4(movie: moov)
        case .elementaryStream, .other: return []
        }
    }

    /// The kinds of container whose clock trackd treats apart. `programStream`: MPEG-PS (a pack header first);
    /// `elementaryStream`: a bare video stream of start codes (Annex B H.264/HEVC, MPEG video), no container at all.
    public enum Container: Sendable, Equatable {
        case mp4, matroska, transportStream, programStream, elementaryStream, avi, other

        /// Whether a track's time range is its packets' (PROTOCOL.md §7.2): the container states no track duration —
        /// MPEG-TS and MPEG-PS carry only packet timestamps, an elementary stream not even those — and what the
        /// demuxer says a track lasts is an estimate from the PCRs or SCRs and the byte rate.
        public var spansPackets: Bool {
            self == .transportStream || self == .programStream || self == .elementaryStream
        }

        /// Whether an audio or video track ends at the end of its last packet (presentation time + duration, in
        /// presentation order; PROTOCOL.md §8): a track whose time range spans its packets, and a Matroska track,
        /// whose Info/Duration is the segment's, measured from 0 whatever the track's first timestamp.
        public var endsAtLastPacket: Bool { spansPackets || self == .matroska }
    }

    /// The container of the file `fd` (the caller keeps it open), by its first bytes.
    public static func container(fd: Int32) -> Container {
        let file = FileDescriptor(taking: fd)
        var head: [UInt8] = []
        if let size = try? file.regularFileSize(), size > 12 {
            head = (try? [UInt8](preading: file, count: Int(min(size, 1024)), at: 0)) ?? []
        }
        _ = file.take()  // the caller's descriptor: not closed here
        return container(head: head)
    }

    static func container(head: [UInt8]) -> Container {
        if head.count >= 12, fourCC(head, 0) == "RIFF", fourCC(head, 8) == "AVI " { return .avi }
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return .matroska }
        if isTransportStream(head) { return .transportStream }
        if head.count >= 8, ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot"].contains(fourCC(head, 4)) { return .mp4 }
        if let code = startCode(head) { return code == 0xBA ? .programStream : .elementaryStream }
        return .other
    }

    /// `read(file:)` of a descriptor the caller keeps open.
    public static func read(fd: Int32) -> [Clock] {
        let file = FileDescriptor(taking: fd)
        let clocks = read(file: file)
        _ = file.take()  // the caller's descriptor: not closed here
        return clocks
    }

    // ── MP4 / QuickTime ──────────────────────────────────────────────────────────────────────────────────────────

    /// Each trak's tkhd track_ID, mdhd timescale and (video) smallest stts delta.
    static func mp4(movie: ArraySlice<UInt8>) -> [Clock] {
        var clocks: [Clock] = []
        var reader = BoxReader(bytes: movie)
        while let box = reader.next() {
            guard box.type == "trak", let clock = mp4Track(box.body) else { continue }
            clocks.append(clock)
        }
        return clocks
    }

    private static func mp4Track(_ trak: ArraySlice<UInt8>) -> Clock? {
        var id: UInt32?, timescale: UInt32?, isVideo = false, minDelta: Int64?, offset: Int64 = 0
        var reader = BoxReader(bytes: trak)
        while let box = reader.next() {
            if box.type == "tkhd" { id = ContainerIndex.fieldAfterTimes(box.body) }
            if box.type == "edts" { offset = editOffset(box.body) }
            guard box.type == "mdia" else { continue }
            var mdia = BoxReader(bytes: box.body)
            while let m = mdia.next() {
                switch m.type {
                case "mdhd": timescale = ContainerIndex.fieldAfterTimes(m.body)
                case "hdlr": isVideo = m.body.count >= 12 && fourCC(m.body, 8) == "vide"
                case "minf": minDelta = smallestDelta(minf: m.body)
                default: break
                }
            }
        }
        guard let id, let timescale else { return nil }
        guard let grid = TimeGrid(timescale: Int64(timescale), offset: offset) ?? TimeGrid(timescale: Int64(timescale)) else {
            return nil
        }
        return Clock(id: id, kind: isVideo ? .video : .other, grid: grid, minFrameDuration: isVideo ? minDelta : nil)
    }

    /// edts/elst: the media time qtdemux starts the track's timeline at — one edit at rate 1 (ffmpeg's for B-frames:
    /// the composition delay); 0 for anything else.
    private static func editOffset(_ edts: ArraySlice<UInt8>) -> Int64 {
        var reader = BoxReader(bytes: edts)
        while let box = reader.next() {
            guard box.type == "elst", let edits = ContainerIndex.editList(box.body) else { continue }
            guard edits.count == 1, let edit = edits.first, edit.mediaTime >= 0, edit.rate == 0x0001_0000 else { return 0 }
            return edit.mediaTime
        }
        return 0
    }

    /// minf/stbl/stts: the smallest non-zero sample delta.
    private static func smallestDelta(minf: ArraySlice<UInt8>) -> Int64? {
        var reader = BoxReader(bytes: minf)
        while let box = reader.next() {
            guard box.type == "stbl" else { continue }
            var stbl = BoxReader(bytes: box.body)
            while let table = stbl.next() {
                guard table.type == "stts" else { continue }
                guard let entries = ContainerIndex.entries(table.body, width: 8) else { return nil }
                return entries.map { Int64(be32(table.body, $0 + 4)) }.filter { $0 > 0 }.min()
            }
        }
        return nil
    }

    // ── Matroska / WebM ──────────────────────────────────────────────────────────────────────────────────────────

    /// Segment/Info/TimestampScale (ns per tick; 1,000,000 when Info does not say), found among the Segment's
    /// elements before the first Cluster, in the first `headBytes` of the file.
    static func matroska(_ head: [UInt8]) -> [Clock] {
        var at = 0
        guard let header = ebmlElement(head, at), header.id == 0x1A45DFA3, let headerEnd = header.end else { return [] }
        at = headerEnd
        guard let segment = ebmlElement(head, at), segment.id == 0x18538067 else { return [] }
        at = segment.body
        while let element = ebmlElement(head, at), element.id != 0x1F43B675 {  // up to the first Cluster
            guard let end = element.end else { return [] }
            if element.id == 0x1549A966 {  // Info
                var scale: UInt64 = 1_000_000
                var inner = element.body
                while inner < end, let child = ebmlElement(head, inner), let childEnd = child.end, childEnd <= end {
                    if child.id == 0x2AD7B1 {
                        guard let value = ebmlUnsigned(head, child.body, childEnd), value > 0 else { return [] }
                        scale = value
                    }
                    inner = childEnd
                }
                guard scale <= UInt64(Int64.max) else { return [] }
                return [Clock(id: nil, kind: .any, grid: TimeGrid.orNanoseconds(timescale: 1_000_000_000, tick: Int64(scale)))]
            }
            at = end
        }
        return []
    }

    /// The element at `at`: its id (with the length marker, as the spec writes ids), where its body starts and
    /// where it ends (nil: unknown size, or beyond the bytes read).
    static func ebmlElement(_ b: [UInt8], _ at: Int) -> (id: UInt32, body: Int, end: Int?)? {
        guard let header = ebmlHeader(b, at) else { return nil }
        guard let size = header.size, size <= UInt64(b.count - header.body) else { return (header.id, header.body, nil) }
        return (header.id, header.body, header.body + Int(size))
    }

    /// The element header at `at`: its id, where its body starts and its size (nil: unknown, all ones).
    static func ebmlHeader(_ b: [UInt8], _ at: Int) -> (id: UInt32, body: Int, size: UInt64?)? {
        guard at < b.count, b[at] != 0 else { return nil }
        let idLength = b[at].leadingZeroBitCount + 1
        guard idLength <= 4, at + idLength < b.count else { return nil }
        let id = b[at..<at + idLength].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let sizeAt = at + idLength
        guard b[sizeAt] != 0 else { return nil }
        let sizeLength = b[sizeAt].leadingZeroBitCount + 1
        guard sizeAt + sizeLength <= b.count else { return nil }
        var size = UInt64(b[sizeAt] & (0xFF >> sizeLength))
        var allOnes = size == UInt64(0xFF >> sizeLength)
        for byte in b[sizeAt + 1..<sizeAt + sizeLength] {
            size = size << 8 | UInt64(byte)
            allOnes = allOnes && byte == 0xFF
        }
        return (id, sizeAt + sizeLength, allOnes ? nil : size)
    }

    /// A big-endian unsigned integer element body of 1–8 bytes.
    static func ebmlUnsigned(_ b: [UInt8], _ from: Int, _ to: Int) -> UInt64? {
        guard to > from, to - from <= 8 else { return nil }
        return b[from..<to].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    // ── AVI ──────────────────────────────────────────────────────────────────────────────────────────────────────

    /// hdrl's strl lists in order: each video stream's strh scale and rate.
    static func avi(_ head: [UInt8]) -> [Clock] {
        guard let hdrl = riffChunks(head, from: 12, to: head.count).first(where: { $0.list == "hdrl" }) else { return [] }
        var clocks: [Clock] = []
        var videos = 0
        for strl in riffChunks(head, from: hdrl.body, to: hdrl.end) where strl.list == "strl" {
            guard let strh = riffChunks(head, from: strl.body, to: strl.end).first(where: { $0.id == "strh" }),
                  strh.end - strh.body >= 28 else { continue }
            guard fourCC(head, strh.body) == "vids" else { continue }
            defer { videos += 1 }
            let scale = Int64(le32(head, strh.body + 20)), rate = Int64(le32(head, strh.body + 24))
            guard let grid = TimeGrid(timescale: rate, tick: scale) else { continue }
            clocks.append(Clock(id: nil, kind: .video, ordinal: videos, grid: grid, minFrameDuration: grid.tick))
        }
        return clocks
    }

    /// The chunks between `from` and `to`: id, LIST type (for LIST/RIFF chunks), body start (after a LIST's type) and
    /// end (clamped to `to`; chunks are padded to even sizes).
    static func riffChunks(_ b: [UInt8], from: Int, to: Int) -> [(id: String, list: String?, body: Int, end: Int)] {
        var chunks: [(id: String, list: String?, body: Int, end: Int)] = []
        var at = from
        while at + 8 <= to {
            let id = fourCC(b, at), size = Int(le32(b, at + 4))
            let end = min(to, at + 8 + size)
            if id == "LIST" || id == "RIFF" {
                guard at + 12 <= end else { break }
                chunks.append((id, fourCC(b, at + 8), at + 12, end))
            } else {
                chunks.append((id, nil, at + 8, end))
            }
            at = at + 8 + size + (size & 1)
        }
        return chunks
    }

    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * $1) }
    }

    // ── MPEG-PS, elementary streams ──────────────────────────────────────────────────────────────────────────────

    /// The start code the bytes open with (00 00 01 xx, or 00 00 00 01 xx as Annex B writes its first NAL unit):
    /// xx, the stream id (0xBA: an MPEG-PS pack header; an H.264/HEVC NAL header byte or an MPEG video start code
    /// otherwise); nil when they open with anything else.
    static func startCode(_ b: [UInt8]) -> UInt8? {
        if b.count >= 5, b[0] == 0, b[1] == 0, b[2] == 0, b[3] == 1 { return b[4] }
        if b.count >= 4, b[0] == 0, b[1] == 0, b[2] == 1 { return b[3] }
        return nil
    }

    // ── MPEG-TS ──────────────────────────────────────────────────────────────────────────────────────────────────

    /// 188-byte packets (or 192 with a timecode prefix) starting with the sync byte 0x47, five in a row.
    static func isTransportStream(_ b: [UInt8]) -> Bool {
        for (offset, packet) in [(0, 188), (4, 192)] where b.count >= offset + 5 * packet {
            if (0..<5).allSatisfy({ b[offset + $0 * packet] == 0x47 }) { return true }
        }
        return false
    }
}
