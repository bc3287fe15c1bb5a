/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * decode_pkt_size() (client/decode/pktsize.h) against libipt's packet
 * decoder at every offset of a buffer: where it answers, libipt must read
 * a packet of the same type and size there. Shared by test-decode-pktsize
 * and fuzz-decode-paths. Returns the first offset where they differ, or
 * SIZE_MAX; -1 in *ret_libipt when libipt could not be set up.
 */

#include "client/decode/pktsize.h"

static inline size_t pktsize_check(const uint8_t *data, size_t size, size_t *ret_ours, int *ret_libipt) {
        struct pt_packet_decoder *dec;
        struct pt_config cfg;

        *ret_ours = 0;
        *ret_libipt = -1;
        if (size == 0)
                return SIZE_MAX;
        pt_config_init(&cfg);
        cfg.begin = (uint8_t *) data;
        cfg.end = (uint8_t *) data + size;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return 0;
        for (size_t i = 0; i < size; i++) {
                enum pt_packet_type type = ppt_invalid;
                struct pt_packet pkt;
                size_t n = decode_pkt_size(data + i, data + size, &type);
                int r;

                if (n == 0)
                        continue;
                r = pt_pkt_sync_set(dec, i);
                if (r >= 0)
                        r = pt_pkt_next(dec, &pkt, sizeof(pkt));
                if (r != (int) n || pkt.type != type) {
                        *ret_ours = n;
                        *ret_libipt = r;
                        pt_pkt_free_decoder(dec);
                        return i;
                }
        }
        pt_pkt_free_decoder(dec);
        return SIZE_MAX;
}
