#include "VorbisBlocks.h"

#include <limits.h>
#include <stdlib.h>
#include <vorbis/codec.h>

struct trackd_vorbis_blocks {
    vorbis_info info;
    vorbis_dsp_state dsp;
    vorbis_block block;
};

/// An ogg_packet over borrowed bytes. libvorbis reads `packet` only; its field is not const-qualified.
static ogg_packet packet_of(const uint8_t *bytes, size_t size, int number) {
    ogg_packet p = {0};
    p.packet = (unsigned char *)bytes;
    p.bytes = (long)size;
    p.b_o_s = number == 0;
    p.packetno = number;
    return p;
}

trackd_vorbis_blocks *trackd_vorbis_blocks_new(const uint8_t *const headers[3], const size_t sizes[3]) {
    trackd_vorbis_blocks *blocks = calloc(1, sizeof *blocks);
    if (blocks == NULL) return NULL;
    vorbis_info_init(&blocks->info);
    vorbis_comment comment;
    vorbis_comment_init(&comment);
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
        ogg_packet p = packet_of(headers[i], sizes[i], i);
        ok = headers[i] != NULL && sizes[i] > 0 && sizes[i] <= LONG_MAX
            && vorbis_synthesis_headerin(&blocks->info, &comment, &p) == 0;
    }
    vorbis_comment_clear(&comment);
    // vorbis_synthesis_init clears what it made when it fails; vorbis_block_init cannot fail.
    if (!ok || vorbis_synthesis_init(&blocks->dsp, &blocks->info) != 0) {
        vorbis_info_clear(&blocks->info);
        free(blocks);
        return NULL;
    }
    vorbis_block_init(&blocks->dsp, &blocks->block);
    return blocks;
}

int32_t trackd_vorbis_blocks_size(const trackd_vorbis_blocks *blocks, int32_t flag) {
    // vorbis_info_blocksize takes a non-const vorbis_info and only reads it.
    return (int32_t)vorbis_info_blocksize((vorbis_info *)&blocks->info, flag != 0);
}

int trackd_vorbis_blocks_packet(trackd_vorbis_blocks *blocks, const uint8_t *packet, size_t size, int32_t *block,
                                int32_t *previous) {
    if (packet == NULL || size == 0 || size > LONG_MAX) return -1;
    ogg_packet p = packet_of(packet, size, 3);
    if (vorbis_synthesis_trackonly(&blocks->block, &p) != 0) return -1;
    *block = blocks->block.W ? 1 : 0;
    *previous = blocks->block.W ? (blocks->block.lW ? 1 : 0) : -1;
    return 0;
}

void trackd_vorbis_blocks_free(trackd_vorbis_blocks *blocks) {
    if (blocks == NULL) return;
    vorbis_block_clear(&blocks->block);
    vorbis_dsp_clear(&blocks->dsp);
    vorbis_info_clear(&blocks->info);
    free(blocks);
}
