// cairo (Debian: libcairo2-dev): 2D drawing. trackctl's contact-sheet composes decoded frames and captions
// with it and writes the PNG with cairo_surface_write_to_png (no hand-written image encoding or text drawing).
// Only trackctl links it; the daemon does not.
#include <cairo.h>
