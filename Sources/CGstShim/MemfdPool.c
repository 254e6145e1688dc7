// Zero-copy outputs: a GstAllocator whose memories are sealed memfds, offered to the pipeline by appsink, so the
// element that fills a video buffer (videoconvert, or the decoder when videoconvert passes through) writes the
// frame straight into memory the client maps. docs/design/zero-copy.md has the measurements behind each choice.
#define _GNU_SOURCE
#include "CGstShim.h"
#include "CTrackSys.h"
#include "MemfdSpares.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>

#define TRACKD_MEMFD_MEMORY_TYPE "TrackdMemfd"

typedef struct {
    GstMemory mem;
    guint8 *base;    // the whole mapping (shared by sub-memories)
    gsize map_size;
    int fd;          // root only: the memfd while the allocator has it (its own, or a kept copy once it went out), else -1
    gboolean fd_went_out;  // root only: a descriptor of it went out (swift_gst_memfd_descriptor); fd >= 0: a kept copy
    guint32 id;
} TrackdMemfdMemory;

typedef struct {
    GstAllocator parent;
    GMutex lock;
    guint live;       // root memories alive
    guint max_live;   // beyond this, alloc() hands out system memory: back-pressure keeps far fewer alive
    guint32 next_id;
    gboolean nv12_tail;  // reserve room after each memory's data for an NV12 chroma plane (swift_gst_memfd_make_nv12)
    SwiftGstMemfdFreed freed;  // told each root memory's id as it is freed (set once, at creation)
    gpointer freed_context;
    GDestroyNotify freed_context_release;
} TrackdMemfdAllocator;

typedef struct {
    GstAllocatorClass parent_class;
} TrackdMemfdAllocatorClass;

GType trackd_memfd_allocator_get_type(void);
G_DEFINE_TYPE(TrackdMemfdAllocator, trackd_memfd_allocator, GST_TYPE_ALLOCATOR)

static GstMemory *memfd_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
    TrackdMemfdAllocator *self = (TrackdMemfdAllocator *)allocator;
    gsize align = params ? params->align : 0;  // a mask: 2^n - 1
    gsize prefix = params ? params->prefix : 0;
    gsize padding = params ? params->padding : 0;
    gsize offset = (prefix + align) & ~align;  // the mapping is page-aligned, so any align <= 4095 holds
    gsize page = 4096;
    g_mutex_lock(&self->lock);
    // An I420 frame's NV12 chroma plane is a third of the frame; 128 more for aligning where it starts.
    gsize tail = self->nv12_tail ? size / 3 + 128 : 0;
    g_mutex_unlock(&self->lock);
    gsize map_size = (offset + size + padding + tail + page - 1) / page * page;

    g_mutex_lock(&self->lock);
    gboolean allowed = self->live < self->max_live;
    if (allowed) self->live++;
    guint32 id = ++self->next_id;
    g_mutex_unlock(&self->lock);
    if (!allowed) {
        // Beyond the cap (or when a memfd cannot be made) the frame goes to system memory and the worker copies
        // it, as before zero-copy: returning NULL instead makes libav's decoders crash on the failed allocation.
        GST_INFO_OBJECT(self, "%u memories are alive; this one is system memory", self->max_live);
        return gst_allocator_alloc(NULL, size, params);
    }
    int fd = -1;
    guint8 *base = MAP_FAILED;
    if (!trackd_memfd_spare_take(map_size, &fd, &base)) {
        fd = trackd_memfd_sealed("trackd-frame", map_size);
        base = fd < 0 ? MAP_FAILED : mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (base == MAP_FAILED) {
        if (fd >= 0) close(fd);
        g_mutex_lock(&self->lock);
        self->live--;
        g_mutex_unlock(&self->lock);
        return gst_allocator_alloc(NULL, size, params);
    }
    TrackdMemfdMemory *mem = g_new0(TrackdMemfdMemory, 1);
    gst_memory_init(GST_MEMORY_CAST(mem), params ? params->flags : 0, allocator, NULL, map_size, align, offset, size);
    mem->base = base;
    mem->map_size = map_size;
    mem->fd = fd;
    mem->id = id;
    return GST_MEMORY_CAST(mem);
}

static void memfd_free(GstAllocator *allocator, GstMemory *memory) {
    TrackdMemfdAllocator *self = (TrackdMemfdAllocator *)allocator;
    TrackdMemfdMemory *mem = (TrackdMemfdMemory *)memory;
    if (memory->parent == NULL) {  // sub-memories borrow the root's mapping
        g_mutex_lock(&self->lock);
        self->live--;
        g_mutex_unlock(&self->lock);
        // Before the memfd may become a spare (and a new memory): the output hears of this one's end first.
        if (self->freed != NULL) self->freed(self->freed_context, mem->id);
        if (mem->fd_went_out && mem->fd >= 0) trackd_memfd_kept_fd_release();
        if (mem->fd < 0 || !trackd_memfd_spare_keep(mem->fd, mem->base, mem->map_size)) {
            munmap(mem->base, mem->map_size);
            if (mem->fd >= 0) close(mem->fd);
        }
    }
    g_free(mem);
}

static gpointer memfd_map(GstMemory *memory, gsize maxsize, GstMapFlags flags) {
    (void)maxsize;
    (void)flags;
    return ((TrackdMemfdMemory *)memory)->base;  // gst_memory_map adds mem->offset
}

static void memfd_unmap(GstMemory *memory) { (void)memory; }

// A sub-memory (gst_buffer_copy_region, gst_memory_share): same mapping, narrower window, read-only like every
// shared memory. Without it GStreamer falls back to copying.
static GstMemory *memfd_share(GstMemory *memory, gssize offset, gssize size) {
    TrackdMemfdMemory *mem = (TrackdMemfdMemory *)memory;
    GstMemory *parent = memory->parent ? memory->parent : memory;
    if (size == -1) size = (gssize)memory->size - offset;
    TrackdMemfdMemory *sub = g_new0(TrackdMemfdMemory, 1);
    gst_memory_init(GST_MEMORY_CAST(sub), GST_MINI_OBJECT_FLAGS(parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY,
                    memory->allocator, parent, memory->maxsize, memory->align, memory->offset + (gsize)offset,
                    (gsize)size);
    sub->base = mem->base;
    sub->map_size = mem->map_size;
    sub->fd = -1;
    sub->id = mem->id;
    return GST_MEMORY_CAST(sub);
}

static void trackd_memfd_allocator_finalize(GObject *object) {
    TrackdMemfdAllocator *self = (TrackdMemfdAllocator *)object;
    if (self->freed_context_release != NULL) self->freed_context_release(self->freed_context);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(trackd_memfd_allocator_parent_class)->finalize(object);
}

static void trackd_memfd_allocator_class_init(TrackdMemfdAllocatorClass *klass) {
    GST_ALLOCATOR_CLASS(klass)->alloc = memfd_alloc;
    GST_ALLOCATOR_CLASS(klass)->free = memfd_free;
    G_OBJECT_CLASS(klass)->finalize = trackd_memfd_allocator_finalize;
}

static void trackd_memfd_allocator_init(TrackdMemfdAllocator *self) {
    GstAllocator *allocator = GST_ALLOCATOR(self);
    allocator->mem_type = TRACKD_MEMFD_MEMORY_TYPE;
    allocator->mem_map = memfd_map;
    allocator->mem_unmap = memfd_unmap;
    allocator->mem_share = memfd_share;
    GST_OBJECT_FLAG_SET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
    g_mutex_init(&self->lock);
    self->max_live = 32;
}

GstAllocator *swift_gst_memfd_allocator_new(guint max_live, SwiftGstMemfdFreed freed, gpointer context,
                                            GDestroyNotify release) {
    TrackdMemfdAllocator *self = g_object_new(trackd_memfd_allocator_get_type(), NULL);
    gst_object_ref_sink(self);
    self->max_live = max_live > 0 ? max_live : 32;
    self->freed = freed;
    self->freed_context = context;
    self->freed_context_release = release;
    return GST_ALLOCATOR(self);
}

void swift_gst_memfd_allocator_reserve_nv12(GstAllocator *allocator) {
    TrackdMemfdAllocator *self = (TrackdMemfdAllocator *)allocator;
    g_mutex_lock(&self->lock);
    self->nv12_tail = TRUE;
    g_mutex_unlock(&self->lock);
}

// The memory `buffer` starts at: its root, or NULL when it is not one memory of `allocator` from its offset 0.
static TrackdMemfdMemory *memfd_of(GstAllocator *allocator, GstBuffer *buffer) {
    if (gst_buffer_n_memory(buffer) != 1) return NULL;
    GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
    // Only a buffer that starts where the memfd starts: Sample offsets count from the start of the slot.
    if (memory->allocator != allocator || memory->offset != 0) return NULL;
    return (TrackdMemfdMemory *)(memory->parent ? memory->parent : memory);
}

gboolean swift_gst_memfd_describe(GstAllocator *allocator, GstBuffer *buffer, SwiftGstMemfdSlot *out) {
    TrackdMemfdMemory *root = memfd_of(allocator, buffer);
    if (root == NULL) return FALSE;
    out->id = root->id;
    out->map_size = root->map_size;
    out->size = gst_buffer_peek_memory(buffer, 0)->size;
    return TRUE;
}

int swift_gst_memfd_descriptor(GstAllocator *allocator, GstBuffer *buffer) {
    TrackdMemfdMemory *root = memfd_of(allocator, buffer);
    if (root == NULL) return -1;
    TrackdMemfdAllocator *self = (TrackdMemfdAllocator *)allocator;
    int out = -1;
    gboolean again = FALSE;
    g_mutex_lock(&self->lock);  // one thread asks at a time: the memory's fd goes out for good at most once
    if (!root->fd_went_out) {
        gboolean keep = trackd_memfd_kept_fd_acquire();
        int copy = keep ? fcntl(root->fd, F_DUPFD_CLOEXEC, 0) : -1;
        if (copy >= 0) {
            out = copy;
        } else {  // not kept (or no descriptor left for a copy): the fd itself goes out, and no later output gets it
            if (keep) trackd_memfd_kept_fd_release();
            out = root->fd;
            root->fd = -1;
        }
        root->fd_went_out = TRUE;
    } else if (root->fd >= 0) {
        // A later output of a pipeline kept for it: another copy of the kept descriptor. It was counted when it was
        // kept, and this copy goes out and is closed once sent.
        out = fcntl(root->fd, F_DUPFD_CLOEXEC, 0);
        again = out >= 0;
    }
    g_mutex_unlock(&self->lock);
    if (again) trackd_memfd_count_reannounced();
    return out;
}

// 420v/420f without copying the frame: the luma plane stays where the decoder wrote it; an I420 frame's chroma is
// interleaved into the memory's tail (reserved by swift_gst_memfd_allocator_reserve_nv12), an NV12 frame's stays in
// place; a range conversion rewrites the planes in place. The buffer is the worker's alone once pulled from appsink
// (libav decodes into its own frames and copies into ours: direct rendering is off), and goes back to the pool, to
// be overwritten by the next frame, only after the client has released it.
gboolean swift_gst_memfd_make_nv12(GstAllocator *allocator, GstBuffer *buffer, const SwiftGstVideoLayout *layout,
                                   SwiftGstRangeConversion range, uint64_t *uv_offset, uint32_t *uv_stride) {
    gboolean planar = layout->format == GST_VIDEO_FORMAT_I420;
    if (!planar && layout->format != GST_VIDEO_FORMAT_NV12) return FALSE;
    if (layout->n_planes < (planar ? 3u : 2u) || gst_buffer_n_memory(buffer) != 1) return FALSE;
    GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
    if (memory->allocator != allocator || memory->offset != 0 || memory->parent != NULL) return FALSE;
    TrackdMemfdMemory *mem = (TrackdMemfdMemory *)memory;
    const uint32_t w = layout->width, h = layout->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    // Every source row must lie inside the frame, and the chroma plane inside the mapping.
    for (guint p = 0; p < (planar ? 3u : 2u); p++) {
        uint32_t rows = p == 0 ? h : ch, bytes = p == 0 ? w : (planar ? cw : 2 * cw);
        if (layout->stride[p] <= 0) return FALSE;
        if (rows > 0 && layout->offset[p] + (guint64)(rows - 1) * (guint64)layout->stride[p] + bytes > memory->size)
            return FALSE;
    }
    uint64_t tail = ((uint64_t)memory->size + 63) / 64 * 64;
    if (planar && tail + (uint64_t)2 * cw * ch > mem->map_size) return FALSE;

    uint8_t luma[256], chroma[256];
    swift_gst_range_tables(range, luma, chroma);
    uint8_t *data = mem->base;
    if (range != SWIFT_GST_RANGE_KEEP) {
        for (uint32_t y = 0; y < h; y++) {
            uint8_t *row = data + layout->offset[0] + (gsize)y * (gsize)layout->stride[0];
            for (uint32_t x = 0; x < w; x++) row[x] = luma[row[x]];
        }
    }
    if (planar) {
        for (uint32_t y = 0; y < ch; y++) {
            const uint8_t *u = data + layout->offset[1] + (gsize)y * (gsize)layout->stride[1];
            const uint8_t *v = data + layout->offset[2] + (gsize)y * (gsize)layout->stride[2];
            uint8_t *o = data + tail + (gsize)y * 2 * cw;
            swift_gst_interleave_chroma(o, u, v, cw, range == SWIFT_GST_RANGE_KEEP ? NULL : chroma);
        }
        *uv_offset = tail;
        *uv_stride = 2 * cw;
    } else {
        if (range != SWIFT_GST_RANGE_KEEP) {
            for (uint32_t y = 0; y < ch; y++) {
                uint8_t *row = data + layout->offset[1] + (gsize)y * (gsize)layout->stride[1];
                for (uint32_t x = 0; x < 2 * cw; x++) row[x] = chroma[row[x]];
            }
        }
        *uv_offset = layout->offset[1];
        *uv_stride = (uint32_t)layout->stride[1];
    }
    return TRUE;
}

gsize swift_gst_memfd_copy(GstBuffer *buffer, void *dest, gsize size) {
    if (gst_buffer_n_memory(buffer) != 1) return 0;
    GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
    GstMapInfo map;
    if (!gst_memory_map(memory, &map, GST_MAP_READ)) return 0;
    gsize n = MIN(size, map.maxsize);  // beyond map.size: the NV12 chroma tail
    memcpy(dest, map.data, n);
    gst_memory_unmap(memory, &map);
    return n;
}

// ── appsink answers the ALLOCATION query ────────────────────────────────────────────────────────────────────

typedef struct {
    GstAllocator *allocator;
    guint min_buffers;
} OfferPool;

static void offer_pool_free(gpointer data) {
    OfferPool *offer = data;
    gst_object_unref(offer->allocator);
    g_free(offer);
}

static GstPadProbeReturn offer_pool(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    OfferPool *offer = data;
    GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
    if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
    GstCaps *caps = NULL;
    gboolean need_pool = FALSE;
    gst_query_parse_allocation(query, &caps, &need_pool);
    GstVideoInfo vinfo;
    if (caps == NULL || !gst_video_info_from_caps(&vinfo, caps)) return GST_PAD_PROBE_OK;
    GstBufferPool *pool = gst_video_buffer_pool_new();
    GstStructure *config = gst_buffer_pool_get_config(pool);
    // max 0: avviddec drops a pool that cannot grow to 32 buffers (and its allocator with it).
    gst_buffer_pool_config_set_params(config, caps, (guint)vinfo.size, offer->min_buffers, 0);
    gst_buffer_pool_config_set_allocator(config, offer->allocator, NULL);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, config)) {
        gst_object_unref(pool);
        return GST_PAD_PROBE_OK;
    }
    gst_query_add_allocation_pool(query, pool, (guint)vinfo.size, offer->min_buffers, 0);
    gst_query_add_allocation_param(query, offer->allocator, NULL);
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
    gst_object_unref(pool);
    return GST_PAD_PROBE_HANDLED;  // the query succeeds with what the probe put in it
}

void swift_gst_appsink_offer_memfd_pool(GstElement *appsink, GstAllocator *allocator, guint min_buffers) {
    GstPad *pad = gst_element_get_static_pad(appsink, "sink");
    OfferPool *offer = g_new0(OfferPool, 1);
    offer->allocator = gst_object_ref(allocator);
    offer->min_buffers = min_buffers;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, offer_pool, offer, offer_pool_free);
    gst_object_unref(pad);
}

// ── libav decoders: decode into their own frames, then into ours; as many threads as the load allows ──────────

static void tune_decoder(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer data) {
    (void)bin;
    (void)sub_bin;
    const gint max_threads = GPOINTER_TO_INT(data) >> 1;
    const gboolean direct_rendering = GPOINTER_TO_INT(data) & 1;
    GObjectClass *klass = G_OBJECT_GET_CLASS(element);
    if (g_object_class_find_property(klass, "direct-rendering") != NULL) {
        g_object_set(element, "direct-rendering", direct_rendering, NULL);
    }
    if (max_threads > 0 && g_object_class_find_property(klass, "max-threads") != NULL) {
        g_object_set(element, "max-threads", max_threads, NULL);
    }
}

void swift_gst_bin_tune_decoders(GstElement *bin, gint max_threads, gboolean direct_rendering) {
    // Both in the handler's data: max_threads (at most 64, the caller's bound) shifted, direct_rendering in bit 0.
    gint packed = (MAX(max_threads, 0) << 1) | (direct_rendering ? 1 : 0);
    g_signal_connect(bin, "deep-element-added", G_CALLBACK(tune_decoder), GINT_TO_POINTER(packed));
}
