import CGStreamer
import MediaIndex
import TrackdProtocol
import Synchronization

/// Decoded video: decides which stored samples reach the decoder, watching the buffers entering the decoder branch
/// (stream time, by their segment).
/// - ReadFrames hands the decoder exactly the stored samples a range needs (FrameIndex.DecodeRange): a sample that
///   is not needed is dropped — between two runs of needed samples (GOPs a few seconds apart) the demuxer goes on
///   parsing, and the decoder sees the runs back to back, as if the file held only them.
/// - The first buffer after the last needed sample is dropped and EOS is sent in its place: the decoder drains the
///   frames it holds, the range ends, and upstream's next push returns EOS. The demuxer's own stop is useless for
///   that: qtdemux 1.22 keeps pushing past the seek's stop until the next key frame (its end-of-segment check waits
///   for `on_keyframe`), so every range would decode the rest of its GOP for nothing.
/// - When a range delivers chosen frames (a FrameSelection: ReadFrames, a range or reset that starts mid-GOP), an
///   H.264 picture that no other picture refers to and that is not delivered is dropped too (H264Pictures): it is
///   decoded only to be thrown away. In a GOP of I/P frames with two B-frames between them, reaching the last frame
///   decodes a third of the pictures.
/// Any flush re-arms it.
final class DecodeStop: @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private struct State: @unchecked Sendable {  // GstSegment is plain values (its reserved pointers are unused)
        var needed: [Int64]?    // stream times (ns), ascending, of the samples to decode; nil: every sample
        var lastNeeded: Int64?  // stream time (ns) of the last needed sample; nil: never stop early
        var delivered: [Int64]? // stream times (ns), ascending, of the frames the range delivers; nil: every frame
        var pictures: H264Pictures?  // the track is H.264 (its caps): what its stored samples are
        var passed = false      // that sample went by since the last flush
        var skipped: UInt64 = 0 // samples dropped as not needed, all ranges
        var decoded: UInt64 = 0 // samples that left the queue for the decoder, all ranges
        var segment = GstSegment()
        var hasSegment = false
    }
    private let state = Mutex<State>(State())
    /// Index times and the decoder branch's times come from the same demuxer and segment; this only absorbs rounding.
    static let tolerance: Int64 = 100_000

    init(needed: [Int64]?, lastNeeded: Int64?) { state.withLock { ($0.needed, $0.lastNeeded) = (needed, lastNeeded) } }

    /// The next range's samples; call before the flush-seek that starts the range.
    func arm(needed: [Int64]?, lastNeeded: Int64?) {
        state.withLock { ($0.needed, $0.lastNeeded, $0.passed) = (needed, lastNeeded, false) }
    }

    /// The frames the next range delivers (nil: every frame); call before the flush-seek that starts the range.
    func deliver(_ selection: FrameSelection?) {
        let times = selection.flatMap { s in s.frames.map { $0.map { s.index.frames[$0].presentationTime }.sorted() } }
        state.withLock { $0.delivered = times }
    }

    /// `pad`: the decoder branch's input (the queue in front of decodebin).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let (pts, _) = info.bufferTiming {
                switch verdict(pts: pts) {
                case .pass:
                    return GST_PAD_PROBE_OK
                case .skip:
                    return GST_PAD_PROBE_DROP
                case .inspect(let ns):
                    return isUnreferencedAndHidden(info.bufferBytes ?? [], ns: ns) ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK
                case .end:
                    // Called without the pad's object lock, on the streaming thread that holds its (recursive)
                    // stream lock: the EOS is queued behind the buffers already sent, and the pad refuses what
                    // follows.
                    info.sendEOS()
                    return GST_PAD_PROBE_DROP
                }
            }
            switch info.eventType {
            case GST_EVENT_SEGMENT:
                if let segment = info.segment { state.withLock { ($0.segment, $0.hasSegment) = (segment, true) } }
            case GST_EVENT_CAPS:
                let pictures = info.caps.flatMap { CapsView($0) }.flatMap(\.h264Pictures)
                state.withLock { $0.pictures = pictures }
            case GST_EVENT_FLUSH_STOP:
                state.withLock { $0.passed = false }
            default:
                break
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Stored samples handed to the decoder so far (each one is decoded; a flush drops those still queued).
    var samplesDecoded: UInt64 { state.withLock { $0.decoded } }

    /// Counts the samples leaving the decoder branch's queue for the decoder (`pad`: the queue's src pad).
    func count(at pad: GstRef<GstPadObject>) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] _ in
            state.withLock { $0.decoded += 1 }
            return GST_PAD_PROBE_OK
        }
    }

    /// Samples dropped before the decoder: not needed, or pictures referenced by none and not delivered.
    var samplesSkipped: UInt64 { state.withLock { $0.skipped } }

    enum Verdict {
        case pass, skip, end
        /// Needed; the sample's bytes decide whether it is an unreferenced picture (stream time `ns`).
        case inspect(Int64)
    }

    /// .end for every buffer after the last needed one (marked when it goes by), .skip for one not needed,
    /// .inspect for a needed one while the range delivers chosen frames of an H.264 track.
    private func verdict(pts: GstClockTime) -> Verdict {
        state.withLock { s in
            if s.passed { return .end }
            guard s.needed != nil || s.lastNeeded != nil || s.delivered != nil else { return .pass }
            let time = s.hasSegment ? streamTime(pts, segment: s.segment) : mediaTime(pts)
            guard let ns = time.nanoseconds else { return .pass }  // no timestamp: not ours to judge
            if let needed = s.needed, !Self.contains(needed, ns) {
                s.skipped += 1
                return .skip
            }
            if let lastNeeded = s.lastNeeded, abs(ns - lastNeeded) <= Self.tolerance { s.passed = true }
            return s.delivered != nil && s.pictures != nil ? .inspect(ns) : .pass
        }
    }

    /// Reads a needed sample (every one, so that each SPS is seen) and tells whether it is a picture no other
    /// refers to that the range does not deliver.
    private func isUnreferencedAndHidden(_ bytes: [UInt8], ns: Int64) -> Bool {
        state.withLock { s in
            guard var pictures = s.pictures else { return false }
            let disposable = pictures.isDisposable(bytes)
            s.pictures = pictures
            guard disposable, let delivered = s.delivered, !Self.contains(delivered, ns) else { return false }
            s.skipped += 1
            return true
        }
    }

    /// Whether ascending `times` has one within `tolerance` of `ns`.
    static func contains(_ times: [Int64], _ ns: Int64) -> Bool {
        var low = 0, high = times.count
        while low < high {
            let mid = (low + high) / 2
            if times[mid] < ns - tolerance { low = mid + 1 } else { high = mid }
        }
        return low < times.count && times[low] <= ns + tolerance
    }
}
