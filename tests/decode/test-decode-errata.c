/* SPDX-License-Identifier: MIT */

/*
 * Errata for libipt's workarounds: libipt's own for the CPUs it knows,
 * our table's for newer ones (client/decode/errata.h), and the warning
 * only for CPUs neither knows. How a workaround changes the flow is in
 * test-decode-events (APL11 on CPUs newer than libipt 2.0.5).
 */

#include "client/decode/errata.h"
#include "decode-test-util.h"

static int errata_of(uint16_t family, uint8_t model, struct pt_errata *e) {
        struct pt_cpu cpu = { .vendor = pcv_intel, .family = family, .model = model };
        return decode_errata_for_cpu(&cpu, e);
}

static void test_sources(void) {
        struct pt_errata e;

        /* Skylake: libipt's. */
        ASSERT_EQ(errata_of(6, 0x4e, &e), DECODE_ERRATA_LIBIPT);
        ASSERT_TRUE(e.skd010 && e.skl014 && e.bdm70);

        /* Meteor Lake (6/170) and later client cores: ours. */
        ASSERT_EQ(errata_of(6, 170, &e), DECODE_ERRATA_OWN_TABLE);
        ASSERT_TRUE(e.bdm70 && e.skd022 && e.apl11);
        ASSERT_FALSE(e.skl014 || e.skz84 || e.skd010);

        /* Emerald Rapids (6/207): SKZ84, no APL11. */
        ASSERT_EQ(errata_of(6, 207, &e), DECODE_ERRATA_OWN_TABLE);
        ASSERT_TRUE(e.bdm70 && e.skd022 && e.skz84);
        ASSERT_FALSE(e.apl11);

        /* Atom 6/175: APL11 only. */
        ASSERT_EQ(errata_of(6, 175, &e), DECODE_ERRATA_OWN_TABLE);
        ASSERT_TRUE(e.apl11);
        ASSERT_FALSE(e.bdm70 || e.skd022);

        /* Families 18 and 19. */
        ASSERT_EQ(errata_of(18, 3, &e), DECODE_ERRATA_OWN_TABLE);
        ASSERT_TRUE(e.apl11 && e.bdm70);
        ASSERT_EQ(errata_of(19, 1, &e), DECODE_ERRATA_OWN_TABLE);
        ASSERT_TRUE(e.skz84 && !e.apl11);

        /* Unknown to both: nothing, and said so. */
        ASSERT_EQ(errata_of(6, 0x01, &e), -ENOENT);
        ASSERT_FALSE(e.bdm70 || e.apl11 || e.skz84);
        ASSERT_EQ(errata_of(19, 0x7f, &e), -ENOENT);
}

static bool warned(const char *cpu_model) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decoder_freep) Decoder *d = NULL;
        _cleanup_free_ char *error = NULL;
        static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                         0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };
        DecodeOptions opts = { .format = DECODE_FORMAT_SUMMARY, .jobs = 1 };

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_parse_cpu_model(cpu_model, &in->cpu_model));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", (void *) psb, sizeof(psb), false));
        ASSERT_OK(decoder_new(in, &opts, &d, &error));
        for (char **w = d->warnings; w && *w; w++)
                if (strstr(*w, "no errata known"))
                        return true;
        return false;
}

static void test_warning(void) {
        ASSERT_FALSE(warned("6/85/4"));
        ASSERT_FALSE(warned("6/170/4"));
        ASSERT_FALSE(warned("19/1/0"));
        ASSERT_TRUE(warned("6/1/0"));
}

RUN_TESTS(TEST(test_sources), TEST(test_warning));
