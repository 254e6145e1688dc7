// trackdavdec.c — a minimal GstVideoDecoder on libavcodec's H.264 decoder, to measure what a decoder element of
// trackd's own would cost against gst-libav's avdec_h264 (docs/records/decode-path.md, issue #26).
// Bench tooling only, not part of trackd: loaded with GST_PLUGIN_PATH=build/avdec.
//   sink: video/x-h264, stream-format=avc, alignment=au (h264parse before it)
//   src:  video/x-raw, format=I420 (8-bit 4:2:0 only; anything else is a decode error)
// Properties: max-threads (frame threads; 0 = libav's own count, CPUs + 1), output:
//   "copy"   av_image_copy of each picture into a buffer of the base class's pool (avdec_h264 with direct rendering
//            off, as trackd runs it for YCbCr outputs);
//   "direct" libav decodes into buffers of the element's own GstVideoBufferPool (get_buffer2; each buffer mapped
//            only while its plane pointers are taken, so the base class shares the memory instead of copying it);
//   "wrap"   no copy and no pool: libav's own reference-counted picture wrapped read-only in a GstBuffer with a
//            GstVideoMeta, released when the buffer is.
// Drains on EOS and caps changes, flushes libav on FLUSH_STOP.
#define PACKAGE "trackdavdec"
#include <gst/video/gstvideodecoder.h>
#include <gst/video/video.h>
#include <libavutil/imgutils.h>

#include "avdec-common.h"

typedef struct {
    GstVideoDecoder parent;
    AVCodecContext *ctx;
    AVFrame *picture;
    GstVideoCodecState *input;
    int max_threads, out_width, out_height, output;
    GMutex pool_lock;  // get_buffer2 runs on libav's frame threads
    GstBufferPool *pool;
    GstVideoInfo pool_info;
    enum AVColorSpace out_matrix;
    enum AVColorRange out_range;
} TrackdAvDec;
typedef struct {
    GstVideoDecoderClass parent_class;
} TrackdAvDecClass;

G_DEFINE_TYPE(TrackdAvDec, trackd_avdec, GST_TYPE_VIDEO_DECODER)
enum { PROP_0, PROP_MAX_THREADS, PROP_OUTPUT };
enum { OUTPUT_COPY, OUTPUT_DIRECT, OUTPUT_WRAP };
static const char *const output_names[] = {"copy", "direct", "wrap"};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-h264, stream-format=avc, alignment=au"));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw, format=I420"));

static GstFlowReturn avdec_drain(GstVideoDecoder *dec);

// The element's pool for pictures of ctx's size with the padding and stride alignment libav asks for (the picture
// keeps its display size in the GstVideoInfo and GstVideoMeta; the padding is below and right of it). A new
// reference, or NULL.
static GstBufferPool *avdec_pool(TrackdAvDec *self, AVCodecContext *ctx, const AVFrame *f) {
    GstVideoInfo info;
    GstVideoAlignment align;
    int w = f->width, h = f->height, linesize_align[AV_NUM_DATA_POINTERS];
    avcodec_align_dimensions2(ctx, &w, &h, linesize_align);
    gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, ctx->width, ctx->height);
    gst_video_alignment_reset(&align);
    align.padding_right = (guint)(w - ctx->width), align.padding_bottom = (guint)(h - ctx->height);
    for (int p = 0; p < 3; p++) align.stride_align[p] = (guint)linesize_align[p] - 1;
    gst_video_info_align(&info, &align);
    g_mutex_lock(&self->pool_lock);
    if (!self->pool || !gst_video_info_is_equal(&info, &self->pool_info)) {
        if (self->pool) gst_object_unref(self->pool);
        self->pool = gst_video_buffer_pool_new();
        GstStructure *config = gst_buffer_pool_get_config(self->pool);
        GstCaps *caps = gst_video_info_to_caps(&info);
        gst_buffer_pool_config_set_params(config, caps, (guint)info.size, 0, 0);
        gst_caps_unref(caps);
        gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
        gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
        gst_buffer_pool_config_set_video_alignment(config, &align);
        if (!gst_buffer_pool_set_config(self->pool, config) || !gst_buffer_pool_set_active(self->pool, TRUE))
            gst_clear_object(&self->pool);
        self->pool_info = info;
    }
    GstBufferPool *pool = self->pool ? gst_object_ref(self->pool) : NULL;
    g_mutex_unlock(&self->pool_lock);
    return pool;
}

static void avdec_release_buffer(void *opaque, uint8_t *data) {
    (void)data;
    gst_buffer_unref(opaque);
}

// libav's get_buffer2 (any of its threads): a buffer of the element's pool; AVFrame.buf[0] holds its reference.
static int avdec_get_buffer2(AVCodecContext *ctx, AVFrame *f, int flags) {
    TrackdAvDec *self = ctx->opaque;
    if (f->format != AV_PIX_FMT_YUV420P) return avcodec_default_get_buffer2(ctx, f, flags);
    GstBufferPool *pool = avdec_pool(self, ctx, f);
    GstBuffer *buf = NULL;
    GstVideoFrame vf;
    GstFlowReturn acquired = pool ? gst_buffer_pool_acquire_buffer(pool, &buf, NULL) : GST_FLOW_ERROR;
    if (pool) gst_object_unref(pool);
    if (acquired != GST_FLOW_OK) return AVERROR(ENOMEM);
    // Mapped only to read the plane pointers: system memory stays where it is, and a memory not mapped for writing
    // can be shared by finish_frame's gst_buffer_make_writable instead of copied (docs/records/decode-path.md).
    if (!gst_video_frame_map(&vf, &self->pool_info, buf, GST_MAP_READ)) {
        gst_buffer_unref(buf);
        return AVERROR(ENOMEM);
    }
    for (int p = 0; p < 3; p++) {
        f->data[p] = GST_VIDEO_FRAME_PLANE_DATA(&vf, p);
        f->linesize[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p);
    }
    gst_video_frame_unmap(&vf);
    f->buf[0] = av_buffer_create(f->data[0], (size_t)gst_buffer_get_size(buf), avdec_release_buffer, buf, 0);
    if (!f->buf[0]) {
        gst_buffer_unref(buf);
        return AVERROR(ENOMEM);
    }
    return 0;
}

static gboolean avdec_set_format(GstVideoDecoder *dec, GstVideoCodecState *state) {
    TrackdAvDec *self = (TrackdAvDec *)dec;
    if (self->ctx) avdec_drain(dec);
    avcodec_free_context(&self->ctx);
    g_clear_pointer(&self->input, gst_video_codec_state_unref);
    self->input = gst_video_codec_state_ref(state);
    self->out_width = 0;
    self->ctx = avdec_open_h264(state->caps, self->max_threads,
                                self->output == OUTPUT_DIRECT ? avdec_get_buffer2 : NULL, self);
    return self->ctx != NULL;
}

// The output state for `f` when its size, matrix or range differs from the last: I420, the frame's colorimetry
// (libav's enums are ISO/IEC 23091-2 codes, as GStreamer's *_from_iso take them).
static gboolean avdec_ensure_output(TrackdAvDec *self, const AVFrame *f) {
    if (f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) return FALSE;
    if (self->out_width == f->width && self->out_height == f->height && self->out_matrix == f->colorspace &&
        self->out_range == f->color_range)
        return TRUE;
    GstVideoDecoder *dec = GST_VIDEO_DECODER(self);
    GstVideoCodecState *out =
        gst_video_decoder_set_output_state(dec, GST_VIDEO_FORMAT_I420, f->width, f->height, self->input);
    GstVideoColorimetry *c = &out->info.colorimetry;
    c->range = f->color_range == AVCOL_RANGE_JPEG ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235;
    if (f->colorspace != AVCOL_SPC_UNSPECIFIED) c->matrix = gst_video_color_matrix_from_iso(f->colorspace);
    if (f->color_trc != AVCOL_TRC_UNSPECIFIED) c->transfer = gst_video_transfer_function_from_iso(f->color_trc);
    if (f->color_primaries != AVCOL_PRI_UNSPECIFIED)
        c->primaries = gst_video_color_primaries_from_iso(f->color_primaries);
    gst_video_codec_state_unref(out);
    self->out_width = f->width, self->out_height = f->height;
    self->out_matrix = f->colorspace, self->out_range = f->color_range;
    return gst_video_decoder_negotiate(dec);
}

static void avdec_free_frame(gpointer data) {
    AVFrame *f = data;
    av_frame_free(&f);
}

// `f`'s planes as a read-only GstBuffer holding a reference to it (no copy), with a GstVideoMeta for its strides.
static GstBuffer *avdec_wrap(const AVFrame *f, const GstVideoInfo *info) {
    AVFrame *ref = av_frame_clone(f);
    GstBuffer *buf = gst_buffer_new();
    gsize offset[GST_VIDEO_MAX_PLANES] = {0}, total = 0;
    gint stride[GST_VIDEO_MAX_PLANES] = {0};
    for (int p = 0; p < 3; p++) {
        gsize size = (gsize)ref->linesize[p] * GST_VIDEO_INFO_COMP_HEIGHT(info, p);
        gst_buffer_append_memory(buf, gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, ref->data[p], size, 0, size,
                                                             p == 0 ? ref : NULL, p == 0 ? avdec_free_frame : NULL));
        offset[p] = total, stride[p] = ref->linesize[p], total += size;
    }
    gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(info),
                                   GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), 3, offset, stride);
    return buf;
}

// `f` copied into a buffer of the negotiated pool (what avdec_h264 does with direct rendering off).
static GstFlowReturn avdec_copy(GstVideoDecoder *dec, GstVideoCodecFrame *out, const AVFrame *f,
                                GstVideoCodecState *state) {
    GstFlowReturn ret = gst_video_decoder_allocate_output_frame(dec, out);
    GstVideoFrame vf;
    if (ret != GST_FLOW_OK) return ret;
    if (!gst_video_frame_map(&vf, &state->info, out->output_buffer, GST_MAP_WRITE)) return GST_FLOW_ERROR;
    for (int p = 0; p < 3; p++)
        av_image_copy_plane(GST_VIDEO_FRAME_PLANE_DATA(&vf, p), GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p), f->data[p],
                            f->linesize[p], GST_VIDEO_FRAME_COMP_WIDTH(&vf, p), GST_VIDEO_FRAME_COMP_HEIGHT(&vf, p));
    gst_video_frame_unmap(&vf);
    return GST_FLOW_OK;
}

// One decoded picture to the base class: the codec frame whose system_frame_number libav carried as the pts.
static GstFlowReturn avdec_push(TrackdAvDec *self, const AVFrame *f) {
    GstVideoDecoder *dec = GST_VIDEO_DECODER(self);
    GstVideoCodecFrame *out = gst_video_decoder_get_frame(dec, (int)f->pts);
    if (!out) return GST_FLOW_OK;  // a picture of a frame already dropped or flushed
    if (!avdec_ensure_output(self, f)) {
        gst_video_decoder_drop_frame(dec, out);
        return GST_FLOW_NOT_NEGOTIATED;
    }
    GstVideoCodecState *state = gst_video_decoder_get_output_state(dec);
    GstFlowReturn ret = GST_FLOW_OK;
    if (self->output == OUTPUT_WRAP)
        out->output_buffer = avdec_wrap(f, &state->info);
    else if (self->output == OUTPUT_DIRECT && f->format == AV_PIX_FMT_YUV420P)
        out->output_buffer = gst_buffer_ref(av_buffer_get_opaque(f->buf[0]));
    else
        ret = avdec_copy(dec, out, f, state);
    gst_video_codec_state_unref(state);
    if (ret != GST_FLOW_OK) {
        gst_video_decoder_drop_frame(dec, out);
        return ret;
    }
    return gst_video_decoder_finish_frame(dec, out);
}

static GstFlowReturn avdec_receive_all(TrackdAvDec *self) {
    GstFlowReturn ret = GST_FLOW_OK;
    while (ret == GST_FLOW_OK && avcodec_receive_frame(self->ctx, self->picture) == 0) {
        ret = avdec_push(self, self->picture);
        av_frame_unref(self->picture);
    }
    return ret;
}

static GstFlowReturn avdec_handle_frame(GstVideoDecoder *dec, GstVideoCodecFrame *frame) {
    TrackdAvDec *self = (TrackdAvDec *)dec;
    AVPacket *pkt = avdec_packet(frame->input_buffer, frame->system_frame_number);
    gst_video_codec_frame_unref(frame);  // the base class keeps it until finish_frame or drop_frame
    if (!self->ctx || !pkt) {
        av_packet_free(&pkt);
        return GST_FLOW_NOT_NEGOTIATED;
    }
    GstFlowReturn ret = GST_FLOW_OK;
    int sent;
    while ((sent = avcodec_send_packet(self->ctx, pkt)) == AVERROR(EAGAIN) && ret == GST_FLOW_OK)
        ret = avdec_receive_all(self);
    av_packet_free(&pkt);
    if (sent < 0 && sent != AVERROR(EAGAIN))
        GST_VIDEO_DECODER_ERROR(dec, 1, STREAM, DECODE, (NULL), ("libav refused a packet (%d)", sent), ret);
    return ret == GST_FLOW_OK ? avdec_receive_all(self) : ret;
}

// End of stream or new caps: every picture libav still holds goes out, then libav starts afresh.
static GstFlowReturn avdec_drain(GstVideoDecoder *dec) {
    TrackdAvDec *self = (TrackdAvDec *)dec;
    if (!self->ctx) return GST_FLOW_OK;
    avcodec_send_packet(self->ctx, NULL);
    GstFlowReturn ret = avdec_receive_all(self);
    avcodec_flush_buffers(self->ctx);
    return ret;
}

static gboolean avdec_flush(GstVideoDecoder *dec) {
    TrackdAvDec *self = (TrackdAvDec *)dec;
    if (self->ctx) avcodec_flush_buffers(self->ctx);
    return TRUE;
}

static gboolean avdec_stop(GstVideoDecoder *dec) {
    TrackdAvDec *self = (TrackdAvDec *)dec;
    avcodec_free_context(&self->ctx);  // releases every picture of the pool first
    g_clear_pointer(&self->input, gst_video_codec_state_unref);
    self->out_width = 0;
    if (self->pool) gst_buffer_pool_set_active(self->pool, FALSE);
    gst_clear_object(&self->pool);
    return TRUE;
}

static void avdec_set_property(GObject *obj, guint id, const GValue *value, GParamSpec *pspec) {
    TrackdAvDec *self = (TrackdAvDec *)obj;
    if (id == PROP_MAX_THREADS) self->max_threads = g_value_get_int(value);
    else if (id == PROP_OUTPUT)
        for (int i = 0; i < 3; i++) {
            if (g_str_equal(g_value_get_string(value), output_names[i])) self->output = i;
        }
    else G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, pspec);
}

static void avdec_get_property(GObject *obj, guint id, GValue *value, GParamSpec *pspec) {
    TrackdAvDec *self = (TrackdAvDec *)obj;
    if (id == PROP_MAX_THREADS) g_value_set_int(value, self->max_threads);
    else if (id == PROP_OUTPUT) g_value_set_string(value, output_names[self->output]);
    else G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, pspec);
}

static void avdec_finalize(GObject *obj) {
    TrackdAvDec *self = (TrackdAvDec *)obj;
    avcodec_free_context(&self->ctx);
    av_frame_free(&self->picture);
    gst_clear_object(&self->pool);
    g_mutex_clear(&self->pool_lock);
    G_OBJECT_CLASS(trackd_avdec_parent_class)->finalize(obj);
}

static void trackd_avdec_class_init(TrackdAvDecClass *klass) {
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    GstElementClass *ec = GST_ELEMENT_CLASS(klass);
    GstVideoDecoderClass *dc = GST_VIDEO_DECODER_CLASS(klass);
    oc->set_property = avdec_set_property, oc->get_property = avdec_get_property, oc->finalize = avdec_finalize;
    g_object_class_install_property(oc, PROP_MAX_THREADS,
                                    g_param_spec_int("max-threads", "Max threads", "0: libav's own count", 0, 64, 0,
                                                     G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
    g_object_class_install_property(oc, PROP_OUTPUT,
                                    g_param_spec_string("output", "Output", "copy, direct or wrap", "copy",
                                                        G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
    gst_element_class_add_static_pad_template(ec, &sink_template);
    gst_element_class_add_static_pad_template(ec, &src_template);
    gst_element_class_set_static_metadata(ec, "trackd libavcodec H.264 decoder (bench)", "Codec/Decoder/Video",
                                          "libavcodec's H.264 decoder in a minimal GstVideoDecoder", "trackd");
    dc->set_format = avdec_set_format, dc->handle_frame = avdec_handle_frame;
    dc->drain = avdec_drain, dc->finish = avdec_drain, dc->flush = avdec_flush, dc->stop = avdec_stop;
}

static void trackd_avdec_init(TrackdAvDec *self) {
    self->picture = av_frame_alloc();
    g_mutex_init(&self->pool_lock);
    gst_video_decoder_set_packetized(GST_VIDEO_DECODER(self), TRUE);
}

static gboolean plugin_init(GstPlugin *plugin) {
    return gst_element_register(plugin, "trackdavdec", GST_RANK_NONE, trackd_avdec_get_type());
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, trackdavdec, "libavcodec H.264 decoder for trackd's bench",
                  plugin_init, "0.1", "LGPL", "trackd", "trackd")
