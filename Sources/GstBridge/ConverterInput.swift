// What the decoded-video branch does to frames around its decoder and before its converter: the colour an H.264 or
// HEVC stream states reaches the decoder; and two output settings of trackd's own (docs/SETTINGS.md): the YCbCr
// matrix of video that names none (TrackdUntaggedYCbCrMatrix), and turning frames upright by the track's rotation
// (TrackdAppliesPreferredTrackTransform).
import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol

enum ConverterInput {
    /// TrackdUntaggedYCbCrMatrix: the CAPS event entering the branch at `pad` names `matrix` when the decoder's caps
    /// name no matrix (swift_gst_caps_with_untagged_matrix: no colorimetry, or one whose matrix is unknown); caps
    /// that name one pass unchanged. Set on the caps rather than on an element, so whichever converter follows —
    /// videoconvert or any other that reads the caps' colorimetry — converts with it, and each Sample's colorimetry
    /// names the matrix the pixels were converted with.
    static func assume(_ matrix: YCbCrMatrix, at pad: GstRef<GstPadObject>) {
        let gstMatrix = matrix == .bt601 ? GST_VIDEO_COLOR_MATRIX_BT601 : GST_VIDEO_COLOR_MATRIX_BT709
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { info in
            if let caps = info.caps, let fixed = caps.withUntaggedMatrix(gstMatrix) { info.replaceCaps(fixed) }
            return GST_PAD_PROBE_OK
        }
    }

    /// The decoder's input names the colour an H.264 or HEVC stream states in its SPS (VideoSignalType.colour, as the
    /// track description): the CAPS event entering the decoder branch at `pad` gets it as its colorimetry. The
    /// decoders (avdec_h264, avdec_h265) take the input caps' range over the stream's own, so a demuxer's wrong or
    /// missing colour — GStreamer 1.22's qtdemux drops a `colr` box's full-range bit — would otherwise decode
    /// full-range frames as video range.
    static func stateStreamColour(at pad: GstRef<GstPadObject>) {
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { info in
            guard let caps = info.caps, let view = CapsView(caps), view.mediaType == .video else { return GST_PAD_PROBE_OK }
            let named = caps.colorimetry ?? Colorimetry()
            let colour = VideoSignalType.colour(of: view.codec, configuration: view.codecConfiguration, over: named)
            if colour != named { info.replaceCaps(caps.withColorimetry(colour)) }
            return GST_PAD_PROBE_OK
        }
    }

    /// A raw MPEG-4 Part 2 stream (`-f m4v`) with a frame index: the CAPS event entering the decoder branch at `pad`
    /// states the rate the index times its frames by (FrameIndex.untimed, from the VOL and VOPs), resolution / ticks
    /// — mpeg4videoparse states none, and libav's decoder then times frames by resolution / fixed_vop_time_increment,
    /// or 1/resolution s apart without fixed_vop_rate (at 30000/1001 fps, 1/30000 s instead of 1001/30000). With the
    /// rate in its input caps it times frame k at k × ⌊10⁹ × ticks / resolution⌋ ns, the index's times. Every path that
    /// decodes such a track (decoded ranges and their resets: VideoChain; images: ImageChain) states it here.
    static func stateRawMPEG4Rate(_ index: FrameIndex?, in pipeline: Pipeline, at pad: GstRef<GstPadObject>) {
        guard pipeline.container == .elementaryStream, let frame = index?.frames.first?.duration, frame > 0 else { return }
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { info in
            guard let caps = info.caps, let view = CapsView(caps), view.codec == "mp4v",
                  view.fraction("framerate") == nil else { return GST_PAD_PROBE_OK }
            var vol = MPEG4VOPTimes()
            _ = vol.see(view.codecConfiguration)  // the VOL: its resolution (a VOP follows in the stream, not here)
            guard let resolution = vol.resolution.map(Int64.init) else { return GST_PAD_PROBE_OK }
            // frame = ⌊10⁹ × ticks / resolution⌋ (MPEG4VOPTimes.frameNanoseconds): ticks is the ceiling of the inverse.
            let (product, overflow) = frame.multipliedReportingOverflow(by: resolution)
            guard !overflow, product <= Int64.max - 999_999_999 else { return GST_PAD_PROBE_OK }
            let ticks = (product + 999_999_999) / 1_000_000_000
            guard ticks > 0, ticks <= Int64(Int32.max) else { return GST_PAD_PROBE_OK }
            info.replaceCaps(caps.with("framerate", fraction: Int32(resolution), Int32(ticks)))
            return GST_PAD_PROBE_OK
        }
    }

    /// TrackdAppliesPreferredTrackTransform: the elements that turn each frame clockwise by `degrees` (0: none), to go
    /// before the converter — so scaling and conversion see the upright frame, and Width/Height are its size.
    /// videoflip takes what decoders usually give (I420, NV12, 4:2:2 and 4:4:4 up to 12 bits, gray, packed RGB) as it
    /// is; the videoconvert before it passes those through and repacks any other (8-bit planar 4:2:2 as YUY2, …) into
    /// the nearest one videoflip takes. Turning before conversion is what ffmpeg's autorotate does (its transpose
    /// filter on the decoder's planes), so the two agree pixel for pixel up to the conversion.
    static func turn(degrees: Int) throws(TrackError) -> [GstRef<GstElementObject>] {
        guard degrees != 0 else { return [] }
        let repack = try makeElement("videoconvert"), flip = try makeElement("videoflip")
        repack.set("dither", int: 0)  // GST_VIDEO_DITHER_NONE, as the converter (VideoChain)
        // GstVideoOrientationMethod: 1 = 90R (clockwise), 2 = 180, 3 = 90L.
        flip.set("video-direction", int: degrees == 90 ? 1 : degrees == 180 ? 2 : 3)
        return [repack, flip]
    }
}

extension GstRef where T == GstCapsObject {
    /// A copy naming `colour` as its colorimetry (swift_gst_caps_with_cicp).
    func withColorimetry(_ colour: Colorimetry) -> GstRef<GstCapsObject> {
        let cicp = [colour.range, colour.matrix, colour.primaries, colour.transfer]
        return unsafe GstRef(full: swift_gst_caps_with_cicp(pointer, cicp)!)
    }

    /// These caps naming `matrix` when they are YCbCr video that names none; nil when there is nothing to change.
    func withUntaggedMatrix(_ matrix: GstVideoColorMatrix) -> GstRef<GstCapsObject>? {
        unsafe swift_gst_caps_with_untagged_matrix(pointer, matrix).map { unsafe GstRef(full: $0) }
    }
}
