// trackdfdsrc: the source element of every pipeline (declared in CGstShim.h).
#define _GNU_SOURCE
#include "CGstShim.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gst/base/gstbasesrc.h>

// ═══ trackdfdsrc ═══════════════════════════════════════════════════════════════════════════════════════════════
// filesrc opens a path and reads with read() at a shared file offset; trackd never opens paths (the client passes
// an open fd), and several pipelines (discovery, outputs, thumbnails) read the same fd at once. pread() keeps every
// reader's position its own. Random access (is_seekable + get_size) lets typefind/qtdemux run in pull mode, which is
// what makes a file with its moov atom at the end playable. The fd is borrowed: this element never closes it.

typedef struct {
    GstBaseSrc parent;
    gint fd;
} TrackdFdSrc;

typedef struct {
    GstBaseSrcClass parent_class;
} TrackdFdSrcClass;

enum { PROP_0, PROP_FD };

GType trackd_fd_src_get_type(void);
G_DEFINE_TYPE(TrackdFdSrc, trackd_fd_src, GST_TYPE_BASE_SRC)

static GstStaticPadTemplate trackd_fd_src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void trackd_fd_src_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    TrackdFdSrc *self = (TrackdFdSrc *)object;
    switch (id) {
    case PROP_FD:
        GST_OBJECT_LOCK(self);
        self->fd = g_value_get_int(value);
        GST_OBJECT_UNLOCK(self);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void trackd_fd_src_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    TrackdFdSrc *self = (TrackdFdSrc *)object;
    switch (id) {
    case PROP_FD:
        GST_OBJECT_LOCK(self);
        g_value_set_int(value, self->fd);
        GST_OBJECT_UNLOCK(self);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static gint trackd_fd_src_fd(TrackdFdSrc *self) {
    GST_OBJECT_LOCK(self);
    gint fd = self->fd;
    GST_OBJECT_UNLOCK(self);
    return fd;
}

static gboolean trackd_fd_src_start(GstBaseSrc *src) {
    gint fd = trackd_fd_src_fd((TrackdFdSrc *)src);
    struct stat st;
    if (fd < 0) {
        GST_ELEMENT_ERROR(src, RESOURCE, NOT_FOUND, ("No file descriptor given"), ("fd property is %d", fd));
        return FALSE;
    }
    if (fstat(fd, &st) != 0) {
        GST_ELEMENT_ERROR(src, RESOURCE, OPEN_READ, ("Could not stat file descriptor %d", fd),
                          ("fstat: %s", g_strerror(errno)));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        GST_ELEMENT_ERROR(src, RESOURCE, OPEN_READ, ("File descriptor %d is not a regular file", fd), (NULL));
        return FALSE;
    }
    return TRUE;
}

static gboolean trackd_fd_src_stop(GstBaseSrc *src) {
    (void)src;
    return TRUE;
}

static gboolean trackd_fd_src_is_seekable(GstBaseSrc *src) {
    (void)src;
    return TRUE;
}

static gboolean trackd_fd_src_get_size(GstBaseSrc *src, guint64 *size) {
    struct stat st;
    if (fstat(trackd_fd_src_fd((TrackdFdSrc *)src), &st) != 0) return FALSE;
    *size = (guint64)st.st_size;
    return TRUE;
}

static GstFlowReturn trackd_fd_src_fill(GstBaseSrc *src, guint64 offset, guint length, GstBuffer *buf) {
    gint fd = trackd_fd_src_fd((TrackdFdSrc *)src);
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_WRITE)) {
        GST_ELEMENT_ERROR(src, RESOURCE, READ, ("Could not map buffer for reading"), (NULL));
        return GST_FLOW_ERROR;
    }
    gsize done = 0;
    gsize want = MIN((gsize)length, map.size);
    while (done < want) {
        ssize_t n = pread(fd, map.data + done, want - done, (off_t)(offset + done));
        if (n < 0) {
            // EINTR retried here, not by Swift's `syscall` (SystemCalls/Syscall.swift lists each such site): this loop
            // runs in the element's fill on a streaming thread, and a failure must become GST_ELEMENT_ERROR.
            if (errno == EINTR) continue;
            int saved = errno;
            gst_buffer_unmap(buf, &map);
            GST_ELEMENT_ERROR(src, RESOURCE, READ, ("Could not read from file descriptor %d", fd),
                              ("pread at offset %" G_GUINT64_FORMAT ": %s", offset + done, g_strerror(saved)));
            return GST_FLOW_ERROR;
        }
        if (n == 0) break;  // end of file
        done += (gsize)n;
    }
    gst_buffer_unmap(buf, &map);
    if (done == 0 && want > 0) return GST_FLOW_EOS;
    gst_buffer_resize(buf, 0, (gssize)done);
    GST_BUFFER_OFFSET(buf) = offset;
    GST_BUFFER_OFFSET_END(buf) = offset + done;
    return GST_FLOW_OK;
}

static void trackd_fd_src_class_init(TrackdFdSrcClass *klass) {
    GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS(klass);

    gobject_class->set_property = trackd_fd_src_set_property;
    gobject_class->get_property = trackd_fd_src_get_property;
    g_object_class_install_property(
        gobject_class, PROP_FD,
        g_param_spec_int("fd", "fd", "Open file descriptor to read with pread (not closed by the element)", -1,
                         G_MAXINT, -1, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

    gst_element_class_set_static_metadata(element_class, "trackd fd source", "Source/File",
                                          "Reads a borrowed file descriptor with pread(), random access",
                                          "trackd");
    gst_element_class_add_static_pad_template(element_class, &trackd_fd_src_template);

    basesrc_class->start = trackd_fd_src_start;
    basesrc_class->stop = trackd_fd_src_stop;
    basesrc_class->is_seekable = trackd_fd_src_is_seekable;
    basesrc_class->get_size = trackd_fd_src_get_size;
    basesrc_class->fill = trackd_fd_src_fill;
}

static void trackd_fd_src_init(TrackdFdSrc *self) {
    self->fd = -1;
    gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_BYTES);
    // Demuxers in pull mode ask for exact ranges; this only sizes push-mode reads.
    gst_base_src_set_blocksize(GST_BASE_SRC(self), 64 * 1024);
}

gboolean swift_gst_register_fdsrc(void) {
    return gst_element_register(NULL, "trackdfdsrc", GST_RANK_NONE, trackd_fd_src_get_type());
}
