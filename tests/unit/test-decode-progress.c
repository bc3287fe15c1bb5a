/* SPDX-License-Identifier: MIT */

/* The decode's progress bar on a terminal (a pty as standard error): it
 * shows from one second after the start even while no segment finishes
 * (issue 18: it first showed at 9 s), and not before; the workers' counts
 * are drawn; done clears the line. */

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "client/decode/progress.h"
#include "common/basic/time-util.h"
#include "test.h"

static size_t drain(int master, char *buf, size_t size) {
        size_t n = 0;
        ssize_t k;

        while (n + 1 < size && (k = read(master, buf + n, size - 1 - n)) > 0)
                n += (size_t) k;
        buf[n] = 0;
        return n;
}

static void test_shows_from_one_second(void) {
        char buf[8192];
        DecodeProgress p;
        int master, slave, saved;

        master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0)
                test_skip("no pseudo-terminal here (posix_openpt failed)");
        ASSERT_EQ(grantpt(master), 0);
        ASSERT_EQ(unlockpt(master), 0);
        slave = open(ptsname(master), O_RDWR | O_NOCTTY);
        ASSERT_TRUE(slave >= 0);
        ASSERT_EQ(fcntl(master, F_SETFL, O_NONBLOCK), 0);
        saved = dup(STDERR_FILENO);
        ASSERT_TRUE(dup2(slave, STDERR_FILENO) >= 0);

        decode_progress_init(&p, -1, 1000);
        usleep(300 * 1000);
        decode_progress_update(&p, 250); /* a worker finished a segment */
        usleep(300 * 1000);
        size_t early = drain(master, buf, sizeof buf);
        usleep(900 * 1000); /* 1.5 s in: drawn, though nothing else finished */
        size_t later = drain(master, buf, sizeof buf);
        decode_progress_done(&p);
        char end[256];
        drain(master, end, sizeof end);

        ASSERT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        close(slave);
        close(master);

        ASSERT_EQ(early, (size_t) 0);
        ASSERT_TRUE(later > 0);
        ASSERT_CONTAINS(buf, "decoding [");
        ASSERT_CONTAINS(buf, " 25% ");
        ASSERT_CONTAINS(end, "\033[K");
}

/* Not a terminal, not asked: nothing, and no thread to stop. */
static void test_off(void) {
        DecodeProgress p;

        decode_progress_init(&p, 0, 1000);
        ASSERT_FALSE(p.enabled);
        decode_progress_update(&p, 10);
        decode_progress_done(&p);
        decode_progress_done(&p);
}

RUN_TESTS(TEST(test_shows_from_one_second), TEST(test_off));
