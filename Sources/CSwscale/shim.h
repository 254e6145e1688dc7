// libswscale and the libavutil it needs (Debian: libswscale-dev, which brings libavutil-dev), for CGstShim's
// trackdswscale element (SwscaleConvert.c). Swift does not call them.
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
