/* SPDX-License-Identifier: MIT */

/*
 * The index's packet reader (client/decode/pktsize.h) reads what libipt's
 * packet decoder reads: every opcode and extended opcode with every
 * length up to a cut, the IP compressions, TNTs without a stop bit, CYCs
 * of every length, random streams, and a stream of every packet kind
 * libipt's encoder writes.
 */

#include <intel-pt.h>

#include "tests/unit/pktsize-check.h"
#include "tests/unit/test.h"

static void check(const uint8_t *data, size_t size) {
        size_t ours, at;
        int theirs;

        at = pktsize_check(data, size, &ours, &theirs);
        if (at != SIZE_MAX)
                test_fail("offset %zu of %zu (byte 0x%02x): ours %zu, libipt %d", at, size, data[at], ours, theirs);
}

/* Each first byte (and each second byte after 0x02), with tails of every
 * length up to 16 bytes: all zeros, all ones, and a pattern. */
static void test_opcodes(void) {
        static const uint8_t tails[3] = { 0x00, 0xff, 0x5a };

        for (unsigned a = 0; a < 256; a++)
                for (unsigned b = 0; b < (a == 0x02 ? 256U : 1U); b++)
                        for (size_t t = 0; t < ELEMENTSOF(tails); t++)
                                for (size_t len = 1; len <= 18; len++) {
                                        uint8_t buf[18];

                                        memset(buf, tails[t], sizeof(buf));
                                        buf[0] = (uint8_t) a;
                                        if (a == 0x02 && len > 1)
                                                buf[1] = (uint8_t) b;
                                        check(buf, len);
                                }
}

/* TNT-64 payloads around the stop bit, CYCs with 0..10 extension bytes. */
static void test_edges(void) {
        for (unsigned v = 0; v < 4; v++) {
                uint8_t buf[8] = { 0x02, 0xa3, (uint8_t) v };
                check(buf, sizeof(buf));
        }
        for (size_t k = 0; k <= 10; k++) {
                uint8_t buf[12];

                memset(buf, 0x01, sizeof(buf)); /* continuation bits */
                buf[0] = 0x07;
                if (k < sizeof(buf) - 1)
                        buf[1 + k] = 0x00;
                for (size_t len = 1; len <= sizeof(buf); len++)
                        check(buf, len);
        }
}

static void test_random(void) {
        uint8_t buf[4096];
        uint64_t x = 0x9e3779b97f4a7c15;

        for (int round = 0; round < 200; round++) {
                for (size_t i = 0; i < sizeof(buf); i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        buf[i] = (uint8_t) x;
                }
                check(buf, sizeof(buf));
        }
}

/* Every packet kind libipt encodes, in a row. */
static void test_encoded(void) {
        struct pt_packet packets[] = {
                { .type = ppt_psb },
                { .type = ppt_tsc, .payload.tsc.tsc = 0x123456789abcdULL },
                { .type = ppt_mode, .payload.mode.leaf = pt_mol_exec, .payload.mode.bits.exec.csl = 1 },
                { .type = ppt_fup, .payload.ip = { .ipc = pt_ipc_sext_48, .ip = 0xffffffff81000000ULL } },
                { .type = ppt_psbend },
                { .type = ppt_tnt_8, .payload.tnt = { .bit_size = 6, .payload = 0x2a } },
                { .type = ppt_tnt_64, .payload.tnt = { .bit_size = 40, .payload = 0x12345678ULL } },
                { .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_update_16, .ip = 0x1234 } },
                { .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_update_32, .ip = 0x12345678 } },
                { .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_update_48, .ip = 0x123456789abcULL } },
                { .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_full, .ip = 0xffffffff81000000ULL } },
                { .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_suppressed } },
                { .type = ppt_tip_pge, .payload.ip = { .ipc = pt_ipc_sext_48, .ip = 0x401000 } },
                { .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
                { .type = ppt_mtc, .payload.mtc.ctc = 0x42 },
                { .type = ppt_cyc, .payload.cyc.value = 0x3 },
                { .type = ppt_cyc, .payload.cyc.value = 0x123456789ULL },
                { .type = ppt_cbr, .payload.cbr.ratio = 0x20 },
                { .type = ppt_pip, .payload.pip = { .cr3 = 0x1234000, .nr = 1 } },
                { .type = ppt_ovf },
                { .type = ppt_pad },
                { .type = ppt_tma, .payload.tma = { .ctc = 0x1234, .fc = 0x12 } },
                { .type = ppt_stop },
                { .type = ppt_vmcs, .payload.vmcs.base = 0x12345000 },
                { .type = ppt_mnt, .payload.mnt.payload = 0x1122334455667788ULL },
                { .type = ppt_exstop, .payload.exstop.ip = 1 },
                { .type = ppt_mwait, .payload.mwait = { .hints = 1, .ext = 2 } },
                { .type = ppt_pwre, .payload.pwre = { .state = 1, .sub_state = 2 } },
                { .type = ppt_pwrx, .payload.pwrx = { .last = 1, .deepest = 2, .interrupt = 1 } },
                { .type = ppt_ptw, .payload.ptw = { .plc = 1, .ip = 1, .payload = 0x1234 } },
                { .type = ppt_mode, .payload.mode.leaf = pt_mol_tsx, .payload.mode.bits.tsx.intx = 1 },
        };
        uint8_t buf[1024];
        struct pt_encoder *enc;
        struct pt_config cfg;
        uint64_t n = 0;

        pt_config_init(&cfg);
        cfg.begin = buf;
        cfg.end = buf + sizeof(buf);
        enc = pt_alloc_encoder(&cfg);
        ASSERT_TRUE(enc);
        for (size_t i = 0; i < ELEMENTSOF(packets); i++)
                ASSERT_TRUE(pt_enc_next(enc, &packets[i]) > 0);
        ASSERT_TRUE(pt_enc_get_offset(enc, &n) >= 0);
        pt_free_encoder(enc);
        /* Whole, and cut at every byte. */
        for (size_t len = 1; len <= n; len++)
                check(buf, len);
}

RUN_TESTS(TEST(test_opcodes), TEST(test_edges), TEST(test_random), TEST(test_encoded));
