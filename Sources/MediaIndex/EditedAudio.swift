import SystemCalls

/// An MP4/MOV audio track's stored samples — where their bytes are and their times — and the one edit that
/// places part of them on the track's timeline. Encoders with priming (AAC: 1024 frames by ffmpeg, 2112 by Apple)
/// write an edit that skips the priming and ends before the last packet's padding; GStreamer 1.22's qtdemux then
/// never pushes the packets wholly outside the edit, which passthrough must still deliver (with Apple's trim
/// attachments: how much of each a decoder's output drops).
public struct EditedAudio: Sendable {
    public struct StoredSample: Sendable, Equatable {
        public var offset: UInt64
        public var size: Int
        /// Media timescale.
        public var decodeTime: Int64
        public var duration: Int64
    }

    /// mdhd's timescale.
    public let timescale: Int64
    /// The edit's first media time and the media time it ends at (nil: the end of the media).
    public let editStart: Int64
    public let editEnd: Int64?
    public let samples: [StoredSample]
    /// What one packet decodes to (the most common sample duration: AAC's 1024 frames); a shorter sample (the last,
    /// whose stts duration ffmpeg cuts to the edit) still decodes to that much.
    public let frameDuration: Int64

    /// Sample `i`'s time on the track's timeline (media timescale; negative before the edit).
    public func presentationTime(_ i: Int) -> Int64 { samples[i].decodeTime - editStart }

    /// How much of what sample `i` decodes to lies before the edit's start and after its end or its own (shortened)
    /// duration (media timescale; 0 and 0 inside).
    public func trim(_ i: Int) -> (atStart: Int64, atEnd: Int64) {
        let s = samples[i]
        let decoded = max(s.duration, frameDuration)
        let visibleEnd = min(s.decodeTime + s.duration, editEnd ?? .max)
        let atStart = min(decoded, max(0, editStart - s.decodeTime))
        let atEnd = min(decoded, max(0, s.decodeTime + decoded - visibleEnd))
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

    /// The audio track `trackID` of the MP4/MOV file `fd` (read with pread; the caller keeps it open), when it has
    /// exactly one edit (rate 1, not empty) that trims something; nil otherwise (no edit, video, fragmented, not
    /// MP4, tables that do not account for every sample).
    public static func mp4(fd: Int32, trackID: UInt32) -> EditedAudio? {
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
        guard let movieTimescale, movieTimescale > 0, let table, !table.isVideo, table.timescale > 0,
              let edits = table.edits, edits.count == 1, let edit = edits.first, edit.mediaTime >= 0,
              edit.rate == 0x0001_0000, let end = table.dataEnd(), end <= fileSize,
              let samples = storedSamples(table) else { return nil }
        let timescale = Int64(table.timescale)
        var editEnd: Int64?
        if edit.duration > 0 {  // in the movie's timescale
            let (high, low) = edit.duration.multipliedFullWidth(by: table.timescale)
            guard high < movieTimescale else { return nil }
            editEnd = edit.mediaTime + Int64(clamping: movieTimescale.dividingFullWidth((high, low)).quotient)
        }
        let frameDuration = Int64(table.deltas.max { $0.count < $1.count }?.delta ?? 0)
        let made = EditedAudio(timescale: timescale, editStart: edit.mediaTime, editEnd: editEnd, samples: samples,
                               frameDuration: frameDuration)
        return made.samples.indices.contains { made.trim($0) != (0, 0) } ? made : nil
    }

    /// Every sample's place (stsc, stsz, stco/co64) and time (stts), or nil when the tables disagree.
    private static func storedSamples(_ t: SampleTable) -> [StoredSample]? {
        guard let count = t.sampleCount.map(Int.init), count <= ContainerIndex.maxSamples else { return nil }
        var samples: [StoredSample] = []
        samples.reserveCapacity(count)
        for (i, run) in t.chunkRuns.enumerated() {
            let last = i + 1 < t.chunkRuns.count ? Int(t.chunkRuns[i + 1].firstChunk) - 1 : t.chunkOffsets.count
            guard run.firstChunk >= 1, last >= Int(run.firstChunk) - 1, last <= t.chunkOffsets.count else { return nil }
            for chunk in Int(run.firstChunk)..<(last + 1) {
                var offset = t.chunkOffsets[chunk - 1]
                for _ in 0..<run.samples where samples.count < count {
                    let size = Int(t.sampleSize != 0 ? t.sampleSize : be32(t.sizes, 4 * samples.count))
                    samples.append(StoredSample(offset: offset, size: size, decodeTime: 0, duration: 0))
                    offset += UInt64(size)
                }
            }
        }
        guard samples.count == count else { return nil }
        var time: Int64 = 0, i = 0
        for (n, delta) in t.deltas {
            for _ in 0..<n where i < count {
                samples[i].decodeTime = time
                samples[i].duration = Int64(delta)
                time += Int64(delta)
                i += 1
            }
        }
        return i == count ? samples : nil
    }
}
