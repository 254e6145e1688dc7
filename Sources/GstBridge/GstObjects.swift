// The calls GstBridge makes on elements, pads, buses, messages and events, as methods on the GstRef that owns the
// object. This file (with GstRef.swift, GstSamples.swift, Probes.swift and Caps.swift's CapsView) is the audited
// boundary: the `unsafe` expressions here touch the pointer a GstRef keeps alive, so callers hold no raw pointer
// (issue #12: "raw pointers stay only inside the wrappers and the C shims"). Each method names the transfer of what
// it hands back.
import CGStreamer
import CGstShim
import TrackdProtocol

// ── Pointer casts between GObject "subclasses" (C structs whose first member is the parent) ─────────────────────

typealias ElementPtr = UnsafeMutablePointer<GstElement>

@inline(__always) func upcast<T, U>(_ p: UnsafeMutablePointer<T>, to: U.Type) -> UnsafeMutablePointer<U> {
    unsafe UnsafeMutablePointer<U>(OpaquePointer(p))
}

@inline(__always) func bin(_ e: ElementPtr) -> UnsafeMutablePointer<GstBin> { unsafe upcast(e, to: GstBin.self) }
@inline(__always) func appSink(_ e: ElementPtr) -> UnsafeMutablePointer<GstAppSink> {
    unsafe upcast(e, to: GstAppSink.self)
}

/// Takes a transfer-full gchar* and frees it.
func takeString(_ p: UnsafeMutablePointer<gchar>?) -> String? {
    guard let p = unsafe p else { return nil }
    defer { unsafe g_free(p) }
    return unsafe String(cString: p)
}

// ── Elements ───────────────────────────────────────────────────────────────────────────────────────────────────────

extension GstRef where T == GstElementObject {
    /// g_object_set of a gint property.
    func set(_ property: String, int value: Int32) { unsafe swift_gst_object_set_int(pointer, property, value) }
    /// g_object_set of a guint property.
    func set(_ property: String, uint value: UInt32) { unsafe swift_gst_object_set_uint(pointer, property, value) }
    /// g_object_set of a guint64 property.
    func set(_ property: String, uint64 value: UInt64) {
        unsafe swift_gst_object_set_uint64(pointer, property, guint64(value))
    }
    /// g_object_set of a gboolean property.
    func set(_ property: String, bool value: Bool) {
        unsafe swift_gst_object_set_bool(pointer, property, value ? 1 : 0)
    }
    /// g_object_set of a GstCaps property (the element takes a reference of its own).
    func set(_ property: String, caps: GstRef<GstCapsObject>) {
        unsafe swift_gst_object_set_caps(pointer, property, caps.pointer)
    }

    /// gst_element_get_static_pad (transfer full), or nil when the element has no such pad.
    func staticPadIfAny(_ name: String) -> GstRef<GstPadObject>? {
        unsafe gst_element_get_static_pad(pointer, name).map { unsafe GstRef<GstPadObject>(full: $0) }
    }

    /// gst_element_get_static_pad of a pad every element of the kind has.
    func staticPad(_ name: String) -> GstRef<GstPadObject> { staticPadIfAny(name)! }

    /// The element's name (gst_object_get_name).
    var name: String { unsafe takeString(gst_object_get_name(upcast(pointer, to: GstObject.self))) ?? "element" }

    /// The name of the element's factory ("mpegpsdemux"), nil when it has none.
    var factoryName: String? {
        unsafe swift_gst_object_factory_name(upcast(pointer, to: GstObject.self)).map { unsafe String(cString: $0) }
    }

    /// gst_element_set_state.
    @discardableResult
    func setState(_ state: GstState) -> GstStateChangeReturn { unsafe gst_element_set_state(pointer, state) }

    /// gst_element_seek in GST_FORMAT_TIME at rate 1; false when refused.
    func seek(flags: guint, start: Int64, stopType: GstSeekType, stop: Int64) -> Bool {
        unsafe gst_element_seek(pointer, 1.0, GST_FORMAT_TIME, GstSeekFlags(rawValue: flags), GST_SEEK_TYPE_SET,
                                gint64(start), stopType, gint64(stop)) != 0
    }

    /// gst_element_query_duration in time (ns), or nil.
    var duration: Int64? {
        var duration: gint64 = 0
        return unsafe gst_element_query_duration(pointer, GST_FORMAT_TIME, &duration) != 0 ? Int64(duration) : nil
    }

    /// gst_element_get_bus (transfer full).
    var bus: GstRef<GstBusObject> { unsafe GstRef<GstBusObject>(full: gst_element_get_bus(pointer)) }

    /// gst_bin_add: the bin (self) takes a reference of its own on `child`.
    func add(_ child: GstRef<GstElementObject>) { _ = unsafe gst_bin_add(bin(pointer), child.pointer) }

    /// gst_element_link(self, next).
    func link(_ next: GstRef<GstElementObject>) -> Bool { unsafe gst_element_link(pointer, next.pointer) != 0 }

    /// swift_gst_bin_record_first_error on this bin.
    func recordFirstError() { unsafe swift_gst_bin_record_first_error(bin(pointer)) }

    /// swift_gst_bin_first_error on this bin (transfer full), or nil.
    func firstRecordedError() -> GstRef<GstMessageObject>? {
        unsafe swift_gst_bin_first_error(bin(pointer)).map { unsafe GstRef<GstMessageObject>(full: $0) }
    }

    /// Whether every streaming task inside this bin is paused (swift_gst_bin_tasks_all_paused).
    var tasksAllPaused: Bool { unsafe swift_gst_bin_tasks_all_paused(bin(pointer)) != 0 }

    /// swift_gst_parsebin_expose_container_framed on this parsebin.
    func exposeContainerFramed() { unsafe swift_gst_parsebin_expose_container_framed(pointer) }

    /// swift_gst_bin_tune_decoders on this decodebin.
    func tuneDecoders(maxThreads: Int32, directRendering: Bool) {
        unsafe swift_gst_bin_tune_decoders(pointer, maxThreads, directRendering ? 1 : 0)
    }

    /// appsink: gst_app_sink_try_pull_sample (transfer full), nil on timeout or EOS.
    func tryPullSample(timeoutNs: UInt64) -> GstRef<GstSampleObject>? {
        unsafe gst_app_sink_try_pull_sample(appSink(pointer), GstClockTime(timeoutNs)).map { unsafe GstRef<GstSampleObject>(full: $0) }
    }

    /// appsink: gst_app_sink_try_pull_preroll (transfer full), nil on timeout or EOS.
    func tryPullPreroll(timeoutNs: UInt64) -> GstRef<GstSampleObject>? {
        unsafe gst_app_sink_try_pull_preroll(appSink(pointer), GstClockTime(timeoutNs)).map { unsafe GstRef<GstSampleObject>(full: $0) }
    }

    /// appsink: gst_app_sink_is_eos.
    var isEOS: Bool { unsafe gst_app_sink_is_eos(appSink(pointer)) != 0 }
}

/// gst_element_factory_make; a missing element is a broken installation. The new element's floating reference is
/// ours: a bin it is added to takes a reference of its own.
func makeElement(_ factory: String, _ name: String? = nil) throws(TrackError) -> GstRef<GstElementObject> {
    guard let e = unsafe gst_element_factory_make(factory, name) else {
        throw TrackError(.decoderNotFound, "GStreamer element \"\(factory)\" is not installed")
    }
    return unsafe GstRef(floating: e)
}

// ── Pads ───────────────────────────────────────────────────────────────────────────────────────────────────────────

extension GstRef where T == GstPadObject {
    /// gst_pad_get_current_caps (transfer full), or nil before negotiation.
    var currentCaps: GstRef<GstCapsObject>? { unsafe gst_pad_get_current_caps(pointer).map { unsafe GstRef<GstCapsObject>(full: $0) } }

    /// The current caps, else what the pad could produce (gst_pad_query_caps, transfer full).
    var currentOrQueriedCaps: GstRef<GstCapsObject>? {
        if let caps = currentCaps { return caps }
        return unsafe gst_pad_query_caps(pointer, nil).map { unsafe GstRef<GstCapsObject>(full: $0) }
    }

    /// gst_pad_link(self, sink).
    func link(to sink: GstRef<GstPadObject>) -> GstPadLinkReturn { unsafe gst_pad_link(pointer, sink.pointer) }

    /// gst_pad_get_stream_id, or nil.
    var streamID: String? { unsafe takeString(gst_pad_get_stream_id(pointer)) }

    /// gst_pad_query_duration in time (ns), or nil.
    var duration: Int64? {
        var duration: gint64 = 0
        return unsafe gst_pad_query_duration(pointer, GST_FORMAT_TIME, &duration) != 0 ? Int64(duration) : nil
    }

    /// The pad's sticky event of `type` at `index` (gst_pad_get_sticky_event, transfer full), or nil.
    func stickyEvent(_ type: GstEventType, index: guint = 0) -> GstRef<GstEventObject>? {
        unsafe gst_pad_get_sticky_event(pointer, type, index).map { unsafe GstRef<GstEventObject>(full: $0) }
    }

    /// A copy of the pad's sticky SEGMENT (nil when none).
    var stickySegment: GstSegment? { stickyEvent(GST_EVENT_SEGMENT)?.segment }

    /// A copy of the segment in force where the pad's data comes from: the upstream-most sticky SEGMENT in TIME, a
    /// demuxer's (swift_gst_pad_upstream_time_segment); nil when there is none.
    var upstreamTimeSegment: GstSegment? {
        var segment = GstSegment()
        return unsafe swift_gst_pad_upstream_time_segment(pointer, &segment) != 0 ? segment : nil
    }

    /// The current caps of the upstream-most pad whose caps carry `codec_data`: the demuxer's where the container
    /// stores a configuration record, else the parser's (swift_gst_pad_upstream_codec_data_caps); nil when none has.
    var upstreamCodecDataCaps: GstRef<GstCapsObject>? {
        unsafe swift_gst_pad_upstream_codec_data_caps(pointer).map { unsafe GstRef<GstCapsObject>(full: $0) }
    }

    /// The tags of the pad's sticky TAG events (stream-scoped and global), in order.
    var stickyTags: [EventTags] {
        var tags: [EventTags] = []
        var index: guint = 0
        while let event = stickyEvent(GST_EVENT_TAG, index: index) {
            index += 1
            if let eventTags = event.tags { tags.append(eventTags) }
        }
        return tags
    }
}

// ── Events, messages, buses ────────────────────────────────────────────────────────────────────────────────────────

extension GstRef where T == GstEventObject {
    /// GST_EVENT_TYPE.
    var type: GstEventType { unsafe swift_gst_event_type(pointer) }

    /// A copy of a SEGMENT event's segment (gst_event_parse_segment), nil for another event.
    var segment: GstSegment? {
        guard type == GST_EVENT_SEGMENT else { return nil }
        var segment: UnsafePointer<GstSegment>?
        unsafe gst_event_parse_segment(pointer, &segment)
        return unsafe segment?.pointee
    }

    /// A TAG event's tags as (language, bitrate, nominal bitrate, orientation) strings/values (gst_event_parse_tag).
    var tags: EventTags? {
        var list: UnsafeMutablePointer<GstTagList>?
        unsafe gst_event_parse_tag(pointer, &list)
        guard let list = unsafe list else { return nil }
        return unsafe EventTags(list: list)
    }
}

/// The tags of one TAG event that describeTrack reads (valid as a copy: strings and numbers only).
struct EventTags: Sendable {
    var language: String?
    var bitRate: UInt32?
    var nominalBitRate: UInt32?
    var orientation: String?

    fileprivate init(list: UnsafeMutablePointer<GstTagList>) {
        func string(_ tag: String) -> String? {
            var value: UnsafeMutablePointer<gchar>?
            return unsafe gst_tag_list_get_string(list, tag, &value) != 0 ? unsafe takeString(value) : nil
        }
        func uint(_ tag: String) -> UInt32? {
            var value: guint = 0
            return unsafe gst_tag_list_get_uint(list, tag, &value) != 0 ? value : nil
        }
        language = string("language-code")
        bitRate = uint("bitrate")
        nominalBitRate = uint("nominal-bitrate")
        orientation = string("image-orientation")
    }
}

extension GstRef where T == GstBusObject {
    /// gst_bus_timed_pop (transfer full), nil on timeout.
    func pop(timeoutNs: UInt64) -> GstRef<GstMessageObject>? {
        unsafe gst_bus_timed_pop(pointer, GstClockTime(timeoutNs)).map { unsafe GstRef<GstMessageObject>(full: $0) }
    }

    /// gst_bus_pop (transfer full), nil when the bus is empty.
    func pop() -> GstRef<GstMessageObject>? { unsafe gst_bus_pop(pointer).map { unsafe GstRef<GstMessageObject>(full: $0) } }

    /// Posts an application message named `name` with a string field "text" (AppMessage). The message has no
    /// source: gst_element_post_message on the pipeline would post it on this same bus.
    func postApplication(_ name: String, text: String) {
        guard let s = unsafe swift_gst_structure_new_with_string(name, "text", text) else { return }
        if let m = unsafe gst_message_new_application(nil, s) { _ = unsafe gst_bus_post(pointer, m) }
    }
}

/// What an ERROR message says (gst_message_parse_error): its GError's domain, code and text, and the debug string.
struct ErrorDetails {
    var domain: GQuark
    var code: Int32
    var message: String?
    var debug: String?
}

extension GstRef where T == GstMessageObject {
    /// GST_MESSAGE_TYPE.
    var type: GstMessageType { unsafe swift_gst_message_type(pointer) }

    /// An ERROR message's details; nil for another message or an ERROR without a GError.
    var errorDetails: ErrorDetails? {
        guard type == GST_MESSAGE_ERROR else { return nil }
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        unsafe gst_message_parse_error(pointer, &error, &debug)
        let debugText = unsafe takeString(debug)
        guard let error = unsafe error else { return nil }
        defer { unsafe g_error_free(error) }
        return unsafe ErrorDetails(domain: error.pointee.domain, code: error.pointee.code,
                                   message: error.pointee.message.map { unsafe String(cString: $0) }, debug: debugText)
    }

    /// The factory name of the element that posted the message ("qtdemux"), when an element did.
    var sourceFactory: String? {
        unsafe swift_gst_object_factory_name(pointer.pointee.src).map { unsafe String(cString: $0) }
    }

    /// Whether the message's source is `object`.
    func isFrom(_ object: GstRef<GstElementObject>) -> Bool {
        unsafe pointer.pointee.src == upcast(object.pointer, to: GstObject.self)
    }

    /// Whether the message's source is inside `bin` (gst_object_has_as_ancestor): an element the bin still holds.
    func isFrom(inside bin: GstRef<GstElementObject>) -> Bool {
        guard let source = unsafe pointer.pointee.src else { return false }
        return unsafe gst_object_has_as_ancestor(source, upcast(bin.pointer, to: GstObject.self)) != 0
    }

    /// The number of streams of a STREAM_COLLECTION message (gst_message_parse_stream_collection); nil when it has
    /// no collection.
    var streamCollectionSize: Int? {
        var collection: UnsafeMutablePointer<GstStreamCollection>?
        unsafe gst_message_parse_stream_collection(pointer, &collection)
        guard let owned = unsafe collection.map({ unsafe GstRef<GstStreamCollectionObject>(full: $0) }) else { return nil }
        return unsafe Int(gst_stream_collection_get_size(owned.pointer))
    }

    /// GST_MESSAGE_SEQNUM.
    var seqnum: UInt32 { unsafe gst_message_get_seqnum(pointer) }

    /// An application message's structure name and "text" field (AppMessage); nil without a structure.
    var applicationText: (name: String, text: String)? {
        guard let s = unsafe gst_message_get_structure(pointer), let name = unsafe gst_structure_get_name(s) else {
            return nil
        }
        let text = unsafe gst_structure_get_string(s, "text").map { unsafe String(cString: $0) } ?? ""
        return unsafe (String(cString: name), text)
    }

    /// Whether this is a missing-plugin ELEMENT message.
    var isMissingPlugin: Bool { unsafe gst_is_missing_plugin_message(pointer) != 0 }

    /// A missing-plugin message's description ("H.264 decoder").
    var missingPluginDescription: String? { unsafe takeString(gst_missing_plugin_message_get_description(pointer)) }
}
