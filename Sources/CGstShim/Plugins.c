// Plugins for the worker sandbox and the warm worker's rehearsal clip (declared in CGstShim.h).
#define _GNU_SOURCE
#include "CGstShim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// ── the worker sandbox: preload plugins ──────────────────────────────────────────────────────────────────────

static gboolean klass_is_autopluggable(const gchar *klass) {
    if (klass == NULL) return FALSE;
    return strstr(klass, "Demuxer") != NULL || strstr(klass, "Parser") != NULL || strstr(klass, "Decoder") != NULL ||
           strstr(klass, "Depayloader") != NULL || strstr(klass, "Converter") != NULL;
}

guint swift_gst_preload_plugins(void) {
    static const char *const by_name[] = {
        "appsink", "capsfilter", "queue", "decodebin", "parsebin", "videoconvert", "videoscale",
        "audioconvert", "audioresample", "pngenc", "identity", "videoflip", NULL,
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

// The launch description of the first H.264 encoder installed, or NULL.
static const char *rehearsal_encoder(void) {
    static const char *const encoders[] = {
        // x264enc: B-frames (the reorder path of the decoder); openh264enc (plugins-bad) makes none.
        "x264enc speed-preset=veryfast bframes=2 key-int-max=30", "openh264enc", NULL,
    };
    static const char *const names[] = { "x264enc", "openh264enc", NULL };
    for (int i = 0; names[i] != NULL; i++) {
        GstElementFactory *factory = gst_element_factory_find(names[i]);
        if (factory != NULL) {
            gst_object_unref(factory);
            return encoders[i];
        }
    }
    return NULL;
}

int swift_gst_rehearsal_clip(char *error, size_t size) {
    error[0] = '\0';
    const char *encoder = rehearsal_encoder();
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
