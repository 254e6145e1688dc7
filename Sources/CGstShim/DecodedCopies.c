// The memory of the decoder's pictures where trackdswscale converts them (declared in CGstShim.h): a GstAllocator
// whose copy of a whole memory is a read-only view of the same bytes, copied on write.
//
// With direct rendering libav decodes into buffers of the pool trackdswscale proposes, and gst-libav keeps each one
// mapped for writing as long as libav holds the picture (a reference picture; with frame threads every picture for a
// while). GstVideoDecoder's finish_frame makes the buffer it pushes writable, and GStreamer cannot give a memory mapped
// for writing to a second buffer, so with system memory it copies the whole picture (memmove on the decoder's
// streaming thread: 6% of a worker's CPU in a 1080p 24BG read, docs/records/decode-path.md). With this allocator that
// copy is a second memory over the same bytes instead, read-only, which trackdswscale only reads. The bytes stay as
// they are while it lives: libav never writes a picture it has given out (gst-libav flags reference pictures
// AV_BUFFER_FLAG_READONLY), and when the pool hands the buffer to the decoder again for a new picture, its first
// mapping for writing moves it to bytes of its own if a view of the old ones is still alive (copied, as a copy on
// write must; rare: the pool hands its buffers out in turn). A copy of a view, or of part of a memory, is a real copy.
#include "CGstShim.h"

#include <stdlib.h>
#include <string.h>

#define TRACKD_DECODED_MEMORY_TYPE "TrackdDecoded"

// The bytes: shared by a memory and its views; freed with the last of them.
typedef struct {
    gint refs;  // atomic
    guint8 *data;
    gsize size;  // the memories' maxsize
} Bytes;

typedef struct {
    GstMemory mem;
    Bytes *bytes;  // replaced only by the first mapping for writing (map_decoded), while no one has it mapped
    gint maps;     // atomic: mappings alive
} DecodedMemory;

typedef struct {
    GstAllocator parent;
} TrackdDecodedAllocator;

typedef struct {
    GstAllocatorClass parent_class;
} TrackdDecodedAllocatorClass;

GType trackd_decoded_allocator_get_type(void);
G_DEFINE_TYPE(TrackdDecodedAllocator, trackd_decoded_allocator, GST_TYPE_ALLOCATOR)

static gsize views;  // atomic: copies made as views (swift_gst_decoded_views)

// Bytes aligned to at least 64 (any SIMD libav and libswscale use on a frame), or to the memory's own alignment.
static Bytes *bytes_new(gsize size, gsize align) {
    Bytes *bytes = g_new0(Bytes, 1);
    void *data = NULL;
    if (posix_memalign(&data, MAX(align + 1, 64), size > 0 ? size : 1) != 0) {
        g_free(bytes);
        return NULL;
    }
    bytes->refs = 1;
    bytes->data = data;
    bytes->size = size;
    return bytes;
}

static void bytes_unref(Bytes *bytes) {
    if (!g_atomic_int_dec_and_test(&bytes->refs)) return;
    free(bytes->data);
    g_free(bytes);
}

static DecodedMemory *memory_new(GstAllocator *allocator, GstMemoryFlags flags, GstMemory *parent, Bytes *bytes,
                                 gsize maxsize, gsize align, gsize offset, gsize size) {
    DecodedMemory *mem = g_new0(DecodedMemory, 1);
    gst_memory_init(GST_MEMORY_CAST(mem), flags, allocator, parent, maxsize, align, offset, size);
    mem->bytes = bytes;
    return mem;
}

static GstMemory *alloc_decoded(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
    gsize align = params->align;  // a mask: 2^n - 1
    gsize offset = (params->prefix + align) & ~align;
    gsize maxsize = offset + size + params->padding;
    Bytes *bytes = bytes_new(maxsize, align);
    if (bytes == NULL) return NULL;
    if (offset > 0 && (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED)) memset(bytes->data, 0, offset);
    if (params->padding > 0 && (params->flags & GST_MEMORY_FLAG_ZERO_PADDED))
        memset(bytes->data + offset + size, 0, params->padding);
    return GST_MEMORY_CAST(memory_new(allocator, params->flags, NULL, bytes, maxsize, align, offset, size));
}

static void free_decoded(GstAllocator *allocator, GstMemory *memory) {
    (void)allocator;
    DecodedMemory *mem = (DecodedMemory *)memory;
    bytes_unref(mem->bytes);
    g_free(mem);
}

static gpointer map_decoded(GstMemory *memory, gsize maxsize, GstMapFlags flags) {
    (void)maxsize;
    DecodedMemory *mem = (DecodedMemory *)memory;
    // The first mapping for writing of bytes a view still reads: bytes of its own, copied (copy on write). GStreamer
    // locks a view read-only, and the memory itself is never written through an older mapping (the file's comment).
    if (g_atomic_int_add(&mem->maps, 1) == 0 && (flags & GST_MAP_WRITE) && g_atomic_int_get(&mem->bytes->refs) > 1) {
        Bytes *own = bytes_new(mem->bytes->size, memory->align);
        if (own == NULL) {
            g_atomic_int_add(&mem->maps, -1);
            return NULL;
        }
        memcpy(own->data, mem->bytes->data, mem->bytes->size);
        Bytes *shared = mem->bytes;
        mem->bytes = own;
        bytes_unref(shared);
    }
    return mem->bytes->data;
}

static void unmap_decoded(GstMemory *memory) { g_atomic_int_add(&((DecodedMemory *)memory)->maps, -1); }

// A copy of the whole memory: a read-only view of its bytes. Of a view, or of part of a memory: a real copy.
static GstMemory *copy_decoded(GstMemory *memory, gssize offset, gssize size) {
    DecodedMemory *mem = (DecodedMemory *)memory;
    if (size == -1) size = (gssize)memory->size > offset ? (gssize)memory->size - offset : 0;
    if (offset == 0 && (gsize)size == memory->size && memory->parent == NULL &&
        !GST_MEMORY_IS_READONLY(memory)) {
        g_atomic_int_inc(&mem->bytes->refs);
        g_atomic_pointer_add(&views, 1);
        return GST_MEMORY_CAST(memory_new(memory->allocator, GST_MEMORY_FLAG_READONLY, NULL, mem->bytes,
                                          memory->maxsize, memory->align, memory->offset, memory->size));
    }
    Bytes *bytes = bytes_new((gsize)size, memory->align);
    if (bytes == NULL) return NULL;
    memcpy(bytes->data, mem->bytes->data + memory->offset + offset, (gsize)size);
    return GST_MEMORY_CAST(memory_new(memory->allocator, 0, NULL, bytes, (gsize)size, memory->align, 0, (gsize)size));
}

// A view of part of the memory (gst_buffer_copy_region, gst_memory_share): read-only, the same bytes.
static GstMemory *share_decoded(GstMemory *memory, gssize offset, gssize size) {
    DecodedMemory *mem = (DecodedMemory *)memory;
    GstMemory *parent = memory->parent ? memory->parent : memory;
    if (size == -1) size = (gssize)memory->size - offset;
    g_atomic_int_inc(&mem->bytes->refs);
    return GST_MEMORY_CAST(memory_new(memory->allocator,
                                      GST_MINI_OBJECT_FLAGS(parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY, parent,
                                      mem->bytes, memory->maxsize, memory->align, memory->offset + (gsize)offset,
                                      (gsize)size));
}

static void trackd_decoded_allocator_class_init(TrackdDecodedAllocatorClass *klass) {
    GST_ALLOCATOR_CLASS(klass)->alloc = alloc_decoded;
    GST_ALLOCATOR_CLASS(klass)->free = free_decoded;
}

static void trackd_decoded_allocator_init(TrackdDecodedAllocator *self) {
    GstAllocator *allocator = GST_ALLOCATOR(self);
    allocator->mem_type = TRACKD_DECODED_MEMORY_TYPE;
    allocator->mem_map = map_decoded;
    allocator->mem_unmap = unmap_decoded;
    allocator->mem_copy = copy_decoded;
    allocator->mem_share = share_decoded;
    GST_OBJECT_FLAG_SET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

guint64 swift_gst_decoded_views(void) { return (guint64)g_atomic_pointer_get(&views); }

GstAllocator *swift_gst_decoded_allocator(void) {
    static GstAllocator *allocator;
    if (g_once_init_enter(&allocator)) {
        GstAllocator *made = g_object_new(trackd_decoded_allocator_get_type(), NULL);
        gst_object_ref_sink(made);
        g_once_init_leave(&allocator, made);
    }
    return gst_object_ref(allocator);
}
