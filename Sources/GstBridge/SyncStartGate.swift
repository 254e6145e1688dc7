import MediaVocabulary

/// Where a passthrough range starts when the demuxer's own start is earlier than the range's: the stored samples, in
/// decode order, from the last sync sample whose presentation time is at or before the range's start — what a seek
/// with KEY_UNIT|SNAP_BEFORE gives for every other container. One rule for two cases (GatedStart): an MPEG-PS range
/// read from the stream's beginning (TrackPipeline.readsFromStart: no demuxer seek), every track; and an audio track
/// after a seek, where the demuxer starts at its own unit (an Ogg page, a Matroska cluster: up to seconds early) and
/// every packet is a sync sample, so the range starts at the packet at or before its start (PROTOCOL.md §12.7).
/// A sync sample at or before the start is held with the samples after it until one shows the start is passed (its
/// decode time after the start, or a sync sample presented after it: no later sample can be a sync sample at or
/// before the start); an earlier sync sample's run is then forgotten. A GOP (one packet, for audio) at most is held.
/// A sample with no time proves nothing: it is held with the run before it, or dropped when none is held.
struct SyncStartGate<Sample> {
    /// The range's start (stream time, ns).
    let start: Int64
    private var held: [Sample] = []
    private var holding = false  // a sync sample at or before the start went by
    private var open = false     // the start is passed: every sample goes out

    init(start: Int64) { self.start = start }

    /// What goes out for the next stored sample (decode order): none while it is before or held, else what was held
    /// and the sample. `pts`, `dts`: its times (ns, nil when unknown).
    mutating func admit(_ sample: Sample, pts: Int64?, dts: Int64?, sync: Bool) -> [Sample] {
        if open { return [sample] }
        if sync, let pts, pts <= start {
            (held, holding) = ([sample], true)
            return []
        }
        let decodedAfter = (dts ?? pts).map { $0 > start } ?? false
        let syncAfter = sync && (pts.map { $0 > start } ?? false)
        if decodedAfter || syncAfter {
            open = true
            defer { held = [] }
            return held + [sample]
        }
        if holding { held.append(sample) }
        return []
    }

    /// The stream or the range ended before the start was passed: what is held (the last frames shown at the start).
    mutating func flush() -> [Sample] {
        defer { held = [] }
        return held
    }
}

/// PassthroughSamples' gate: armed with a range's start, it holds what a SyncStartGate holds and queues what it lets
/// out ahead of the sample pulled.
final class GatedStart {
    private var gate: SyncStartGate<PulledSample>?
    /// Only an audio track's packets are gated (every one a sync sample); another track's first sample disarms it.
    private var audioOnly = false
    private var ahead: [PulledSample] = []

    /// The next range starts at `start` (ns); nil or 0: nothing is held back. `audioOnly`: a range after a seek,
    /// where only audio needs the gate (video starts at the key unit the seek found).
    func arm(start: Int64?, audioOnly: Bool = false) {
        gate = start.flatMap { $0 > 0 ? SyncStartGate(start: $0) : nil }
        self.audioOnly = audioOnly
        ahead = []
    }

    /// A sample let out ahead, delivered before the next pull.
    func queued() -> PulledSample? { ahead.isEmpty ? nil : ahead.removeFirst() }

    /// The stream or the range ended: the first sample held (the others queued), nil when none is.
    func flush() -> PulledSample? { release(gate?.flush() ?? []) }

    /// The next stored sample (decode order), through the gate; `isAudio`: whether it is an audio packet (a sync
    /// sample whatever its flags), asked only while the gate is armed.
    func admit(_ sample: PulledSample, isAudio: @autoclosure () -> Bool) -> MadeSample {
        guard gate != nil else { return .sample(sample) }
        let audio = isAudio()
        if audioOnly, !audio { gate = nil }
        let decode = sample.decodeTime.isNumeric ? sample.decodeTime.nanoseconds : nil
        let out = gate?.admit(sample, pts: sample.presentationTime.nanoseconds, dts: decode, sync: audio || sample.isSync)
            ?? [sample]
        return release(out).map { .sample($0) } ?? .skip
    }

    private func release(_ samples: [PulledSample]) -> PulledSample? {
        guard let first = samples.first else { return nil }
        ahead.append(contentsOf: samples.dropFirst())
        return first
    }
}
