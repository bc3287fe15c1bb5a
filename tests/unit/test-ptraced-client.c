/* SPDX-License-Identifier: MIT */

/*
 * libptraced-client against a stand-in server on a Unix socket: the calls
 * are well-formed oneway varlink calls; a missing daemon costs a failed
 * call and no waiting; a daemon that does not read never stalls the caller
 * beyond the stated bound; a restarted daemon gets the next call; a forked
 * child uses its own connection; bad arguments are refused before anything
 * is sent.
 */

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common/basic/fileio.h"
#include "common/basic/time-util.h"
#include "common/control/varlink.h"
#include "ptraced-client.h"
#include "test.h"

static char dir[] = "/tmp/test-ptraced-client-XXXXXX";
static char sock_path[128];

static int listen_here(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        (void) unlink(sock_path);
        strcpy(sa.sun_path, sock_path);
        ASSERT_EQ(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        ASSERT_EQ(listen(fd, 8), 0);
        return fd;
}

/* Read one NUL-terminated message and parse it as a call. */
static void read_call(int fd, VarlinkCall *ret) {
        _cleanup_free_ char *error = NULL;
        VarlinkBuffer b;
        const char *msg;
        size_t size;
        int k;

        varlink_buffer_init(&b, VARLINK_CALL_MAX);
        for (;;) {
                k = varlink_buffer_next(&b, &msg, &size);
                ASSERT_OK(k);
                if (k > 0)
                        break;
                ASSERT_TRUE(varlink_buffer_read(&b, fd) > 0);
        }
        ASSERT_OK(varlink_call_parse(msg, size, ret, &error));
        varlink_buffer_done(&b);
}

static const char *param(const VarlinkCall *c, const char *key) {
        struct json_object *v;
        ASSERT_TRUE(json_object_object_get_ex(c->parameters, key, &v));
        return json_object_get_string(v);
}

static void test_messages(void) {
        _cleanup_close_ int l = listen_here(), s = -EBADF;
        VarlinkCall c = {};

        ptraced_client_close();
        ASSERT_OK(ptraced_trigger("slow request \"x\" \\ étape 2"));
        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        ASSERT_TRUE(s >= 0);
        read_call(s, &c);
        ASSERT_STREQ(c.method, "io.ptraced.Snapshot");
        ASSERT_TRUE(c.flags & VARLINK_CALL_ONEWAY);
        ASSERT_STREQ(param(&c, "reason"), "slow request \"x\" \\ étape 2");
        varlink_call_done(&c);

        /* The connection is kept. */
        ASSERT_OK(ptraced_watchdog_ping("frame-loop", 250000));
        read_call(s, &c);
        ASSERT_STREQ(c.method, "io.ptraced.Watchdog");
        ASSERT_TRUE(c.flags & VARLINK_CALL_ONEWAY);
        ASSERT_STREQ(param(&c, "name"), "frame-loop");
        ASSERT_STREQ(param(&c, "timeout_usec"), "250000");
        varlink_call_done(&c);

        ASSERT_OK(ptraced_watchdog_remove("frame-loop"));
        read_call(s, &c);
        ASSERT_STREQ(c.method, "io.ptraced.WatchdogRemove");
        ASSERT_STREQ(param(&c, "name"), "frame-loop");
        varlink_call_done(&c);
        ptraced_client_close();
}

static void test_invalid(void) {
        char long_reason[300];

        memset(long_reason, 'x', sizeof long_reason - 1);
        long_reason[sizeof long_reason - 1] = 0;
        ASSERT_ERROR(ptraced_trigger(NULL), EINVAL);
        ASSERT_ERROR(ptraced_trigger(""), EINVAL);
        ASSERT_ERROR(ptraced_trigger(long_reason), EINVAL);
        ASSERT_ERROR(ptraced_trigger("line\nbreak"), EINVAL);
        ASSERT_ERROR(ptraced_trigger("bad \xff utf-8"), EINVAL);
        ASSERT_ERROR(ptraced_watchdog_ping("has space", 100000), EINVAL);
        ASSERT_ERROR(ptraced_watchdog_ping("ok", 1000), EINVAL);
        ASSERT_ERROR(ptraced_watchdog_ping("ok", 25ULL * 3600 * 1000000), EINVAL);
        ASSERT_ERROR(ptraced_watchdog_remove(""), EINVAL);
        long_reason[256] = 0; /* 256 bytes is the limit, and fine */
        ASSERT_ERROR(ptraced_trigger(long_reason), ENOTCONN);
}

/* No daemon: a failed call at once, and no new attempt for 100 ms. */
static void test_daemon_down(void) {
        nsec_t t0, worst = 0;

        (void) unlink(sock_path);
        ptraced_client_close();
        for (int i = 0; i < 10000; i++) {
                t0 = now_nsec(CLOCK_MONOTONIC);
                ASSERT_ERROR(ptraced_trigger("nobody listens"), ENOTCONN);
                worst = MAX(worst, now_nsec(CLOCK_MONOTONIC) - t0);
        }
        printf("daemon down: slowest of 10000 calls %" PRIu64 " us\n", worst / 1000);
        /* Not waiting for anything: a slow call here is this machine being
         * busy (being preempted), not the library blocking. */
        ASSERT_TRUE(worst < 50 * NSEC_PER_MSEC);

        /* It comes up: the next call after the back-off connects. */
        _cleanup_close_ int l = listen_here(), s = -EBADF;
        VarlinkCall c = {};
        usleep(110 * 1000);
        ASSERT_OK(ptraced_trigger("up again"));
        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        read_call(s, &c);
        ASSERT_STREQ(param(&c, "reason"), "up again");
        varlink_call_done(&c);

        /* It restarts: the old connection is dead, the call goes to the new
         * one without waiting for the back-off. */
        s = safe_close(s);
        l = safe_close(l);
        l = listen_here();
        ASSERT_OK(ptraced_trigger("after restart"));
        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        ASSERT_TRUE(s >= 0);
        read_call(s, &c);
        ASSERT_STREQ(param(&c, "reason"), "after restart");
        varlink_call_done(&c);
        ptraced_client_close();
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* A daemon that stops reading: calls drop messages (-EAGAIN) and never
 * block. */
static void test_stalled_daemon(void) {
        _cleanup_close_ int l = listen_here(), s = -EBADF;
        nsec_t t0, d, worst = 0;
        uint64_t *lat = calloc(100000, sizeof(uint64_t));
        unsigned sent = 0, dropped = 0;

        ptraced_client_close();
        for (int i = 0; i < 100000; i++) {
                int k;
                t0 = now_nsec(CLOCK_MONOTONIC);
                k = ptraced_trigger("flood of requests that nobody reads");
                d = now_nsec(CLOCK_MONOTONIC) - t0;
                lat[i] = d;
                worst = MAX(worst, d);
                if (k == 0)
                        sent++;
                else {
                        ASSERT_EQ(k, -EAGAIN);
                        dropped++;
                }
                if (i == 0) {
                        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
                        ASSERT_TRUE(s >= 0);
                }
        }
        qsort(lat, 100000, sizeof(uint64_t), cmp_u64);
        printf("stalled daemon: %u sent, %u dropped; per call p50 %.1f us, p99 %.1f us, max %.1f us\n", sent,
               dropped, lat[50000] / 1e3, lat[99000] / 1e3, worst / 1e3);
        ASSERT_TRUE(sent > 0);
        ASSERT_TRUE(dropped > 0);
        ASSERT_TRUE(lat[99000] < 100 * NSEC_PER_USEC);
        ASSERT_TRUE(worst < 50 * NSEC_PER_MSEC);
        free(lat);
        ptraced_client_close();
}

/* A forked child has a connection of its own. */
static void test_fork(void) {
        _cleanup_close_ int l = listen_here(), s1 = -EBADF, s2 = -EBADF;
        VarlinkCall c = {};
        pid_t pid;
        int status;

        ptraced_client_close();
        ASSERT_OK(ptraced_trigger("parent"));
        s1 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        read_call(s1, &c);
        varlink_call_done(&c);

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                _exit(ptraced_trigger("child") == 0 ? 0 : 1);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        s2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        ASSERT_TRUE(s2 >= 0);
        read_call(s2, &c);
        ASSERT_STREQ(param(&c, "reason"), "child");
        varlink_call_done(&c);

        /* The parent's connection still carries only the parent's calls. */
        ASSERT_OK(ptraced_trigger("parent again"));
        read_call(s1, &c);
        ASSERT_STREQ(param(&c, "reason"), "parent again");
        varlink_call_done(&c);
        ptraced_client_close();
}

int main(int argc, char **argv) {
        static const TestCase tests[] = {
                TEST(test_messages),       TEST(test_invalid), TEST(test_daemon_down),
                TEST(test_stalled_daemon), TEST(test_fork),
        };
        int r;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(sock_path, sizeof sock_path, "%s/io.ptraced", dir);
        ASSERT_EQ(setenv("PTRACED_SOCKET", sock_path, 1), 0);
        /* No SIGPIPE handling here: the library never raises it. */
        r = test_run(tests, ELEMENTSOF(tests), argc, argv);
        (void) rm_rf(dir);
        return r;
}
