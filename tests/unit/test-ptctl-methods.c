/* SPDX-License-Identifier: MIT */

/* Every method of the control protocol (protocol_methods[]) is reachable
 * from ptctl: some verb lists it in its .methods, and every method a verb
 * lists is one the protocol declares (issue 18: GetSnapshot, ListBundles
 * and WatchdogPing had no verb). */

#include "common/control/protocol.h"
#include "test.h"

/* ptctl's verb table is static in client/ptctl.c, as in
 * test-man-documented: include it, its main() renamed. */
int ptctl_main(int argc, char **argv);
#define main ptctl_main
#include "client/ptctl.c"
#undef main

static const Verb *verb_for(const char *method) {
        for (const Verb *const *v = verbs; *v; v++)
                for (const char *const *m = (*v)->methods; m && *m; m++)
                        if (streq(*m, method))
                                return *v;
        return NULL;
}

static void test_every_method_has_a_verb(void) {
        unsigned n = 0, missing = 0;

        for (const ProtocolMethod *p = protocol_methods; p->name; p++) {
                const Verb *v = verb_for(p->name);
                n++;
                if (!v) {
                        fprintf(stderr, "%s has no ptctl verb: add one, or list it in a verb's .methods\n", p->name);
                        missing++;
                } else
                        printf("%-45s ptctl %s\n", p->name, v->name);
        }
        ASSERT_TRUE(n > 0);
        if (missing)
                test_fail("%u of %u protocol methods cannot be called from ptctl", missing, n);
}

static void test_verbs_call_declared_methods(void) {
        for (const Verb *const *v = verbs; *v; v++)
                for (const char *const *m = (*v)->methods; m && *m; m++)
                        if (!protocol_method_find(*m))
                                test_fail("ptctl %s lists %s, which the protocol does not declare", (*v)->name, *m);
}

RUN_TESTS(TEST(test_every_method_has_a_verb), TEST(test_verbs_call_declared_methods));
