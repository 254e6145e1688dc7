import CGStreamer
import CGstShim
import Synchronization
import TrackdProtocol

/// Decoded audio: linear PCM, one plane (interleaved) or one per channel (GstAudioMeta's offsets), and the frame
/// count, trimmed to the range's frames (audioWindow): the decoder's segment clipping keeps partial buffers at both
/// ends with its own rounding, AVAssetReader delivers exactly round(duration × rate) frames from round(start × rate).
/// The trimming is a view change (which bytes copyBytes copies, PTS and duration).
final class AudioSamples: SampleMaker {
    private let request: AudioOutputRequest
    /// A channel layout of more than one channel: the order samples are reordered to.
    private let channelOrder: ChannelOrder?
    private let restorer: ClipRestorer
    /// Widens the decoder's first segment back to the stream's start while a range reads from there (StartSegment).
    private let startSegment: StartSegment
    /// Matroska audio: the frames decoded packets start on (their times are whole ticks; MatroskaAudioGrid).
    private let grid: MatroskaAudioGrid?
    /// The decoder's input caps' name (its codec: AudioRangePlan.decoderPreroll).
    private let codec: InputCodec
    /// The current range (reader timeRange, then each reset's), in nanoseconds.
    private var range: (start: Int64, duration: Int64?)
    /// How far the track's buffer timestamps run ahead of its timeline (ns; the edit list's media start, e.g. AAC
    /// priming). qtdemux 1.22 ends a stream when a sample's *buffer* timestamp reaches the seek stop, which is on the
    /// timeline: the last packets before the stop (the whole last AAC packet of a file) would never be pushed. Every
    /// audio seek's stop is moved this much later; the sample-exact trimming cuts at the real end.
    private var stopLead: Int64 = 0

    /// The decoded rate (the appsink's caps after preroll; the capsfilter leaves it open) and, when the output's
    /// differs, the resampler's reach in input frames.
    private var inputRate = 0
    private var latency = 0
    /// The current range's plan (see AudioRangePlan; nil until the input rate is known), its resampler (made at the
    /// range's first buffer) and whether its filter's tail was drained at the end of the range.
    private var plan: AudioRangePlan?
    private var resampler: RangeResampler?
    private var drained = false
    /// The range's input ended before the demuxer's stop (see make): pull reports the end until the next seek.
    private(set) var rangeEnded = false
    /// Where the next decoded buffer should start (input frames), and the last one's length: a decoder that makes
    /// nothing of a damaged packet (FFmpeg's AAC: "Number of bands exceeds limit") leaves a gap there.
    private var expected: (next: Int64, frames: Int)?
    /// Packets the decoder made nothing of, by the gaps they left, all ranges.
    private(set) var samplesUndecodable: UInt64 = 0

    init(request: AudioOutputRequest, channelOrder: ChannelOrder?, restorer: ClipRestorer, range: MediaTimeRange,
         startSegment: StartSegment, grid: MatroskaAudioGrid?, codec: InputCodec) {
        self.request = request
        self.grid = grid
        self.codec = codec
        self.channelOrder = channelOrder
        self.restorer = restorer
        self.startSegment = startSegment
        self.range = TrackPipeline.trimRange(range)
    }

    private var outputRate: Int { request.sampleRate ?? inputRate }
    private var resamples: Bool { inputRate > 0 && outputRate != inputRate }

    func prerolled(sink: GstRef<GstElementObject>) -> Int64 {
        stopLead = TrackPipeline.timestampLead(sink: sink)
        if let caps = sink.staticPad("sink").currentCaps {
            inputRate = Int(CapsView(caps)?.int("rate") ?? 0)
            if resamples { latency = RangeResampler.latency(caps: caps, outputRate: outputRate) }
        }
        replan()
        return stopLead
    }

    func seeking(to range: MediaTimeRange, stop: Int64?) -> Int64? {
        self.range = TrackPipeline.trimRange(range)
        replan()
        // Matroska: a block's stored time can be up to a tick and the CodecDelay after its first frame (MatroskaAudioGrid).
        let lead = stopLead + (grid?.stopLead ?? 0)
        guard let plan, inputRate > 0 else { return stop.map { $0 + lead } }
        return plan.seekStop(inputRate: inputRate).map { $0 + lead }
    }

    /// The seek starts at the plan's first input frame (earlier than the range: AudioRangePlan).
    func seekStart(_ start: Int64) -> Int64 {
        let from = plan?.seekStart(inputRate: inputRate) ?? start
        startSegment.seeking(fromStart: from <= 0)
        return from
    }

    /// MPEG-PS: no seek; the plan trims the range from what the stream's beginning gives, and ends it (make).
    func readingFromStart(_ range: MediaTimeRange) { startSegment.seeking(fromStart: true) }

    private func replan() {
        plan = inputRate > 0 ? AudioRangePlan(window: Self.window(range, rate: outputRate), inputRate: inputRate,
                                              outputRate: outputRate, latency: latency,
                                              preroll: AudioRangePlan.decoderPreroll(codec: codec.name)) : nil
        resampler = nil
        drained = false
        rangeEnded = false
        expected = nil
    }

    /// A range from the track's start is read without a seek (which would flush a decoder that has already started:
    /// FFmpeg's AAC decoder keeps the last packet's window shape across a flush, so the first packet of a raw AAC
    /// stream would decode differently); its end is then found here (make).
    var endsRangesItself: Bool { true }

    /// The frames [first, end) of a range at `rate`: first = round(start × rate), end = first + round(duration ×
    /// rate) (nil: to the end) — AVAssetReader's sample-exact trimming.
    static func window(_ range: (start: Int64, duration: Int64?), rate: Int) -> (first: Int64, end: Int64?) {
        func frames(_ ns: Int64) -> Int64 {
            Int64((Double(ns) * Double(rate) / 1e9).rounded())
        }
        let first = frames(range.start)
        return (first, range.duration.map { first + frames($0) })
    }

    /// .skip when no frame of the buffer is in the range (the sample is released).
    func make(_ sample: GstRef<GstSampleObject>) -> MadeSample {
        let caps = sample.caps
        let frames = frameCount(sample, caps: caps)
        let rate = Int(CapsView(caps)?.int("rate") ?? 0)
        let first = firstFrame(sample, frames: frames, rate: rate)
        if let first { countGap(first: first.frame, frames: frames) }
        if let first, let end = plan?.inputEnd, first.frame >= end {
            rangeEnded = true  // every frame the range needs was made (a range read without a demuxer stop)
            return .endOfRange
        }
        // Matroska's DiscardPadding: the packet's last frames are the encoder's padding (ffmpeg's decode drops them).
        var padding: Int64 = 0
        if let grid, let first {
            let segment = sample.segment
            padding = grid.endPadding(first: first.frame, rate: rate) { (ns: Int64) -> Int64? in
                ns < 0 ? nil : streamTime(GstClockTime(ns), segment: segment).nanoseconds
            }
        }
        let kept = Int(clamping: max(0, Int64(frames) - padding))
        guard resamples, let caps, let plan, let first else {
            return deliver(sample, first: first, frames: frames, kept: kept)
        }
        if resampler == nil { resampler = RangeResampler(caps: caps, outputRate: outputRate, plan: plan) }
        guard kept > 0, let made = resampler?.feed(sample, first: first.frame, frames: kept) else { return .skip }
        return deliver(made.sample, first: (made.first, false), frames: made.frames)
    }

    /// A decoded buffer starting at input frame `first`: a gap of at least the last buffer's length since it is as
    /// many packets of that length as fit in it. Smaller gaps are the container's rounding (Matroska's milliseconds
    /// are up to 48 frames at 48 kHz, less than any codec's packet), not a packet.
    private func countGap(first: Int64, frames: Int) {
        if let expected, expected.frames > 0, first - expected.next >= Int64(expected.frames) {
            samplesUndecodable += UInt64((first - expected.next) / Int64(expected.frames))
        }
        expected = (first + Int64(frames), frames)
    }

    /// At the end of a range's input: the resampler's last frames, once (.skip when there are none).
    func endOfInput() -> MadeSample {
        guard !drained, let resampler else { return .skip }
        drained = true
        guard let made = resampler.drain() else { return .skip }
        return deliver(made.sample, first: (made.first, false), frames: made.frames)
    }

    /// Frames in a buffer of `caps` (GstAudioMeta's count when non-interleaved).
    private func frameCount(_ sample: GstRef<GstSampleObject>, caps: GstRef<GstCapsObject>?) -> Int {
        if request.isNonInterleaved, let meta = sample.audioMeta { return meta.samples }
        let channels = max(1, Int(CapsView(caps)?.int("channels") ?? 1))
        return sample.size / (channels * request.bytesPerSample)
    }

    /// The sample's frames from its frame `first` (the range's rate; aligned: its PTS is that frame's time), trimmed
    /// to the range and to its first `kept` frames (all when nil); first nil: delivered as it is.
    private func deliver(_ sample: GstRef<GstSampleObject>, first: (frame: Int64, aligned: Bool)?, frames: Int,
                         kept: Int? = nil) -> MadeSample {
        let sampleCaps = sample.caps
        let caps = CapsView(sampleCaps)
        let channels = max(1, Int(caps?.int("channels") ?? 1))
        let rate = Int(caps?.int("rate") ?? 0)
        let bytesPerSample = request.bytesPerSample
        var frames = frames
        var offsets: [UInt64]? = nil  // non-interleaved: where each channel's plane starts in the buffer
        if request.isNonInterleaved {
            offsets = (0..<channels).map { UInt64($0 * frames * bytesPerSample) }
            if let meta = sample.audioMeta, let metaOffsets = meta.offsets {
                offsets = Array(metaOffsets.prefix(min(channels, meta.channels)))
            }
        }
        // AVChannelLayoutKey: the layout's order (GStreamer's is canonical).
        let reorder = channelOrder?.reordering(for: sampleCaps)
        if let reorder, let planeOffsets = offsets, planeOffsets.count == reorder.order.count {
            offsets = reorder.order.map { planeOffsets[$0] }  // non-interleaved: permute the planes
        }
        let ends = [Self.stopFrame(sample, rate: rate), kept.flatMap { kept in first.map { $0.frame + Int64(kept) } }]
        guard let trim = trim(first: first, frames: frames, rate: rate, stops: ends.compactMap { $0 }) else { return .skip }
        frames = trim.keep
        let row = frames * bytesPerSample
        var layout = SampleLayout(format: "lpcm", planes: [], frameCount: UInt32(clamping: frames))
        var pieces: [(from: Int, to: Int, length: Int)]? = nil
        if let offsets {
            let used = offsets.prefix(Wire.maxPlanes)
            layout.planes = used.indices.map {
                PlaneLayout(offset: UInt64($0 * row), bytesPerRow: UInt32(clamping: row), rowBytes: UInt32(clamping: row), height: 1)
            }
            layout.size = used.count * row
            let tight = used.enumerated().allSatisfy { $0.element == UInt64($0.offset * row) }
            if !tight || trim.skip > 0 {
                // Each channel's kept frames, packed one plane after the other (copied per plane, no more bytes).
                pieces = used.enumerated().map { (Int($0.element) + trim.skip * bytesPerSample, $0.offset * row, row) }
            }
            return .sample(PulledSample(sample, layout: layout, copy: .audio(pieces: pieces, reorder: nil), timing: trim.timing))
        }
        let frameBytes = channels * bytesPerSample
        layout.planes = [PlaneLayout(offset: 0, bytesPerRow: UInt32(clamping: frames * frameBytes),
                                     rowBytes: UInt32(clamping: frames * frameBytes), height: 1)]
        layout.size = frames * frameBytes
        if trim.skip > 0 { pieces = [(trim.skip * frameBytes, 0, frames * frameBytes)] }
        let copy = CopyPlan.audio(pieces: pieces, reorder: reorder.map { .init(format: $0.format, from: $0.from, to: $0.to) })
        return .sample(PulledSample(sample, layout: layout, copy: copy, timing: trim.timing))
    }

    /// A decoded buffer's first frame: its stream time × rate (rounded: frames are 1/rate apart, far more than a
    /// nanosecond), or, for the buffer the decoder clipped at the segment start, the end of the input packet it was
    /// cut from minus its frames. aligned: the PTS is that frame's time. nil without a time or rate.
    private func firstFrame(_ sample: GstRef<GstSampleObject>, frames: Int, rate: Int) -> (frame: Int64, aligned: Bool)? {
        let pts = sample.pts
        let segment = sample.segment
        guard rate > 0, pts != GstClockTime.max, let ns = streamTime(pts, segment: segment).nanoseconds else { return nil }
        var first = Int64((Double(ns) * Double(rate) / 1e9).rounded())
        let frameNs = GstClockTime(1_000_000_000 / rate + 1)
        let duration = sample.duration
        if let end = restorer.clippedEnd(pts: pts, duration: duration, segment: segment, tolerance: frameNs),
           let endNs = streamTime(end, segment: segment).nanoseconds {
            // Clipped by the decoder: its frames end where the input packet ends.
            first = snap(Int64((Double(endNs) * Double(rate) / 1e9).rounded()), rate) - Int64(frames)
        } else if let segment, pts == GstClockTime(segment.start), duration != GstClockTime.max, duration < frameNs {
            // What gst_audio_buffer_clip's rounding kept of a packet that ends at the segment start (AAC priming
            // before an edit list: a buffer of 1 frame and 1 ns at the start): frames before the start.
            first -= Int64(frames)
        } else if pts != GstClockTime(segment?.start ?? 0) {  // a buffer cut at the segment start starts there
            first = snap(first, rate)
        }
        return (first, abs(ns - first * 1_000_000_000 / Int64(rate)) <= 1)
    }

    private func snap(_ frame: Int64, _ rate: Int) -> Int64 { grid?.snap(frame, rate: rate) ?? frame }

    /// The frame the sample's segment stops at (its stop's stream time × rate, rounded), or nil without a stop.
    /// GstAudioDecoder clips a buffer that runs past the stop with gst_audio_buffer_clip, which rounds the frames to
    /// drop down from nanoseconds (truncated themselves): it can keep one frame too many — the last Vorbis packet of
    /// an Ogg file, cut by its granule position to 584 of its 1024 frames, gave 585 (88 201 frames for 88 200).
    static func stopFrame(_ sample: GstRef<GstSampleObject>, rate: Int) -> Int64? {
        guard rate > 0, let segment = sample.segment, segment.format == GST_FORMAT_TIME, segment.stop != clockTimeNone,
              let ns = streamTime(GstClockTime(segment.stop), segment: segment).nanoseconds else { return nil }
        return Int64((Double(ns) * Double(rate) / 1e9).rounded())
    }

    /// Trimming to the range's frames: the frames to skip and keep, and the exact times when they are not the
    /// buffer's; nil when none is kept.
    private func trim(first: (frame: Int64, aligned: Bool)?, frames: Int, rate: Int,
                      stops: [Int64]) -> (skip: Int, keep: Int, timing: (pts: MediaTime, duration: MediaTime)?)? {
        guard let first, rate > 0 else { return (0, frames, nil) }  // no time or no rate: as it is
        let window = Self.window(range, rate: rate)
        let skip = Int(clamping: max(0, window.first - first.frame))
        var keep = frames - skip
        for end in [window.end].compactMap({ $0 }) + stops { keep = min(keep, Int(clamping: end - first.frame) - skip) }
        if keep <= 0 { return nil }
        // The decoder's clipping leaves the range start (not the first frame's time) as the PTS: restate it.
        guard skip > 0 || keep < frames || !first.aligned else { return (skip, frames, nil) }
        // Exact, in the output rate's timescale (frame numbers).
        return (skip, keep, (MediaTime(value: first.frame + Int64(skip), timescale: Int32(clamping: rate)),
                             MediaTime(value: Int64(keep), timescale: Int32(clamping: rate))))
    }
}

/// The codec entering a decoder: the name of the caps its input's CAPS events carry (nil until the first).
final class InputCodec: Sendable {
    private let current = Mutex<String?>(nil)
    var name: String? { current.withLock { $0 } }

    /// Reads the CAPS events passing `pad` (the decoder branch's input).
    func attach(to pad: GstRef<GstPadObject>) {
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { [self] info in
            if let caps = CapsView(info.caps) { current.withLock { $0 = caps.name } }
            return GST_PAD_PROBE_OK
        }
    }
}
