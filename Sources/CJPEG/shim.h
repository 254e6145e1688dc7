// libjpeg (Debian's libjpeg62-turbo) for trackctl's JPEG output. jpeglib.h uses FILE and size_t without including
// their headers, so stdio.h and stddef.h come first.
#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>
