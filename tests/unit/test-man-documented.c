/* SPDX-License-Identifier: MIT */

/* Every key the daemon's config table knows is documented in
 * ptraced.conf(5), under its own section, as "*Key=*". */

#include "fileio.h"
#include "ptraced-config.h"
#include "test.h"

static void test_config_keys(void) {
        _cleanup_free_ char *page = NULL;
        char want[256];
        unsigned n = 0;

        ASSERT_OK(read_full_file(SOURCE_ROOT "/man/ptraced.conf.5.scd", 1 << 20, &page, NULL));
        for (const ConfigItem *i = ptraced_config_items; i->section; i++) {
                const char *sect, *next;

                snprintf(want, sizeof want, "# [%s%s] SECTION", i->section,
                         i->section[strlen(i->section) - 1] == ':' ? "NAME" : "");
                sect = strstr(page, want);
                if (!sect)
                        test_fail("ptraced.conf(5) has no \"%s\" for key %s=", want, i->key);
                next = strstr(sect + 1, "\n# ");
                snprintf(want, sizeof want, "*%s=*", i->key);
                const char *k = strstr(sect, want);
                if (!k || (next && k > next))
                        test_fail("ptraced.conf(5) does not document [%s] %s", i->section, want);
                n++;
        }
        printf("%u keys documented\n", n);
}

RUN_TESTS(TEST(test_config_keys));
