/* SPDX-License-Identifier: MIT */

#include <intel-pt.h>

#include "common/pt/scan.h"
#include "test.h"

/* Encode with libipt: [junk] PSB TSC(a) PSBEND TNT... PSB TSC(b) PSBEND TNT TSC(c) [cut packet]. */
static size_t encode(uint8_t *buf, size_t size, size_t junk, uint64_t a, uint64_t b, uint64_t c, bool cut) {
        struct pt_config config;
        struct pt_encoder *e;
        struct pt_packet p;
        uint64_t off;

        pt_config_init(&config);
        config.begin = buf + junk;
        config.end = buf + size;
        e = pt_alloc_encoder(&config);
        ASSERT_NOT_NULL(e);
        memset(buf, 0x55, junk); /* not a PSB: the stream starts mid-packet */

#define EMIT(...)                                                                                           \
        do {                                                                                                \
                p = (struct pt_packet){ __VA_ARGS__ };                                                      \
                ASSERT_OK(pt_enc_next(e, &p));                                                              \
        } while (0)

        EMIT(.type = ppt_psb);
        EMIT(.type = ppt_tsc, .payload.tsc.tsc = a);
        EMIT(.type = ppt_psbend);
        for (int i = 0; i < 100; i++)
                EMIT(.type = ppt_tnt_8, .payload.tnt.bit_size = 4, .payload.tnt.payload = 5);
        EMIT(.type = ppt_psb);
        EMIT(.type = ppt_tsc, .payload.tsc.tsc = b);
        EMIT(.type = ppt_psbend);
        EMIT(.type = ppt_tnt_8, .payload.tnt.bit_size = 2, .payload.tnt.payload = 1);
        EMIT(.type = ppt_tsc, .payload.tsc.tsc = c);
        if (cut)
                EMIT(.type = ppt_tip, .payload.ip.ipc = pt_ipc_sext_48, .payload.ip.ip = 0x401000);
        ASSERT_OK(pt_enc_get_offset(e, &off));
        pt_free_encoder(e);
        /* A cut stream loses the last packet's final bytes. */
        return junk + (size_t) off - (cut ? 3 : 0);
}

static void test_range(void) {
        uint8_t buf[4096];
        PtScanResult r;
        size_t n;

        n = encode(buf, sizeof buf, 7, 1000, 2000, 2500, true);
        ASSERT_OK(pt_scan_tsc_range(buf, n, &r));
        ASSERT_TRUE(r.has_tsc);
        ASSERT_EQ(r.first_tsc, 1000);
        ASSERT_EQ(r.last_tsc, 2500);
        ASSERT_EQ(r.first_psb_offset, 7);
        ASSERT_TRUE(r.last_psb_offset > r.first_psb_offset);

        n = encode(buf, sizeof buf, 0, 5, 6, 7, false);
        ASSERT_OK(pt_scan_tsc_range(buf, n, &r));
        ASSERT_EQ(r.first_tsc, 5);
        ASSERT_EQ(r.last_tsc, 7);
        ASSERT_EQ(r.first_psb_offset, 0);
}

static void test_no_psb(void) {
        uint8_t buf[256];
        PtScanResult r;

        memset(buf, 0x55, sizeof buf);
        ASSERT_OK(pt_scan_tsc_range(buf, sizeof buf, &r));
        ASSERT_FALSE(r.has_tsc);
        ASSERT_EQ_U64(r.first_psb_offset, UINT64_MAX);
        ASSERT_OK(pt_scan_tsc_range(buf, 0, &r));
        ASSERT_FALSE(r.has_tsc);
}

RUN_TESTS(TEST(test_range), TEST(test_no_psb));
