// Pad probes and element signals with Swift closures. GStreamer calls a C function with a user-data pointer; here
// that pointer is a retained box holding the closure, released by the destroy notify GStreamer calls when the probe
// or handler goes — so the closure (and what it captures) lives exactly as long as the probe or handler. The probe
// sees the GstPadProbeInfo through ProbeInfo, a noncopyable view that cannot outlive the call.
import CGStreamer
import CGstShim

/// Retains `object` for a C callback; the callback's destroy notify releases it.
private func retained<T: AnyObject>(_ object: T) -> UnsafeMutableRawPointer {
    unsafe Unmanaged.passRetained(object).toOpaque()
}

private final class ProbeBox: Sendable {
    let handler: @Sendable (borrowing ProbeInfo) -> GstPadProbeReturn
    init(_ handler: @escaping @Sendable (borrowing ProbeInfo) -> GstPadProbeReturn) { self.handler = handler }
}

private final class PadAddedBox: Sendable {
    let handler: @Sendable (GstRef<GstPadObject>) -> Void
    init(_ handler: @escaping @Sendable (GstRef<GstPadObject>) -> Void) { self.handler = handler }
}

private final class ElementAddedBox: Sendable {
    let handler: @Sendable (GstRef<GstElementObject>) -> Void
    init(_ handler: @escaping @Sendable (GstRef<GstElementObject>) -> Void) { self.handler = handler }
}

private final class SignalBox: Sendable {
    let handler: @Sendable () -> Void
    init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }
}

/// What one probe call is about: the pad, and the buffer, buffer list or event passing it (transfer none: owned by
/// the probe's caller). Valid only during the call (noncopyable, handed to the probe borrowed).
@safe struct ProbeInfo: ~Copyable {
    private let pad: UnsafeMutablePointer<GstPad>
    private let info: UnsafeMutablePointer<GstPadProbeInfo>

    fileprivate init(pad: UnsafeMutablePointer<GstPad>, info: UnsafeMutablePointer<GstPadProbeInfo>) {
        unsafe self.pad = pad
        unsafe self.info = info
    }

    /// Whether the probe type has any of the bits of `type`.
    func `is`(_ type: GstPadProbeType) -> Bool { unsafe info.pointee.type.rawValue & type.rawValue != 0 }

    private var isEvent: Bool {
        self.is(GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
            | GST_PAD_PROBE_TYPE_EVENT_UPSTREAM.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue))
    }

    private var buffer: UnsafeMutablePointer<GstBuffer>? {
        self.is(GST_PAD_PROBE_TYPE_BUFFER) ? unsafe swift_gst_pad_probe_info_buffer(info) : nil
    }

    private var event: UnsafeMutablePointer<GstEvent>? {
        isEvent ? unsafe swift_gst_pad_probe_info_event(info) : nil
    }

    /// A buffer's PTS and duration (GST_BUFFER_PTS/DURATION); nil when no buffer passes.
    var bufferTiming: (pts: GstClockTime, duration: GstClockTime)? {
        guard let buffer = unsafe buffer else { return nil }
        return unsafe (swift_gst_buffer_pts(buffer), swift_gst_buffer_duration(buffer))
    }

    /// A buffer's size in bytes; nil when no buffer passes.
    var bufferSize: UInt64? {
        guard let buffer = unsafe buffer else { return nil }
        return unsafe UInt64(gst_buffer_get_size(buffer))
    }

    /// A copy of a buffer's bytes (gst_buffer_extract); nil when no buffer passes.
    var bufferBytes: [UInt8]? { bufferBytes(upTo: .max) }

    /// A copy of a buffer's first `limit` bytes at most; nil when no buffer passes.
    func bufferBytes(upTo limit: Int) -> [UInt8]? {
        guard let buffer = unsafe buffer else { return nil }
        let size = unsafe min(Int(gst_buffer_get_size(buffer)), max(limit, 0))
        return unsafe [UInt8](unsafeUninitializedCapacity: size) { out, made in
            made = unsafe Int(gst_buffer_extract(buffer, 0, out.baseAddress, gsize(size)))
        }
    }

    /// A buffer list's total size in bytes and its number of buffers; nil when no buffer list passes.
    var bufferList: (bytes: UInt64, count: UInt64)? {
        guard self.is(GST_PAD_PROBE_TYPE_BUFFER_LIST), let data = unsafe info.pointee.data else { return nil }
        let list = OpaquePointer(data)
        return unsafe (UInt64(gst_buffer_list_calculate_size(list)), UInt64(gst_buffer_list_length(list)))
    }

    /// The type of the event passing; nil when no event passes.
    var eventType: GstEventType? {
        guard let event = unsafe event else { return nil }
        return unsafe swift_gst_event_type(event)
    }

    /// A copy of a SEGMENT event's segment; nil for anything else.
    var segment: GstSegment? {
        guard let event = unsafe event, unsafe swift_gst_event_type(event) == GST_EVENT_SEGMENT else { return nil }
        var segment: UnsafePointer<GstSegment>?
        unsafe gst_event_parse_segment(event, &segment)
        return unsafe segment?.pointee
    }

    /// A CAPS event's caps, with a reference of its own; nil for anything else.
    var caps: GstRef<GstCapsObject>? {
        guard let event = unsafe event, unsafe swift_gst_event_type(event) == GST_EVENT_CAPS else { return nil }
        var caps: UnsafeMutablePointer<GstCaps>?
        unsafe gst_event_parse_caps(event, &caps)  // transfer none
        return unsafe caps.map { unsafe GstRef(none: $0) }
    }

    /// Replaces the CAPS event passing by one carrying `caps`.
    func replaceCaps(_ caps: GstRef<GstCapsObject>) {
        guard let event = unsafe gst_event_new_caps(caps.pointer) else { return }  // takes a reference of its own
        unsafe swift_gst_pad_probe_info_replace_event(info, event)
    }

    /// The probed pad's current caps (gst_pad_get_current_caps, transfer full), or nil.
    var padCurrentCaps: GstRef<GstCapsObject>? { unsafe gst_pad_get_current_caps(pad).map { unsafe GstRef(full: $0) } }

    /// The probed pad's upstreamCodecDataCaps: the caps whose `codec_data` the container stores, else the parser's.
    var padUpstreamCodecDataCaps: GstRef<GstCapsObject>? { unsafe GstRef<GstPadObject>(none: pad).upstreamCodecDataCaps }

    /// The tags of the probed pad's sticky TAG events (stream-scoped and global), in the pad's order: what the stream
    /// has said about itself before the buffer or event being probed.
    var padTags: [EventTags] { unsafe GstRef<GstPadObject>(none: pad).stickyTags }

    /// Gives the probed buffer its DTS as its PTS (swift_gst_pad_probe_info_pts_from_dts).
    func presentAtDecodeTime() {
        guard unsafe buffer != nil else { return }
        unsafe swift_gst_pad_probe_info_pts_from_dts(info)
    }

    /// Whether the probed buffer is flagged DELTA_UNIT (not a sync sample); nil when no buffer passes.
    var bufferIsDelta: Bool? {
        guard let buffer = unsafe buffer else { return nil }
        return unsafe swift_gst_buffer_is_delta_unit(buffer) != 0
    }

    /// Flags the probed buffer DELTA_UNIT or clears the flag (made writable first).
    func setBufferDelta(_ delta: Bool) {
        guard unsafe buffer != nil else { return }
        unsafe swift_gst_pad_probe_info_set_delta(info, delta ? 1 : 0)
    }

    /// Gives the probed buffer `pts` and `dts` (GST_CLOCK_TIME_NONE: none; swift_gst_pad_probe_info_set_times).
    func setBufferTimes(pts: GstClockTime, dts: GstClockTime) {
        guard unsafe buffer != nil else { return }
        unsafe swift_gst_pad_probe_info_set_times(info, pts, dts)
    }

    /// The buffer passing, with a reference of its own (kept when the probe drops it); nil when no buffer passes.
    var bufferRef: GstRef<GstBufferObject>? {
        unsafe swift_gst_pad_probe_info_ref_buffer(info).map { unsafe GstRef(full: $0) }
    }

    /// Chains `buffer` with `pts` and `dts` (GST_CLOCK_TIME_NONE: none) into the peer of the probed pad (a source
    /// pad), as the pad would push it — also from a probe on its EOS (swift_gst_pad_chain_peer). Returns the flow.
    func chainToPeer(_ buffer: GstRef<GstBufferObject>, pts: GstClockTime, dts: GstClockTime) -> GstFlowReturn {
        unsafe swift_gst_pad_chain_peer(pad, buffer.pointer, pts, dts)
    }

    /// Sends EOS from the probed pad. Called without the pad's object lock, on the streaming thread that holds its
    /// (recursive) stream lock: the event is queued behind what was already sent.
    func sendEOS() { _ = unsafe gst_pad_send_event(pad, gst_event_new_eos()) }

    /// Sends a GAP event from the probed pad (serialized as sendEOS).
    func sendGap(pts: GstClockTime, duration: GstClockTime) {
        _ = unsafe gst_pad_send_event(pad, gst_event_new_gap(pts, duration))
    }

    /// Sends a SEGMENT event of `segment` from the probed pad (serialized as sendEOS).
    func sendSegment(_ segment: GstSegment) {
        var segment = segment
        _ = unsafe gst_pad_send_event(pad, gst_event_new_segment(&segment))
    }

    /// Chains a buffer of `bytes` into the probed pad (a sink pad; from its streaming thread, e.g. on EOS, before
    /// the EOS itself passes), with demuxer times in ns (nil: none), DELTA_UNIT unless `sync`, and an audio clipping
    /// meta of `clip` samples when not (0, 0). Returns the flow.
    func chain(_ bytes: [UInt8], pts: Int64?, dts: Int64?, duration: Int64?, sync: Bool,
               clip: (start: UInt64, end: UInt64)) -> GstFlowReturn {
        let time = { (t: Int64?) in t.map { GstClockTime(max(0, $0)) } ?? clockTimeNone }
        return unsafe bytes.withUnsafeBufferPointer { b in
            unsafe swift_gst_pad_chain_stored(pad, b.baseAddress, gsize(b.count), time(pts), time(dts), time(duration),
                                              sync ? 0 : 1, guint64(clip.start), guint64(clip.end))
        }
    }

    /// Gives the buffer passing an audio clipping meta of `start` and `end` samples (a writable copy when shared),
    /// its times moved `shift` ns later.
    func clipAudio(start: UInt64, end: UInt64, shift: Int64 = 0) {
        guard unsafe buffer != nil else { return }
        unsafe swift_gst_pad_probe_info_clip_audio(info, guint64(start), guint64(end), GstClockTime(max(0, shift)))
    }

    /// The buffer's GstAudioClippingMeta in samples (what a decoder drops at its start and end); nil when no buffer
    /// passes or it has none.
    var audioClipping: (start: UInt64, end: UInt64)? {
        guard unsafe buffer != nil else { return nil }
        var start: guint64 = 0, end: guint64 = 0
        guard unsafe swift_gst_pad_probe_info_audio_clipping(info, &start, &end) != 0 else { return nil }
        return (UInt64(start), UInt64(end))
    }

    /// Sets the start of the passing buffer's audio clipping meta to `start` samples (a writable copy when shared).
    func reclipAudio(start: UInt64) {
        guard unsafe buffer != nil else { return }
        unsafe swift_gst_pad_probe_info_reclip_audio(info, guint64(start))
    }

    /// Whether the buffer passing is flagged DECODE_ONLY (decoded, never shown: a VP8/VP9 alt-ref frame).
    var bufferIsDecodeOnly: Bool {
        guard let buffer = unsafe buffer else { return false }
        return unsafe buffer.pointee.mini_object.flags & GST_BUFFER_FLAG_DECODE_ONLY.rawValue != 0
    }

    /// A buffer's DTS (GST_BUFFER_DTS); nil when no buffer passes.
    var bufferDTS: GstClockTime? {
        guard let buffer = unsafe buffer else { return nil }
        return unsafe swift_gst_buffer_dts(buffer)
    }

    /// Replaces the SEGMENT event passing with one of `segment`: what follows this probe sees only the new one.
    func replaceSegment(_ segment: GstSegment) {
        var segment = segment
        unsafe swift_gst_pad_probe_info_replace_segment(info, &segment)
    }

    /// Refuses what passes: its sender sees `flow` (swift_gst_pad_probe_refuse).
    func refuse(_ flow: GstFlowReturn) -> GstPadProbeReturn { unsafe swift_gst_pad_probe_refuse(info, flow) }
}

extension GstRef where T == GstPadObject {
    /// gst_pad_add_probe with a closure, kept until the probe is removed or the pad finalized.
    func addProbe(_ type: GstPadProbeType, _ handler: @escaping @Sendable (borrowing ProbeInfo) -> GstPadProbeReturn) {
        _ = unsafe gst_pad_add_probe(pointer, type, { pad, info, data in
            guard let pad = unsafe pad, let info = unsafe info, let data = unsafe data else { return GST_PAD_PROBE_OK }
            let box = unsafe Unmanaged<ProbeBox>.fromOpaque(data).takeUnretainedValue()
            return unsafe box.handler(ProbeInfo(pad: pad, info: info))
        }, retained(ProbeBox(handler)), { data in
            if let data = unsafe data { unsafe Unmanaged<ProbeBox>.fromOpaque(data).release() }
        })
    }

    /// A probe that drops every buffer passing this pad and reports success upstream.
    func dropBuffers() {
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
        _ = unsafe gst_pad_add_probe(pointer, GstPadProbeType(rawValue: mask), { _, _, _ in GST_PAD_PROBE_DROP }, nil, nil)
    }
}

extension GstRef where T == GstElementObject {
    /// Connects "pad-added": `handler` gets the new pad (with a reference of its own), on a streaming thread.
    func onPadAdded(_ handler: @escaping @Sendable (GstRef<GstPadObject>) -> Void) {
        _ = unsafe swift_gst_connect_pad_added(pointer, { _, pad, data in
            guard let pad = unsafe pad, let data = unsafe data else { return }
            unsafe Unmanaged<PadAddedBox>.fromOpaque(data).takeUnretainedValue().handler(GstRef<GstPadObject>(none: pad))
        }, retained(PadAddedBox(handler)), { data, _ in
            if let data = unsafe data { unsafe Unmanaged<PadAddedBox>.fromOpaque(data).release() }
        })
    }

    /// Connects "element-added" of this bin: `handler` gets each element added to it (not to bins inside it).
    func onElementAdded(_ handler: @escaping @Sendable (GstRef<GstElementObject>) -> Void) {
        _ = unsafe swift_gst_connect_element_added(pointer, { _, element, data in
            guard let element = unsafe element, let data = unsafe data else { return }
            unsafe Unmanaged<ElementAddedBox>.fromOpaque(data).takeUnretainedValue().handler(GstRef<GstElementObject>(none: element))
        }, retained(ElementAddedBox(handler)), { data, _ in
            if let data = unsafe data { unsafe Unmanaged<ElementAddedBox>.fromOpaque(data).release() }
        })
    }

    /// Connects "no-more-pads".
    func onNoMorePads(_ handler: @escaping @Sendable () -> Void) {
        _ = unsafe swift_gst_connect_no_more_pads(pointer, { _, data in
            guard let data = unsafe data else { return }
            unsafe Unmanaged<SignalBox>.fromOpaque(data).takeUnretainedValue().handler()
        }, retained(SignalBox(handler)), { data, _ in
            if let data = unsafe data { unsafe Unmanaged<SignalBox>.fromOpaque(data).release() }
        })
    }
}
