/* SPDX-License-Identifier: MIT */

/* The crash trigger's journal fields carry systemd-coredump's names and
 * its details the signal, fault address and names. */

#include <signal.h>

#include "daemon/trigger/crash.h"
#include "test.h"

static bool has(char **l, const char *field) {
        for (; l && *l; l++)
                if (streq(*l, field))
                        return true;
        return false;
}

static void test_fields(void) {
        _cleanup_strv_free_ char **f = NULL;
        TriggerCrash c = {
                .event = {
                        .kind = TRIGGER_EVENT_SIGNAL,
                        .pid = 1234,
                        .tid = 1240,
                        .uid = 1000,
                        .gid = 100,
                        .comm = "worker-3",
                        .other_comm = "myserver",
                        .value = SIGSEGV,
                        .value2 = 2, /* SEGV_ACCERR */
                        .addr = 0x7ffd1000,
                },
                .realtime = 1700000000123456,
                .exe = (char *) "/usr/sbin/myserver",
                .cgroup = (char *) "/system.slice/myserver.service",
        };
        char sig[16];

        ASSERT_OK(trigger_crash_journal_fields(&c, "crash", "/var/lib/ptraced/bundles/b.tar", "abc", NULL,
                                               &f));
        for (char **p = f; *p; p++)
                printf("%s\n", *p);
        ASSERT_TRUE(has(f, "TRIGGER=crash"));
        ASSERT_TRUE(has(f, "COREDUMP_PID=1234"));
        ASSERT_TRUE(has(f, "COREDUMP_TID=1240"));
        ASSERT_TRUE(has(f, "COREDUMP_UID=1000"));
        ASSERT_TRUE(has(f, "COREDUMP_GID=100"));
        ASSERT_TRUE(has(f, "COREDUMP_SIGNAL=11"));
        ASSERT_TRUE(has(f, "COREDUMP_SIGNAL_NAME=SIGSEGV"));
        ASSERT_TRUE(has(f, "COREDUMP_TIMESTAMP=1700000000123456"));
        ASSERT_TRUE(has(f, "COREDUMP_COMM=myserver"));
        ASSERT_TRUE(has(f, "COREDUMP_THREAD_NAME=worker-3"));
        ASSERT_TRUE(has(f, "COREDUMP_EXE=/usr/sbin/myserver"));
        ASSERT_TRUE(has(f, "COREDUMP_CGROUP=/system.slice/myserver.service"));
        ASSERT_TRUE(has(f, "CRASH_FAULT_ADDRESS=0x000000007ffd1000"));
        ASSERT_TRUE(has(f, "CRASH_SI_CODE=2"));
        ASSERT_TRUE(has(f, "BUNDLE_PATH=/var/lib/ptraced/bundles/b.tar"));
        ASSERT_TRUE(has(f, "BUNDLE_ID=abc"));
        strv_free(f);

        /* Refused: the error instead of a bundle; unknown facts left out. */
        c.exe = NULL;
        c.cgroup = NULL;
        ASSERT_OK(trigger_crash_journal_fields(&c, "crash", NULL, NULL, "rate limited", &f));
        ASSERT_TRUE(has(f, "SNAPSHOT_ERROR=rate limited"));
        for (char **p = f; *p; p++) {
                ASSERT_FALSE(startswith(*p, "COREDUMP_EXE="));
                ASSERT_FALSE(startswith(*p, "BUNDLE_PATH="));
        }

        struct json_object *d = json_object_new_object(), *v;
        ASSERT_OK(trigger_crash_add_details(&c, d));
        ASSERT_TRUE(json_object_object_get_ex(d, "signal_name", &v));
        ASSERT_STREQ(json_object_get_string(v), "SIGSEGV");
        ASSERT_TRUE(json_object_object_get_ex(d, "fault_address", &v));
        ASSERT_STREQ(json_object_get_string(v), "0x000000007ffd1000");
        ASSERT_TRUE(json_object_object_get_ex(d, "process_comm", &v));
        ASSERT_STREQ(json_object_get_string(v), "myserver");
        json_object_put(d);

        ASSERT_STREQ(trigger_signal_name(SIGABRT, sig), "SIGABRT");
        ASSERT_STREQ(trigger_signal_name(40, sig), "SIG40");
}

/* The log line names the process by its own name and the thread that took
 * the signal by its name. */
static void test_describe(void) {
        TriggerCrash c = {
                .event = {
                        .pid = 1234,
                        .tid = 1240,
                        .uid = 1000,
                        .comm = "worker-3",
                        .other_comm = "myserver",
                        .value = SIGSEGV,
                        .addr = 0x10,
                },
        };
        char buf[256];

        trigger_crash_describe(&c, buf, sizeof buf);
        ASSERT_STREQ(buf, "Process 1234 (myserver) of user 1000 crashed with SIGSEGV at 0x10 in thread 1240 (worker-3)");
        /* The main thread under the process's name: said once. */
        c.event.tid = 1234;
        memcpy(c.event.comm, "myserver", 9);
        trigger_crash_describe(&c, buf, sizeof buf);
        ASSERT_STREQ(buf, "Process 1234 (myserver) of user 1000 crashed with SIGSEGV at 0x10");
        /* Too small a buffer is cut, still terminated. */
        trigger_crash_describe(&c, buf, 12);
        ASSERT_STREQ(buf, "Process 123");
}

RUN_TESTS(TEST(test_fields), TEST(test_describe));
