/* SPDX-License-Identifier: MIT */

#include <intel-pt.h>

#include "common/pt/scan.h"

/* From the decoder's position, return the first TSC (stop_at_first) or the
 * last one before the end or the first packet error (a snapshot's last
 * bytes may stop inside a packet). */
static bool find_tsc(struct pt_packet_decoder *d, bool stop_at_first, size_t max_packets, uint64_t *ret) {
        struct pt_packet p;
        bool found = false;

        for (size_t n = 0; n < max_packets; n++) {
                if (pt_pkt_next(d, &p, sizeof p) < 0)
                        break;
                if (p.type != ppt_tsc)
                        continue;
                *ret = p.payload.tsc.tsc;
                found = true;
                if (stop_at_first)
                        break;
        }
        return found;
}

static struct pt_packet_decoder *new_decoder(const uint8_t *data, size_t size) {
        struct pt_config config;

        pt_config_init(&config);
        config.begin = (uint8_t *) data;
        config.end = (uint8_t *) data + size;
        return pt_pkt_alloc_decoder(&config);
}

int pt_scan_tsc_range(const uint8_t *data, size_t size, PtScanResult *ret) {
        struct pt_packet_decoder *fwd, *bwd;
        uint64_t off, first = 0, last = 0;
        bool have_first = false, have_last = false;

        *ret = (PtScanResult){ .first_psb_offset = UINT64_MAX, .last_psb_offset = UINT64_MAX };
        if (size == 0)
                return 0;

        fwd = new_decoder(data, size);
        bwd = new_decoder(data, size);
        if (!fwd || !bwd) {
                pt_pkt_free_decoder(fwd);
                pt_pkt_free_decoder(bwd);
                return -ENOMEM;
        }

        /* The first PSB+ carries a TSC when tsc=1; it is a few packets long. */
        if (pt_pkt_sync_forward(fwd) >= 0 && pt_pkt_get_sync_offset(fwd, &off) >= 0) {
                ret->first_psb_offset = off;
                have_first = find_tsc(fwd, true, 64, &first);
        }

        /* A fresh decoder searches backwards from the end: the last PSB, then
         * forward to the end for the last TSC. */
        if (pt_pkt_sync_backward(bwd) >= 0 && pt_pkt_get_sync_offset(bwd, &off) >= 0) {
                ret->last_psb_offset = off;
                have_last = find_tsc(bwd, false, SIZE_MAX, &last);
        }

        pt_pkt_free_decoder(fwd);
        pt_pkt_free_decoder(bwd);

        if (have_first) {
                ret->has_tsc = true;
                ret->first_tsc = first;
                ret->last_tsc = have_last ? MAX(last, first) : first;
        }
        return 0;
}
