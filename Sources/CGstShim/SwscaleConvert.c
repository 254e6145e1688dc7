// trackdswscale: 8-bit YCbCr to the 8-bit RGB family with libswscale, as an element of the decode chain (declared
// in CGstShim.h). libswscale is the converter inside ffmpeg, OpenCV, PyAV, decord and TorchCodec; with it a worker
// reading 1080p H.264 spends 26% less CPU for 24BG and 8% less for BGRA than with GStreamer 1.22's videoconvert
// (docs/BENCHMARKS.md, "RGB-family conversion").
//
// The worker's chain for those formats is `trackdswscale ! videoconvert ! videoscale ! capsfilter ! appsink`. The
// element is told what the capsfilter asks for (its "caps" property). When its input is one libswscale converts on
// its fast unscaled path (planar 4:2:0 and 4:2:2: I420, YV12, Y42B), progressive, in system memory, it writes that
// output — at the requested size when both width and height are given — and videoconvert and videoscale pass it
// through. Any other input (high bit depth, 4:4:4, which libswscale converts on its generic path at 4× videoconvert's
// instructions, NV12, alpha, RGB, interlaced, an odd width at the same size: odd_unscaled) it passes through, and videoconvert and videoscale convert it as
// they convert every other format. Passing through forwards appsink's ALLOCATION query, so the element that converts
// writes the frame straight into the worker's memfd pool (MemfdPool.c) either way.
#include "CGstShim.h"

#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>

typedef struct {
    GstVideoFilter parent;
    GstCaps *target;           // "caps": what the chain's capsfilter asks for (object lock)
    struct SwsContext *convert;  // set_info → transform_frame: YCbCr → the output (RGB24 for RGBP, GBR)
    struct SwsContext *repack;   // RGBP, GBR only: the RGB24 frame → planar G, B, R
    guint8 *scratch;             // RGBP, GBR: the RGB24 frame between the two; else a frame whose rows have too little room
    int scratch_stride;
} TrackdSwscale;

typedef struct {
    GstVideoFilterClass parent_class;
} TrackdSwscaleClass;

enum { PROP_0, PROP_CAPS };

GType trackd_swscale_get_type(void);
G_DEFINE_TYPE(TrackdSwscale, trackd_swscale, GST_TYPE_VIDEO_FILTER)

#define INPUT_FORMATS "{ I420, YV12, Y42B }"
#define OUTPUT_FORMATS "{ BGRA, RGBA, ARGB, RGB, BGR, RGBP, GBR }"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-raw"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-raw"));

// ── formats ─────────────────────────────────────────────────────────────────────────────────────────────────────

// libswscale's name for a format this element converts from or to; AV_PIX_FMT_NONE for any other. Planar RGB is
// made as RGB24 first (libswscale's fast path; its own YCbCr → GBRP path is its slow generic one, 6× the
// instructions), so RGBP and GBR map to RGB24 here.
static enum AVPixelFormat av_format(GstVideoFormat format) {
    switch (format) {
    case GST_VIDEO_FORMAT_I420: case GST_VIDEO_FORMAT_YV12: return AV_PIX_FMT_YUV420P;  // planes by component
    case GST_VIDEO_FORMAT_Y42B: return AV_PIX_FMT_YUV422P;
    case GST_VIDEO_FORMAT_BGRA: return AV_PIX_FMT_BGRA;
    case GST_VIDEO_FORMAT_RGBA: return AV_PIX_FMT_RGBA;
    case GST_VIDEO_FORMAT_ARGB: return AV_PIX_FMT_ARGB;
    case GST_VIDEO_FORMAT_RGB: case GST_VIDEO_FORMAT_RGBP: case GST_VIDEO_FORMAT_GBR: return AV_PIX_FMT_RGB24;
    case GST_VIDEO_FORMAT_BGR: return AV_PIX_FMT_BGR24;
    default: return AV_PIX_FMT_NONE;
    }
}

static gboolean is_output(GstVideoFormat format) {
    return av_format(format) != AV_PIX_FMT_NONE && GST_VIDEO_FORMAT_INFO_IS_RGB(gst_video_format_get_info(format));
}

static GstVideoFormat structure_format(const GstStructure *s) {
    const gchar *name = gst_structure_get_string(s, "format");
    return name ? gst_video_format_from_string(name) : GST_VIDEO_FORMAT_UNKNOWN;
}

// libswscale's coefficients for the matrix of `in` (SWS_CS_*; -1 for none it has) and its range, as the caps
// `incaps` state them. gst_video_info_from_caps replaces a YCbCr colorimetry without a matrix (decoders say
// "1:0:0:0" for a stream that flags only full range) by the default for the frame's size, range included
// (BT.601 up to 576 lines, BT.709 above, BT.2020 from 2160, video range) — which is what videoconvert converts
// with. Here, as for the Sample's colorimetry (swift_gst_video_layout_from_caps), the caps' own string decides what
// it states: a stated range is kept, a missing matrix is the size's default. A range left unknown is video range.
static int sws_matrix(GstCaps *incaps, const GstVideoInfo *in, int *full_range) {
    GstVideoColorimetry c = in->colorimetry, stated;
    const gchar *text = gst_structure_get_string(gst_caps_get_structure(incaps, 0), "colorimetry");
    if (text != NULL && gst_video_colorimetry_from_string(&stated, text)) {
        if (stated.range != GST_VIDEO_COLOR_RANGE_UNKNOWN) c.range = stated.range;
        // RGB's identity matrix on YCbCr is invalid caps, which gst_video_info_from_caps replaced by the default.
        if (stated.matrix != GST_VIDEO_COLOR_MATRIX_UNKNOWN && stated.matrix != GST_VIDEO_COLOR_MATRIX_RGB)
            c.matrix = stated.matrix;
    }
    *full_range = c.range == GST_VIDEO_COLOR_RANGE_0_255;
    switch (c.matrix) {
    case GST_VIDEO_COLOR_MATRIX_BT601: return SWS_CS_ITU601;
    case GST_VIDEO_COLOR_MATRIX_BT709: return SWS_CS_ITU709;
    case GST_VIDEO_COLOR_MATRIX_FCC: return SWS_CS_FCC;
    case GST_VIDEO_COLOR_MATRIX_SMPTE240M: return SWS_CS_SMPTE240M;
    case GST_VIDEO_COLOR_MATRIX_BT2020: return SWS_CS_BT2020;
    default: return -1;
    }
}

// Whether this element converts frames of `s` (an input structure): I420, YV12 or Y42B, progressive, in system
// memory.
static gboolean converts_from(const GstStructure *s, const GstCapsFeatures *features) {
    if (features != NULL && !gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY)) return FALSE;
    GstVideoFormat format = structure_format(s);
    if (av_format(format) == AV_PIX_FMT_NONE || is_output(format)) return FALSE;
    const gchar *interlace = gst_structure_get_string(s, "interlace-mode");
    return interlace == NULL || g_strcmp0(interlace, "progressive") == 0;
}

// ── caps ────────────────────────────────────────────────────────────────────────────────────────────────────────

// What `in` (one input structure) becomes for `want` (one structure of the target caps): the input's fields with
// the target's format, and the target's size and pixel aspect ratio when it gives both width and height (else the
// input's size: videoscale after this element makes the one dimension given). No colorimetry or chroma-site: fixate
// sets the colorimetry as videoconvert would.
static GstStructure *converted(const GstStructure *in, const GstStructure *want) {
    GstStructure *out = gst_structure_copy(in);
    gst_structure_remove_fields(out, "colorimetry", "chroma-site", NULL);
    gst_structure_set_value(out, "format", gst_structure_get_value(want, "format"));
    gint width = 0, height = 0;
    if (gst_structure_get_int(want, "width", &width) && gst_structure_get_int(want, "height", &height)) {
        gst_structure_set(out, "width", G_TYPE_INT, width, "height", G_TYPE_INT, height, NULL);
        const GValue *par = gst_structure_get_value(want, "pixel-aspect-ratio");
        if (par != NULL) gst_structure_set_value(out, "pixel-aspect-ratio", par);
    }
    return out;
}

// Whether `out` keeps the odd width of `in`: libswscale's unscaled path converts pixels in pairs, and its C code (the
// path for ARGB, and for every format without x86 SIMD) leaves the last pixel of an odd row unwritten (measured with
// FFmpeg 5.1), so such frames are passed through to videoconvert. Its scaled path has no such limit.
static gboolean odd_unscaled(const GstStructure *in, const GstStructure *out) {
    gint width = 0, out_width = 0, height = 0, out_height = 0;
    if (!gst_structure_get_int(in, "width", &width) || !gst_structure_get_int(out, "width", &out_width)) return FALSE;
    gst_structure_get_int(in, "height", &height);
    gst_structure_get_int(out, "height", &out_height);
    return width % 2 == 1 && width == out_width && height == out_height;
}

// Sink → src: for an input this element converts, the target's formats this element makes (at most one: the
// worker's target is one format), then the input itself (passed through). Src → sink: the output itself (passed
// through) and, for an output this element makes, the inputs it converts from, at any size.
static GstCaps *transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps, GstCaps *filter) {
    TrackdSwscale *self = (TrackdSwscale *)trans;
    GST_OBJECT_LOCK(self);
    GstCaps *target = self->target ? gst_caps_ref(self->target) : NULL;
    GST_OBJECT_UNLOCK(self);
    GstCaps *result = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(caps); i++) {
        const GstStructure *s = gst_caps_get_structure(caps, i);
        const GstCapsFeatures *features = gst_caps_get_features(caps, i);
        if (direction == GST_PAD_SINK && target != NULL && converts_from(s, features)) {
            for (guint j = 0; j < gst_caps_get_size(target); j++) {
                const GstStructure *want = gst_caps_get_structure(target, j);
                if (!is_output(structure_format(want))) continue;
                GstStructure *out = converted(s, want);
                if (odd_unscaled(s, out)) gst_structure_free(out);
                else result = gst_caps_merge_structure(result, out);
            }
        } else if (direction == GST_PAD_SRC && target != NULL && is_output(structure_format(s))) {
            GstStructure *from = gst_structure_copy(s);
            gst_structure_remove_fields(from, "format", "colorimetry", "chroma-site", NULL);
            gst_structure_set(from, "width", GST_TYPE_INT_RANGE, 1, G_MAXINT, "height", GST_TYPE_INT_RANGE, 1, G_MAXINT,
                              NULL);
            GstCaps *inputs = gst_caps_from_string("video/x-raw, format=(string)" INPUT_FORMATS);
            GstCaps *ranged = gst_caps_new_full(from, NULL);
            result = gst_caps_merge(result, gst_caps_intersect(ranged, inputs));
            gst_caps_unref(inputs);
            gst_caps_unref(ranged);
        }
        result = gst_caps_merge_structure_full(result, gst_structure_copy(s),
                                               features ? gst_caps_features_copy(features) : NULL);
    }
    if (target != NULL) gst_caps_unref(target);
    if (filter != NULL) {
        GstCaps *both = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref(result);
        result = both;
    }
    return result;
}

// The first of the offered outputs, fixed; a converted one gets videoconvert's colorimetry for YCbCr → RGB (1.22's
// transfer_colorimetry_from_input): when the input caps state a colorimetry, RGB's default range and matrix with
// the input's primaries and transfer function; none when they state none (the sample then reports sRGB).
static GstCaps *fixate_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps, GstCaps *othercaps) {
    (void)trans;
    othercaps = gst_caps_fixate(othercaps);
    if (direction != GST_PAD_SINK || gst_caps_is_subset(caps, othercaps)) return othercaps;
    GstStructure *in = gst_caps_get_structure(caps, 0);
    GstVideoInfo in_info, out_info;
    if (!gst_structure_has_field(in, "colorimetry") || !gst_video_info_from_caps(&in_info, caps) ||
        !gst_video_info_from_caps(&out_info, othercaps) || !GST_VIDEO_INFO_IS_RGB(&out_info)) return othercaps;
    out_info.colorimetry.primaries = in_info.colorimetry.primaries;
    out_info.colorimetry.transfer = in_info.colorimetry.transfer;
    gchar *colorimetry = gst_video_colorimetry_to_string(&out_info.colorimetry);
    othercaps = gst_caps_make_writable(othercaps);
    gst_caps_set_simple(othercaps, "colorimetry", G_TYPE_STRING, colorimetry, NULL);
    g_free(colorimetry);
    return othercaps;
}

// ── allocation ──────────────────────────────────────────────────────────────────────────────────────────────────

// libswscale's fast YCbCr → packed RGB path writes whole groups of pixels past the row's end: with Debian 12's
// libswscale 6 (FFmpeg 5.1) on SSSE3, every row of a 322-pixel frame gets 336 pixels (groups of 16, measured), and a
// row with less room than the next multiple of 8 pixels gets its last pixels left unwritten (x86 yuv2rgb.c: h_size
// -= 8). ffmpeg's own frames have rows padded to 32 or 64 bytes. Rows of whole 32-pixel groups have the room (twice
// the measured group, for a wider SIMD path); GROUP is that group. The row bytes a frame `width` pixels wide needs.
#define GROUP 32
static int row_room(int width, int bytes_per_pixel) { return (width + GROUP - 1) / GROUP * GROUP * bytes_per_pixel; }

// The output pool's rows padded to whole groups of GROUP pixels (GstVideoAlignment on the GstVideoBufferPool appsink
// offers: its buffers carry a GstVideoMeta with the strides), so that the frame is written where appsink's pool puts
// it. A pool that takes no alignment gets the frame through a scratch frame (transform_frame).
static gboolean decide_allocation(GstBaseTransform *trans, GstQuery *query) {
    if (!GST_BASE_TRANSFORM_CLASS(trackd_swscale_parent_class)->decide_allocation(trans, query)) return FALSE;
    const GstVideoInfo *out = &GST_VIDEO_FILTER(trans)->out_info;
    guint width = GST_VIDEO_INFO_WIDTH(out), padding = (width + GROUP - 1) / GROUP * GROUP - width;
    GstBufferPool *pool = NULL;
    if (padding == 0 || gst_query_get_n_allocation_pools(query) == 0) return TRUE;
    gst_query_parse_nth_allocation_pool(query, 0, &pool, NULL, NULL, NULL);
    if (pool == NULL) return TRUE;
    if (gst_buffer_pool_has_option(pool, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT)) {
        GstStructure *config = gst_buffer_pool_get_config(pool);
        GstVideoAlignment align;
        gst_video_alignment_reset(&align);
        align.padding_right = padding;
        gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
        gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
        gst_buffer_pool_config_set_video_alignment(config, &align);
        if (!gst_buffer_pool_set_config(pool, config)) GST_DEBUG_OBJECT(trans, "the pool refused padded rows");
    }
    gst_object_unref(pool);
    return TRUE;
}

// What the decoder is offered when this element converts (`decide` set; passed through, the query goes on to
// videoconvert and appsink): GstVideoFilter's pool of system memory, from the allocator of DecodedCopies.c, so that
// the decoder's pictures reach this element without a copy (that file says why there would be one).
static gboolean propose_allocation(GstBaseTransform *trans, GstQuery *decide, GstQuery *query) {
    if (decide != NULL && gst_query_get_n_allocation_params(query) == 0) {
        GstAllocationParams params;
        gst_allocation_params_init(&params);
        params.align = 15;  // GstVideoFilter's
        GstAllocator *allocator = swift_gst_decoded_allocator();
        gst_query_add_allocation_param(query, allocator, &params);
        gst_object_unref(allocator);
    }
    return GST_BASE_TRANSFORM_CLASS(trackd_swscale_parent_class)->propose_allocation(trans, decide, query);
}

// ── conversion ──────────────────────────────────────────────────────────────────────────────────────────────────

static void free_converters(TrackdSwscale *self) {
    sws_freeContext(self->convert);
    sws_freeContext(self->repack);
    g_free(self->scratch);
    self->convert = self->repack = NULL;
    self->scratch = NULL;
}

// One libswscale context: SWS_BILINEAR (used only when the size changes: a 2-tap filter widened to the scale
// factor, as PyAV's and TorchCodec's default). Without a size change libswscale takes its unscaled YCbCr → RGB
// path, the same whatever the scaling flags — OpenCV's, PyAV's and the ffmpeg CLI's; SWS_ACCURATE_RND would leave
// it for the generic path (5.6× the CPU for BGRA, docs/BENCHMARKS.md) and SWS_FAST_BILINEAR makes code at run time
// when enlarging (the sandbox's W^X refuses it). `matrix` < 0: RGB in, no colour matrix.
static struct SwsContext *make_context(int w, int h, enum AVPixelFormat from, int dw, int dh, enum AVPixelFormat to,
                                       int matrix, int full_range) {
    struct SwsContext *c = sws_alloc_context();
    if (c == NULL) return NULL;
    av_opt_set_int(c, "srcw", w, 0);
    av_opt_set_int(c, "srch", h, 0);
    av_opt_set_int(c, "src_format", from, 0);
    av_opt_set_int(c, "dstw", dw, 0);
    av_opt_set_int(c, "dsth", dh, 0);
    av_opt_set_int(c, "dst_format", to, 0);
    av_opt_set_int(c, "sws_flags", SWS_BILINEAR, 0);
    if (sws_init_context(c, NULL, NULL) < 0) {
        sws_freeContext(c);
        return NULL;
    }
    if (matrix >= 0) {
        const int *coefficients = sws_getCoefficients(matrix);
        // RGB out is full range; brightness 0, contrast and saturation 1.0 (16.16).
        sws_setColorspaceDetails(c, coefficients, full_range, coefficients, 1, 0, 1 << 16, 1 << 16);
    }
    return c;
}

// A scratch RGB24 (planar RGB) or output-format frame of `out`'s size with rows that have room (row_room).
static void make_scratch(TrackdSwscale *self, const GstVideoInfo *out) {
    int width = (int)GST_VIDEO_INFO_WIDTH(out);
    int pixel = GST_VIDEO_INFO_N_PLANES(out) == 3 ? 3 : GST_VIDEO_INFO_COMP_PSTRIDE(out, 0);
    self->scratch_stride = (row_room(width, pixel) + 63) / 64 * 64;
    self->scratch = g_malloc((gsize)self->scratch_stride * GST_VIDEO_INFO_HEIGHT(out));
}

static gboolean set_info(GstVideoFilter *filter, GstCaps *incaps, GstVideoInfo *in, GstCaps *outcaps,
                         GstVideoInfo *out) {
    TrackdSwscale *self = (TrackdSwscale *)filter;
    free_converters(self);
    if (gst_caps_is_equal(incaps, outcaps)) return TRUE;  // passed through (passthrough_on_same_caps)
    int full_range, matrix = sws_matrix(incaps, in, &full_range);
    GstVideoFormat to = GST_VIDEO_INFO_FORMAT(out);
    enum AVPixelFormat from = av_format(GST_VIDEO_INFO_FORMAT(in));
    if (from == AV_PIX_FMT_NONE || !is_output(to) || matrix < 0) {
        GST_ERROR_OBJECT(self, "cannot convert %" GST_PTR_FORMAT " to %" GST_PTR_FORMAT, incaps, outcaps);
        return FALSE;
    }
    int dw = (int)GST_VIDEO_INFO_WIDTH(out), dh = (int)GST_VIDEO_INFO_HEIGHT(out);
    self->convert = make_context((int)GST_VIDEO_INFO_WIDTH(in), (int)GST_VIDEO_INFO_HEIGHT(in), from, dw, dh,
                                 av_format(to), matrix, full_range);
    gboolean planar = GST_VIDEO_INFO_N_PLANES(out) == 3;  // RGBP, GBR: frame_planes hands libswscale G, B, R
    if (planar) {
        make_scratch(self, out);
        self->repack = make_context(dw, dh, AV_PIX_FMT_RGB24, dw, dh, AV_PIX_FMT_GBRP, -1, 1);
    }
    if (self->convert == NULL || (planar && self->repack == NULL)) {
        free_converters(self);
        GST_ERROR_OBJECT(self, "libswscale refused %" GST_PTR_FORMAT " to %" GST_PTR_FORMAT, incaps, outcaps);
        return FALSE;
    }
    return TRUE;
}

// The planes of a frame in libswscale's order: Y, Cb, Cr for planar YCbCr (whatever order the format keeps them
// in: YV12), G, B, R for planar RGB, the planes as they are otherwise (packed RGB: one).
static void frame_planes(GstVideoFrame *frame, uint8_t *data[4], int stride[4]) {
    static const int yuv[3] = { GST_VIDEO_COMP_Y, GST_VIDEO_COMP_U, GST_VIDEO_COMP_V };
    static const int gbr[3] = { GST_VIDEO_COMP_G, GST_VIDEO_COMP_B, GST_VIDEO_COMP_R };
    const int *order = GST_VIDEO_INFO_IS_RGB(&frame->info) ? gbr : yuv;
    guint n = GST_VIDEO_FRAME_N_PLANES(frame);
    for (guint i = 0; i < 4; i++) {
        data[i] = i >= n ? NULL : n == 3 ? GST_VIDEO_FRAME_COMP_DATA(frame, order[i]) : GST_VIDEO_FRAME_PLANE_DATA(frame, i);
        stride[i] = i >= n ? 0 : n == 3 ? GST_VIDEO_FRAME_COMP_STRIDE(frame, order[i]) : GST_VIDEO_FRAME_PLANE_STRIDE(frame, i);
    }
}

// One conversion of the input frame into `dst`, on the calling thread: libswscale's slice threads are not used (the
// decoder's frame threads already keep the CPUs busy; docs/BENCHMARKS.md, "RGB-family conversion").
static gboolean scale(TrackdSwscale *self, GstVideoFrame *in, uint8_t *dst[4], int dst_stride[4]) {
    uint8_t *src[4];
    int src_stride[4];
    frame_planes(in, src, src_stride);
    int h = (int)GST_VIDEO_FRAME_HEIGHT(in), dh = (int)GST_VIDEO_INFO_HEIGHT(&GST_VIDEO_FILTER(self)->out_info);
    return sws_scale(self->convert, (const uint8_t *const *)src, src_stride, 0, h, dst, dst_stride) == dh;
}

// Into the output frame; through the scratch frame for planar RGB (then into planes) and for rows without the room
// (row_room: a pool that took no padding), copied with av_image_copy_plane.
static GstFlowReturn transform_frame(GstVideoFilter *filter, GstVideoFrame *in, GstVideoFrame *out) {
    TrackdSwscale *self = (TrackdSwscale *)filter;
    uint8_t *dst[4], *scratch[4] = { self->scratch, NULL, NULL, NULL };
    int dst_stride[4], scratch_stride[4] = { self->scratch_stride, 0, 0, 0 };
    frame_planes(out, dst, dst_stride);
    int dw = (int)GST_VIDEO_FRAME_WIDTH(out), dh = (int)GST_VIDEO_FRAME_HEIGHT(out);
    int pixel = GST_VIDEO_FRAME_COMP_PSTRIDE(out, 0);
    gboolean done;
    if (self->repack != NULL) {
        done = scale(self, in, scratch, scratch_stride) &&
               sws_scale(self->repack, (const uint8_t *const *)scratch, scratch_stride, 0, dh, dst, dst_stride) == dh;
    } else if (dst_stride[0] >= row_room(dw, pixel)) {
        done = scale(self, in, dst, dst_stride);
    } else {
        if (self->scratch == NULL) make_scratch(self, &out->info);
        scratch[0] = self->scratch;
        scratch_stride[0] = self->scratch_stride;
        done = scale(self, in, scratch, scratch_stride);
        if (done) av_image_copy_plane(dst[0], dst_stride[0], scratch[0], scratch_stride[0], dw * pixel, dh);
    }
    if (done) return GST_FLOW_OK;
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("libswscale did not convert the frame"), (NULL));
    return GST_FLOW_ERROR;
}

// ── the element ─────────────────────────────────────────────────────────────────────────────────────────────────

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    TrackdSwscale *self = (TrackdSwscale *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_CAPS: gst_caps_replace(&self->target, (GstCaps *)gst_value_get_caps(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
    GST_OBJECT_UNLOCK(self);
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    TrackdSwscale *self = (TrackdSwscale *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_CAPS: gst_value_set_caps(value, self->target); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
    GST_OBJECT_UNLOCK(self);
}

static void finalize(GObject *object) {
    TrackdSwscale *self = (TrackdSwscale *)object;
    free_converters(self);
    gst_caps_replace(&self->target, NULL);
    G_OBJECT_CLASS(trackd_swscale_parent_class)->finalize(object);
}

static void trackd_swscale_class_init(TrackdSwscaleClass *klass) {
    GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
    GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS(klass);
    gobject_class->set_property = set_property;
    gobject_class->get_property = get_property;
    gobject_class->finalize = finalize;
    g_object_class_install_property(gobject_class, PROP_CAPS,
        g_param_spec_boxed("caps", "Caps", "What the output is to be (a capsfilter's caps after this element)",
                           GST_TYPE_CAPS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    gst_element_class_set_static_metadata(element_class, "trackd libswscale converter", "Filter/Converter/Video",
        "8-bit YCbCr " INPUT_FORMATS " to " OUTPUT_FORMATS " with libswscale; passes anything else through",
        "trackd");
    gst_element_class_add_static_pad_template(element_class, &sink_template);
    gst_element_class_add_static_pad_template(element_class, &src_template);
    trans_class->transform_caps = transform_caps;
    trans_class->fixate_caps = fixate_caps;
    trans_class->decide_allocation = decide_allocation;
    trans_class->propose_allocation = propose_allocation;
    trans_class->passthrough_on_same_caps = TRUE;
    filter_class->set_info = set_info;
    filter_class->transform_frame = transform_frame;
}

static void trackd_swscale_init(TrackdSwscale *self) { (void)self; }

gboolean swift_gst_swscale_makes(const char *format) { return is_output(gst_video_format_from_string(format)); }

gboolean swift_gst_register_swscale(void) {
    return gst_element_register(NULL, "trackdswscale", GST_RANK_NONE, trackd_swscale_get_type());
}
