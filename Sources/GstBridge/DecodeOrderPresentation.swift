import CGStreamer
import MediaIndex
import Synchronization
import TrackdProtocol

/// Decoded AVI video of a track without B-pictures (one whose frame index could be made): a sample without a PTS
/// (avidemux times key frames only) is given its DTS as PTS before the decoder — the time the frame index has for
/// it (FrameIndex.build, DecodeOrderTimes; each sample is checked again, so a B-picture is never retimed).
/// GstVideoDecoder otherwise guesses the times of untimed frames, and after a seek guesses them unlike the index
/// (ReadFrames of a 30→10 fps stream then missed its frames).
final class DecodeOrderPresentation: Sendable {
    /// The stream's codec, from its caps: `avc1` for H.264, `mp4v` for MPEG-4 Part 2, else nil (left alone); and
    /// how H.264's NAL units are delimited (its caps' stream-format).
    private let codec = Mutex<(FourCC, H264Pictures.Framing?)?>(nil)

    /// `pad`: the decoder branch's input, before anything that reads the buffers' PTS (DecodeStop).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.eventType == GST_EVENT_CAPS {
                let caps = info.caps.flatMap { CapsView($0) }
                let found: FourCC? = switch (caps?.name, caps?.int("mpegversion")) {
                case ("video/x-h264", _): "avc1"
                case ("video/mpeg", 4): "mp4v"
                default: nil
                }
                codec.withLock { $0 = found.map { ($0, caps?.h264Pictures?.framing) } }
            } else if let (pts, _) = info.bufferTiming, pts == clockTimeNone, let dts = info.bufferDTS, dts != clockTimeNone,
                      let (codec, framing) = codec.withLock({ $0 }),
                      DecodeOrderTimes.isBidirectional(info.bufferBytes ?? [], codec: codec,
                                                       framing: framing) == false {
                info.presentAtDecodeTime()
            }
            return GST_PAD_PROBE_OK
        }
    }
}
