// Samples (and their buffers) and caps, as methods on the GstRef that owns them: the data half of the audited
// boundary GstObjects.swift describes. The `unsafe` expressions here touch only pointers a GstRef keeps alive, and a
// sample's buffer only while the GstRef of its sample is held.
import CGStreamer
import CGstShim
import TrackdProtocol

// ── Samples ────────────────────────────────────────────────────────────────────────────────────────────────────────

extension GstRef where T == GstSampleObject {
    /// gst_sample_get_caps, with a reference of its own; nil when the sample has none.
    var caps: GstRef<GstCapsObject>? { unsafe gst_sample_get_caps(pointer).map { unsafe GstRef<GstCapsObject>(none: $0) } }

    /// A copy of the sample's segment (gst_sample_get_segment).
    var segment: GstSegment? { unsafe gst_sample_get_segment(pointer)?.pointee }

    /// Whether the sample holds a buffer (appsink's always do).
    var hasBuffer: Bool { unsafe gst_sample_get_buffer(pointer) != nil }

    /// The sample's buffer (transfer none: the sample, which this reference keeps, holds it). Appsink's samples
    /// always have one; for a bridge type that owns a C resource fed from buffers (RangeResampler, PulledSample's copy).
    var buffer: UnsafeMutablePointer<GstBuffer> { unsafe gst_sample_get_buffer(pointer)! }

    /// GST_BUFFER_PTS.
    var pts: GstClockTime { unsafe swift_gst_buffer_pts(buffer) }
    /// GST_BUFFER_DTS.
    var dts: GstClockTime { unsafe swift_gst_buffer_dts(buffer) }
    /// GST_BUFFER_DURATION.
    var duration: GstClockTime { unsafe swift_gst_buffer_duration(buffer) }
    /// GST_BUFFER_OFFSET_END; nil when unset (GST_BUFFER_OFFSET_NONE). oggdemux: the packet's granule position.
    var offsetEnd: UInt64? {
        let end = unsafe buffer.pointee.offset_end
        return end == guint64.max ? nil : UInt64(end)
    }
    /// gst_buffer_get_size.
    var size: Int { unsafe Int(gst_buffer_get_size(buffer)) }
    /// GST_BUFFER_FLAGS.
    var flags: guint { unsafe buffer.pointee.mini_object.flags }
    /// GST_BUFFER_FLAG_DELTA_UNIT.
    var isDeltaUnit: Bool { unsafe swift_gst_buffer_is_delta_unit(buffer) != 0 }

    /// Up to `count` bytes of the buffer from its start (gst_buffer_extract).
    func bytes(count: Int) -> [UInt8] {
        unsafe [UInt8](unsafeUninitializedCapacity: count) { out, made in
            made = unsafe Int(gst_buffer_extract(buffer, 0, out.baseAddress, gsize(count)))
        }
    }

    /// Applies the buffer's GstVideoMeta (a decoder's own strides and offsets) to `layout`
    /// (swift_gst_video_layout_apply_meta).
    func applyVideoMeta(to layout: inout SwiftGstVideoLayout) {
        _ = unsafe swift_gst_video_layout_apply_meta(buffer, &layout)
    }

    /// Non-interleaved audio: the buffer's GstAudioMeta — frames, channels and where each channel's plane starts.
    var audioMeta: (samples: Int, channels: Int, offsets: [UInt64]?)? {
        guard let meta = unsafe gst_buffer_get_meta(buffer, gst_audio_meta_api_get_type()) else { return nil }
        let audioMeta = unsafe UnsafeRawPointer(meta).assumingMemoryBound(to: GstAudioMeta.self)
        let channels = unsafe Int(audioMeta.pointee.info.channels)
        let offsets = unsafe audioMeta.pointee.offsets.map { o in (0..<channels).map { unsafe UInt64(o[$0]) } }
        return unsafe (Int(audioMeta.pointee.samples), channels, offsets)
    }

    /// The buffer's GstAudioClippingMeta when it counts samples (GST_FORMAT_DEFAULT): what a decoder drops from the
    /// start and the end of what the buffer decodes to (a demuxer's Opus pre-skip, CodecDelay, DiscardPadding).
    var audioClipping: (start: UInt64, end: UInt64)? {
        guard let meta = unsafe gst_buffer_get_meta(buffer, gst_audio_clipping_meta_api_get_type()) else { return nil }
        let clipping = unsafe UnsafeRawPointer(meta).assumingMemoryBound(to: GstAudioClippingMeta.self)
        guard unsafe clipping.pointee.format == GST_FORMAT_DEFAULT else { return nil }
        return unsafe (UInt64(clipping.pointee.start), UInt64(clipping.pointee.end))
    }

    /// A sample of a new buffer holding `bytes`, with DTS 0 and no PTS or segment, and `caps` (gst_sample_new);
    /// nil when GStreamer cannot make one.
    static func holding(_ bytes: [UInt8], caps: GstRef<GstCapsObject>?) -> GstRef<GstSampleObject>? {
        guard let buffer = unsafe bytes.withUnsafeBytes({ unsafe gst_buffer_new_memdup($0.baseAddress, gsize($0.count)) }) else {
            return nil
        }
        unsafe buffer.pointee.dts = 0
        let made = unsafe gst_sample_new(buffer, caps?.pointer, nil, nil)
        unsafe gst_buffer_unref(buffer)
        return unsafe made.map { unsafe GstRef<GstSampleObject>(full: $0) }
    }

    /// A new sample with this one's buffer, caps and segment (gst_sample_new refs the buffer and caps and copies the
    /// segment: transfer full) — appsink's own sample can then be released.
    func copy() -> GstRef<GstSampleObject> {
        unsafe GstRef(full: gst_sample_new(gst_sample_get_buffer(pointer), gst_sample_get_caps(pointer),
                                           gst_sample_get_segment(pointer), nil)!)
    }
}

// ── Caps ───────────────────────────────────────────────────────────────────────────────────────────────────────────

extension GstRef where T == GstCapsObject {
    /// gst_caps_new_empty_simple(name): caps with one structure and no fields.
    static func empty(_ name: String) -> GstRef<GstCapsObject> { unsafe GstRef(full: gst_caps_new_empty_simple(name)!) }

    /// A copy with the string field `field` set in every structure.
    func with(_ field: String, string value: String) -> GstRef<GstCapsObject> {
        unsafe GstRef(full: swift_gst_caps_with_string(pointer, field, value)!)
    }

    /// A copy with the int field `field` set in every structure.
    func with(_ field: String, int value: Int32) -> GstRef<GstCapsObject> {
        unsafe GstRef(full: swift_gst_caps_with_int(pointer, field, value)!)
    }

    /// A copy with the fraction field `field` set in every structure.
    func with(_ field: String, fraction n: Int32, _ d: Int32) -> GstRef<GstCapsObject> {
        unsafe GstRef(full: swift_gst_caps_with_fraction(pointer, field, n, d)!)
    }

    /// A copy with `channel-mask` set (swift_gst_caps_with_channel_mask).
    func withChannelMask(_ mask: UInt64) -> GstRef<GstCapsObject> {
        unsafe GstRef(full: swift_gst_caps_with_channel_mask(pointer, guint64(mask))!)
    }

    /// gst_caps_append(self, other): self (which only this reference holds) gets other's structures.
    func append(_ other: GstRef<GstCapsObject>) { unsafe gst_caps_append(pointer, gst_caps_ref(other.pointer)) }

    /// The colorimetry as CICP values (swift_gst_caps_colorimetry); nil when the caps have none.
    var colorimetry: Colorimetry? {
        var cicp: [UInt8] = [0, 2, 2, 2]
        guard unsafe swift_gst_caps_colorimetry(pointer, &cicp) != 0 else { return nil }
        return Colorimetry(range: cicp[0], matrix: cicp[1], primaries: cicp[2], transfer: cicp[3])
    }

    /// Bytes per sample of one channel of raw audio (swift_gst_audio_bytes_per_sample); 0 when not raw audio.
    var audioBytesPerSample: Int32 { unsafe swift_gst_audio_bytes_per_sample(pointer) }

    /// Positions of raw audio caps, in caps order, and the sample format (swift_gst_audio_caps_positions; no
    /// positions when not raw audio).
    var audioPositions: (positions: [GstAudioChannelPosition], format: GstAudioFormat) {
        var buffer = [GstAudioChannelPosition](repeating: GST_AUDIO_CHANNEL_POSITION_INVALID, count: 64)
        var format = GST_AUDIO_FORMAT_UNKNOWN
        let n = unsafe swift_gst_audio_caps_positions(pointer, &buffer, 64, &format)
        return (Array(buffer.prefix(Int(n))), format)
    }

    /// The raw video layout (swift_gst_video_layout_from_caps); an empty layout when the caps are not raw video.
    var videoLayout: SwiftGstVideoLayout {
        var layout = SwiftGstVideoLayout()
        _ = unsafe swift_gst_video_layout_from_caps(pointer, &layout)
        return layout
    }

    /// Whether both hold the same caps object.
    func isSame(as other: GstRef<GstCapsObject>) -> Bool { unsafe pointer == other.pointer }

    /// gst_caps_to_string.
    var description: String { unsafe takeString(gst_caps_to_string(pointer)) ?? "(no caps)" }
}

func capsToString(_ caps: GstRef<GstCapsObject>?) -> String { caps?.description ?? "(no caps)" }

/// ISO 639-2/T for an ISO 639-1 (or -2) language code (gst_tag_get_language_code_iso_639_2T), or nil.
func iso639_2T(_ language: String) -> String? {
    unsafe gst_tag_get_language_code_iso_639_2T(language).map { unsafe String(cString: $0) }
}

/// Bytes of tight NV12 at width × height (swift_gst_nv12_size).
func nv12Size(width: UInt32, height: UInt32) -> Int { Int(swift_gst_nv12_size(width, height)) }

/// The channel-mask of `positions` (gst_audio_channel_positions_to_mask, unforced); nil when they make none.
func channelMask(_ positions: [GstAudioChannelPosition]) -> UInt64? {
    var mask: guint64 = 0
    return unsafe gst_audio_channel_positions_to_mask(positions, gint(positions.count), 0, &mask) != 0 ? UInt64(mask) : nil
}
