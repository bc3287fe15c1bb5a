/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The referee for the decode tests: libipt's block decoder run serially
 * over a whole trace, the way ptxed (libipt 2.0.5, ptxed/src/ptxed.c,
 * decode_block()) runs it: synchronize at the first PSB, hand out the
 * pending events, stop as soon as the status says the trace is used up
 * (pts_eos), and after an error synchronize at the next PSB. Its
 * instruction and error counts are what ptctl decode must reproduce for
 * every segment size and number of jobs.
 */

#include <intel-pt.h>

#include "test.h"

typedef struct LibiptSerial {
        uint64_t insns;
        uint64_t errors;
        uint64_t enabled, disabled, overflows;
} LibiptSerial;

/* code[0, size) at addr, cfg's cpu and errata (its begin/end are set here). */
static inline LibiptSerial libipt_serial(const uint8_t *trace, size_t trace_size, const char *image_path,
                                         uint64_t addr, uint64_t image_size, const struct pt_config *base) {
        struct pt_config cfg;
        struct pt_block_decoder *dec;
        struct pt_image *image;
        LibiptSerial s = {};
        uint64_t sync = 0;

        if (base)
                cfg = *base;
        else
                pt_config_init(&cfg);
        cfg.begin = (uint8_t *) trace;
        cfg.end = (uint8_t *) trace + trace_size;
        dec = pt_blk_alloc_decoder(&cfg);
        ASSERT_NOT_NULL(dec);
        image = pt_image_alloc("referee");
        ASSERT_NOT_NULL(image);
        ASSERT_TRUE(pt_image_add_file(image, image_path, 0, image_size, NULL, addr) >= 0);
        ASSERT_TRUE(pt_blk_set_image(dec, image) >= 0);

        for (;;) {
                int status = pt_blk_sync_forward(dec);

                if (status < 0) {
                        uint64_t now = 0;

                        if (status == -pte_eos)
                                break;
                        s.errors++;
                        if (pt_blk_get_offset(dec, &now) < 0 || now <= sync)
                                break;
                        sync = now;
                        continue;
                }
                for (;;) {
                        struct pt_block b = { .ip = 0 };

                        while (status >= 0 && (status & pts_event_pending)) {
                                struct pt_event ev;

                                status = pt_blk_event(dec, &ev, sizeof(ev));
                                if (status < 0)
                                        break;
                                if (ev.type == ptev_enabled)
                                        s.enabled++;
                                else if (ev.type == ptev_disabled || ev.type == ptev_async_disabled)
                                        s.disabled++;
                                else if (ev.type == ptev_overflow)
                                        s.overflows++;
                        }
                        if (status >= 0 && (status & pts_eos))
                                status = -pte_eos;
                        if (status >= 0) {
                                status = pt_blk_next(dec, &b, sizeof(b));
                                s.insns += b.ninsn;
                        }
                        if (status >= 0)
                                continue;
                        if (status != -pte_eos)
                                s.errors++;
                        break;
                }
                if (status == -pte_eos)
                        break;
        }
        pt_blk_free_decoder(dec);
        pt_image_free(image);
        return s;
}
