#if canImport(Glibc)
import Glibc
#endif

/// A video track's frame index read from an MP4/QuickTime file's sample tables (moov/trak/mdia/minf/stbl: stts,
/// ctts, stss; edts/elst), so ReadFrames need not demux the whole file first — a parse-only pass reads every byte
/// of the track (an hour of 1080p is gigabytes); the tables are a few megabytes at the front or the end.
///
/// The times must be exactly the ones GStreamer's qtdemux 1.22 gives the decoded samples (stream time, ns): a
/// sample's PTS is ⌊(dts + ctts) × 10⁹ / timescale⌋ − ⌊mediaTime × 10⁹ / timescale⌋ for an edit list of one edit
/// starting at `mediaTime` (none: 0), its duration ⌊(dts + delta) × 10⁹ / timescale⌋ − ⌊dts × 10⁹ / timescale⌋
/// (qtdemux's QTSTREAMTIME_TO_GSTTIME and QTSAMPLE_DUR_DTS). Anything this reader does not reproduce exactly —
/// fragmented files, several edits or an empty edit, an edit that ends before the samples, negative composition
/// offsets, a rate other than 1 — returns nil, and the index is built by the parse-only pass, as before. Tests
/// compare both ways on every kind of file the test suite makes.
enum ContainerIndex {
    /// The largest moov read into memory; a larger one is left to the parse-only pass.
    static let maxMovieBytes = 64 << 20
    /// qtdemux 1.22 refuses a track whose sample index would pass 50 MiB (QTDEMUX_MAX_SAMPLE_INDEX_SIZE, about two
    /// million samples: 18 hours at 30 fps); more is not a file this reader indexes either (nor lets allocate).
    static let maxSamples = 2_000_000

    /// The frames of `trackID` (the tkhd track_ID, which is trackd's track id for MP4/MOV), or nil.
    static func mp4(fd: Int32, trackID: UInt32) -> [FrameIndex.Frame]? {
        guard let moov = readMovie(fd) else { return nil }
        var reader = BoxReader(bytes: moov)
        var movieTimescale: UInt64?
        var tracks: [ArraySlice<UInt8>] = []
        while let box = reader.next() {
            switch box.type {
            case "mvhd": movieTimescale = Self.fieldAfterTimes(box.body).map(UInt64.init)
            case "mvex": return nil  // fragmented: the samples are in moof boxes
            case "trak": tracks.append(box.body)
            default: break
            }
        }
        guard let movieTimescale, movieTimescale > 0, reader.isValid else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        for trak in tracks {
            guard let track = Track(trak), track.id == trackID else { continue }
            // A file cut short (a recorder that stopped) lists samples it does not have; qtdemux stops at the end.
            guard let end = track.dataEnd(), end <= UInt64(st.st_size) else { return nil }
            return track.frames(movieTimescale: movieTimescale)
        }
        return nil
    }

    /// The moov box's body: top-level boxes are walked with pread (ftyp, mdat … are skipped, not read).
    private static func readMovie(_ fd: Int32) -> ArraySlice<UInt8>? {
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { return nil }
        let fileSize = UInt64(st.st_size)
        var offset: UInt64 = 0
        var first = true
        while offset + 8 <= fileSize {
            guard let header = pread(fd, at: offset, count: 16), header.count >= 8 else { return nil }
            var size = UInt64(be32(header, 0))
            let type = fourCC(header, 4)
            var headerSize: UInt64 = 8
            if size == 1 {
                guard header.count >= 16 else { return nil }
                size = be64(header, 8)
                headerSize = 16
            } else if size == 0 {
                size = fileSize - offset
            }
            guard size >= headerSize, size <= fileSize - offset else { return nil }
            // Only a file that starts like one qtdemux reads (its typefinder's first boxes).
            if first && !["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid"].contains(type) { return nil }
            first = false
            if type == "moov" {
                let bodySize = size - headerSize
                guard bodySize <= UInt64(maxMovieBytes), let body = pread(fd, at: offset + headerSize, count: Int(bodySize)),
                      body.count == Int(bodySize) else { return nil }
                return body[...]
            }
            offset += size
        }
        return nil
    }

    private static func pread(_ fd: Int32, at offset: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0, offset <= UInt64(Int64.max) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            done += n
        }
        return done == count ? bytes : Array(bytes.prefix(done))
    }

    /// mvhd's and mdhd's timescale, tkhd's track_ID: the u32 after a full box's version, flags and its creation and
    /// modification times (32-bit in version 0, 64-bit in version 1).
    static func fieldAfterTimes(_ body: ArraySlice<UInt8>) -> UInt32? {
        guard let version = body.first else { return nil }
        let at = version == 1 ? 20 : 12
        return body.count >= at + 4 ? be32(body, at) : nil
    }

    /// One trak's tables.
    private struct Track {
        var id: UInt32 = 0
        var timescale: UInt64 = 0
        var isVideo = false
        var edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)]?
        var deltas: [(count: UInt32, delta: UInt32)] = []       // stts
        var offsets: [(count: UInt32, offset: Int64)]?          // ctts
        var syncs: [UInt32]?                                    // stss (1-based), nil: every sample is sync
        var sampleCount: UInt32?                                // stsz
        var sampleSize: UInt32 = 0                              // stsz: all samples this size, 0: `sizes`
        var sizes: ArraySlice<UInt8> = []                       // stsz entries (u32 each)
        var chunkRuns: [(firstChunk: UInt32, samples: UInt32)] = []  // stsc
        var chunkOffsets: [UInt64] = []                         // stco / co64

        init?(_ trak: ArraySlice<UInt8>) {
            var reader = BoxReader(bytes: trak)
            var mdia: ArraySlice<UInt8>?
            while let box = reader.next() {
                switch box.type {
                case "tkhd":
                    guard let trackID = ContainerIndex.fieldAfterTimes(box.body) else { return nil }
                    id = trackID
                case "edts":
                    var inner = BoxReader(bytes: box.body)
                    while let elst = inner.next() {
                        if elst.type == "elst" { edits = ContainerIndex.editList(elst.body) }
                    }
                    if edits == nil { return nil }
                case "mdia": mdia = box.body
                default: break
                }
            }
            guard reader.isValid, let mdia, parseMedia(mdia) else { return nil }
        }

        private mutating func parseMedia(_ mdia: ArraySlice<UInt8>) -> Bool {
            var reader = BoxReader(bytes: mdia)
            var stbl: ArraySlice<UInt8>?
            while let box = reader.next() {
                switch box.type {
                case "mdhd":
                    guard let mediaTimescale = ContainerIndex.fieldAfterTimes(box.body) else { return false }
                    timescale = UInt64(mediaTimescale)
                case "hdlr":
                    guard box.body.count >= 12 else { return false }
                    isVideo = ContainerIndex.fourCC(box.body, 8) == "vide"
                case "minf":
                    var inner = BoxReader(bytes: box.body)
                    while let b = inner.next() {
                        if b.type == "stbl" { stbl = b.body }
                    }
                default: break
                }
            }
            guard reader.isValid, let stbl else { return false }
            var tables = BoxReader(bytes: stbl)
            while let box = tables.next() {
                let b = box.body
                switch box.type {
                case "stts":
                    guard let entries = ContainerIndex.entries(b, width: 8) else { return false }
                    deltas = entries.map { (ContainerIndex.be32(b, $0), ContainerIndex.be32(b, $0 + 4)) }
                case "ctts":
                    guard let version = b.first, let entries = ContainerIndex.entries(b, width: 8) else { return false }
                    offsets = entries.map { at in
                        let raw = ContainerIndex.be32(b, at + 4)
                        return (ContainerIndex.be32(b, at), version == 1 ? Int64(Int32(bitPattern: raw)) : Int64(raw))
                    }
                case "stss":
                    guard let entries = ContainerIndex.entries(b, width: 4) else { return false }
                    syncs = entries.map { ContainerIndex.be32(b, $0) }
                case "stsz":
                    guard b.count >= 12 else { return false }
                    sampleSize = ContainerIndex.be32(b, 4)
                    sampleCount = ContainerIndex.be32(b, 8)
                    if sampleSize == 0 {
                        let n = Int(sampleCount!)
                        guard n <= (b.count - 12) / 4 else { return false }
                        sizes = b.dropFirst(12).prefix(4 * n)
                    }
                case "stsc":
                    guard let entries = ContainerIndex.entries(b, width: 12) else { return false }
                    chunkRuns = entries.map { (ContainerIndex.be32(b, $0), ContainerIndex.be32(b, $0 + 4)) }
                case "stco":
                    guard let entries = ContainerIndex.entries(b, width: 4) else { return false }
                    chunkOffsets = entries.map { UInt64(ContainerIndex.be32(b, $0)) }
                case "co64":
                    guard let entries = ContainerIndex.entries(b, width: 8) else { return false }
                    chunkOffsets = entries.map { ContainerIndex.be64(b, $0) }
                default: break
                }
            }
            return tables.isValid
        }

        /// Where the track's last byte of sample data ends in the file (stsc, stsz, stco/co64), or nil when the
        /// tables do not account for every sample.
        func dataEnd() -> UInt64? {
            guard let sampleCount, sampleCount <= ContainerIndex.maxSamples, !chunkRuns.isEmpty, !chunkOffsets.isEmpty,
                  chunkRuns[0].firstChunk == 1 else { return nil }
            var end: UInt64 = 0
            var sample = 0
            for (i, run) in chunkRuns.enumerated() {
                let last = i + 1 < chunkRuns.count ? Int(chunkRuns[i + 1].firstChunk) - 1 : chunkOffsets.count
                guard run.firstChunk >= 1, last >= Int(run.firstChunk) - 1, last <= chunkOffsets.count else { return nil }
                for chunk in Int(run.firstChunk)...max(Int(run.firstChunk), last) where chunk <= last {
                    var bytes: UInt64 = 0
                    for _ in 0..<run.samples {
                        guard sample < Int(sampleCount) else { break }
                        bytes += UInt64(sampleSize != 0 ? sampleSize
                                        : ContainerIndex.be32(sizes, 4 * sample))
                        sample += 1
                    }
                    let (chunkEnd, overflow) = chunkOffsets[chunk - 1].addingReportingOverflow(bytes)
                    guard !overflow else { return nil }
                    end = max(end, chunkEnd)
                }
            }
            return sample == Int(sampleCount) ? end : nil
        }

        /// The frames in presentation order, or nil when the tables are not what this reader reproduces exactly.
        func frames(movieTimescale: UInt64) -> [FrameIndex.Frame]? {
            guard isVideo, timescale > 0, let sampleCount, sampleCount > 0, Int(sampleCount) <= ContainerIndex.maxSamples
            else { return nil }
            let count = Int(sampleCount)
            var mediaTime: Int64 = 0
            var editEnd: UInt64?  // movie timescale
            if let edits {
                guard edits.count == 1, let edit = edits.first, edit.mediaTime >= 0, edit.rate == 0x0001_0000 else { return nil }
                mediaTime = edit.mediaTime
                editEnd = edit.duration > 0 ? edit.duration : nil
            }
            // stts and ctts must cover exactly the samples; ctts offsets must not be negative.
            guard deltas.reduce(0, { $0 + Int($1.count) }) == count else { return nil }
            if let offsets {
                guard offsets.reduce(0, { $0 + Int($1.count) }) == count, offsets.allSatisfy({ $0.offset >= 0 }) else { return nil }
            }
            let timescale = timescale
            let ns: (Int64) -> Int64 = { ContainerIndex.scale(UInt64($0), timescale) }
            var dts: UInt64 = 0
            var stored: [(pts: Int64, duration: Int64, sync: Bool)] = []
            stored.reserveCapacity(count)
            var syncSet: Set<UInt32>? = syncs.map(Set.init)
            if let s = syncSet, s.isEmpty { syncSet = nil }  // an empty stss: treated as absent, as qtdemux does
            var offsetRun = 0, offsetLeft = offsets?.first.map { Int($0.count) } ?? 0
            let shift = ns(mediaTime)
            guard shift < Int64.max / 2 else { return nil }
            var sample = 0
            for run in deltas {
                for _ in 0..<run.count {
                    var composition: Int64 = 0
                    if let offsets {
                        while offsetLeft == 0 {
                            offsetRun += 1
                            guard offsetRun < offsets.count else { return nil }
                            offsetLeft = Int(offsets[offsetRun].count)
                        }
                        composition = offsets[offsetRun].offset
                        offsetLeft -= 1
                    }
                    let (pts, overflow) = dts.addingReportingOverflow(UInt64(composition))
                    guard !overflow, pts <= UInt64(Int64.max) / 1_000_000_000 else { return nil }
                    let start = ns(Int64(pts)) - shift
                    let end = ns(Int64(dts) + Int64(run.delta)), begin = ns(Int64(dts))
                    guard end < Int64.max / 2 else { return nil }
                    let duration = end - begin
                    stored.append((start, duration, syncSet?.contains(UInt32(sample + 1)) ?? true))
                    dts += UInt64(run.delta)
                    sample += 1
                }
            }
            // qtdemux plays only the edit: samples that start at or after its end never come out.
            if let editEnd {
                let end = ContainerIndex.scale(editEnd, movieTimescale)
                guard stored.allSatisfy({ $0.pts < end }) else { return nil }
            }
            guard stored.allSatisfy({ $0.pts >= 0 }) else { return nil }  // before the edit: qtdemux clips them
            let order = stored.indices.sorted { (stored[$0].pts, $0) < (stored[$1].pts, $1) }
            return order.map { FrameIndex.Frame(presentationTime: stored[$0].pts, duration: stored[$0].duration,
                                                 isSync: stored[$0].sync, decodePosition: $0) }
        }
    }

    /// ⌊value × 10⁹ / timescale⌋ without overflow (gst_util_uint64_scale rounds down the same way); Int64.max when
    /// the result does not fit (such a time fails the checks that follow).
    static func scale(_ value: UInt64, _ timescale: UInt64) -> Int64 {
        let (high, low) = value.multipliedFullWidth(by: 1_000_000_000)
        guard timescale > 0, high < timescale else { return .max }
        let (quotient, _) = timescale.dividingFullWidth((high, low))
        return Int64(clamping: quotient)
    }

    /// elst entries (segment duration in the movie timescale, media time in the track's, rate 16.16), or nil.
    static func editList(_ b: ArraySlice<UInt8>) -> [(duration: UInt64, mediaTime: Int64, rate: UInt32)]? {
        guard let version = b.first else { return nil }
        let width = version == 1 ? 20 : 12
        guard let entries = entries(b, width: width) else { return nil }
        return entries.map { at in
            if version == 1 {
                return (be64(b, at), Int64(bitPattern: be64(b, at + 8)), be32(b, at + 16))
            }
            return (UInt64(be32(b, at)), Int64(Int32(bitPattern: be32(b, at + 4))), be32(b, at + 8))
        }
    }

    /// A full box's table: offsets (from the body's start) of its `entry_count` entries of `width` bytes, or nil
    /// when they do not fit in the box.
    static func entries(_ b: ArraySlice<UInt8>, width: Int) -> [Int]? {
        guard b.count >= 8 else { return nil }
        let count = Int(be32(b, 4))
        guard count <= (b.count - 8) / width else { return nil }
        return (0..<count).map { 8 + $0 * width }
    }

    static func be32(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt32 {
        let i = b.index(b.startIndex, offsetBy: at)
        return b[i..<b.index(i, offsetBy: 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func be64(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt64 {
        UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4))
    }

    static func fourCC(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> String {
        let i = b.index(b.startIndex, offsetBy: at)
        return String(decoding: b[i..<b.index(i, offsetBy: 4)], as: UTF8.self)
    }
}

/// The boxes of one level: 32- and 64-bit sizes; `isValid` turns false, and iteration stops, at a box that does
/// not fit in its parent.
struct BoxReader {
    let bytes: ArraySlice<UInt8>
    private var at: Int
    private(set) var isValid = true

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        at = bytes.startIndex
    }

    mutating func next() -> (type: String, body: ArraySlice<UInt8>)? {
        guard isValid, bytes.endIndex - at >= 8 else { return nil }
        var size = Int(ContainerIndex.be32(bytes[at...], 0))
        let type = ContainerIndex.fourCC(bytes[at...], 4)
        var header = 8
        if size == 1 {
            guard bytes.endIndex - at >= 16 else { isValid = false; return nil }
            let large = ContainerIndex.be64(bytes[at...], 8)
            guard large <= UInt64(Int.max) else { isValid = false; return nil }
            size = Int(large)
            header = 16
        } else if size == 0 {
            size = bytes.endIndex - at
        }
        guard size >= header, size <= bytes.endIndex - at else { isValid = false; return nil }
        let body = bytes[(at + header)..<(at + size)]
        at += size
        return (type, body)
    }
}
