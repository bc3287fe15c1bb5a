/* SPDX-License-Identifier: MIT */

/* Which keys a reload leaves for a restart (daemon/manager/reload.h): each
 * changed one is named and put back to the running value; the keys a
 * reload applies are left as the new file says. */

#include "common/basic/strv.h"
#include "daemon/manager/reload.h"
#include "test.h"

static void test_restart_keys(void) {
        _cleanup_(ptraced_config_done) PtracedConfig running, next;
        _cleanup_strv_free_ char **restart = NULL;

        ptraced_config_init(&running);
        ptraced_config_init(&next);
        running.buffer_size = 1 << 20;
        next.buffer_size = 2 << 20;
        ASSERT_OK(strv_extend(&next.filters, "filter main @ /bin/true"));
        ASSERT_NOT_NULL(next.control.socket = strdup("/run/other.sock"));
        next.triggers.burst = 3;
        next.max_bundles = 7;
        next.control.timeout = 5 * USEC_PER_SEC;

        ASSERT_OK(reload_keep_restart_keys(&running, &next, &restart));
        ASSERT_EQ(strv_length(restart), 3u);
        ASSERT_TRUE(strv_contains(restart, "[Trace] BufferSize="));
        ASSERT_TRUE(strv_contains(restart, "[Trace] Filter="));
        ASSERT_TRUE(strv_contains(restart, "[Control] Socket="));
        /* Put back: what the daemon runs with. */
        ASSERT_EQ(next.buffer_size, (uint64_t) 1 << 20);
        ASSERT_NULL(next.filters);
        ASSERT_NULL(next.control.socket);
        /* Applied by a reload: left alone. */
        ASSERT_EQ(next.triggers.burst, 3u);
        ASSERT_EQ(next.max_bundles, 7u);
        ASSERT_EQ(next.control.timeout, 5 * USEC_PER_SEC);
}

static void test_nothing_changed(void) {
        _cleanup_(ptraced_config_done) PtracedConfig running, next;
        _cleanup_strv_free_ char **restart = NULL;

        ptraced_config_init(&running);
        ptraced_config_init(&next);
        ASSERT_OK(reload_keep_restart_keys(&running, &next, &restart));
        ASSERT_NULL(restart);
}

RUN_TESTS(TEST(test_restart_keys), TEST(test_nothing_changed));
