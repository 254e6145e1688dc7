import SystemCalls

/// Matroska/WebM `TrackEntry/CodecDelay` (0x56AA): the nanoseconds of a track's decoded output that come before its
/// timeline (Opus: the encoder's pre-skip, 312 frames at 48 kHz = 6,500,000 ns from libopus). matroskademux takes it
/// off every block's time (and clips it from the first block), ffmpeg's demuxer takes it off rounded to the
/// segment's ticks (`av_rescale_q`, half away from zero): a block at 21 ms is 14.5 ms in GStreamer, 14 ms in
/// ffprobe. Read from the TrackEntries of the Segment's Tracks before the first Cluster, in the file's first
/// `TrackTimescale.headBytes`.
public enum MatroskaCodecDelay {
    /// The largest codec delay taken from a file: a real one is a few milliseconds (Opus pre-skip: at most 65535
    /// frames at 48 kHz, 1.37 s); a larger value is the file's word only and is treated as absent.
    public static let maxNanoseconds: Int64 = 2_000_000_000

    /// TrackNumber → CodecDelay (ns, 1 … maxNanoseconds) of every TrackEntry in `head` (the file's first bytes) that
    /// states one.
    public static func delays(_ head: [UInt8]) -> [UInt32: Int64] {
        var delays: [UInt32: Int64] = [:]
        for (id, start, end) in ContainerMetadata.matroskaSegment(head).children where id == 0x1654AE6B {  // Tracks
            for (entryID, entryStart, entryEnd) in ContainerMetadata.ebmlChildren(head, start, end) where entryID == 0xAE {
                let fields = ContainerMetadata.ebmlChildren(head, entryStart, entryEnd)
                guard let number = fields.first(where: { $0.0 == 0xD7 }),
                      let track = TrackTimescale.ebmlUnsigned(head, number.1, number.2), track > 0, track <= UInt32.max,
                      let field = fields.first(where: { $0.0 == 0x56AA }),
                      let delay = TrackTimescale.ebmlUnsigned(head, field.1, field.2),
                      delay > 0, delay <= UInt64(maxNanoseconds) else { continue }
                delays[UInt32(track)] = Int64(delay)
            }
        }
        return delays
    }

    /// The CodecDelay (ns) of track `trackNumber` of the Matroska file `fd` (read with pread; the caller keeps it
    /// open), or nil.
    public static func delay(fd: Int32, trackNumber: UInt32) -> Int64? {
        let file = FileDescriptor(taking: fd)
        var head: [UInt8] = []
        if let size = try? file.regularFileSize(), size > 12 {
            head = (try? [UInt8](preading: file, count: Int(min(size, UInt64(TrackTimescale.headBytes))), at: 0)) ?? []
        }
        _ = file.take()  // the caller's descriptor: not closed here
        return delays(head)[trackNumber]
    }

    /// ffmpeg's PTS, in ticks of `tick` ns, of a block at `block` ns (its own time) when the track's CodecDelay is
    /// `delay` ns: the block's time in ticks less the delay in whole ticks, each rounded half away from zero.
    public static func ffmpegTicks(block: Int64, delay: Int64, tick: Int64) -> Int64 {
        guard tick > 0, block >= 0, delay >= 0 else { return 0 }
        func ticks(_ ns: Int64) -> Int64 {
            let (q, r) = ns.quotientAndRemainder(dividingBy: tick)
            return q + (r >= tick - r ? 1 : 0)
        }
        return ticks(block) - ticks(delay)
    }
}
