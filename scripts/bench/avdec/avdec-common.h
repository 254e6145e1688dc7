// avdec-common.h — what appsink-decode.c and trackdavdec.c share: opening libavcodec's H.264 decoder on the
// caps h264parse gives (stream-format=avc, alignment=au) and turning a GStreamer sample into a packet.
// Bench tooling only (scripts/bench/avdec/run.sh builds and runs it); not part of trackd.
#pragma once

#include <gst/gst.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>

// A decoder for `caps` (video/x-h264, avc, au: the avcC record in codec_data becomes the extradata) with
// `threads` frame threads (0: libav's own count, CPUs + 1), pictures allocated by `get_buffer2` with `opaque` (NULL:
// libav's own pool). NULL when libav refuses; the caller owns the context (avcodec_free_context).
static inline AVCodecContext *avdec_open_h264(const GstCaps *caps, int threads,
                                              int (*get_buffer2)(AVCodecContext *, AVFrame *, int), void *opaque) {
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_H264);
    AVCodecContext *ctx = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!ctx) return NULL;
    const GstStructure *s = gst_caps_get_structure(caps, 0);
    const GValue *v = gst_structure_get_value(s, "codec_data");
    if (v && G_VALUE_HOLDS(v, GST_TYPE_BUFFER)) {
        GstBuffer *cd = gst_value_get_buffer(v);
        gsize size = gst_buffer_get_size(cd);
        ctx->extradata = av_mallocz(size + AV_INPUT_BUFFER_PADDING_SIZE);
        ctx->extradata_size = (int)size;
        gst_buffer_extract(cd, 0, ctx->extradata, size);
    }
    ctx->thread_count = threads;
    ctx->thread_type = FF_THREAD_FRAME;
    if (get_buffer2) ctx->get_buffer2 = get_buffer2, ctx->opaque = opaque;
#if FF_API_THREAD_SAFE_CALLBACKS
    // libavcodec 59 (FFmpeg 5.1) calls every get_buffer2 from its frame threads and only warns when a custom one
    // does not say it may be; 60 removed the field. Ours are thread-safe (a mutex around the pool).
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    if (get_buffer2) ctx->thread_safe_callbacks = 1;
    G_GNUC_END_IGNORE_DEPRECATIONS
#endif
    if (avcodec_open2(ctx, codec, NULL) < 0) avcodec_free_context(&ctx);
    return ctx;
}

// A packet holding a copy of `buf` (libav wants AV_INPUT_BUFFER_PADDING_SIZE zero bytes past the end, which a
// GstBuffer does not promise; gst-libav copies too), its pts `pts`. NULL on allocation failure.
static inline AVPacket *avdec_packet(GstBuffer *buf, int64_t pts) {
    AVPacket *pkt = av_packet_alloc();
    gsize size = gst_buffer_get_size(buf);
    if (!pkt || av_new_packet(pkt, (int)size) < 0) {
        av_packet_free(&pkt);
        return NULL;
    }
    gst_buffer_extract(buf, 0, pkt->data, size);
    pkt->pts = pts;
    if (!GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT)) pkt->flags |= AV_PKT_FLAG_KEY;
    return pkt;
}

// libswscale's coefficients for the frame's matrix (as trackdswscale does from the caps the decoder sets).
static inline int avdec_sws_matrix(const AVFrame *f) {
    switch (f->colorspace) {
    case AVCOL_SPC_BT709: return SWS_CS_ITU709;
    case AVCOL_SPC_FCC: return SWS_CS_FCC;
    case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M;
    case AVCOL_SPC_BT2020_NCL: case AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020;
    case AVCOL_SPC_BT470BG: case AVCOL_SPC_SMPTE170M: return SWS_CS_ITU601;
    default: return f->height > 576 ? SWS_CS_ITU709 : SWS_CS_ITU601;  // unspecified: GStreamer's guess by size
    }
}

// A context converting frames like `f` to BGR24 at the same size: SWS_BILINEAR (the unscaled path, as
// trackdswscale, OpenCV and PyAV use it), the frame's matrix and range. NULL when libswscale refuses.
static inline struct SwsContext *avdec_bgr_context(const AVFrame *f) {
    struct SwsContext *c = sws_getContext(f->width, f->height, f->format, f->width, f->height, AV_PIX_FMT_BGR24,
                                          SWS_BILINEAR, NULL, NULL, NULL);
    if (!c) return NULL;
    const int *coefficients = sws_getCoefficients(avdec_sws_matrix(f));
    int full = f->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(c, coefficients, full, coefficients, 1, 0, 1 << 16, 1 << 16);
    return c;
}
