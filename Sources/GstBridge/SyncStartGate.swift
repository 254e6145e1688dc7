import MediaVocabulary

/// MPEG-PS passthrough of a range that starts after the stream's beginning: the stream is read from its beginning
/// (TrackPipeline.readsFromStart: no demuxer seek), and this gate lets out, in decode order, the stored samples from
/// the last sync sample whose presentation time is at or before the range's start — what a seek with
/// KEY_UNIT|SNAP_BEFORE gives for every other container. A sync sample at or before the start is held with the
/// samples after it until one shows the start is passed (its decode time after the start, or a sync sample presented
/// after it: no later sample can be a sync sample at or before the start); an earlier sync sample's run is then
/// forgotten. A GOP at most is held.
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

/// PassthroughSamples' gate for an MPEG-PS range read from the beginning (readingFromStart): armed with the range's
/// start, it holds what a SyncStartGate holds and queues what it lets out ahead of the sample pulled.
final class GatedStart {
    private var gate: SyncStartGate<PulledSample>?
    private var ahead: [PulledSample] = []

    /// The next range starts at `start` (ns); nil or 0: nothing is held back.
    func arm(start: Int64?) {
        gate = start.flatMap { $0 > 0 ? SyncStartGate(start: $0) : nil }
        ahead = []
    }

    var isArmed: Bool { gate != nil }

    /// A sample let out ahead, delivered before the next pull.
    func queued() -> PulledSample? { ahead.isEmpty ? nil : ahead.removeFirst() }

    /// The stream or the range ended: the first sample held (the others queued), nil when none is.
    func flush() -> PulledSample? { release(gate?.flush() ?? []) }

    /// The next stored sample (decode order), through the gate.
    func admit(_ sample: PulledSample) -> MadeSample {
        let decode = sample.decodeTime.isNumeric ? sample.decodeTime.nanoseconds : nil
        let out = gate?.admit(sample, pts: sample.presentationTime.nanoseconds, dts: decode, sync: sample.isSync) ?? [sample]
        return release(out).map { .sample($0) } ?? .skip
    }

    private func release(_ samples: [PulledSample]) -> PulledSample? {
        guard let first = samples.first else { return nil }
        ahead.append(contentsOf: samples.dropFirst())
        return first
    }
}
