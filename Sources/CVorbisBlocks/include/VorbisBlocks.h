// CVorbisBlocks — the block size of each Vorbis packet, read by libvorbis (what a packet's duration is made of:
// Vorbis I §1.3.2, a packet decodes to a quarter of its block plus a quarter of the one before).
//
// Why C: libvorbis's decoder state is three structs that point at each other (vorbis_block → vorbis_dsp_state →
// vorbis_info); they are kept in one allocation here so that nothing moves them. The comment above each declaration
// says who owns what it takes and returns. Nothing is decoded: vorbis_synthesis_trackonly reads a packet's header
// bits only.
#ifndef CVORBISBLOCKS_H
#define CVORBISBLOCKS_H

#include <stddef.h>
#include <stdint.h>

/// A Vorbis stream's headers as libvorbis read them (vorbis_info, vorbis_dsp_state and vorbis_block).
typedef struct trackd_vorbis_blocks trackd_vorbis_blocks;

/// Reads the identification, comment and setup headers (`headers[i]`, `sizes[i]` bytes, in that order).
/// Ownership: borrows the headers for the call; returns a new object the caller owns and frees with
/// trackd_vorbis_blocks_free, or NULL when libvorbis rejects a header (vorbis_synthesis_headerin) or its decoder
/// state (vorbis_synthesis_init).
trackd_vorbis_blocks *trackd_vorbis_blocks_new(const uint8_t *const headers[3], const size_t sizes[3]);

/// The stream's block size for `flag` (0: short, 1: long), in frames (vorbis_info_blocksize).
/// Ownership: borrows `blocks`.
int32_t trackd_vorbis_blocks_size(const trackd_vorbis_blocks *blocks, int32_t flag);

/// The header of the audio packet `packet` (`size` bytes) as libvorbis reads it (vorbis_synthesis_trackonly): its
/// block flag (0: short, 1: long) in `*block`, and for a long block the flag of the window before it that the packet
/// states in `*previous` (-1 for a short block: it states none). Returns 0, or -1 when the packet is a header or
/// names a mode the setup header has not. Ownership: borrows `blocks` (its vorbis_block is rewritten: one caller at
/// a time) and `packet` for the call.
int trackd_vorbis_blocks_packet(trackd_vorbis_blocks *blocks, const uint8_t *packet, size_t size, int32_t *block,
                                int32_t *previous);

/// Ownership: takes `blocks` and frees it with all libvorbis allocated for it; NULL is ignored.
void trackd_vorbis_blocks_free(trackd_vorbis_blocks *blocks);

#endif
