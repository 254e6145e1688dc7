#define _GNU_SOURCE
#include "CGstShim.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gst/audio/audio.h>
#include <gst/base/gstbasesrc.h>

// ═══ trackdfdsrc ═══════════════════════════════════════════════════════════════════════════════════════════════
// filesrc opens a path and reads with read() at a shared file offset; trackd never opens paths (the client passes
// an open fd), and several pipelines (discovery, outputs, thumbnails) read the same fd at once. pread() keeps every
// reader's position its own. Random access (is_seekable + get_size) lets typefind/qtdemux run in pull mode, which is
// what makes a file with its moov atom at the end playable. The fd is borrowed: this element never closes it.

typedef struct {
    GstBaseSrc parent;
    gint fd;
} TrackdFdSrc;

typedef struct {
    GstBaseSrcClass parent_class;
} TrackdFdSrcClass;

enum { PROP_0, PROP_FD };

GType trackd_fd_src_get_type(void);
G_DEFINE_TYPE(TrackdFdSrc, trackd_fd_src, GST_TYPE_BASE_SRC)

static GstStaticPadTemplate trackd_fd_src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void trackd_fd_src_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    TrackdFdSrc *self = (TrackdFdSrc *)object;
    switch (id) {
    case PROP_FD:
        GST_OBJECT_LOCK(self);
        self->fd = g_value_get_int(value);
        GST_OBJECT_UNLOCK(self);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void trackd_fd_src_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    TrackdFdSrc *self = (TrackdFdSrc *)object;
    switch (id) {
    case PROP_FD:
        GST_OBJECT_LOCK(self);
        g_value_set_int(value, self->fd);
        GST_OBJECT_UNLOCK(self);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static gint trackd_fd_src_fd(TrackdFdSrc *self) {
    GST_OBJECT_LOCK(self);
    gint fd = self->fd;
    GST_OBJECT_UNLOCK(self);
    return fd;
}

static gboolean trackd_fd_src_start(GstBaseSrc *src) {
    gint fd = trackd_fd_src_fd((TrackdFdSrc *)src);
    struct stat st;
    if (fd < 0) {
        GST_ELEMENT_ERROR(src, RESOURCE, NOT_FOUND, ("No file descriptor given"), ("fd property is %d", fd));
        return FALSE;
    }
    if (fstat(fd, &st) != 0) {
        GST_ELEMENT_ERROR(src, RESOURCE, OPEN_READ, ("Could not stat file descriptor %d", fd),
                          ("fstat: %s", g_strerror(errno)));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        GST_ELEMENT_ERROR(src, RESOURCE, OPEN_READ, ("File descriptor %d is not a regular file", fd), (NULL));
        return FALSE;
    }
    return TRUE;
}

static gboolean trackd_fd_src_stop(GstBaseSrc *src) {
    (void)src;
    return TRUE;
}

static gboolean trackd_fd_src_is_seekable(GstBaseSrc *src) {
    (void)src;
    return TRUE;
}

static gboolean trackd_fd_src_get_size(GstBaseSrc *src, guint64 *size) {
    struct stat st;
    if (fstat(trackd_fd_src_fd((TrackdFdSrc *)src), &st) != 0) return FALSE;
    *size = (guint64)st.st_size;
    return TRUE;
}

static GstFlowReturn trackd_fd_src_fill(GstBaseSrc *src, guint64 offset, guint length, GstBuffer *buf) {
    gint fd = trackd_fd_src_fd((TrackdFdSrc *)src);
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_WRITE)) {
        GST_ELEMENT_ERROR(src, RESOURCE, READ, ("Could not map buffer for reading"), (NULL));
        return GST_FLOW_ERROR;
    }
    gsize done = 0;
    gsize want = MIN((gsize)length, map.size);
    while (done < want) {
        ssize_t n = pread(fd, map.data + done, want - done, (off_t)(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            gst_buffer_unmap(buf, &map);
            GST_ELEMENT_ERROR(src, RESOURCE, READ, ("Could not read from file descriptor %d", fd),
                              ("pread at offset %" G_GUINT64_FORMAT ": %s", offset + done, g_strerror(saved)));
            return GST_FLOW_ERROR;
        }
        if (n == 0) break;  // end of file
        done += (gsize)n;
    }
    gst_buffer_unmap(buf, &map);
    if (done == 0 && want > 0) return GST_FLOW_EOS;
    gst_buffer_resize(buf, 0, (gssize)done);
    GST_BUFFER_OFFSET(buf) = offset;
    GST_BUFFER_OFFSET_END(buf) = offset + done;
    return GST_FLOW_OK;
}

static void trackd_fd_src_class_init(TrackdFdSrcClass *klass) {
    GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS(klass);

    gobject_class->set_property = trackd_fd_src_set_property;
    gobject_class->get_property = trackd_fd_src_get_property;
    g_object_class_install_property(
        gobject_class, PROP_FD,
        g_param_spec_int("fd", "fd", "Open file descriptor to read with pread (not closed by the element)", -1,
                         G_MAXINT, -1, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

    gst_element_class_set_static_metadata(element_class, "trackd fd source", "Source/File",
                                          "Reads a borrowed file descriptor with pread(), random access",
                                          "trackd");
    gst_element_class_add_static_pad_template(element_class, &trackd_fd_src_template);

    basesrc_class->start = trackd_fd_src_start;
    basesrc_class->stop = trackd_fd_src_stop;
    basesrc_class->is_seekable = trackd_fd_src_is_seekable;
    basesrc_class->get_size = trackd_fd_src_get_size;
    basesrc_class->fill = trackd_fd_src_fill;
}

static void trackd_fd_src_init(TrackdFdSrc *self) {
    self->fd = -1;
    gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_BYTES);
    // Demuxers in pull mode ask for exact ranges; this only sizes push-mode reads.
    gst_base_src_set_blocksize(GST_BASE_SRC(self), 64 * 1024);
}

gboolean swift_gst_register_fdsrc(void) {
    return gst_element_register(NULL, "trackdfdsrc", GST_RANK_NONE, trackd_fd_src_get_type());
}

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
GstPadProbeReturn swift_gst_pad_probe_refuse(GstPadProbeInfo *info, GstFlowReturn flow) {
    if (GST_PAD_PROBE_INFO_DATA(info) != NULL) {
        gst_mini_object_unref(GST_MINI_OBJECT_CAST(GST_PAD_PROBE_INFO_DATA(info)));
        GST_PAD_PROBE_INFO_DATA(info) = NULL;
    }
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = flow;
    return GST_PAD_PROBE_HANDLED;
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

static uint8_t swift_gst_cicp(guint code) { return code == 0 || code > 255 ? 2 : (uint8_t)code; }

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
    out->matrix = swift_gst_cicp(gst_video_color_matrix_to_iso(colorimetry.matrix));
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
    cicp[1] = swift_gst_cicp(gst_video_color_matrix_to_iso(parsed.matrix));
    cicp[2] = swift_gst_cicp(gst_video_color_primaries_to_iso(parsed.primaries));
    cicp[3] = swift_gst_cicp(gst_video_transfer_function_to_iso(parsed.transfer));
    return TRUE;
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

// ═══ I420/NV12 → tight NV12 while copying ═══════════════════════════════════════════════════════════════════════

static uint8_t swift_gst_clamp_u8(double v) { return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)(v + 0.5); }

gsize swift_gst_nv12_size(uint32_t width, uint32_t height) {
    return (gsize)width * height + (gsize)((width + 1) / 2) * 2 * ((height + 1) / 2);
}

void swift_gst_range_tables(SwiftGstRangeConversion range, uint8_t luma[256], uint8_t chroma[256]) {
    for (int v = 0; v < 256; v++) {
        switch (range) {
        case SWIFT_GST_RANGE_TO_FULL:
            luma[v] = swift_gst_clamp_u8((v - 16) * 255.0 / 219.0);
            chroma[v] = swift_gst_clamp_u8((v - 128) * 255.0 / 224.0 + 128.0);
            break;
        case SWIFT_GST_RANGE_TO_VIDEO:
            luma[v] = swift_gst_clamp_u8(16.0 + v * 219.0 / 255.0);
            chroma[v] = swift_gst_clamp_u8(128.0 + (v - 128) * 224.0 / 255.0);
            break;
        default:
            luma[v] = chroma[v] = (uint8_t)v;
        }
    }
}

void swift_gst_interleave_chroma(uint8_t *restrict out, const uint8_t *restrict u, const uint8_t *restrict v,
                                 uint32_t n, const uint8_t *table) {
    if (table == NULL) {
        // Without a table the compiler vectorises this (byte unpacks): one 1080p frame's chroma took 0.03 ms this
        // way and 0.28 ms through the table (-O2, 2 CPUs, data in cache).
        for (uint32_t x = 0; x < n; x++) {
            out[2 * x] = u[x];
            out[2 * x + 1] = v[x];
        }
        return;
    }
    for (uint32_t x = 0; x < n; x++) {
        out[2 * x] = table[u[x]];
        out[2 * x + 1] = table[v[x]];
    }
}

gsize swift_gst_copy_as_nv12(GstBuffer *buffer, const SwiftGstVideoLayout *layout, void *dest,
                             SwiftGstRangeConversion range) {
    gboolean planar = layout->format == GST_VIDEO_FORMAT_I420;
    if (!planar && layout->format != GST_VIDEO_FORMAT_NV12) return 0;
    if (layout->n_planes < (planar ? 3u : 2u)) return 0;

    uint8_t luma[256], chroma[256];
    swift_gst_range_tables(range, luma, chroma);

    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return 0;
    const uint32_t w = layout->width, h = layout->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    const gsize needed = swift_gst_nv12_size(w, h);
    // Every source row we read must lie inside the mapping.
    for (guint p = 0; p < (planar ? 3u : 2u); p++) {
        uint32_t rows = p == 0 ? h : ch, bytes = p == 0 ? w : (planar ? cw : 2 * cw);
        if (rows > 0 && layout->offset[p] + (guint64)(rows - 1) * (guint64)ABS(layout->stride[p]) + bytes > map.size) {
            gst_buffer_unmap(buffer, &map);
            return 0;
        }
    }
    uint8_t *out = dest;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *row = map.data + layout->offset[0] + (gsize)y * ABS(layout->stride[0]);
        uint8_t *o = out + (gsize)y * w;
        if (range == SWIFT_GST_RANGE_KEEP) memcpy(o, row, w);
        else for (uint32_t x = 0; x < w; x++) o[x] = luma[row[x]];
    }
    uint8_t *uv = out + (gsize)w * h;
    for (uint32_t y = 0; y < ch; y++) {
        uint8_t *o = uv + (gsize)y * 2 * cw;
        if (planar) {
            const uint8_t *u = map.data + layout->offset[1] + (gsize)y * ABS(layout->stride[1]);
            const uint8_t *v = map.data + layout->offset[2] + (gsize)y * ABS(layout->stride[2]);
            swift_gst_interleave_chroma(o, u, v, cw, range == SWIFT_GST_RANGE_KEEP ? NULL : chroma);
        } else {
            const uint8_t *row = map.data + layout->offset[1] + (gsize)y * ABS(layout->stride[1]);
            if (range == SWIFT_GST_RANGE_KEEP) memcpy(o, row, 2 * cw);
            else for (uint32_t x = 0; x < 2 * cw; x++) o[x] = chroma[row[x]];
        }
    }
    gst_buffer_unmap(buffer, &map);
    return needed;
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

// ═══ P010 range conversion in place ══════════════════════════════════════════════════════════════════════════

static uint16_t swift_gst_clamp_u10(double v) { return v <= 0 ? 0 : v >= 1023 ? 1023 : (uint16_t)(v + 0.5); }

gboolean swift_gst_p010_convert_range(void *data, gsize size, const SwiftGstVideoLayout *layout,
                                      SwiftGstRangeConversion range) {
    if (layout->format != GST_VIDEO_FORMAT_P010_10LE || layout->n_planes < 2) return FALSE;
    if (range == SWIFT_GST_RANGE_KEEP) return TRUE;
    // 10-bit code values (ITU-T H.273): video range Y 64–940, CbCr 64–960 around 512; full range 0–1023.
    // Entries are the output words: the value in the high 10 bits, the low 6 bits zero (P010).
    uint16_t luma[1024], chroma[1024];
    for (int v = 0; v < 1024; v++) {
        uint16_t y, c;
        if (range == SWIFT_GST_RANGE_TO_FULL) {
            y = swift_gst_clamp_u10((v - 64) * 1023.0 / 876.0);
            c = swift_gst_clamp_u10((v - 512) * 1023.0 / 896.0 + 512.0);
        } else {
            y = swift_gst_clamp_u10(64.0 + v * 876.0 / 1023.0);
            c = swift_gst_clamp_u10(512.0 + (v - 512) * 896.0 / 1023.0);
        }
        luma[v] = (uint16_t)(y << 6);
        chroma[v] = (uint16_t)(c << 6);
    }
    const uint32_t w = layout->width, h = layout->height;
    for (guint p = 0; p < 2; p++) {
        const uint32_t rows = p == 0 ? h : (h + 1) / 2, samples = p == 0 ? w : 2 * ((w + 1) / 2);
        const gsize stride = (gsize)ABS(layout->stride[p]);
        if (rows == 0 || samples == 0) continue;
        if (layout->offset[p] + (guint64)(rows - 1) * stride + 2 * (guint64)samples > size) return FALSE;
        const uint16_t *lut = p == 0 ? luma : chroma;
        for (uint32_t y = 0; y < rows; y++) {
            uint8_t *row = (uint8_t *)data + layout->offset[p] + (gsize)y * stride;
            for (uint32_t x = 0; x < samples; x++) {
                // Little-endian words, read and written bytewise (rows need not be 2-byte aligned in theory).
                const uint16_t word = (uint16_t)(row[2 * x] | row[2 * x + 1] << 8);
                const uint16_t out = lut[word >> 6];
                row[2 * x] = (uint8_t)(out & 0xff);
                row[2 * x + 1] = (uint8_t)(out >> 8);
            }
        }
    }
    return TRUE;
}

// ── the worker sandbox: preload plugins ──────────────────────────────────────────────────────────────────────

static gboolean klass_is_autopluggable(const gchar *klass) {
    if (klass == NULL) return FALSE;
    return strstr(klass, "Demuxer") != NULL || strstr(klass, "Parser") != NULL || strstr(klass, "Decoder") != NULL ||
           strstr(klass, "Depayloader") != NULL || strstr(klass, "Converter") != NULL;
}

guint swift_gst_preload_plugins(void) {
    static const char *const by_name[] = {
        "appsink", "capsfilter", "queue", "decodebin", "parsebin", "videoconvert", "videoscale",
        "audioconvert", "audioresample", "pngenc", "identity", NULL,
    };
    GstRegistry *registry = gst_registry_get();
    guint loaded = 0;
    GList *elements = gst_registry_get_feature_list(registry, GST_TYPE_ELEMENT_FACTORY);
    for (GList *l = elements; l != NULL; l = l->next) {
        GstPluginFeature *feature = GST_PLUGIN_FEATURE(l->data);
        GstElementFactory *factory = GST_ELEMENT_FACTORY(feature);
        if (gst_plugin_feature_get_rank(feature) < GST_RANK_MARGINAL) continue;
        if (!klass_is_autopluggable(gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS))) continue;
        GstPluginFeature *done = gst_plugin_feature_load(feature);
        if (done != NULL) { loaded++; gst_object_unref(done); }
    }
    gst_plugin_feature_list_free(elements);
    GList *typefinders = gst_registry_get_feature_list(registry, GST_TYPE_TYPE_FIND_FACTORY);
    for (GList *l = typefinders; l != NULL; l = l->next) {
        GstPluginFeature *done = gst_plugin_feature_load(GST_PLUGIN_FEATURE(l->data));
        if (done != NULL) { loaded++; gst_object_unref(done); }
    }
    gst_plugin_feature_list_free(typefinders);
    for (int i = 0; by_name[i] != NULL; i++) {
        GstPluginFeature *feature = gst_registry_lookup_feature(registry, by_name[i]);
        if (feature == NULL) continue;
        GstPluginFeature *done = gst_plugin_feature_load(feature);
        if (done != NULL) { loaded++; gst_object_unref(done); }
        gst_object_unref(feature);
    }
    return loaded;
}

// ── the warm worker's rehearsal clip ───────────────────────────────────────────────────────────────────────────

gboolean swift_gst_load_element_plugin(const char *factory_name) {
    GstPluginFeature *feature = gst_registry_lookup_feature(gst_registry_get(), factory_name);
    if (feature == NULL) return FALSE;
    GstPluginFeature *loaded = gst_plugin_feature_load(feature);
    gst_object_unref(feature);
    if (loaded == NULL) return FALSE;
    gst_object_unref(loaded);
    return TRUE;
}

int swift_gst_rehearsal_clip(char *error, size_t size) {
    error[0] = '\0';
    const char *encoder = NULL;
    static const char *const encoders[] = {
        // x264enc: B-frames (the reorder path of the decoder); openh264enc (plugins-bad) makes none.
        "x264enc speed-preset=veryfast bframes=2 key-int-max=30", "openh264enc", NULL,
    };
    static const char *const names[] = { "x264enc", "openh264enc", NULL };
    for (int i = 0; names[i] != NULL && encoder == NULL; i++) {
        GstElementFactory *factory = gst_element_factory_find(names[i]);
        if (factory != NULL) { encoder = encoders[i]; gst_object_unref(factory); }
    }
    if (encoder == NULL) {
        snprintf(error, size, "no H.264 encoder (x264enc or openh264enc) is installed");
        return -1;
    }
    int fd = memfd_create("trackd-rehearsal", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(error, size, "memfd_create: %s", strerror(errno));
        return -1;
    }
    // The description is a constant but for the fd number: gst_parse_launch_full with FATAL_ERRORS returns no
    // pipeline at all when any element is missing (plain gst_parse_launch may return one *and* an error).
    gchar *description = g_strdup_printf(
        "videotestsrc num-buffers=5 pattern=ball ! video/x-raw,format=I420,width=64,height=48,framerate=30/1 ! "
        "%s ! video/x-h264,profile=high ! h264parse ! mp4mux ! fdsink fd=%d sync=false", encoder, fd);
    GError *parse_error = NULL;
    GstElement *pipeline = gst_parse_launch_full(description, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &parse_error);
    g_free(description);
    if (pipeline == NULL) {
        snprintf(error, size, "cannot build the rehearsal encoder: %s", parse_error ? parse_error->message : "unknown error");
        g_clear_error(&parse_error);
        close(fd);
        return -1;
    }
    g_clear_error(&parse_error);
    GstBus *bus = gst_element_get_bus(pipeline);
    gboolean ok = gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
    if (ok) {
        GstMessage *message = gst_bus_timed_pop_filtered(bus, 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
        if (message == NULL) {
            snprintf(error, size, "the rehearsal encoder did not finish within 5 s");
            ok = FALSE;
        } else {
            if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
                GError *e = NULL;
                gst_message_parse_error(message, &e, NULL);
                snprintf(error, size, "the rehearsal encoder failed: %s", e ? e->message : "unknown error");
                g_clear_error(&e);
                ok = FALSE;
            }
            gst_message_unref(message);
        }
    } else {
        snprintf(error, size, "the rehearsal encoder did not start");
    }
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);  // NULL before the last unref
    gst_object_unref(pipeline);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}
