// GStreamer 1.22 headers (Debian: libgstreamer1.0-dev, libgstreamer-plugins-base1.0-dev).
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/base/gstbasesrc.h>
#include <gst/video/video.h>
#include <gst/audio/audio.h>
#include <gst/pbutils/pbutils.h>
#include <gst/tag/tag.h>
