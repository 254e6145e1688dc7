import CGStreamer
import MediaIndex
import Synchronization

/// Decoded Opus from Matroska/WebM: GStreamer 1.22's matroskademux clips every block within the track's CodecDelay
/// by the whole delay (a GstAudioClippingMeta of 312 frames on each 120-frame block of a 312-frame delay), so a block
/// only partly inside it decodes to nothing: in ffmpeg's remux of GStreamer's 2.5 ms Opus, the third block's last 48
/// frames, which ffmpeg decodes, were lost. Before the decoder, each block the demuxer clips at its start is clipped
/// by the part of the delay it covers instead — its start where the clipped block before it ends (from 0 after the
/// start or a flush), its frames its TOC's — as OpusTrims trims the passthrough packets.
final class OpusDelayClipping: Sendable {
    /// The CodecDelay in 48 kHz frames (Opus's clock: the clipping meta's too).
    private let delay: UInt64
    /// Where the next clipped block starts (48 kHz frames from the stream's start).
    private let next = Mutex<UInt64>(0)

    /// For track `trackID` of `fd`; nil unless it is a Matroska track with a CodecDelay.
    init?(fd: Int32, trackID: UInt32) {
        guard let ns = MatroskaCodecDelay.delay(fd: fd, trackNumber: trackID) else { return nil }
        delay = UInt64(OpusTrims.frames(nanoseconds: ns))
    }

    /// Watches the buffers entering the decoder (`pad`: the decoder branch's input).
    func attach(to pad: GstRef<GstPadObject>) {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        pad.addProbe(GstPadProbeType(rawValue: mask)) { [self] info in
            if info.eventType == GST_EVENT_FLUSH_STOP {
                next.withLock { $0 = 0 }
            } else if let clip = info.audioClipping, clip.start > 0, let bytes = info.bufferBytes,
                      let frames = AudioPackets.opusSamples(bytes.prefix(2)).map(UInt64.init) {
                let start = next.withLock { start in
                    defer { start = min(start, UInt64(Int64.max)) + frames }
                    return start
                }
                let wanted = min(frames, delay > start ? delay - start : 0)
                if wanted != clip.start { info.reclipAudio(start: wanted) }
            }
            return GST_PAD_PROBE_OK
        }
    }
}
