import CGStreamer
import MediaIndex
import Synchronization
import SystemCalls

/// Opus from Matroska/WebM, decoded or passthrough: the blocks stored at or after the file's Duration, which matroskademux 1.22
/// never pushes after a seek, chained into the decoder's input at the demuxer's EOS. Every seek's stop is the
/// Duration at most (gst_segment_do_seek clamps it; no stop at all becomes the Duration), and the demuxer ends the
/// stream at the first block whose *stored* time — before it subtracts the CodecDelay — reaches the stop. GStreamer's
/// webmmux stores Opus's last block at the Duration (a 3 s file: 3.000 s; its frames start 6.5 ms earlier and end
/// at 3.000 s after its DiscardPadding), so every range to the end lost that packet (decoded: 2688 of 3000 frames).
/// A block is chained as matroskademux would have pushed it (its time less the CodecDelay, its DiscardPadding as a
/// clipping meta's end in 48 kHz samples) when it starts before the segment's stop and after the last block that
/// passed; a read without a seek gets it from the demuxer and nothing is chained. Ranges another element ends early
/// (DecodeStop's EOS, `completes` false) get nothing.
final class MatroskaTailFeeder: Sendable {
    private struct State: Sendable {
        var tail: [MatroskaTail.Block]?
        /// The newest PTS (ns) that passed since the last flush, and the segment's stop (ns; nil: none).
        var lastPTS: Int64?
        var stop: Int64?
        var armed = true
    }
    private let fd: Int32
    private let trackID: UInt32
    private let delay: Int64
    private let state = Mutex(State())

    /// For track `trackID` of `fd`; nil unless it is a Matroska track with a CodecDelay (Opus).
    init?(fd: Int32, trackID: UInt32) {
        guard let delay = MatroskaCodecDelay.delay(fd: fd, trackNumber: trackID) else { return nil }
        (self.fd, self.trackID, self.delay) = (fd, trackID, delay)
    }

    /// The next range runs to the demuxer's EOS (`completes`), or something else ends it early on purpose.
    func seeking(completes: Bool) {
        state.withLock { $0.armed = completes }
    }

    /// Watches the buffers and events entering the output's branch (`pad`: the decoder's input, or appsink's).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let timing = info.bufferTiming {
                if timing.pts != clockTimeNone, timing.pts <= GstClockTime(Int64.max) {
                    state.withLock { $0.lastPTS = max($0.lastPTS ?? .min, Int64(timing.pts)) }
                }
            } else if info.eventType == GST_EVENT_FLUSH_STOP {
                state.withLock { $0.lastPTS = nil }
            } else if info.eventType == GST_EVENT_SEGMENT, let segment = info.segment {
                let stop = segment.stop != clockTimeNone && segment.stop <= UInt64(Int64.max) ? Int64(segment.stop) : nil
                state.withLock { $0.stop = stop }
            } else if info.eventType == GST_EVENT_EOS {
                complete(info)
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// At the demuxer's EOS: chains the tail blocks it left out, before the EOS passes.
    private func complete(_ info: borrowing ProbeInfo) {
        let (armed, known, last, stop) = state.withLock { s in (s.armed, s.tail, s.lastPTS, s.stop) }
        guard armed, let last else { return }  // nothing passed: the range is not at the end
        // Read once, outside the lock (file reads; the probe's other events need not wait for them).
        let tail = known ?? MatroskaTail.blocks(fd: fd, trackNumber: trackID)
        if known == nil { state.withLock { $0.tail = tail } }
        for block in tail {
            let pts = max(0, block.time - delay)
            guard pts > last, stop.map({ pts < $0 }) ?? true, let bytes = read(block) else { continue }
            let padding = block.discardPaddingSamples(rate: 48000)  // Opus's clock
            let flow = info.chain(bytes, pts: pts, dts: nil, duration: block.duration, sync: true, clip: (0, padding))
            guard flow == GST_FLOW_OK else { return }
            state.withLock { $0.lastPTS = pts }
        }
    }

    private func read(_ block: MatroskaTail.Block) -> [UInt8]? {
        guard block.size > 0, block.size <= StoredSampleFeeder.maxSampleBytes else { return nil }
        let file = FileDescriptor(taking: fd)
        let bytes = try? [UInt8](preading: file, count: block.size, at: block.offset)
        _ = file.take()  // the pipeline's descriptor: not closed here
        return bytes?.count == block.size ? bytes : nil
    }
}
