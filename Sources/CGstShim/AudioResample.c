// Resampling for decoded audio outputs: GstAudioConverter with audioresample's defaults, driven by the worker so
// that every range starts the resampler fresh at a known input frame (AudioResampling.swift). Needs C: GstAudioInfo
// and GstAudioBuffer are macro-heavy structs, and the converter takes arrays of plane pointers.
#include "CGstShim.h"

struct SwiftGstResampler {
    GstAudioConverter *converter;
    GstAudioInfo in;
    GstAudioInfo out;
    GstCaps *out_caps;
};

SwiftGstResampler *swift_gst_resampler_new(const GstCaps *caps, gint out_rate) {
    GstAudioInfo in;
    if (caps == NULL || out_rate <= 0 || !gst_audio_info_from_caps(&in, caps)) return NULL;
    GstAudioInfo out = in;
    GST_AUDIO_INFO_RATE(&out) = out_rate;
    // audioresample's defaults: Kaiser, quality 4 (its filter options for these rates); no dither or noise shaping
    // (the format does not change, so nothing is requantized but the filter's own output).
    GstStructure *config = gst_structure_new("config",
        GST_AUDIO_CONVERTER_OPT_RESAMPLER_METHOD, GST_TYPE_AUDIO_RESAMPLER_METHOD, GST_AUDIO_RESAMPLER_METHOD_KAISER,
        GST_AUDIO_CONVERTER_OPT_DITHER_METHOD, GST_TYPE_AUDIO_DITHER_METHOD, GST_AUDIO_DITHER_NONE,
        GST_AUDIO_CONVERTER_OPT_NOISE_SHAPING_METHOD, GST_TYPE_AUDIO_NOISE_SHAPING_METHOD, GST_AUDIO_NOISE_SHAPING_NONE,
        NULL);
    gst_audio_resampler_options_set_quality(GST_AUDIO_RESAMPLER_METHOD_KAISER, GST_AUDIO_RESAMPLER_QUALITY_DEFAULT,
                                            GST_AUDIO_INFO_RATE(&in), out_rate, config);
    GstAudioConverter *converter = gst_audio_converter_new(GST_AUDIO_CONVERTER_FLAG_NONE, &in, &out, config);
    if (converter == NULL) return NULL;
    SwiftGstResampler *r = g_new0(SwiftGstResampler, 1);
    r->converter = converter;
    r->in = in;
    r->out = out;
    r->out_caps = gst_audio_info_to_caps(&out);
    return r;
}

void swift_gst_resampler_free(SwiftGstResampler *r) {
    if (r == NULL) return;
    gst_audio_converter_free(r->converter);
    gst_caps_unref(r->out_caps);
    g_free(r);
}

gsize swift_gst_resampler_latency(SwiftGstResampler *r) { return gst_audio_converter_get_max_latency(r->converter); }

GstSample *swift_gst_resampler_process(SwiftGstResampler *r, GstBuffer *buffer, gsize skip, gsize frames,
                                       const GstSegment *segment, gsize *made) {
    *made = 0;
    gsize out_frames = gst_audio_converter_get_out_frames(r->converter, frames);
    GstAudioInfo *out = &r->out;
    GstBuffer *outbuf = gst_buffer_new_allocate(NULL, MAX(out_frames, 1) * GST_AUDIO_INFO_BPF(out), NULL);
    gboolean planar = GST_AUDIO_INFO_LAYOUT(out) == GST_AUDIO_LAYOUT_NON_INTERLEAVED;
    if (planar) gst_buffer_add_audio_meta(outbuf, out, MAX(out_frames, 1), NULL);
    GstAudioBuffer dst;
    if (!gst_audio_buffer_map(&dst, out, outbuf, GST_MAP_WRITE)) {
        gst_buffer_unref(outbuf);
        return NULL;
    }
    gboolean ok;
    if (buffer != NULL) {
        GstAudioBuffer src;
        if (!gst_audio_buffer_map(&src, &r->in, buffer, GST_MAP_READ)) {
            gst_audio_buffer_unmap(&dst);
            gst_buffer_unref(outbuf);
            return NULL;
        }
        gpointer planes[64];
        gint n = MIN(src.n_planes, 64);
        gsize step = planar ? (gsize)GST_AUDIO_INFO_BPS(&r->in) : (gsize)GST_AUDIO_INFO_BPF(&r->in);
        for (gint i = 0; i < n; i++) planes[i] = (guint8 *)src.planes[i] + skip * step;
        ok = gst_audio_converter_samples(r->converter, 0, planes, frames, dst.planes, out_frames);
        gst_audio_buffer_unmap(&src);
    } else {
        ok = gst_audio_converter_samples(r->converter, 0, NULL, frames, dst.planes, out_frames);
    }
    gst_audio_buffer_unmap(&dst);
    if (!ok || out_frames == 0) {
        gst_buffer_unref(outbuf);
        return NULL;
    }
    *made = out_frames;
    GstSample *sample = gst_sample_new(outbuf, r->out_caps, segment, NULL);
    gst_buffer_unref(outbuf);
    return sample;
}
