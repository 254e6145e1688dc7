import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol
import Synchronization

/// The frames a decoded-video range delivers, by the track's frame index: `frames` (indices, ascending) and each
/// one's display interval (`FrameIndex.displayEnd(of:)`, the duration decoded samples report). `frames` nil:
/// every frame the decoder gives (a read of the whole track), still with the index's display intervals.
public struct FrameSelection: Sendable {
    public let index: FrameIndex
    public let frames: [Int]?

    public init(index: FrameIndex, frames: [Int]?) {
        self.index = index
        self.frames = frames
    }

    /// The frame a decoded frame at `ns` (stream time) is: the index's frame within `tolerance`, else nil.
    func frame(at ns: Int64) -> Int? {
        guard !index.frames.isEmpty else { return nil }
        let i = index.nearest(ns)
        let d = index.frames[i].presentationTime.subtractingReportingOverflow(ns)
        return !d.overflow && d.partialValue.magnitude <= FrameGate.tolerance.magnitude ? i : nil
    }

    /// Whether the decoded frame at `ns` is delivered.
    func delivers(_ ns: Int64) -> Bool {
        guard let frames else { return true }
        guard let i = frame(at: ns) else { return false }
        var low = 0, high = frames.count
        while low < high {
            let mid = (low + high) / 2
            if frames[mid] < i { low = mid + 1 } else { high = mid }
        }
        return low < frames.count && frames[low] == i
    }
}

/// Decoded video: decides right after the decoder, before videoconvert/videoscale, which frames are delivered —
/// frames decoded only as references or preroll (a range or reset starting mid-GOP, ReadFrames, GenerateImage) are
/// dropped there and never converted. A probe on the converter branch's input (the queue decodebin links to),
/// matching each frame's stream time (the decoder's clipping of the first frame after a seek undone, ClipRestorer)
/// to the selection's frames. Counts the frames the decoder gave and, with `countConversions`, those that entered
/// the converter.
final class FrameGate: @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private struct State: @unchecked Sendable {  // GstSegment is plain values (its reserved pointers are unused)
        var selection: FrameSelection?  // nil: every frame, with the decoder's own durations
        var segment = GstSegment()
        var hasSegment = false
        var decoded: UInt64 = 0
        var converted: UInt64 = 0
        var gaps: Bool
    }
    private let state: Mutex<State>
    private let restorer: ClipRestorer
    /// Whether a dropped frame still counts for preroll (see `init`) after the first `select`.
    private let gapsAfterSelect: Bool
    /// Index times and decoded frames' times come from the same demuxer; this only absorbs rounding.
    static let tolerance: Int64 = 100_000

    /// A dropped frame is replaced by a GAP event (its PTS and duration), on which the sink prerolls as on a
    /// buffer: a pipeline prerolls (before its first seek, and after each flush-seek) without converting a frame it
    /// does not deliver. `gapsAfterSelect` false (GenerateImage, which takes the prerolled frame as the image): only
    /// until the first `select`.
    init(selection: FrameSelection?, restorer: ClipRestorer, gapsAfterSelect: Bool = true) {
        self.restorer = restorer
        self.gapsAfterSelect = gapsAfterSelect
        var initial = State(gaps: true)
        initial.selection = selection
        state = Mutex(initial)
    }

    /// The next range's frames; call before the flush-seek that starts it.
    func select(_ selection: FrameSelection?) {
        state.withLock { ($0.selection, $0.gaps) = (selection, $0.gaps && gapsAfterSelect) }
    }

    /// Frames that left the decoder, and frames that entered the converter, all ranges.
    var framesDecoded: UInt64 { state.withLock { $0.decoded } }
    var framesConverted: UInt64 { state.withLock { $0.converted } }

    /// Until when the decoded frame at `ns` (stream time) is displayed, by the index; nil when the index does not
    /// know the frame (or there is none): the decoder's own duration stands.
    func displayEnd(at ns: Int64) -> Int64? {
        state.withLock { s in
            guard let selection = s.selection, let i = selection.frame(at: ns) else { return nil }
            return selection.index.displayEnd(of: i)
        }
    }

    /// `pad`: the converter branch's input, where decodebin's output is linked.
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if let (pts, duration) = info.bufferTiming {
                let (passes, gap) = passes(pts: pts, duration: duration)
                if passes { return GST_PAD_PROBE_OK }
                if gap, pts != clockTimeNone {
                    // On the streaming thread, which holds the pad's (recursive) stream lock: serialized after what
                    // went before, as DecodeStop's EOS.
                    info.sendGap(pts: pts, duration: duration)
                }
                return GST_PAD_PROBE_DROP
            }
            if let segment = info.segment { state.withLock { ($0.segment, $0.hasSegment) = (segment, true) } }
            return GST_PAD_PROBE_OK
        }
    }

    /// Counts the buffers entering the converter (`pad`: videoconvert's sink pad).
    func countConversions(at pad: GstRef<GstPadObject>) {
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { [self] _ in
            state.withLock { $0.converted += 1 }
            return GST_PAD_PROBE_OK
        }
    }

    /// Whether the frame passes, and whether a dropped one is replaced by a GAP event.
    private func passes(pts: GstClockTime, duration: GstClockTime) -> (Bool, gap: Bool) {
        state.withLock { s in
            s.decoded += 1
            return (Self.delivers(pts: pts, duration: duration, &s, restorer), s.gaps)
        }
    }

    /// The selection's verdict on a decoded frame, by its stream time (the decoder's clipping undone).
    private static func delivers(pts: GstClockTime, duration: GstClockTime, _ s: inout State, _ restorer: ClipRestorer) -> Bool {
        guard let selection = s.selection, selection.frames != nil else { return true }
        let time: MediaTime
        if s.hasSegment {
            let (restored, _) = restorer.restore(pts: pts, duration: duration, segment: s.segment)
            time = streamTime(restored, segment: s.segment)
        } else {
            time = mediaTime(pts)
        }
        guard let ns = time.nanoseconds else { return false }
        return selection.delivers(ns)
    }
}
