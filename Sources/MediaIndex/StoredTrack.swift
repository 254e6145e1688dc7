import SystemCalls

/// An MP4/MOV track's stored samples as its sample tables list them — where each one's bytes are, its decode time,
/// duration, composition offset and sync flag — and the one edit that places them on the track's timeline. What
/// GStreamer 1.22's qtdemux leaves out is read from the file with these:
///
/// - the packets outside an audio track's edit: encoders with priming (AAC: 1024 frames by ffmpeg, 2112 by Apple)
///   write an edit that skips the priming and ends inside the last packet, and qtdemux ends a stream when a
///   sample's buffer timestamp (which runs ahead of the timeline by the edit's start) reaches the edit's end, so it
///   never pushes the last packet. A decoder must be given it (with the trims: how much of what it decodes to lies
///   outside the edit), passthrough delivers it.
/// - the samples of a file cut short that the file still holds whole: qtdemux stops reading at the first sample
///   (of any track) that lies beyond the end, which can be several samples of this track early.
public struct StoredTrack: Sendable {
    public struct Sample: Sendable, Equatable {
        public var offset: UInt64
        public var size: Int
        /// Media timescale.
        public var decodeTime: Int64
        public var duration: Int64
        /// ctts: presentation time − decode time (media timescale).
        public var compositionOffset: Int64
        public var isSync: Bool
    }

    /// mdhd's timescale.
    public let timescale: Int64
    public let isVideo: Bool
    /// The edit's first media time (0 without an edit) and the media time it ends at (nil: the end of the media).
    public let editStart: Int64
    public let editEnd: Int64?
    public let samples: [Sample]
    /// The file's size when the tables were read: a sample that does not lie wholly before it is not in the file.
    public let fileSize: UInt64
    /// What one packet decodes to (the most common sample duration: AAC's 1024 frames); a shorter sample (the last,
    /// whose stts duration ffmpeg cuts to the edit) still decodes to that much.
    public let frameDuration: Int64

    /// Sample `i`'s presentation time on the track's timeline (media timescale; negative before the edit).
    public func presentationTime(_ i: Int) -> Int64 { samples[i].decodeTime + samples[i].compositionOffset - editStart }

    /// Whether the file holds all of sample `i`'s bytes.
    public func isWhole(_ i: Int) -> Bool {
        let s = samples[i]
        let (end, overflow) = s.offset.addingReportingOverflow(UInt64(s.size))
        return !overflow && end <= fileSize
    }

    /// Whether the edit (or a first or last sample shorter than the others) trims any audio sample: only then do
    /// samples carry trims.
    public private(set) var trimsAudio = false

    init(timescale: Int64, isVideo: Bool, editStart: Int64, editEnd: Int64?, samples: [Sample], fileSize: UInt64,
         frameDuration: Int64) {
        (self.timescale, self.isVideo, self.editStart, self.editEnd) = (timescale, isVideo, editStart, editEnd)
        (self.samples, self.fileSize, self.frameDuration) = (samples, fileSize, frameDuration)
        trimsAudio = !isVideo && samples.indices.contains { trim($0) != (0, 0) }
    }

    /// How much of what audio sample `i` decodes to lies before the edit's start and after its end or its own
    /// (shortened) duration (media timescale; 0 and 0 inside, and for video); a shortened first sample (no edit)
    /// lacks its start.
    public func trim(_ i: Int) -> (atStart: Int64, atEnd: Int64) {
        guard !isVideo else { return (0, 0) }
        let s = samples[i]
        let decoded = max(s.duration, frameDuration)
        let visibleEnd = min(s.decodeTime + s.duration, editEnd ?? .max)
        // GStreamer's mp4mux, without an edit, writes Opus's first duration as 960 − pre-skip: its start is cut.
        let shortFirst = i == 0 && samples.count > 1 && editStart == 0 ? max(0, decoded - s.duration) : 0
        let atStart = min(decoded, max(shortFirst, editStart - s.decodeTime))
        let atEnd = shortFirst > 0 ? 0 : min(decoded, max(0, s.decodeTime + decoded - visibleEnd))
        return (atStart, atStart >= decoded ? 0 : atEnd)
    }

    /// The sample whose decode time is `decodeTime` (media timescale), or nil.
    public func index(decodeTime: Int64) -> Int? {
        var low = 0, high = samples.count
        while low < high {
            let mid = (low + high) / 2
            if samples[mid].decodeTime < decodeTime { low = mid + 1 } else { high = mid }
        }
        return low < samples.count && samples[low].decodeTime == decodeTime ? low : nil
    }

    /// The sample whose decode time in nanoseconds, as a demuxer stamps it (⌊decodeTime × 10⁹ / timescale⌋), is
    /// `ns`, or nil.
    public func index(decodeNanoseconds ns: Int64) -> Int? {
        guard ns >= 0 else { return nil }
        // The tick whose floor is ns: ⌈ns × timescale / 10⁹⌉ (ticks are more than a nanosecond apart).
        let (q, r) = (Int128(ns) * Int128(timescale)).quotientAndRemainder(dividingBy: 1_000_000_000)
        return index(decodeTime: Int64(clamping: q + (r > 0 ? 1 : 0)))
    }

    /// Sample `k`'s times as a demuxer stamps them (media time, ⌊ticks × 10⁹ / timescale⌋ ns): presentation (nil
    /// when negative), decode and duration.
    public func demuxerTimes(_ k: Int) -> (presentation: Int64?, decode: Int64, duration: Int64) {
        let s = samples[k], scale = UInt64(timescale)
        let decode = ContainerIndex.scale(UInt64(s.decodeTime), scale)
        let end = ContainerIndex.scale(UInt64(s.decodeTime + s.duration), scale)
        let pts = s.decodeTime + s.compositionOffset
        return (pts >= 0 ? ContainerIndex.scale(UInt64(pts), scale) : nil, decode, end - decode)
    }

    /// A time on the track's timeline (media timescale) in ns, rounded down.
    public func timelineNanoseconds(_ ticks: Int64) -> Int64 {
        ticks >= 0 ? ContainerIndex.scale(UInt64(ticks), UInt64(timescale)) : -ContainerIndex.scale(UInt64(-ticks), UInt64(timescale))
    }

    /// What a read to the end still needs after sample `last` (nil: none delivered) when the demuxer has stopped:
    /// the samples after it presented before the edit's end (every one without an end), up to the first the file
    /// does not hold whole; and how many of those the file lacks (`lost`: from that one on).
    public func tail(after last: Int?) -> (restore: Range<Int>, lost: Int) {
        let from = (last ?? -1) + 1
        guard from < samples.count else { return (samples.count..<samples.count, 0) }
        let wanted = (from..<samples.count).filter { i in
            editEnd.map { samples[i].decodeTime + samples[i].compositionOffset < $0 } ?? true
        }
        let whole = wanted.prefix { isWhole($0) }
        let end = whole.last.map { $0 + 1 } ?? from
        return (from..<end, wanted.count - whole.count)
    }

    /// The track `trackID` of the MP4/MOV file `fd` (read with pread; the caller keeps it open): its sample tables
    /// with no edit or exactly one (rate 1, not empty); nil otherwise (several edits, fragmented, not MP4, tables
    /// that do not account for every sample).
    public static func mp4(fd: Int32, trackID: UInt32) -> StoredTrack? {
        let file = FileDescriptor(taking: fd)
        var moov: ArraySlice<UInt8>?
        var fileSize: UInt64 = 0
        if let size = try? file.regularFileSize(), size > 0 {
            fileSize = size
            moov = ContainerIndex.readMovie(file, fileSize: size)
        }
        _ = file.take()  // the caller's descriptor: not closed here
        guard let moov else { return nil }
        var reader = BoxReader(bytes: moov)
        var movieTimescale: UInt64?
        var table: SampleTable?
        while let box = reader.next() {
            switch box.type {
            case "mvhd": movieTimescale = ContainerIndex.fieldAfterTimes(box.body).map(UInt64.init)
            case "mvex": return nil
            case "trak": if let t = SampleTable(box.body), t.id == trackID { table = t }
            default: break
            }
        }
        guard let movieTimescale, movieTimescale > 0, let table, table.timescale > 0,
              let samples = storedSamples(table) else { return nil }
        var (editStart, editEnd): (Int64, Int64?) = (0, nil)
        if let edits = table.edits {
            guard edits.count == 1, let edit = edits.first, edit.mediaTime >= 0, edit.rate == 0x0001_0000 else { return nil }
            editStart = edit.mediaTime
            if edit.duration > 0 {  // in the movie's timescale, to the nearest media tick (ffmpeg's av_rescale):
                // GStreamer's mp4mux writes a movie timescale of 1800 (1.98388… s for 95226.67 ticks at 48 kHz)
                let (high, low) = edit.duration.multipliedFullWidth(by: table.timescale)
                guard high < movieTimescale / 2 else { return nil }
                let (sum, carry) = low.addingReportingOverflow(movieTimescale / 2)
                let ticks = movieTimescale.dividingFullWidth((high + (carry ? 1 : 0), sum)).quotient
                editEnd = edit.mediaTime + Int64(clamping: ticks)
            }
        }
        let frameDuration = Int64(table.deltas.max { $0.count < $1.count }?.delta ?? 0)
        return StoredTrack(timescale: Int64(table.timescale), isVideo: table.isVideo, editStart: editStart,
                           editEnd: editEnd, samples: samples, fileSize: fileSize, frameDuration: frameDuration)
    }

    /// Every sample's place (stsc, stsz, stco/co64), time (stts, ctts) and sync flag (stss), or nil when the tables
    /// disagree.
    private static func storedSamples(_ t: SampleTable) -> [Sample]? {
        guard let count = t.sampleCount.map(Int.init), count <= ContainerIndex.maxSamples,
              t.sampleSize != 0 || t.sizes.count >= 4 * count else { return nil }
        var samples: [Sample] = []
        samples.reserveCapacity(count)
        for (i, run) in t.chunkRuns.enumerated() {
            let last = i + 1 < t.chunkRuns.count ? Int(t.chunkRuns[i + 1].firstChunk) - 1 : t.chunkOffsets.count
            guard run.firstChunk >= 1, last >= Int(run.firstChunk) - 1, last <= t.chunkOffsets.count else { return nil }
            for chunk in Int(run.firstChunk)..<(last + 1) {
                var offset = t.chunkOffsets[chunk - 1]
                for _ in 0..<min(Int(run.samples), count - samples.count) {  // a damaged run may claim billions
                    let size = Int(t.sampleSize != 0 ? t.sampleSize : be32(t.sizes, 4 * samples.count))
                    samples.append(Sample(offset: offset, size: size, decodeTime: 0, duration: 0, compositionOffset: 0,
                                          isSync: true))
                    offset &+= UInt64(size)
                }
            }
        }
        guard samples.count == count else { return nil }
        var time: Int64 = 0, i = 0
        for (n, delta) in t.deltas {
            for _ in 0..<min(Int(n), count - i) {
                samples[i].decodeTime = time
                samples[i].duration = Int64(delta)
                time += Int64(delta)
                i += 1
            }
        }
        guard i == count else { return nil }
        if let offsets = t.offsets {
            i = 0
            for (n, offset) in offsets {
                for _ in 0..<min(Int(n), count - i) {
                    samples[i].compositionOffset = offset
                    i += 1
                }
            }
            guard i == count else { return nil }
        }
        if let syncs = t.syncs, !syncs.isEmpty {  // an empty stss: treated as absent, as qtdemux does
            for k in samples.indices { samples[k].isSync = false }
            for s in syncs where s >= 1 && Int(s) <= count { samples[Int(s) - 1].isSync = true }
        }
        return samples
    }
}
