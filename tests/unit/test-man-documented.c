/* SPDX-License-Identifier: MIT */

/* Every key the daemon's config table knows is documented in
 * ptraced.conf(5), under its own section, as "*Key=*"; every option of
 * every ptctl verb is documented in ptctl(1). */

#include <ctype.h>
#include <getopt.h>

#include "common/basic/fileio.h"
#include "daemon/manager/config.h"
#include "test.h"

/* ptctl's verb table is static in client/ptctl.c: include the file here,
 * its main() renamed, so the test sees exactly the verbs ptctl dispatches
 * (a verb added there is checked without touching this test). */
int ptctl_main(int argc, char **argv);
#define main ptctl_main
#include "client/ptctl.c"
#undef main

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

/* The text between a heading line and the next "# " heading, or NULL. */
static char *man_section(const char *page, const char *heading) {
        char want[128];
        const char *start, *end;

        snprintf(want, sizeof want, "\n# %s\n", heading);
        start = strstr(page, want);
        if (!start)
                return NULL;
        start += strlen(want);
        end = strstr(start, "\n# ");
        return strndup(start, end ? (size_t) (end - start) : strlen(start));
}

/* A verb's entry under VERBS: from its "*verb*" line to the next entry. */
static char *verb_entry(const char *verbs_section, const char *verb) {
        char want[128];
        const char *start, *end;

        if (!verbs_section)
                return NULL;
        snprintf(want, sizeof want, "*%s*", verb);
        for (start = verbs_section; (start = strstr(start, want)); start++)
                if (start == verbs_section || start[-1] == '\n')
                        break;
        if (!start)
                return NULL;
        end = strstr(start + 1, "\n*");
        return strndup(start, end ? (size_t) (end - start) : strlen(start));
}

static bool documented_in(const char *text, const char *option) {
        _cleanup_free_ char *a = NULL, *b = NULL;

        if (!text)
                return false;
        ASSERT_TRUE(asprintf(&a, "*%s*", option) > 0);
        ASSERT_TRUE(asprintf(&b, "*%s=", option) > 0);
        return strstr(text, a) || strstr(text, b);
}

static void test_ptctl_options(void) {
        _cleanup_free_ char *page = NULL, *verbs_section = NULL, *global = NULL;
        unsigned n_verbs = 0, n_options = 0, n_missing = 0;

        ASSERT_OK(read_full_file(SOURCE_ROOT "/man/ptctl.1.scd", 1 << 20, &page, NULL));
        verbs_section = man_section(page, "VERBS");
        global = man_section(page, "GLOBAL OPTIONS");
        ASSERT_NOT_NULL(verbs_section);
        ASSERT_NOT_NULL(global);

        for (const Verb *const *v = verbs; *v; v++) {
                _cleanup_free_ char *entry = verb_entry(verbs_section, (*v)->name), *own = NULL;
                char upper[64], opt[128];

                n_verbs++;
                if (!(*v)->options || !(*v)->short_options) {
                        fprintf(stderr,
                                "ptctl verb '%s' exposes no option table: set .options and .short_options in its "
                                "Verb (the tables its getopt_long() call uses) so ptctl(1) can be checked\n",
                                (*v)->name);
                        n_missing++;
                        continue;
                }
                if (!entry) {
                        fprintf(stderr, "ptctl(1) has no entry \"*%s*\" under VERBS\n", (*v)->name);
                        n_missing++;
                }
                /* A verb may also have its own section, "# SNAPSHOT". */
                size_t k = 0;
                for (; (*v)->name[k] && k < sizeof upper - 1; k++)
                        upper[k] = (char) toupper((unsigned char) (*v)->name[k]);
                upper[k] = 0;
                own = man_section(page, upper);

                for (const struct option *o = (*v)->options; o->name; o++) {
                        snprintf(opt, sizeof opt, "--%s", o->name);
                        n_options++;
                        if (!documented_in(entry, opt) && !documented_in(own, opt) && !documented_in(global, opt)) {
                                fprintf(stderr,
                                        "ptctl(1) does not document %s of 'ptctl %s' (as \"*%s*\" in its VERBS "
                                        "entry, a \"# %s\" section, or GLOBAL OPTIONS)\n",
                                        opt, (*v)->name, opt, upper);
                                n_missing++;
                        }
                }
                for (const char *c = (*v)->short_options; *c; c++) {
                        if (*c == ':' || *c == '+' || *c == '-')
                                continue;
                        snprintf(opt, sizeof opt, "-%c", *c);
                        n_options++;
                        if (!documented_in(entry, opt) && !documented_in(own, opt) && !documented_in(global, opt)) {
                                fprintf(stderr,
                                        "ptctl(1) does not document %s of 'ptctl %s' (as \"*%s*\" in its VERBS "
                                        "entry, a \"# %s\" section, or GLOBAL OPTIONS)\n",
                                        opt, (*v)->name, opt, upper);
                                n_missing++;
                        }
                }
        }
        printf("%u verbs, %u options checked\n", n_verbs, n_options);
        if (n_missing > 0)
                test_fail("%u ptctl verbs or options are undocumented (see above)", n_missing);
}

RUN_TESTS(TEST(test_config_keys), TEST(test_ptctl_options));
