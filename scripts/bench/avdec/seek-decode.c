// seek-decode.c — a flush in the middle of a decode, for run.sh check: `filesrc ! qtdemux ! h264parse ! DECODER !
// videoconvert ! video/x-raw,format=YV12 ! appsink`, PLAYING; after FIRST frames a flushing accurate seek to SECONDS,
// then every frame to the end written to stdout (YV12, rows packed). A decoder that does not flush libav on
// FLUSH_STOP leaks pictures of before the seek into the output; run.sh compares the bytes with ffmpeg's `-ss`.
// usage: seek-decode CLIP DECODER FIRST SECONDS   (DECODER: one element and its properties, e.g. "trackdavdec")
// Bench tooling only (scripts/bench/avdec/run.sh builds and runs it).
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>

// The frame's planes, row by row without padding, to stdout. FALSE on a short write or a buffer it cannot map.
static gboolean write_frame(GstSample *sample) {
    GstVideoInfo info;
    GstVideoFrame f;
    if (!gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) ||
        !gst_video_frame_map(&f, &info, gst_sample_get_buffer(sample), GST_MAP_READ))
        return FALSE;
    gboolean ok = TRUE;
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f); p++) {
        const guint8 *row = GST_VIDEO_FRAME_PLANE_DATA(&f, p);
        size_t width = (size_t)GST_VIDEO_FRAME_COMP_WIDTH(&f, p) * GST_VIDEO_FRAME_COMP_PSTRIDE(&f, p);
        for (int y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT(&f, p); y++, row += GST_VIDEO_FRAME_PLANE_STRIDE(&f, p))
            ok = ok && fwrite(row, 1, width, stdout) == width;
    }
    gst_video_frame_unmap(&f);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s CLIP DECODER FIRST SECONDS\n", argv[0]);
        return 2;
    }
    gst_init(NULL, NULL);
    gchar *desc = g_strdup_printf("filesrc name=src ! qtdemux ! h264parse ! %s ! videoconvert ! "
                                  "video/x-raw,format=YV12 ! appsink name=sink sync=false max-buffers=2",
                                  argv[2]);
    GstElement *pipeline = gst_parse_launch(desc, NULL);
    g_free(desc);
    if (!pipeline) return 1;
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstAppSink *sink = GST_APP_SINK(gst_bin_get_by_name(GST_BIN(pipeline), "sink"));
    g_object_set(src, "location", argv[1], NULL);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    long first = atol(argv[3]), after = 0;
    for (long i = 0; i < first; i++) {
        GstSample *s = gst_app_sink_pull_sample(sink);
        if (!s) return 1;
        gst_sample_unref(s);
    }
    gint64 at = (gint64)(atof(argv[4]) * GST_SECOND);
    if (!gst_element_seek_simple(pipeline, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, at))
        return 1;
    GstSample *s;
    gboolean ok = TRUE;
    while (ok && (s = gst_app_sink_pull_sample(sink))) {
        ok = write_frame(s);
        gst_sample_unref(s);
        after++;
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    fprintf(stderr, "%ld frames after the seek\n", after);
    return ok && after > 0 ? 0 : 1;
}
