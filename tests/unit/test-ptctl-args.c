/* SPDX-License-Identifier: MIT */

#include "client/verbs/verbs.h"
#include "test.h"

static void reset(void) {
        arg_globals = (PtctlGlobals){ .socket_path = "/run/default" };
}

static void test_socket_anywhere(void) {
        char *before[] = { "ptctl", "--socket", "/tmp/a", "status", "--json", NULL };
        char *after[] = { "ptctl", "status", "--socket=/tmp/b", "-n", "3", NULL };
        char *dashdash[] = { "ptctl", "decode", "--", "--socket", "x", NULL };
        char *err = NULL;
        int argc;

        reset();
        argc = 5;
        ASSERT_OK(ptctl_take_global_options(&argc, before, &err));
        ASSERT_EQ(argc, 2);
        ASSERT_STREQ(before[1], "status");
        ASSERT_NULL(before[2]);
        ASSERT_STREQ(arg_globals.socket_path, "/tmp/a");
        ASSERT_TRUE(arg_globals.json);

        reset();
        argc = 5;
        ASSERT_OK(ptctl_take_global_options(&argc, after, &err));
        ASSERT_EQ(argc, 4);
        ASSERT_STREQ(after[1], "status");
        ASSERT_STREQ(after[2], "-n");
        ASSERT_STREQ(arg_globals.socket_path, "/tmp/b");
        ASSERT_FALSE(arg_globals.json);

        /* After "--" nothing is taken. */
        reset();
        argc = 5;
        ASSERT_OK(ptctl_take_global_options(&argc, dashdash, &err));
        ASSERT_EQ(argc, 5);
        ASSERT_STREQ(arg_globals.socket_path, "/run/default");
}

/* --version after the verb, as ptctl(1) says of every global option; and
 * $PTRACED_SOCKET below --socket (issue 18). */
static void test_version_and_environment(void) {
        char *version[] = { "ptctl", "status", "--version", NULL };
        char *plain[] = { "ptctl", "status", NULL };
        char *given[] = { "ptctl", "status", "--socket", "/tmp/given", NULL };
        char *err = NULL;
        int argc;

        reset();
        argc = 3;
        ASSERT_OK(ptctl_take_global_options(&argc, version, &err));
        ASSERT_TRUE(arg_globals.version);
        ASSERT_EQ(argc, 2);

        ASSERT_EQ(setenv("PTRACED_SOCKET", "/tmp/from-env", 1), 0);
        reset();
        argc = 2;
        ASSERT_OK(ptctl_take_global_options(&argc, plain, &err));
        ASSERT_STREQ(arg_globals.socket_path, "/tmp/from-env");
        reset();
        argc = 4;
        ASSERT_OK(ptctl_take_global_options(&argc, given, &err));
        ASSERT_STREQ(arg_globals.socket_path, "/tmp/given");
        ASSERT_EQ(unsetenv("PTRACED_SOCKET"), 0);
}

static void test_bad(void) {
        char *missing[] = { "ptctl", "status", "--socket", NULL };
        char *empty[] = { "ptctl", "--socket=", "status", NULL };
        char *err = NULL;
        int argc;

        reset();
        argc = 3;
        ASSERT_ERROR(ptctl_take_global_options(&argc, missing, &err), EINVAL);
        ASSERT_CONTAINS(err, "--socket needs a path");
        err = mfree(err);

        reset();
        argc = 3;
        ASSERT_ERROR(ptctl_take_global_options(&argc, empty, &err), EINVAL);
        ASSERT_CONTAINS(err, "non-empty");
        free(err);
}

RUN_TESTS(TEST(test_version_and_environment), TEST(test_socket_anywhere), TEST(test_bad));
