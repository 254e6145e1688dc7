// The small shims (declared in CGstShim.h): g_object_set, macros, signals, video layout, caps, audio channel
// positions. The source element is in FdSrc.c, the pixel loops in PixelCopy.c, plugin loading and the rehearsal clip
// in Plugins.c, the zero-copy allocator in MemfdPool.c.
#define _GNU_SOURCE
#include "CGstShim.h"

#include <string.h>

#include <gst/audio/audio.h>

// ═══ g_object_set ═══════════════════════════════════════════════════════════════════════════════════════════════

void swift_gst_object_set_int(gpointer object, const char *name, gint value) { g_object_set(object, name, value, NULL); }
void swift_gst_object_set_uint(gpointer object, const char *name, guint value) { g_object_set(object, name, value, NULL); }
void swift_gst_object_set_uint64(gpointer object, const char *name, guint64 value) { g_object_set(object, name, value, NULL); }
void swift_gst_object_set_bool(gpointer object, const char *name, gboolean value) { g_object_set(object, name, value, NULL); }
void swift_gst_object_set_caps(gpointer object, const char *name, const GstCaps *caps) { g_object_set(object, name, caps, NULL); }

// ═══ macros ═════════════════════════════════════════════════════════════════════════════════════════════════════

GstClockTime swift_gst_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }
GstClockTime swift_gst_buffer_pts(const GstBuffer *buffer) { return GST_BUFFER_PTS(buffer); }
GstClockTime swift_gst_buffer_dts(const GstBuffer *buffer) { return GST_BUFFER_DTS(buffer); }
GstClockTime swift_gst_buffer_duration(const GstBuffer *buffer) { return GST_BUFFER_DURATION(buffer); }
gboolean swift_gst_buffer_is_delta_unit(const GstBuffer *buffer) {
    return GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT) ? TRUE : FALSE;
}
GstMessageType swift_gst_message_type(const GstMessage *message) { return GST_MESSAGE_TYPE(message); }
GstEventType swift_gst_event_type(const GstEvent *event) { return GST_EVENT_TYPE(event); }
GstEvent *swift_gst_pad_probe_info_event(GstPadProbeInfo *info) { return GST_PAD_PROBE_INFO_EVENT(info); }
GstBuffer *swift_gst_pad_probe_info_buffer(GstPadProbeInfo *info) { return GST_PAD_PROBE_INFO_BUFFER(info); }
void swift_gst_pad_probe_info_replace_segment(GstPadProbeInfo *info, const GstSegment *segment) {
    GstEvent *old = GST_PAD_PROBE_INFO_EVENT(info);
    GstEvent *event = gst_event_new_segment(segment);
    if (old != NULL) {
        gst_event_set_seqnum(event, gst_event_get_seqnum(old));
        gst_event_unref(old);
    }
    GST_PAD_PROBE_INFO_DATA(info) = event;
}
/// Gives `buffer` (writable; borrowed) one GstAudioClippingMeta of `start` and `end` samples: the one it has is set
/// — a demuxer's or parser's, or StoredSampleFeeder's own on a buffer it chained itself, which passes its probe again
/// — never a second one added: a decoder reads only the first, and a passthrough buffer would carry the trim twice.
static void set_audio_clipping(GstBuffer *buffer, guint64 start, guint64 end) {
    GstAudioClippingMeta *meta = gst_buffer_get_audio_clipping_meta(buffer);
    if (meta == NULL) {
        gst_buffer_add_audio_clipping_meta(buffer, GST_FORMAT_DEFAULT, start, end);
        return;
    }
    meta->format = GST_FORMAT_DEFAULT;
    meta->start = start;
    meta->end = end;
}
GstFlowReturn swift_gst_pad_chain_stored(GstPad *pad, const guint8 *bytes, gsize size, GstClockTime pts,
                                         GstClockTime dts, GstClockTime duration, gboolean delta,
                                         guint64 clip_start, guint64 clip_end) {
    GstBuffer *buffer = gst_buffer_new_memdup(bytes, size);
    if (buffer == NULL) return GST_FLOW_ERROR;
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DTS(buffer) = dts;
    GST_BUFFER_DURATION(buffer) = duration;
    if (delta) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    if (clip_start != 0 || clip_end != 0) set_audio_clipping(buffer, clip_start, clip_end);
    return gst_pad_chain(pad, buffer);
}
void swift_gst_pad_probe_info_clip_audio(GstPadProbeInfo *info, guint64 start, guint64 end, GstClockTime shift) {
    GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    set_audio_clipping(buffer, start, end);
    if (shift == 0) return;
    if (GST_BUFFER_PTS_IS_VALID(buffer)) GST_BUFFER_PTS(buffer) += shift;
    if (GST_BUFFER_DTS_IS_VALID(buffer)) GST_BUFFER_DTS(buffer) += shift;
    if (GST_BUFFER_DURATION_IS_VALID(buffer))
        GST_BUFFER_DURATION(buffer) = GST_BUFFER_DURATION(buffer) > shift ? GST_BUFFER_DURATION(buffer) - shift : 0;
}
gboolean swift_gst_pad_probe_info_audio_clipping(GstPadProbeInfo *info, guint64 *start, guint64 *end) {
    GstAudioClippingMeta *meta = gst_buffer_get_audio_clipping_meta(GST_PAD_PROBE_INFO_BUFFER(info));
    if (meta == NULL || meta->format != GST_FORMAT_DEFAULT) return FALSE;
    *start = meta->start;
    *end = meta->end;
    return TRUE;
}
void swift_gst_pad_probe_info_reclip_audio(GstPadProbeInfo *info, guint64 start) {
    GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    GstAudioClippingMeta *meta = gst_buffer_get_audio_clipping_meta(buffer);
    if (meta != NULL) meta->start = start;
}
void swift_gst_pad_probe_info_pts_from_dts(GstPadProbeInfo *info) {
    GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    GST_BUFFER_PTS(buffer) = GST_BUFFER_DTS(buffer);
}
void swift_gst_pad_probe_info_set_times(GstPadProbeInfo *info, GstClockTime pts, GstClockTime dts) {
    GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DTS(buffer) = dts;
}
void swift_gst_pad_probe_info_set_delta(GstPadProbeInfo *info, gboolean delta) {
    GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    if (delta) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    else GST_BUFFER_FLAG_UNSET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
}
GstBuffer *swift_gst_pad_probe_info_ref_buffer(GstPadProbeInfo *info) {
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    return buffer == NULL ? NULL : gst_buffer_ref(buffer);
}
GstFlowReturn swift_gst_pad_chain_peer(GstPad *pad, GstBuffer *buffer, GstClockTime pts, GstClockTime dts) {
    GstPad *peer = gst_pad_get_peer(pad);
    if (peer == NULL) return GST_FLOW_NOT_LINKED;
    GstBuffer *out = gst_buffer_make_writable(gst_buffer_ref(buffer));
    GST_BUFFER_PTS(out) = pts;
    GST_BUFFER_DTS(out) = dts;
    GstFlowReturn flow = gst_pad_chain(peer, out);
    gst_object_unref(peer);
    return flow;
}
GstPadProbeReturn swift_gst_pad_probe_refuse(GstPadProbeInfo *info, GstFlowReturn flow) {
    if (GST_PAD_PROBE_INFO_DATA(info) != NULL) {
        gst_mini_object_unref(GST_MINI_OBJECT_CAST(GST_PAD_PROBE_INFO_DATA(info)));
        GST_PAD_PROBE_INFO_DATA(info) = NULL;
    }
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = flow;
    return GST_PAD_PROBE_HANDLED;
}
void swift_gst_pad_probe_info_replace_event(GstPadProbeInfo *info, GstEvent *event) {
    if (GST_PAD_PROBE_INFO_DATA(info) != NULL) gst_mini_object_unref(GST_MINI_OBJECT_CAST(GST_PAD_PROBE_INFO_DATA(info)));
    GST_PAD_PROBE_INFO_DATA(info) = event;
}
typedef struct {
    int tasks;
    int running;
} TaskCount;

static void count_pad_task(const GValue *value, gpointer data) {
    GstPad *pad = GST_PAD(g_value_get_object(value));
    TaskCount *count = data;
    GST_OBJECT_LOCK(pad);
    GstTask *task = GST_PAD_TASK(pad);
    if (task != NULL) {
        count->tasks++;
        if (gst_task_get_state(task) == GST_TASK_STARTED) count->running++;
    }
    GST_OBJECT_UNLOCK(pad);
}

static void count_element_tasks(const GValue *value, gpointer data) {
    GstElement *element = GST_ELEMENT(g_value_get_object(value));
    GstIterator *pads = gst_element_iterate_pads(element);
    while (gst_iterator_foreach(pads, count_pad_task, data) == GST_ITERATOR_RESYNC) gst_iterator_resync(pads);
    gst_iterator_free(pads);
}

gboolean swift_gst_bin_tasks_all_paused(GstBin *bin) {
    TaskCount count = {0, 0};
    GstIterator *elements = gst_bin_iterate_recurse(bin);
    while (gst_iterator_foreach(elements, count_element_tasks, &count) == GST_ITERATOR_RESYNC) {
        count.tasks = count.running = 0;
        gst_iterator_resync(elements);
    }
    gst_iterator_free(elements);
    return count.tasks > 0 && count.running == 0;
}

// ═══ where a pad's data comes from ══════════════════════════════════════════════════════════════════════════════

// The element's only sink pad (a new reference), or NULL when it has none or several (a muxer, a selector: no single
// upstream).
static GstPad *only_sink_pad(GstElement *element) {
    GstPad *pad = NULL;
    GST_OBJECT_LOCK(element);
    if (element->numsinkpads == 1) pad = gst_object_ref(GST_PAD(element->sinkpads->data));
    GST_OBJECT_UNLOCK(element);
    return pad;
}

// The pad upstream of `pad` (a new reference), or NULL at a source element or a fork in the graph.
static GstPad *upstream_pad(GstPad *pad) {
    if (GST_IS_GHOST_PAD(pad) && GST_PAD_IS_SRC(pad)) return gst_ghost_pad_get_target(GST_GHOST_PAD(pad));
    if (GST_PAD_IS_SINK(pad)) return gst_pad_get_peer(pad);
    GstElement *element = gst_pad_get_parent_element(pad);
    if (element == NULL) return NULL;
    GstPad *sink = only_sink_pad(element);
    gst_object_unref(element);
    return sink;
}

// Calls `visit` on `pad` and then on each pad upstream of it, in order, each borrowed for the call.
static void walk_upstream(GstPad *pad, void (*visit)(GstPad *at, gpointer data), gpointer data) {
    GstPad *at = gst_object_ref(pad);
    for (int hops = 0; at != NULL && hops < 32; hops++) {  // a pipeline is a few elements deep; 32 bounds a cycle
        visit(at, data);
        GstPad *next = upstream_pad(at);
        gst_object_unref(at);
        at = next;
    }
    if (at != NULL) gst_object_unref(at);
}

typedef struct {
    GstSegment *out;
    gboolean found;
} TimeSegmentSearch;

// Copies the pad's sticky SEGMENT into the search's `out` when it is in TIME (a later pad's overwrites it).
static void keep_time_segment(GstPad *at, gpointer data) {
    TimeSegmentSearch *search = data;
    GstEvent *event = gst_pad_get_sticky_event(at, GST_EVENT_SEGMENT, 0);
    if (event == NULL) return;
    const GstSegment *segment = NULL;
    gst_event_parse_segment(event, &segment);
    if (segment->format == GST_FORMAT_TIME) {
        gst_segment_copy_into(segment, search->out);
        search->found = TRUE;
    }
    gst_event_unref(event);
}

gboolean swift_gst_pad_upstream_time_segment(GstPad *pad, GstSegment *out) {
    TimeSegmentSearch search = {out, FALSE};
    walk_upstream(pad, keep_time_segment, &search);
    return search.found;
}

// Keeps the pad's current caps in *data (a GstCaps *, replacing a later pad's) when they carry codec_data.
static void keep_codec_data_caps(GstPad *at, gpointer data) {
    GstCaps *caps = gst_pad_get_current_caps(at);
    if (caps == NULL) return;
    if (gst_caps_get_size(caps) > 0 && gst_structure_has_field(gst_caps_get_structure(caps, 0), "codec_data")) {
        gst_caps_replace((GstCaps **)data, caps);
    }
    gst_caps_unref(caps);
}

GstCaps *swift_gst_pad_upstream_codec_data_caps(GstPad *pad) {
    GstCaps *found = NULL;
    walk_upstream(pad, keep_codec_data_caps, &found);
    return found;
}

// ═══ errors a bin's children post ═══════════════════════════════════════════════════════════════════════════════

static GQuark first_error_quark(void) {
    return g_quark_from_static_string("trackd-first-error");  // thread-safe; the same quark every time
}

// What GstBin's own child-bus handler does (bin_bus_handler in gstbin.c: hand the message to the class's
// handle_message, which takes it, and drop it from the bus), after keeping a reference to the first ERROR.
static GstBusSyncReply record_first_error(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    GstBin *bin = GST_BIN(data);
    if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
        GST_OBJECT_LOCK(bin);
        if (g_object_get_qdata(G_OBJECT(bin), first_error_quark()) == NULL) {
            g_object_set_qdata_full(G_OBJECT(bin), first_error_quark(), gst_message_ref(message),
                                    (GDestroyNotify)gst_message_unref);
        }
        GST_OBJECT_UNLOCK(bin);
    }
    GstBinClass *klass = GST_BIN_GET_CLASS(bin);
    if (klass->handle_message != NULL) {
        klass->handle_message(bin, message);
    } else {
        gst_message_unref(message);
    }
    return GST_BUS_DROP;
}

void swift_gst_bin_record_first_error(GstBin *bin) {
    GstBus *bus = bin->child_bus;
    gst_bus_set_sync_handler(bus, NULL, NULL, NULL);  // a sync handler cannot be replaced, only cleared and set
    gst_bus_set_sync_handler(bus, record_first_error, bin, NULL);
}

GstMessage *swift_gst_bin_first_error(GstBin *bin) {
    GST_OBJECT_LOCK(bin);
    GstMessage *message = g_object_get_qdata(G_OBJECT(bin), first_error_quark());
    if (message != NULL) gst_message_ref(message);
    GST_OBJECT_UNLOCK(bin);
    return message;
}

const gchar *swift_gst_object_factory_name(GstObject *object) {
    if (object == NULL || !GST_IS_ELEMENT(object)) return NULL;
    GstElementFactory *factory = gst_element_get_factory(GST_ELEMENT(object));  // transfer none
    return factory != NULL ? gst_plugin_feature_get_name(GST_PLUGIN_FEATURE(factory)) : NULL;
}

gint swift_gst_audio_bytes_per_sample(const GstCaps *caps) {
    GstAudioInfo info;
    if (caps == NULL || !gst_audio_info_from_caps(&info, caps) || GST_AUDIO_INFO_CHANNELS(&info) <= 0) return 0;
    return GST_AUDIO_INFO_BPF(&info) / GST_AUDIO_INFO_CHANNELS(&info);
}

// ═══ signals ════════════════════════════════════════════════════════════════════════════════════════════════════

gulong swift_gst_connect_pad_added(GstElement *element, SwiftGstPadAddedCallback callback, gpointer user_data,
                                   GClosureNotify destroy) {
    return g_signal_connect_data(element, "pad-added", G_CALLBACK(callback), user_data, destroy, 0);
}

gulong swift_gst_connect_no_more_pads(GstElement *element, SwiftGstNoMorePadsCallback callback, gpointer user_data,
                                      GClosureNotify destroy) {
    return g_signal_connect_data(element, "no-more-pads", G_CALLBACK(callback), user_data, destroy, 0);
}

gulong swift_gst_connect_element_added(GstElement *bin, SwiftGstElementAddedCallback callback, gpointer user_data,
                                       GClosureNotify destroy) {
    return g_signal_connect_data(bin, "element-added", G_CALLBACK(callback), user_data, destroy, 0);
}

static gboolean continue_unless_container_framed(GstElement *bin, GstPad *pad, GstCaps *caps, gpointer data) {
    (void)bin;
    (void)pad;
    (void)data;
    if (caps == NULL || gst_caps_get_size(caps) == 0) return TRUE;
    return !gst_structure_has_field(gst_caps_get_structure(caps, 0), "codec_data");
}

void swift_gst_parsebin_expose_container_framed(GstElement *parsebin) {
    g_signal_connect(parsebin, "autoplug-continue", G_CALLBACK(continue_unless_container_framed), NULL);
}

// ═══ video layout ═══════════════════════════════════════════════════════════════════════════════════════════════

static uint8_t swift_gst_cicp_range(GstVideoColorRange range) {
    switch (range) {
    case GST_VIDEO_COLOR_RANGE_16_235: return 1;
    case GST_VIDEO_COLOR_RANGE_0_255: return 2;
    default: return 0;
    }
}

// Primaries and transfer: H.273's 0 is reserved, so GStreamer's 0 (unknown) is reported as 2, unspecified.
static uint8_t swift_gst_cicp(guint code) { return code == 0 || code > 255 ? 2 : (uint8_t)code; }
// MatrixCoefficients: 0 is identity, GStreamer's RGB matrix (its unknown is already 2).
static uint8_t swift_gst_cicp_matrix(guint code) { return code > 255 ? 2 : (uint8_t)code; }

gboolean swift_gst_video_layout_from_caps(const GstCaps *caps, SwiftGstVideoLayout *out) {
    GstVideoInfo info;
    memset(out, 0, sizeof *out);
    if (caps == NULL || !gst_video_info_from_caps(&info, caps)) return FALSE;
    const GstVideoFormatInfo *finfo = info.finfo;
    out->format = GST_VIDEO_INFO_FORMAT(&info);
    out->width = (uint32_t)GST_VIDEO_INFO_WIDTH(&info);
    out->height = (uint32_t)GST_VIDEO_INFO_HEIGHT(&info);
    out->n_planes = MIN(GST_VIDEO_INFO_N_PLANES(&info), SWIFT_GST_MAX_PLANES);
    for (guint p = 0; p < out->n_planes; p++) {
        gint comps[GST_VIDEO_MAX_COMPONENTS];
        gst_video_format_info_component(finfo, p, comps);
        gint c = comps[0] >= 0 ? comps[0] : 0;
        out->offset[p] = (uint64_t)GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
        out->stride[p] = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
        out->row_bytes[p] = (uint32_t)(GST_VIDEO_INFO_COMP_WIDTH(&info, c) * GST_VIDEO_FORMAT_INFO_PSTRIDE(finfo, c));
        if (out->row_bytes[p] == 0 || out->row_bytes[p] > (uint32_t)ABS(out->stride[p]))
            out->row_bytes[p] = (uint32_t)ABS(out->stride[p]);  // complex packings (v210…): the whole stride
        out->plane_height[p] = (uint32_t)GST_VIDEO_INFO_COMP_HEIGHT(&info, c);
    }
    // gst_video_info_from_caps replaces a YCbCr colorimetry without a matrix (decoders say "1:0:0:0" for a stream
    // that only flags full range) by the size-based default, losing the range: read the caps' string itself.
    GstVideoColorimetry colorimetry = info.colorimetry;
    const gchar *text = gst_structure_get_string(gst_caps_get_structure(caps, 0), "colorimetry");
    GstVideoColorimetry parsed;
    if (text != NULL && gst_video_colorimetry_from_string(&parsed, text)) colorimetry = parsed;
    out->range = swift_gst_cicp_range(colorimetry.range);
    out->matrix = swift_gst_cicp_matrix(gst_video_color_matrix_to_iso(colorimetry.matrix));
    out->primaries = swift_gst_cicp(gst_video_color_primaries_to_iso(colorimetry.primaries));
    out->transfer = swift_gst_cicp(gst_video_transfer_function_to_iso(colorimetry.transfer));
    out->fps_n = GST_VIDEO_INFO_FPS_N(&info);
    out->fps_d = GST_VIDEO_INFO_FPS_D(&info);
    return TRUE;
}

gboolean swift_gst_caps_colorimetry(const GstCaps *caps, uint8_t cicp[4]) {
    if (caps == NULL || gst_caps_get_size(caps) == 0) return FALSE;
    const gchar *text = gst_structure_get_string(gst_caps_get_structure(caps, 0), "colorimetry");
    GstVideoColorimetry parsed;
    if (text == NULL || !gst_video_colorimetry_from_string(&parsed, text)) return FALSE;
    cicp[0] = swift_gst_cicp_range(parsed.range);
    cicp[1] = swift_gst_cicp_matrix(gst_video_color_matrix_to_iso(parsed.matrix));
    cicp[2] = swift_gst_cicp(gst_video_color_primaries_to_iso(parsed.primaries));
    cicp[3] = swift_gst_cicp(gst_video_transfer_function_to_iso(parsed.transfer));
    return TRUE;
}

GstCaps *swift_gst_caps_with_untagged_matrix(const GstCaps *caps, GstVideoColorMatrix matrix) {
    GstVideoInfo info;
    if (caps == NULL || gst_caps_get_size(caps) == 0 || !gst_video_info_from_caps(&info, caps) || !GST_VIDEO_INFO_IS_YUV(&info))
        return NULL;
    GstVideoColorimetry colorimetry = info.colorimetry;  // for what the caps do not name: the size-based default
    const gchar *text = gst_structure_get_string(gst_caps_get_structure(caps, 0), "colorimetry");
    GstVideoColorimetry named;
    if (text != NULL && gst_video_colorimetry_from_string(&named, text)) {
        if (named.matrix != GST_VIDEO_COLOR_MATRIX_UNKNOWN) return NULL;  // tagged: the stream's own matrix
        if (named.range != GST_VIDEO_COLOR_RANGE_UNKNOWN) colorimetry.range = named.range;
        if (named.transfer != GST_VIDEO_TRANSFER_UNKNOWN) colorimetry.transfer = named.transfer;
        if (named.primaries != GST_VIDEO_COLOR_PRIMARIES_UNKNOWN) colorimetry.primaries = named.primaries;
    }
    colorimetry.matrix = matrix;
    gchar *string = gst_video_colorimetry_to_string(&colorimetry);
    if (string == NULL) return NULL;
    GstCaps *copy = gst_caps_copy(caps);
    gst_caps_set_simple(copy, "colorimetry", G_TYPE_STRING, string, NULL);
    g_free(string);
    return copy;
}

GstCaps *swift_gst_caps_with_cicp(const GstCaps *caps, const uint8_t cicp[4]) {
    GstVideoColorimetry colorimetry = {
        .range = cicp[0] == 1 ? GST_VIDEO_COLOR_RANGE_16_235
            : cicp[0] == 2 ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_UNKNOWN,
        .matrix = gst_video_color_matrix_from_iso(cicp[1]),
        .transfer = gst_video_transfer_function_from_iso(cicp[3]),
        .primaries = gst_video_color_primaries_from_iso(cicp[2]),
    };
    GstCaps *copy = gst_caps_copy(caps);
    gchar *string = gst_video_colorimetry_to_string(&colorimetry);
    if (string != NULL) gst_caps_set_simple(copy, "colorimetry", G_TYPE_STRING, string, NULL);
    g_free(string);
    return copy;
}

gboolean swift_gst_video_layout_apply_meta(GstBuffer *buffer, SwiftGstVideoLayout *layout) {
    GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    if (meta == NULL) return FALSE;
    guint n = MIN(meta->n_planes, SWIFT_GST_MAX_PLANES);
    for (guint p = 0; p < n; p++) {
        layout->offset[p] = (uint64_t)meta->offset[p];
        layout->stride[p] = meta->stride[p];
    }
    return TRUE;
}

// ═══ caps ═══════════════════════════════════════════════════════════════════════════════════════════════════════

GstCaps *swift_gst_caps_with_string(const GstCaps *caps, const char *field, const char *value) {
    GstCaps *copy = gst_caps_copy(caps);
    gst_caps_set_simple(copy, field, G_TYPE_STRING, value, NULL);
    return copy;
}

GstCaps *swift_gst_caps_with_int(const GstCaps *caps, const char *field, gint value) {
    GstCaps *copy = gst_caps_copy(caps);
    gst_caps_set_simple(copy, field, G_TYPE_INT, value, NULL);
    return copy;
}

GstCaps *swift_gst_caps_with_fraction(const GstCaps *caps, const char *field, gint numerator, gint denominator) {
    GstCaps *copy = gst_caps_copy(caps);
    gst_caps_set_simple(copy, field, GST_TYPE_FRACTION, numerator, denominator, NULL);
    return copy;
}

GstStructure *swift_gst_structure_new_with_string(const char *name, const char *field, const char *value) {
    return gst_structure_new(name, field, G_TYPE_STRING, value, NULL);
}

GstBuffer *swift_gst_structure_get_buffer(const GstStructure *structure, const char *field) {
    const GValue *value = gst_structure_get_value(structure, field);
    if (value == NULL || !GST_VALUE_HOLDS_BUFFER(value)) return NULL;
    return gst_value_get_buffer(value);
}

// ═══ audio channel positions ═════════════════════════════════════════════════════════════════════════════════

gint swift_gst_audio_caps_positions(const GstCaps *caps, GstAudioChannelPosition *positions, gint max,
                                    GstAudioFormat *format) {
    GstAudioInfo info;
    if (caps == NULL || !gst_audio_info_from_caps(&info, caps)) return 0;
    const gint channels = GST_AUDIO_INFO_CHANNELS(&info);
    if (channels <= 0 || channels > max) return 0;
    for (gint i = 0; i < channels; i++) positions[i] = GST_AUDIO_INFO_POSITION(&info, i);
    if (format != NULL) *format = GST_AUDIO_INFO_FORMAT(&info);
    return channels;
}

GstCaps *swift_gst_caps_with_channel_mask(const GstCaps *caps, guint64 mask) {
    GstCaps *copy = gst_caps_copy(caps);
    gst_caps_set_simple(copy, "channel-mask", GST_TYPE_BITMASK, mask, NULL);
    return copy;
}
