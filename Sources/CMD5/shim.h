// libmd (Debian: libmd-dev): BSD message digests. trackctl's --md5 uses its MD5, the same digest ffmpeg's
// framemd5 prints, instead of a hand-written one.
#include <sys/types.h>
#include <md5.h>
