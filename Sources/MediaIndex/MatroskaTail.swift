import SystemCalls

/// A Matroska track's blocks stored at or after the Segment's Duration, in its last Cluster: GStreamer's webmmux
/// ends Opus with a block stored at the Duration itself (a 3 s file: Duration 3.000 s, last block 3.000 s — its
/// frames start the 6.5 ms CodecDelay earlier), which matroskademux 1.22 never pushes after a seek (its stop is the
/// Duration at most, and a block stored at or after the stop ends the stream).
public enum MatroskaTail {
    /// One unlaced block: its stored time (ns; the CodecDelay not subtracted), BlockDuration and DiscardPadding
    /// (ns; nil and 0 when absent), and where its frame's bytes are in the file.
    public struct Block: Sendable, Equatable {
        public var time: Int64
        public var duration: Int64?
        public var discardPadding: Int64
        public var offset: Int
        public var size: Int

        /// The DiscardPadding in frames at `rate`, rounded to the nearest as ffmpeg's demuxer converts it
        /// (av_rescale_q), of at most maxPadding.
        public func paddingFrames(rate: Int) -> Int64 {
            var bounded = self
            bounded.discardPadding = min(discardPadding, MatroskaTail.maxPadding)
            return Int64(clamping: bounded.discardPaddingSamples(rate: Int64(rate)))
        }

        /// The DiscardPadding in samples of `rate` Hz (> 0), rounded half up as GStreamer's
        /// gst_util_uint64_scale_round: the end of the audio clipping meta the block goes with. A file's padding
        /// may be up to Int64.max ns, which times a rate does not fit in 64 bits: the product is taken full width.
        public func discardPaddingSamples(rate: Int64) -> UInt64 {
            guard rate > 0 else { return 0 }
            let (high, low) = UInt64(discardPadding).multipliedFullWidth(by: UInt64(rate))
            let (sum, carry) = low.addingReportingOverflow(500_000_000)
            // The quotient fits in 64 bits when the high word is below the divisor: a rate below 2 × 10⁹ keeps it.
            guard high + (carry ? 1 : 0) < 1_000_000_000 else { return .max }
            return UInt64(1_000_000_000).dividingFullWidth((high + (carry ? 1 : 0), sum)).quotient
        }
    }

    /// The largest DiscardPadding taken from a file (ns): a real one is less than a packet (120 ms for Opus); more is
    /// the file's word only, bounded as a CodecDelay is.
    public static let maxPadding = MatroskaCodecDelay.maxNanoseconds

    /// The last Cluster read whole at most (a few seconds of audio are far less).
    static let maxClusterBytes = 16 << 20

    /// The most top-level elements of a Segment walked to find its last Cluster; a file with more gets no tail
    /// blocks. Real files have one per Cluster and a handful more (SeekHead, Info, Tracks, Cues, Tags …). GStreamer's
    /// matroskamux and webmmux start a Cluster every 0.5 s at most (min-cluster-duration, bar forced key units),
    /// mkvmerge every 5 s (or 65 535 blocks); ffmpeg every 5 s or 5 MiB, and at a video key frame more than 4 KiB
    /// into one — every frame of all-intra video, where 2²² Clusters last 38 hours at 30 fps. A crafted file of
    /// 2-byte elements costs 8 MiB of reads, windowBytes each, and 2²² header reads in memory, not a system call each.
    public static let maxElements = 1 << 22

    /// Element headers are read in windows of this many bytes: one pread for every element of a file of tiny ones
    /// would cost a system call per 2 bytes; a Cluster's header costs one read, as a page of the file.
    static let windowBytes = 4096

    /// What a walk of the top-level elements cost: elements seen, preads of element headers and their bytes.
    public struct Work: Sendable, Equatable {
        public var elements = 0
        public var reads = 0
        public var bytesRead = 0
        public init() {}
    }

    /// The blocks of track `trackNumber` of the Matroska file `fd` (read with pread; the caller keeps it open) stored
    /// at or after its Duration, in stored order; none without a Duration, with a Cluster of unknown size, laced, or
    /// past `maxElements` top-level elements.
    public static func blocks(fd: Int32, trackNumber: UInt32) -> [Block] {
        var work = Work()
        return blocks(fd: fd, trackNumber: trackNumber, work: &work)
    }

    /// `blocks(fd:trackNumber:)`, counting the walk's work in `work`.
    public static func blocks(fd: Int32, trackNumber: UInt32, work: inout Work, maxElements: Int = maxElements) -> [Block] {
        guard let last = lastCluster(fd: fd, work: &work, maxElements: maxElements), let durationNs = last.durationNs else { return [] }
        return blocks(last, trackNumber: trackNumber).filter { $0.time >= durationNs }
    }

    /// The unlaced blocks of track `trackNumber` in the last Cluster of `fd` that have a DiscardPadding, in stored
    /// order (an encoder's end padding is on the stream's last block: libmp3lame's, libvorbis's in an Ogg remux).
    public static func paddedBlocks(fd: Int32, trackNumber: UInt32) -> [Block] {
        var work = Work()
        guard let last = lastCluster(fd: fd, work: &work, maxElements: maxElements) else { return [] }
        return blocks(last, trackNumber: trackNumber).filter { $0.discardPadding > 0 }
    }

    /// The blocks of track `trackNumber` in `last`, their offsets in the file.
    private static func blocks(_ last: LastCluster, trackNumber: UInt32) -> [Block] {
        blocks(cluster: last.bytes, trackNumber: trackNumber, scale: last.scale).map {
            var block = $0
            block.offset += last.body
            return block
        }
    }

    /// The last Cluster's body (and where it is in the file), the TimestampScale and the Duration (ns).
    private struct LastCluster {
        var bytes: [UInt8]
        var body: Int
        var scale: Int64
        var durationNs: Int64?
    }

    /// The Segment's last Cluster, read whole; nil with a top-level element of unknown size, one over
    /// maxClusterBytes, or past `maxElements` of them.
    private static func lastCluster(fd: Int32, work: inout Work, maxElements: Int) -> LastCluster? {
        let file = FileDescriptor(taking: fd)
        let size = try? file.regularFileSize()
        _ = file.take()  // the caller's descriptor: not closed here
        guard let size, size > 12, size <= UInt64(Int.max) else { return nil }
        let reader = Reader(fd: fd, size: Int(size))
        guard let segment = walk(reader, work: &work, maxElements: maxElements), let lastCluster = segment.lastCluster,
              lastCluster.end - lastCluster.body <= maxClusterBytes else { return nil }
        let durationNs = segment.durationTicks.flatMap {
            $0 > 0 && $0 * Double(segment.scale) < 9e18 ? Int64(($0 * Double(segment.scale)).rounded()) : nil
        }
        return LastCluster(bytes: reader.read(lastCluster.end - lastCluster.body, at: lastCluster.body),
                           body: lastCluster.body, scale: segment.scale, durationNs: durationNs)
    }

    /// pread of a file the caller keeps open, `count` bytes at most, fewer at its end.
    struct Reader {
        let fd: Int32, size: Int

        func read(_ count: Int, at offset: Int) -> [UInt8] {
            let file = FileDescriptor(taking: fd)
            let bytes = (try? [UInt8](preading: file, count: min(count, size - offset), at: offset)) ?? []
            _ = file.take()
            return bytes
        }
    }

    /// The Segment's TimestampScale (ns), Duration (ticks) and last Cluster's body, from its top-level elements
    /// walked by their sizes; nil when one has an unknown size or a size past the file, or past `maxElements`.
    static func walk(_ reader: Reader, work: inout Work, maxElements: Int)
        -> (scale: Int64, durationTicks: Double?, lastCluster: (body: Int, end: Int)?)? {
        let head = reader.read(TrackTimescale.headBytes, at: 0)
        guard let header = TrackTimescale.ebmlElement(head, 0), header.id == 0x1A45DFA3, let headerEnd = header.end,
              let segment = TrackTimescale.ebmlElement(head, headerEnd), segment.id == 0x18538067 else { return nil }
        var scale: Int64 = 1_000_000, durationTicks: Double?, lastCluster: (body: Int, end: Int)?
        var window: (at: Int, bytes: [UInt8]) = (0, [])
        var at = segment.body
        while at < reader.size {
            guard work.elements < maxElements else { return nil }
            work.elements += 1
            if at < window.at || (at + 12 > window.at + window.bytes.count && window.at + window.bytes.count < reader.size) {
                window = (at, reader.read(windowBytes, at: at))
                work.reads += 1
                work.bytesRead += window.bytes.count
            }
            guard let (id, bodyAt, bodySize) = TrackTimescale.ebmlHeader(window.bytes, at - window.at) else { break }
            let body = window.at + bodyAt
            guard let bodySize, bodySize <= UInt64(reader.size - body) else { return nil }  // unknown size: not walked
            let length = Int(bodySize)
            if id == 0x1549A966 {  // Info: TimestampScale, Duration (a float of ticks)
                let info = reader.read(min(length, 4096), at: body)
                for (child, start, end) in ContainerMetadata.ebmlChildren(info, 0, info.count) {
                    if child == 0x2AD7B1, let value = TrackTimescale.ebmlUnsigned(info, start, end), value > 0,
                       value <= 1_000_000_000 { scale = Int64(value) }
                    if child == 0x4489 { durationTicks = float(info, start, end) }
                }
            }
            if id == 0x1F43B675 { lastCluster = (body, body + length) }
            at = body + length
        }
        return (scale, durationTicks, lastCluster)
    }

    /// The blocks of track `trackNumber` in a Cluster's body (offsets in `cluster`).
    private static func blocks(cluster: [UInt8], trackNumber: UInt32, scale: Int64) -> [Block] {
        var clusterTicks: Int64 = 0, found: [Block] = []
        for (id, start, end) in ContainerMetadata.ebmlChildren(cluster, 0, cluster.count) {
            var block: Block?
            switch id {
            case 0xE7:  // Timestamp
                guard let value = TrackTimescale.ebmlUnsigned(cluster, start, end),
                      value < UInt64(Int64.max) / UInt64(scale) else { return [] }
                clusterTicks = Int64(value)
            case 0xA3:  // SimpleBlock
                block = Self.block(cluster, start, end, track: trackNumber, clusterTicks: clusterTicks, scale: scale)
            case 0xA0:  // BlockGroup: Block, BlockDuration, DiscardPadding
                let fields = ContainerMetadata.ebmlChildren(cluster, start, end)
                guard let inner = fields.first(where: { $0.0 == 0xA1 }) else { continue }
                block = Self.block(cluster, inner.1, inner.2, track: trackNumber, clusterTicks: clusterTicks, scale: scale)
                if let f = fields.first(where: { $0.0 == 0x9B }), let ticks = TrackTimescale.ebmlUnsigned(cluster, f.1, f.2),
                   ticks < UInt64(Int64.max) / UInt64(scale) { block?.duration = Int64(ticks) * scale }
                if let f = fields.first(where: { $0.0 == 0x75A2 }), let raw = TrackTimescale.ebmlUnsigned(cluster, f.1, f.2) {
                    let bits = (f.2 - f.1) * 8  // a signed integer of 1–8 bytes
                    let value = bits == 64 ? Int64(bitPattern: raw) : Int64(raw) - (raw >> (bits - 1) == 1 ? Int64(1) << bits : 0)
                    block?.discardPadding = max(0, value)
                }
            default: continue
            }
            if let block { found.append(block) }
        }
        return found
    }

    /// An unlaced block of track `track` in `b[from..<to]` (a Block or SimpleBlock body), its offset in `b`.
    private static func block(_ b: [UInt8], _ from: Int, _ to: Int, track: UInt32, clusterTicks: Int64,
                              scale: Int64) -> Block? {
        guard from < to, b[from] != 0 else { return nil }
        let numberLength = b[from].leadingZeroBitCount + 1
        guard numberLength <= 8, from + numberLength + 3 <= to else { return nil }
        let number = b[from + 1..<from + numberLength].reduce(UInt64(b[from] & (0xFF >> numberLength))) { $0 << 8 | UInt64($1) }
        let at = from + numberLength
        let relative = Int64(Int16(bitPattern: UInt16(b[at]) << 8 | UInt16(b[at + 1])))
        // The Cluster's Timestamp is below Int64.max / scale, but the block's 16-bit offset can carry past it — past
        // Int64.max itself at a scale of 1.
        let (ticks, carried) = clusterTicks.addingReportingOverflow(relative)
        guard number == UInt64(track), b[at + 2] & 0x06 == 0, !carried, ticks >= 0 else { return nil }  // unlaced
        let (time, overflow) = ticks.multipliedReportingOverflow(by: scale)
        guard !overflow else { return nil }
        return Block(time: time, duration: nil, discardPadding: 0, offset: at + 3, size: to - at - 3)
    }

    /// A float element body (4 or 8 bytes, big-endian).
    private static func float(_ b: [UInt8], _ from: Int, _ to: Int) -> Double? {
        guard let raw = TrackTimescale.ebmlUnsigned(b, from, to) else { return nil }
        switch to - from {
        case 4: return Double(Float(bitPattern: UInt32(raw)))
        case 8: return Double(bitPattern: raw)
        default: return nil
        }
    }
}
