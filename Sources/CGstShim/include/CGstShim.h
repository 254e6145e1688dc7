// CGstShim — the parts of GStreamer/GLib that Swift cannot call directly, each with the reason it needs C.
//
// Like swift-nio's CNIOLinux: every function is a named workaround. The comment line above each declaration says
// who owns what it returns (GStreamer's "transfer full" = the caller must unref/free, "transfer none" = borrowed)
// and why the function exists at all. Nothing here keeps state except the registered element types.
#ifndef CGSTSHIM_H
#define CGSTSHIM_H

#include <stdint.h>
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/video/gstvideopool.h>
#include <gst/audio/audio.h>

// ── trackdfdsrc: a GstBaseSrc that reads an already-open fd with pread() ──────────────────────────────────

/// Registers the element "trackdfdsrc" (property `fd`, int) with gst_element_register(NULL, …). Returns TRUE on
/// success; idempotent. Needs C: a GObject subclass (G_DEFINE_TYPE, class_init filling GstBaseSrcClass vmethods).
gboolean swift_gst_register_fdsrc(void);

// ── trackdswscale: 8-bit YCbCr to the 8-bit RGB family with libswscale (SwscaleConvert.c) ─────────────────────

/// Registers the element "trackdswscale" (property `caps`: the output wanted, as a capsfilter after it would say)
/// with gst_element_register(NULL, …). It converts I420, YV12 and Y42B to BGRA, RGBA, ARGB, RGB, BGR, RGBP or GBR
/// (scaling when `caps` gives both width and height) with the matrix and range of its input caps, and passes any
/// other input through. Returns TRUE on success; idempotent.
/// Needs C: a GstVideoFilter subclass.
gboolean swift_gst_register_swscale(void);
/// TRUE when trackdswscale makes `format` (a GstVideoFormat name). Needs C: the element's own format table.
gboolean swift_gst_swscale_makes(const char *format);
/// The allocator trackdswscale offers the decoder (DecodedCopies.c): a copy of a whole memory is a read-only view of
/// the same bytes, copied on write. A new reference. Needs C: a GstAllocator subclass.
GstAllocator *swift_gst_decoded_allocator(void);
/// How many such views its copies have made in this process.
guint64 swift_gst_decoded_views(void);

// ── the worker sandbox: load before the seccomp filter what GStreamer would otherwise dlopen() lazily ────────

/// Loads (dlopen) every plugin that parsebin/decodebin can autoplug — element factories of rank >= marginal whose
/// klass names a Demuxer, Parser, Decoder, Depayloader or Converter — every typefinder's plugin, and the elements
/// trackd creates by name. After the worker's seccomp filter, openat() fails with EPERM, so a plugin first needed
/// after it could not be loaded. Returns the number of features loaded. Needs C: GList walking, GST_* macros.
guint swift_gst_preload_plugins(void);

/// Loads (dlopen) the plugin of the element factory `factory_name`, as swift_gst_preload_plugins does for the
/// autopluggable ones: for elements a worker makes after its seccomp filter. FALSE when there is no such factory or
/// its plugin does not load. Needs C: GST_PLUGIN_FEATURE casts of registry lookups.
gboolean swift_gst_load_element_plugin(const char *factory_name);
/// The warm worker's rehearsal clip (GstBridge/Rehearsal.swift): five 64×48 frames of H.264 High with B-frames
/// (x264enc, else openh264enc) in an MP4, written by GStreamer into a new memfd (inside the sandbox: the elements'
/// plugins must have been loaded with swift_gst_load_element_plugin before it). Returns the memfd (transfer full:
/// the caller closes it) or -1 with the reason in `error` (NUL-terminated, at most `size` bytes). Blocks until the
/// encoder is done (a few ms). Needs C: memfd_create, which Swift's Glibc module does not import.
int swift_gst_rehearsal_clip(char *error, size_t size);

/// Converts one grey `width`×`height` frame from each format of `inputs` (comma-separated GstVideoFormat names;
/// YCbCr ones once with each colorimetry of `colorimetries`, e.g. "bt709,bt601") to each of `outputs`, with
/// trackd's videoconvert settings, and scales each output format once: compiles the ORC programs those
/// conversions run while ORC may still generate code (ConversionWarmup.c). Returns how many conversions ran.
int swift_gst_warm_video_conversions(const char *inputs, const char *outputs, const char *colorimetries,
                                     int width, int height);

// ── g_object_set is variadic: one typed setter per GValue type we use ───────────────────────────────────────

/// g_object_set(object, name, (gint)value, NULL). Nothing returned. Needs C: varargs.
void swift_gst_object_set_int(gpointer object, const char *name, gint value);
/// g_object_set(object, name, (guint)value, NULL). Nothing returned. Needs C: varargs.
void swift_gst_object_set_uint(gpointer object, const char *name, guint value);
/// g_object_set(object, name, (guint64)value, NULL). Nothing returned. Needs C: varargs.
void swift_gst_object_set_uint64(gpointer object, const char *name, guint64 value);
/// g_object_set(object, name, (gboolean)value, NULL). Nothing returned. Needs C: varargs.
void swift_gst_object_set_bool(gpointer object, const char *name, gboolean value);
/// g_object_set(object, name, caps, NULL) for a GstCaps property (caps: transfer none, GObject takes its own ref).
/// Needs C: varargs.
void swift_gst_object_set_caps(gpointer object, const char *name, const GstCaps *caps);

// ── function-like macros ─────────────────────────────────────────────────────────────────────────────────────

/// GST_CLOCK_TIME_NONE. Needs C: a macro with a cast, which Swift does not import.
GstClockTime swift_gst_clock_time_none(void);
/// GST_BUFFER_PTS(buffer) (buffer: transfer none). Needs C: function-like macro.
GstClockTime swift_gst_buffer_pts(const GstBuffer *buffer);
/// GST_BUFFER_DTS(buffer) (buffer: transfer none). Needs C: function-like macro.
GstClockTime swift_gst_buffer_dts(const GstBuffer *buffer);
/// GST_BUFFER_DURATION(buffer) (buffer: transfer none). Needs C: function-like macro.
GstClockTime swift_gst_buffer_duration(const GstBuffer *buffer);
/// GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT). Needs C: function-like macro.
gboolean swift_gst_buffer_is_delta_unit(const GstBuffer *buffer);
/// GST_MESSAGE_TYPE(message). Needs C: function-like macro.
GstMessageType swift_gst_message_type(const GstMessage *message);
/// GST_EVENT_TYPE(event). Needs C: function-like macro.
GstEventType swift_gst_event_type(const GstEvent *event);
/// GST_PAD_PROBE_INFO_EVENT(info): transfer none (owned by the probe's caller). A plain cast of info->data: check
/// info->type first. Needs C: function-like macro.
GstEvent *swift_gst_pad_probe_info_event(GstPadProbeInfo *info);
/// GST_PAD_PROBE_INFO_BUFFER(info): transfer none (owned by the probe's caller). A plain cast of info->data: check
/// info->type first. Needs C: function-like macro.
GstBuffer *swift_gst_pad_probe_info_buffer(GstPadProbeInfo *info);
/// Replaces the probed SEGMENT event with a new one of `segment` (copied) and the same seqnum (a seek's answer stays
/// recognisable): the one passing is unreffed, and what follows the probe (the peer, the pad's event function) gets
/// the new one. Needs C: GST_PAD_PROBE_INFO_DATA is a macro.
void swift_gst_pad_probe_info_replace_segment(GstPadProbeInfo *info, const GstSegment *segment);
/// Chains a new buffer holding a copy of `bytes` into `pad` (a sink pad: what a demuxer would have pushed to it),
/// with `pts`, `dts` and `duration` (GST_CLOCK_TIME_NONE: none), DELTA_UNIT when `delta`, and, when `clip_start` or
/// `clip_end` is not 0, a GstAudioClippingMeta of that many samples (GST_FORMAT_DEFAULT) for an audio decoder to
/// drop. Call from the pad's streaming thread (a probe on it). Returns the flow (an allocation failure: ERROR).
/// Needs C: the buffer fields are macros and gst_pad_chain takes the buffer (transfer full).
GstFlowReturn swift_gst_pad_chain_stored(GstPad *pad, const guint8 *bytes, gsize size, GstClockTime pts,
                                         GstClockTime dts, GstClockTime duration, gboolean delta,
                                         guint64 clip_start, guint64 clip_end);
/// Gives the probed buffer a GstAudioClippingMeta of `start` and `end` samples (GST_FORMAT_DEFAULT; the one it has
/// is set, never a second added), making it writable first (a copy when it is shared: the probe's info then holds
/// the copy), and moves its PTS and DTS `shift` ns later (its duration that much shorter; 0: unchanged) — a buffer
/// clipped at the start is stamped where its first kept sample is, as oggdemux stamps Opus's. Needs C: the probe
/// info's data and the buffer fields are macros.
void swift_gst_pad_probe_info_clip_audio(GstPadProbeInfo *info, guint64 start, guint64 end, GstClockTime shift);
/// The probed buffer's GstAudioClippingMeta in samples (GST_FORMAT_DEFAULT): TRUE and its start and end, or FALSE
/// when it has none in samples. Ownership: borrows the info and its buffer. Needs C: the probe info's data is a macro.
gboolean swift_gst_pad_probe_info_audio_clipping(GstPadProbeInfo *info, guint64 *start, guint64 *end);
/// Sets the start of the probed buffer's GstAudioClippingMeta to `start` samples, made writable first (a copy when it
/// is shared: the probe's info then holds the copy; the info keeps owning it); a buffer without one is left as it is.
/// Needs C: the probe info's data is a macro.
void swift_gst_pad_probe_info_reclip_audio(GstPadProbeInfo *info, guint64 start);
/// Gives the probed buffer its DTS as its PTS, made writable first (a copy when it is shared: the probe's info then
/// holds the copy; the info keeps owning it). Needs C: the probe info's data and the buffer fields are macros.
void swift_gst_pad_probe_info_pts_from_dts(GstPadProbeInfo *info);
/// Gives the probed buffer `pts` and `dts` (GST_CLOCK_TIME_NONE: none), made writable first as above. Needs C: the
/// probe info's data and the buffer fields are macros.
void swift_gst_pad_probe_info_set_times(GstPadProbeInfo *info, GstClockTime pts, GstClockTime dts);
/// Sets or clears the probed buffer's DELTA_UNIT flag (made writable first). Needs C: GST_BUFFER_FLAG_SET and the
/// probe info's data are macros.
void swift_gst_pad_probe_info_set_delta(GstPadProbeInfo *info, gboolean delta);
/// The buffer passing the probe, with a reference of its own (transfer full; NULL when no buffer passes): kept
/// after the probe drops it from the pad. Needs C: the probe info's data is a macro.
GstBuffer *swift_gst_pad_probe_info_ref_buffer(GstPadProbeInfo *info);
/// Chains `buffer` (transfer none: a writable copy of its metadata when shared) with `pts` and `dts`
/// (GST_CLOCK_TIME_NONE: none) into the peer of `pad` (a source pad), as if `pad` pushed it: from a probe on `pad`,
/// on its streaming thread, also at EOS (the EOS is stored on `pad` before its probes run, and `pad` would refuse a
/// push). Returns the flow (NOT_LINKED without a peer). Needs C: the buffer fields and gst_buffer_make_writable are
/// macros.
GstFlowReturn swift_gst_pad_chain_peer(GstPad *pad, GstBuffer *buffer, GstClockTime pts, GstClockTime dts);
/// Refuses the probed buffer, buffer list or event: unrefs it, makes `flow` the result its sender sees
/// (GST_PAD_PROBE_INFO_FLOW_RETURN) and returns GST_PAD_PROBE_HANDLED. Needs C: function-like macros.
GstPadProbeReturn swift_gst_pad_probe_refuse(GstPadProbeInfo *info, GstFlowReturn flow);
/// Replaces the probed event by `event` (transfer full: the probe's caller owns it from then on) and unrefs the one
/// it replaces. Needs C: GST_PAD_PROBE_INFO_DATA is a macro.
void swift_gst_pad_probe_info_replace_event(GstPadProbeInfo *info, GstEvent *event);
/// True when some element inside `bin` (recursively) has a pad with a streaming task and every such task is paused
/// or stopped: the demuxers have given up (a demuxer pauses its task at the end or on a fatal error). Needs C:
/// GST_PAD_TASK is a macro and the iterator API is awkward from Swift.
gboolean swift_gst_bin_tasks_all_paused(GstBin *bin);
/// The segment in force where `pad`'s data comes from: walking upstream from `pad` (a ghost pad to its target, an
/// element's source pad to that element's only sink pad, a sink pad to its peer), the SEGMENT sticky on the
/// upstream-most pad whose segment is in TIME — a demuxer's source pad, whose segment a parser passes on only with
/// its next buffer. Copies it into `out` and returns TRUE; FALSE when no pad on the way has one. Borrows `pad`
/// (transfer none); every reference taken while walking is dropped. Needs C: the sink-pad iterator, GST_IS_GHOST_PAD.
gboolean swift_gst_pad_upstream_time_segment(GstPad *pad, GstSegment *out);
/// The current caps of the upstream-most pad, on the same walk from `pad`, whose caps carry `codec_data` (a new
/// reference): a demuxer's source pad where the container stores a configuration record (MP4's avcC, Matroska's
/// CodecPrivate), else the parser's after it; NULL when no pad on the way has one. Borrows `pad`. Needs C: as above.
GstCaps *swift_gst_pad_upstream_codec_data_caps(GstPad *pad);
/// Keeps a reference to the first ERROR message any child of `bin` posts — also one the bin itself then drops
/// (parsebin drops the errors of an element while it is autoplugging it, so a demuxer that fails at once loses its
/// error) — by wrapping the bin's child-bus handler. Call before the bin leaves NULL. Needs C: the child bus's sync
/// handler can only be cleared and set again, and GstBin's class method is a C function pointer.
void swift_gst_bin_record_first_error(GstBin *bin);
/// The first ERROR kept by swift_gst_bin_record_first_error (transfer full), or NULL.
GstMessage *swift_gst_bin_first_error(GstBin *bin);
/// The name of the factory that made `object` ("qtdemux"), when it is an element; else NULL. Transfer none.
const gchar *swift_gst_object_factory_name(GstObject *object);
/// Bytes per sample of one channel of audio/x-raw caps (GstAudioInfo's bpf / channels); 0 when not raw audio.
gint swift_gst_audio_bytes_per_sample(const GstCaps *caps);

// ── g_signal_connect takes an untyped GCallback: typed wrappers keep Swift away from unsafeBitCast ──────────

/// Signature of GstElement::pad-added.
typedef void (*SwiftGstPadAddedCallback)(GstElement *element, GstPad *pad, gpointer user_data);
/// Signature of GstElement::no-more-pads.
typedef void (*SwiftGstNoMorePadsCallback)(GstElement *element, gpointer user_data);
/// Signature of GstBin::element-added.
typedef void (*SwiftGstElementAddedCallback)(GstBin *bin, GstElement *element, gpointer user_data);

/// g_signal_connect_data(element, "pad-added", …): returns the handler id; `destroy` (a GClosureNotify: user_data,
/// closure) runs on user_data when the handler is disconnected or the element finalized. Needs C: GCallback is `void (*)(void)`, a cast Swift cannot
/// make from a typed @convention(c) function without unsafeBitCast.
gulong swift_gst_connect_pad_added(GstElement *element, SwiftGstPadAddedCallback callback, gpointer user_data,
                                   GClosureNotify destroy);
/// g_signal_connect_data(element, "no-more-pads", …): as swift_gst_connect_pad_added.
gulong swift_gst_connect_no_more_pads(GstElement *element, SwiftGstNoMorePadsCallback callback, gpointer user_data,
                                      GClosureNotify destroy);
/// g_signal_connect_data(bin, "element-added", …): as swift_gst_connect_pad_added (`bin` must be a GstBin).
gulong swift_gst_connect_element_added(GstElement *bin, SwiftGstElementAddedCallback callback, gpointer user_data,
                                       GClosureNotify destroy);

/// Makes `parsebin` (transfer none) expose streams that their container already frames — caps carrying
/// codec_data, as qtdemux and matroskademux give for H.264/HEVC/AAC … — without plugging a parser, so passthrough
/// returns the stored bytes: h264parse would insert SPS/PPS in-band into the first IDR. Nothing returned.
/// Needs C: an "autoplug-continue" handler returns a gboolean to GLib's signal marshaller.
void swift_gst_parsebin_expose_container_framed(GstElement *parsebin);

// ── GstVideoInfo / GstVideoMeta: arrays of fields behind macros, flattened into one plain struct ─────────────

#define SWIFT_GST_MAX_PLANES 4

/// The memory layout and colour description of one raw video buffer.
typedef struct {
    GstVideoFormat format;
    uint32_t width;
    uint32_t height;
    uint32_t n_planes;
    /// Byte offset of each plane from the start of the buffer.
    uint64_t offset[SWIFT_GST_MAX_PLANES];
    /// Distance between rows, in bytes.
    int32_t stride[SWIFT_GST_MAX_PLANES];
    /// Visible width of the plane × pixel stride (the tight row length).
    uint32_t row_bytes[SWIFT_GST_MAX_PLANES];
    /// Rows in the plane.
    uint32_t plane_height[SWIFT_GST_MAX_PLANES];
    /// CICP range: 1 video (16–235), 2 full, 0 unknown.
    uint8_t range;
    /// CICP (ISO/IEC 23091-4) code points from gst_video_color_{matrix,primaries}_to_iso and
    /// gst_video_transfer_function_to_iso; 2 (unspecified) when GStreamer does not know.
    uint8_t matrix;
    uint8_t primaries;
    uint8_t transfer;
    /// Frame rate as a fraction (0/1 when unknown or variable).
    int32_t fps_n;
    int32_t fps_d;
} SwiftGstVideoLayout;

/// Fills `out` from raw video caps (transfer none) with gst_video_info_from_caps. Returns FALSE when the caps are
/// not fixed raw video. Needs C: GstVideoInfo's per-plane/per-component values are function-like macros
/// (GST_VIDEO_INFO_PLANE_STRIDE, GST_VIDEO_FORMAT_INFO_PSTRIDE, GST_VIDEO_INFO_COMP_WIDTH …).
gboolean swift_gst_video_layout_from_caps(const GstCaps *caps, SwiftGstVideoLayout *out);

/// The `colorimetry` field of encoded (or raw) video caps (transfer none), as H.273 code points in `cicp`: range
/// (1 video, 2 full, 0 unknown), matrix, primaries, transfer (2 unspecified). FALSE when the caps have none. Needs
/// C: GstVideoColorimetry parsing and the *_to_iso mappings are macros-and-struct work Swift cannot import cleanly.
gboolean swift_gst_caps_colorimetry(const GstCaps *caps, uint8_t cicp[4]);
/// TrackdUntaggedYCbCrMatrix: `caps` (transfer none) with `matrix` as its colorimetry's matrix when it is raw YCbCr
/// video that names no matrix (no `colorimetry` field, or one whose matrix is unknown) — what it does name (range,
/// transfer, primaries) kept, the rest GStreamer's size-based default (gst_video_info_from_caps). NULL when there is
/// nothing to change: tagged, not YCbCr, not raw video. Returns transfer full (gst_caps_unref). Needs C: GstVideoInfo
/// and the colorimetry string parsing are struct-and-macro work Swift cannot import cleanly.
GstCaps *swift_gst_caps_with_untagged_matrix(const GstCaps *caps, GstVideoColorMatrix matrix);
/// `caps` (transfer none) with the colorimetry the H.273 code points `cicp` name (range 1 video, 2 full, 0 unknown;
/// matrix, primaries, transfer) as its `colorimetry` field. Returns transfer full (gst_caps_unref). Needs C: the
/// *_from_iso mappings and gst_video_colorimetry_to_string are struct work Swift cannot import cleanly.
GstCaps *swift_gst_caps_with_cicp(const GstCaps *caps, const uint8_t cicp[4]);

/// Replaces the offsets and strides in `layout` with those of the buffer's GstVideoMeta (buffer: transfer none), when
/// it has one (decoders and pools may pad rows). Returns TRUE when a meta was found. Needs C: gst_buffer_get_video_meta
/// is a macro over gst_buffer_get_meta with GST_VIDEO_META_API_TYPE.
gboolean swift_gst_video_layout_apply_meta(GstBuffer *buffer, SwiftGstVideoLayout *layout);

/// Range conversion for swift_gst_copy_as_nv12 and swift_gst_p010_convert_range.
typedef enum {
    SWIFT_GST_RANGE_KEEP = 0,
    /// video range (Y 16–235, CbCr 16–240) to full range (0–255)
    SWIFT_GST_RANGE_TO_FULL = 1,
    /// full range to video range
    SWIFT_GST_RANGE_TO_VIDEO = 2,
} SwiftGstRangeConversion;

/// The 256-entry luma and chroma tables of an 8-bit range conversion (identity for SWIFT_GST_RANGE_KEEP).
void swift_gst_range_tables(SwiftGstRangeConversion range, uint8_t luma[256], uint8_t chroma[256]);

/// One NV12 CbCr row from I420's Cb and Cr rows (`n` samples each), through `table` (a range conversion) or as is
/// (NULL).
void swift_gst_interleave_chroma(uint8_t *restrict out, const uint8_t *restrict u, const uint8_t *restrict v,
                                 uint32_t n, const uint8_t *table);

/// Bytes of a tightly packed NV12 frame: a width×height Y plane, then ⌈height/2⌉ rows of 2·⌈width/2⌉ CbCr bytes.
gsize swift_gst_nv12_size(uint32_t width, uint32_t height);

/// Writes the 8-bit I420 or NV12 frame in `buffer` (transfer none; `layout` from its caps and GstVideoMeta) to `dest`
/// as tightly packed NV12 (swift_gst_nv12_size bytes), converting the range on the way when asked. Returns the bytes
/// written, 0 when the buffer cannot be mapped or is neither I420 nor NV12. Needs C: this is the worker's per-pixel
/// hot loop (it must be fast in debug builds too), and it replaces two GStreamer passes: (1) videoconvert's I420→NV12
/// conversion, which costs about as much as decoding easy H.264 — the copy into shared memory happens anyway, so
/// interleaving CbCr while copying is free; (2) a range conversion videoconvert 1.22 does not do (between YCbCr
/// formats of the same matrix, video-converter.c chain_convert converts nothing, whatever the ranges).
gsize swift_gst_copy_as_nv12(GstBuffer *buffer, const SwiftGstVideoLayout *layout, void *dest,
                             SwiftGstRangeConversion range);

/// The channel positions (in caps order) and sample format of raw audio caps (transfer none), from
/// gst_audio_info_from_caps. Returns the channel count, 0 when the caps are not fixed raw audio or have more than
/// `max` channels. Needs C: GST_AUDIO_INFO_POSITION is a macro over a 64-element array.
gint swift_gst_audio_caps_positions(const GstCaps *caps, GstAudioChannelPosition *positions, gint max,
                                    GstAudioFormat *format);

/// A copy of `caps` (transfer none) with `channel-mask` set to `mask` (a GST_TYPE_BITMASK). Returns transfer full.
/// Needs C: gst_caps_set_simple is varargs.
GstCaps *swift_gst_caps_with_channel_mask(const GstCaps *caps, guint64 mask);

/// Converts the range of a P010_10LE frame in place: `data` holds `size` bytes laid out as `layout` (offsets and
/// strides, GstVideoMeta applied) — the frame already copied out of its buffer. A 1024-entry table per component on
/// the 10-bit values in the high bits of each 16-bit LE word (the x420/xf20 counterpart of swift_gst_copy_as_nv12's
/// range conversion, for the same reason: videoconvert 1.22 does not convert the range between YCbCr formats of one
/// matrix). Returns FALSE (nothing changed) when the layout is not P010_10LE or a row lies outside `size`.
gboolean swift_gst_p010_convert_range(void *data, gsize size, const SwiftGstVideoLayout *layout,
                                      SwiftGstRangeConversion range);

// ── caps: gst_caps_set_simple is variadic, gst_value_get_buffer a macro ──────────────────────────────────────

/// A copy of `caps` (transfer none) with the string field `field` set to `value` in every structure. Returns
/// transfer full (gst_caps_unref). Needs C: gst_caps_set_simple is varargs.
GstCaps *swift_gst_caps_with_string(const GstCaps *caps, const char *field, const char *value);
/// A copy of `caps` (transfer none) with the int field `field` set. Returns transfer full. Needs C: varargs.
GstCaps *swift_gst_caps_with_int(const GstCaps *caps, const char *field, gint value);
/// A copy of `caps` (transfer none) with the fraction field `field` set. Returns transfer full. Needs C: varargs.
GstCaps *swift_gst_caps_with_fraction(const GstCaps *caps, const char *field, gint numerator, gint denominator);
/// gst_structure_new(name, field, G_TYPE_STRING, value, NULL): returns transfer full (gst_structure_free, or hand it
/// to a message). Needs C: varargs.
GstStructure *swift_gst_structure_new_with_string(const char *name, const char *field, const char *value);
/// The GstBuffer held in a buffer-typed field of `structure` (transfer none: the structure owns it), or NULL.
/// Needs C: gst_value_get_buffer and GST_VALUE_HOLDS_BUFFER are macros.
GstBuffer *swift_gst_structure_get_buffer(const GstStructure *structure, const char *field);

// ── zero-copy outputs: memfd memories offered by appsink (MemfdPool.c, docs/design/zero-copy.md) ──────────────

/// A buffer whose bytes start at offset 0 of a memfd memory: `id` names the memory for its whole life (ids are
/// never reused by an allocator); `map_size` is the memfd's size, `size` the buffer's bytes.
typedef struct {
    uint32_t id;
    uint64_t map_size;
    uint64_t size;
} SwiftGstMemfdSlot;

/// Told the id of each memory an allocator frees, on whichever thread frees it (a GStreamer streaming thread, the
/// one dropping the last buffer), before its memfd can become a spare. `context` is the one given at creation.
typedef void (*SwiftGstMemfdFreed)(void *context, uint32_t id);

/// The spare-memory policy the memfd allocators ask (GstBridge's FrameMemorySpares over SamplePools' SpareMemories;
/// MemfdPool.c only makes, maps, unmaps and closes). Called from any thread, GStreamer's streaming threads
/// included. `take`: a kept memfd of exactly `map_size` bytes, its fd and mapping becoming the caller's (FALSE:
/// none). `keep`: keeps a freed memory's fd and mapping (FALSE: the caller unmaps and closes them).
/// `acquire_kept_fd`/`release_kept_fd`: whether a memory whose fd goes out may keep a copy of it, and its release.
/// `count_reannounced`: a live memory was announced again to a later output of its kept pipeline.
typedef struct {
    gboolean (*take)(gsize map_size, int *fd, guint8 **base);
    gboolean (*keep)(int fd, guint8 *base, gsize map_size);
    gboolean (*acquire_kept_fd)(void);
    void (*release_kept_fd)(void);
    void (*count_reannounced)(void);
} SwiftGstMemfdSparePolicy;

/// Installs `policy` (copied) for every allocator of the process; until then no memory is kept. Needs C: the
/// allocator's free runs in C, on GStreamer's threads.
void swift_gst_memfd_spares_install(const SwiftGstMemfdSparePolicy *policy);

/// A new allocator (transfer full: gst_object_unref) whose memories are sealed memfds (F_SEAL_SHRINK|GROW|SEAL), one
/// per memory, mapped read-write in this process. A freed memory's memfd and mapping may be kept, as the installed
/// spare policy says, for the next memory of the same size any allocator makes: written before, it costs no page
/// faults (a worker's consecutive outputs on one connection). Only a memory whose fd the allocator still has can be
/// kept: after a descriptor of it went out, that is a copy, if the policy allows one. Beyond `max_live` live memories
/// (0: 32) alloc() returns system memory instead (the worker then copies that frame; see MemfdPool.c). `freed` hears
/// of every memory freed (which output knew it is the caller's bookkeeping); `release(context)` runs when the
/// allocator is finalized. Needs C: a GstAllocator subclass (G_DEFINE_TYPE, alloc/free/map/share vmethods).
GstAllocator *swift_gst_memfd_allocator_new(guint max_live, SwiftGstMemfdFreed freed, void *context,
                                            GDestroyNotify release);
/// From now on, every memory `allocator` (transfer none) makes has room after its data for the NV12 chroma plane of
/// an I420 frame of that size (swift_gst_memfd_make_nv12): a third more. Needs C: the allocator's private state.
void swift_gst_memfd_allocator_reserve_nv12(GstAllocator *allocator);
/// 420v/420f without a copy: turns the 8-bit I420 or NV12 frame in `buffer` (transfer none; one memory of
/// `allocator` from its offset 0; `layout` from its caps and GstVideoMeta) into NV12 where it lies — the luma plane
/// stays, I420's chroma is interleaved into the memory's reserved tail, NV12's stays — converting the range in place
/// when asked. Sets where the CbCr plane starts in the memory and its stride. FALSE (nothing written) when the
/// buffer is not such a memory, or its tail has no room. Needs C: the memory's private fields, and it is the
/// per-pixel hot loop (see swift_gst_copy_as_nv12).
gboolean swift_gst_memfd_make_nv12(GstAllocator *allocator, GstBuffer *buffer, const SwiftGstVideoLayout *layout,
                                   SwiftGstRangeConversion range, uint64_t *uv_offset, uint32_t *uv_stride);
/// Copies `size` bytes from the start of `buffer`'s only memory (transfer none) to `dest`, reading past the
/// buffer's size into the memory's tail (swift_gst_memfd_make_nv12's chroma plane) up to its maxsize. Returns the
/// bytes copied (0: not one memory, or unmappable).
gsize swift_gst_memfd_copy(GstBuffer *buffer, void *dest, gsize size);
/// TRUE when `buffer` (transfer none) is one memory of `allocator` (transfer none) from its offset 0; fills `out`.
/// Needs C: the memory's private fields.
gboolean swift_gst_memfd_describe(GstAllocator *allocator, GstBuffer *buffer, SwiftGstMemfdSlot *out);
/// A descriptor of the memfd `buffer` (transfer none) starts at, for PoolAdded (transfer full: the caller sends and
/// closes it): a copy when the spare policy lets the memory keep one (so later outputs can get one too), else, the
/// first time, the memfd's own fd, which then leaves the allocator for good. -1 when it has none left, or `buffer`
/// is not one of its memories. Whether an output must be told is not decided here (the worker's PoolLedger). Needs
/// C: the memory's private fields, under the allocator's lock.
int swift_gst_memfd_descriptor(GstAllocator *allocator, GstBuffer *buffer);
/// Makes `appsink` (transfer none) answer the ALLOCATION query for raw video with a GstVideoBufferPool (video meta,
/// at least `min_buffers`, growing without a maximum: avviddec refuses pools capped below 32) over `allocator` (the
/// probe keeps a ref). Needs C: a pad probe returning GST_PAD_PROBE_HANDLED after filling a query.
void swift_gst_appsink_offer_memfd_pool(GstElement *appsink, GstAllocator *allocator, guint min_buffers);
/// For every element added anywhere inside `bin` (transfer none) that has the property (the libav decoders): sets
/// direct-rendering to `direct_rendering` and, when `max_threads` > 0, max-threads=`max_threads` (0 keeps the
/// decoder's automatic count; at most 64). Direct rendering off where the decoder's frames can reach appsink: with
/// it, libav keeps reference frames mapped in the buffers it decoded into and GstVideoDecoder deep-copies each of them
/// into system memory; without it, libav copies each picture once into a buffer of the downstream pool (ours). On
/// where a converter reads the decoder's frames (docs/BENCHMARKS.md "RGB-family conversion"). Needs C: a signal
/// handler with the deep-element-added signature.
void swift_gst_bin_tune_decoders(GstElement *bin, gint max_threads, gboolean direct_rendering);

// ── resampling decoded audio (AudioResample.c) ──────────────────────────────────────────────────────────────────

/// A GstAudioConverter that changes only the rate of raw audio of `caps` to `out_rate`, with audioresample's
/// defaults (Kaiser, quality 4) and no dither or noise shaping; fresh state (phase 0, silent history). NULL when the
/// caps are not fixed raw audio or the converter refuses them. transfer full: free with swift_gst_resampler_free.
/// Needs C: GstAudioInfo and the converter's options structure are macros and varargs.
typedef struct SwiftGstResampler SwiftGstResampler;
SwiftGstResampler *swift_gst_resampler_new(const GstCaps *caps, gint out_rate);
void swift_gst_resampler_free(SwiftGstResampler *resampler);
/// The input frames the filter looks ahead (and back): gst_audio_converter_get_max_latency.
gsize swift_gst_resampler_latency(SwiftGstResampler *resampler);
/// Feeds `frames` frames of `buffer` from its frame `skip` (buffer NULL: `frames` frames of silence, the drain at the
/// end) and returns every frame the resampler can make from what it has been fed — `made` frames in a new buffer
/// (with a GstAudioMeta when non-interleaved, no timestamps) in a sample with the resampler's caps and `segment`
/// (nullable) — transfer full; NULL when it makes none yet. Needs C: GstAudioBuffer mapping, plane pointer arrays.
GstSample *swift_gst_resampler_process(SwiftGstResampler *resampler, GstBuffer *buffer, gsize skip, gsize frames,
                                       const GstSegment *segment, gsize *made);

#endif
