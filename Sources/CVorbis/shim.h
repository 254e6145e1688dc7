// libvorbis (Debian: libvorbis-dev, which brings libogg-dev), for CVorbisBlocks: a Vorbis stream's block sizes as
// its setup header states them, read by the codec's reference library instead of a hand-written header parser.
// Swift does not call it.
#include <vorbis/codec.h>
