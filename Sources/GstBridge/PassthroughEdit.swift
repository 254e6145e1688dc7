import CGStreamer
import CGstShim
import MediaIndex
import SystemCalls
import TrackdProtocol

/// Passthrough of an MP4 audio track with an edit: GStreamer 1.22's qtdemux does not deliver the stored samples
/// wholly before the edit — the encoder's priming (AAC: ffmpeg's one packet of 1024 frames) — so they are read from
/// the file (StoredTrack: the sample tables) and delivered first when a range starts at the track's start; the last
/// packet, after the edit, StoredSampleFeeder chains in at the end. Every sample the edit trims carries the trims
/// (Apple's TrimDurationAtStart / TrimDurationAtEnd, in the track's timescale).
final class PassthroughEdit {
    private let fd: Int32
    private let trackID: UInt32
    /// Looked up at the first sample (an audio track only); .some(nil): no edit that trims.
    private var edited: StoredTrack??
    private var caps: GstRef<GstCapsObject>?
    private var fromStart = true
    /// The stored sample delivered last in this range.
    private var last: Int?
    private var queue: [PulledSample] = []

    init(fd: Int32, trackID: UInt32) {
        self.fd = fd
        self.trackID = trackID
    }

    func seeking(fromStart: Bool) {
        self.fromStart = fromStart
        (last, queue) = (nil, [])
    }

    func queued() -> PulledSample? { queue.isEmpty ? nil : queue.removeFirst() }

    /// What to deliver for `plain` (pulled from qtdemux): the stored samples before it first, when it is the first
    /// of a range from the track's start (the rest queued), and `plain` itself with its trims.
    func place(_ plain: PulledSample, sample: GstRef<GstSampleObject>, layout: (Int) -> SampleLayout) -> PulledSample {
        guard let edited = lookUp(sample), let ns = plain.presentationTime.nanoseconds,
              let grid = TimeGrid(timescale: edited.timescale),
              let i = edited.index(decodeTime: grid.time(nanoseconds: ns).value + edited.editStart) else { return plain }
        if caps == nil { caps = sample.caps }
        var out: [PulledSample] = []
        if fromStart, last == nil { out = (0..<i).compactMap { stored($0, edited, layout: layout) } }
        last = i
        let trims = Self.trims(edited, i)
        // A sample the edit ends inside lasts until the edit's end (ffmpeg's packet duration; its stts duration may
        // be the whole packet's, as GStreamer's mp4mux writes it).
        var timing: (MediaTime, MediaTime)?
        let trim = edited.trim(i), decoded = max(edited.samples[i].duration, edited.frameDuration)
        if trim.atEnd > 0, let visible = grid.nanoseconds(MediaTime(value: decoded - trim.atEnd, timescale: grid.timescale)) {
            timing = (plain.presentationTime, .nanoseconds(visible))
        }
        out.append(trims == nil ? plain : PulledSample(sample, layout: layout(plain.size), copy: .bytes, timing: timing,
                                                        trims: trims))
        queue = Array(out.dropFirst())
        return out[0]
    }

    private func lookUp(_ sample: GstRef<GstSampleObject>) -> StoredTrack? {
        if edited == nil {
            let audio = CapsView(sample.caps)?.mediaType == .audio
            edited = .some(audio ? StoredTrack.mp4(fd: fd, trackID: trackID).flatMap { $0.trimsAudio ? $0 : nil } : nil)
        }
        return edited ?? nil
    }

    static func trims(_ edited: StoredTrack, _ i: Int) -> (atStart: MediaTime, atEnd: MediaTime)? {
        let trim = edited.trim(i)
        guard trim != (0, 0) else { return nil }
        let scale = Int32(clamping: edited.timescale)
        return (MediaTime(value: trim.atStart, timescale: scale), MediaTime(value: trim.atEnd, timescale: scale))
    }

    /// The largest stored audio sample read from the file: the sample table's size field is the file's word (up to
    /// 4 GiB), and the buffer is allocated before the read; a real audio packet is a few KiB.
    static let maxStoredSampleBytes = 1 << 20

    /// Stored sample `k`, read from the file, as a sample of the track's caps with its own times and trims; nil
    /// (not delivered) when the table says more than maxStoredSampleBytes or more than the file holds.
    private func stored(_ k: Int, _ edited: StoredTrack, layout: (Int) -> SampleLayout) -> PulledSample? {
        let s = edited.samples[k]
        guard s.size > 0, s.size <= Self.maxStoredSampleBytes, let grid = TimeGrid(timescale: edited.timescale),
              let pts = grid.nanoseconds(MediaTime(value: edited.presentationTime(k), timescale: grid.timescale)),
              let duration = grid.nanoseconds(MediaTime(value: s.duration, timescale: grid.timescale)) else { return nil }
        let file = FileDescriptor(taking: fd)
        let read = s.offset <= UInt64(Int.max) ? try? [UInt8](preading: file, count: s.size, at: Int(s.offset)) : nil
        _ = file.take()  // the pipeline's descriptor: not closed here
        // DTS 0 makes it valid: the sample's decode time is its timing's (audio: DTS = PTS).
        guard let bytes = read, bytes.count == s.size, let made = GstRef<GstSampleObject>.holding(bytes, caps: caps) else {
            return nil
        }
        return PulledSample(made, layout: layout(s.size), copy: .bytes,
                            timing: (.nanoseconds(pts), .nanoseconds(duration)),
                            trims: Self.trims(edited, k))
    }
}
