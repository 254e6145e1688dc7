// appsink-decode.c — GStreamer demuxes and parses, libavcodec decodes, no GStreamer decoder element:
//   filesrc ! qtdemux ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! appsink
// and each sample goes to libavcodec's H.264 decoder (frame threads) on the main thread. With `bgr`, each decoded
// frame is handed (a reference, no copy) to a second thread that converts it to BGR24 with libswscale
// (SWS_BILINEAR, the unscaled path, the decoder's matrix and range), as trackd's worker converts beside its decoder;
// otherwise decoded frames are dropped.
// usage: appsink-decode CLIP THREADS [bgr]   (THREADS 0: libav's own count, CPUs + 1)
// Prints "frames N converted M" on stdout. Bench tooling only (scripts/bench/avdec/run.sh builds and runs it).
#include <gst/app/gstappsink.h>
#include <libavutil/imgutils.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "avdec-common.h"

// The hand-off between the decoder and the converter: at most QUEUE_SIZE frames waiting, as the worker's converter
// queue (max-size-buffers 3). A NULL frame ends the converter.
enum { QUEUE_SIZE = 3, OUTPUTS = 4 };
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    AVFrame *frames[QUEUE_SIZE];
    int head, count;
    long converted;
} Handoff;

static void handoff_push(Handoff *h, AVFrame *f) {
    pthread_mutex_lock(&h->lock);
    while (h->count == QUEUE_SIZE) pthread_cond_wait(&h->changed, &h->lock);
    h->frames[(h->head + h->count++) % QUEUE_SIZE] = f;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static AVFrame *handoff_pop(Handoff *h) {
    pthread_mutex_lock(&h->lock);
    while (h->count == 0) pthread_cond_wait(&h->changed, &h->lock);
    AVFrame *f = h->frames[h->head];
    h->head = (h->head + 1) % QUEUE_SIZE;
    h->count--;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
    return f;
}

// The converter thread: BGR24 into OUTPUTS rotating buffers (a pool's slots), until the NULL frame.
static void *convert_main(void *arg) {
    Handoff *h = arg;
    struct SwsContext *sws = NULL;
    uint8_t *out[OUTPUTS] = {0};
    AVFrame *f;
    while ((f = handoff_pop(h))) {
        if (!sws) {
            sws = avdec_bgr_context(f);
            for (int i = 0; i < OUTPUTS && sws; i++) out[i] = av_malloc((size_t)f->width * f->height * 3);
        }
        if (sws) {
            uint8_t *dst[1] = {out[h->converted % OUTPUTS]};
            int dst_stride[1] = {f->width * 3};
            if (sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, dst_stride) ==
                f->height)
                h->converted++;
        }
        av_frame_free(&f);
    }
    for (int i = 0; i < OUTPUTS; i++) av_free(out[i]);
    sws_freeContext(sws);
    return NULL;
}

// Every frame the decoder has ready: handed to the converter, or dropped. Returns the number received.
static long receive_all(AVCodecContext *ctx, AVFrame *frame, Handoff *h) {
    long n = 0;
    while (avcodec_receive_frame(ctx, frame) == 0) {
        n++;
        if (h) {
            AVFrame *ref = av_frame_alloc();
            av_frame_move_ref(ref, frame);
            handoff_push(h, ref);
        } else {
            av_frame_unref(frame);
        }
    }
    return n;
}

// Feeds every sample of the appsink to the decoder, then drains it. Returns the frames decoded, -1 on failure.
static long decode_all(GstAppSink *sink, int threads, Handoff *h) {
    AVCodecContext *ctx = NULL;
    AVFrame *frame = av_frame_alloc();
    long frames = 0;
    GstSample *sample;
    while ((sample = gst_app_sink_pull_sample(sink))) {
        if (!ctx && !(ctx = avdec_open_h264(gst_sample_get_caps(sample), threads, NULL, NULL))) {
            gst_sample_unref(sample);
            break;
        }
        GstBuffer *buf = gst_sample_get_buffer(sample);
        AVPacket *pkt = avdec_packet(buf, (int64_t)GST_BUFFER_PTS(buf));
        gst_sample_unref(sample);
        // libav may refuse a packet until a frame is taken out (EAGAIN): take them, then send it again.
        while (pkt && avcodec_send_packet(ctx, pkt) == AVERROR(EAGAIN)) frames += receive_all(ctx, frame, h);
        av_packet_free(&pkt);
        frames += receive_all(ctx, frame, h);
    }
    if (!ctx) {
        av_frame_free(&frame);
        return -1;
    }
    avcodec_send_packet(ctx, NULL);
    frames += receive_all(ctx, frame, h);
    av_frame_free(&frame);
    avcodec_free_context(&ctx);
    return frames;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CLIP THREADS [bgr]\n", argv[0]);
        return 2;
    }
    gst_init(NULL, NULL);
    gchar *desc = g_strdup_printf("filesrc name=src ! qtdemux ! h264parse ! "
                                  "video/x-h264,stream-format=avc,alignment=au ! appsink name=sink sync=false "
                                  "max-buffers=8");
    GstElement *pipeline = gst_parse_launch(desc, NULL);
    g_free(desc);
    if (!pipeline) return 1;
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    g_object_set(src, "location", argv[1], NULL);
    Handoff handoff = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    Handoff *h = argc > 3 && g_str_equal(argv[3], "bgr") ? &handoff : NULL;
    pthread_t converter;
    if (h) pthread_create(&converter, NULL, convert_main, h);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    long frames = decode_all(GST_APP_SINK(sink), atoi(argv[2]), h);
    if (h) {
        handoff_push(h, NULL);
        pthread_join(converter, NULL);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    printf("frames %ld converted %ld\n", frames, h ? h->converted : 0);
    return frames > 0 ? 0 : 1;
}
