import SystemCalls

/// A video track's frame index read from an MP4/QuickTime file's sample tables (moov/trak/mdia/minf/stbl: stts,
/// ctts, stss; edts/elst), so ReadFrames need not demux the whole file first — a parse-only pass reads every byte
/// of the track (an hour of 1080p is gigabytes); the tables are a few megabytes at the front or the end.
///
/// The times must be exactly the ones GStreamer's qtdemux 1.22 gives the decoded samples (stream time, ns): a
/// sample's PTS is ⌊(dts + ctts) × 10⁹ / timescale⌋ − ⌊mediaTime × 10⁹ / timescale⌋ for an edit list of one edit
/// starting at `mediaTime` (none: 0), its duration ⌊(dts + delta) × 10⁹ / timescale⌋ − ⌊dts × 10⁹ / timescale⌋
/// (qtdemux's QTSTREAMTIME_TO_GSTTIME and QTSAMPLE_DUR_DTS). Anything this reader does not reproduce exactly —
/// fragmented files, several edits or an empty edit, an edit that ends before the samples, negative composition
/// offsets, a rate other than 1 — returns nil, and the index is built by the parse-only pass, as before.
/// GstBridgeTests compare both ways on every kind of file the test suite makes; MediaIndexTests check the tables.
public enum ContainerIndex {
    /// The largest moov read into memory; a larger one is left to the parse-only pass.
    public static let maxMovieBytes = 64 << 20
    /// qtdemux 1.22 refuses a track whose sample index would pass 50 MiB (QTDEMUX_MAX_SAMPLE_INDEX_SIZE, about two
    /// million samples: 18 hours at 30 fps); more is not a file this reader indexes either (nor lets allocate).
    public static let maxSamples = 2_000_000

    /// The frames of `trackID` (the tkhd track_ID, which is trackd's track id for MP4/MOV) in `file` (read with
    /// pread), or nil.
    public static func mp4(file: borrowing FileDescriptor, trackID: UInt32) -> [FrameIndex.Frame]? {
        guard let fileSize = try? file.regularFileSize(), fileSize > 0 else { return nil }
        guard let moov = readMovie(file, fileSize: fileSize) else { return nil }
        return frames(movie: moov, fileSize: fileSize, trackID: trackID)
    }

    /// `mp4(file:trackID:)` of a descriptor the caller keeps open.
    public static func mp4(fd: Int32, trackID: UInt32) -> [FrameIndex.Frame]? {
        let file = FileDescriptor(taking: fd)
        let frames = mp4(file: file, trackID: trackID)
        _ = file.take()  // the caller's descriptor: not closed here
        return frames
    }

    /// The frames of `trackID` from a moov box's body, in a file of `fileSize` bytes (a track whose samples would
    /// lie beyond it is refused), or nil.
    public static func frames(movie moov: ArraySlice<UInt8>, fileSize: UInt64, trackID: UInt32) -> [FrameIndex.Frame]? {
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
        for trak in tracks {
            guard let track = SampleTable(trak), track.id == trackID else { continue }
            // A file cut short (a recorder that stopped) lists samples it does not have; qtdemux stops at the end.
            guard let end = track.dataEnd(), end <= fileSize else { return nil }
            return track.frames(movieTimescale: movieTimescale)
        }
        return nil
    }

    /// The moov box's body: top-level boxes are walked with pread (ftyp, mdat … are skipped, not read).
    static func readMovie(_ fd: borrowing FileDescriptor, fileSize: UInt64) -> ArraySlice<UInt8>? {
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

    private static func pread(_ fd: borrowing FileDescriptor, at offset: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0, offset <= UInt64(Int64.max) else { return nil }
        return try? [UInt8](preading: fd, count: count, at: Int(offset))
    }

    /// mvhd's and mdhd's timescale, tkhd's track_ID: the u32 after a full box's version, flags and its creation and
    /// modification times (32-bit in version 0, 64-bit in version 1).
    static func fieldAfterTimes(_ body: ArraySlice<UInt8>) -> UInt32? {
        guard let version = body.first else { return nil }
        let at = version == 1 ? 20 : 12
        return body.count >= at + 4 ? be32(body, at) : nil
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
}
