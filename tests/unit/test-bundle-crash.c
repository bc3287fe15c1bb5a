/* SPDX-License-Identifier: MIT */

/*
 * Crash safety of the writer: a child process writes bundles in a loop and
 * is killed with SIGKILL at a random moment, 200 times (half with
 * O_TMPFILE, half with hidden named temporaries). While it runs and after
 * each kill, every visible bundle must be complete (opens, every hash
 * verifies); after bundle_dir_remove_leftovers(), which is what the daemon
 * runs at start, no temporary may remain.
 */

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "common/bundle/vacuum.h"
#include "bundle-test-util.h"

#define KILLS 200
#define MEMBER_SIZE (384 * 1024)

static _noreturn_ void writer_child(const char *dir, bool use_tmpfile, unsigned round) {
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        static uint8_t a[MEMBER_SIZE], b[MEMBER_SIZE];

        o.use_tmpfile = use_tmpfile;
        fill_pattern(a, sizeof a, round);
        fill_random(b, sizeof b, round);
        for (unsigned k = 0;; k++) {
                _cleanup_(bundle_manifest_freep) BundleManifest *m = make_test_manifest(2, MEMBER_SIZE);
                _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
                char name[64];

                free(m->kernel.kallsyms_member);
                m->kernel.kallsyms_member = NULL;
                snprintf(name, sizeof name, "r%u-%u.tar", round, k);
                if (bundle_writer_new(dir, name, &o, &w, NULL) < 0 ||
                    bundle_writer_add_member(w, "cpu0.pt", a, sizeof a, 0, NULL) < 0 ||
                    bundle_writer_add_member(w, "cpu1.pt", b, sizeof b, 0, NULL) < 0 ||
                    bundle_writer_add_member(w, "sideband.perf", b, 4096, 0, NULL) < 0 ||
                    bundle_writer_finish(w, m, NULL, NULL) < 0)
                        _exit(3);
        }
}

typedef struct Seen {
        unsigned bundles, temporaries;
} Seen;

/* Every visible bundle must be whole; count hidden temporaries. With
 * remove_verified, delete verified bundles to keep the directory small. */
static Seen check_dir(const char *dir, bool remove_verified) {
        DIR *d = opendir(dir);
        struct dirent *de;
        Seen s = {};

        ASSERT_NOT_NULL(d);
        while ((de = readdir(d))) {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *path = NULL, *error = NULL;
                int k;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (startswith(de->d_name, ".#")) {
                        s.temporaries++;
                        continue;
                }
                ASSERT_TRUE(bundle_file_name_is_bundle(de->d_name));
                ASSERT_TRUE(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
                k = bundle_reader_open(path, NULL, &r, &error);
                if (k == -ENOENT) /* removed by an earlier pass of ours */
                        continue;
                if (k < 0)
                        test_fail("visible bundle %s is not complete: %s", de->d_name, strna(error));
                ASSERT_OK(bundle_reader_verify(r, &error));
                s.bundles++;
                if (remove_verified)
                        ASSERT_OK(unlink(path));
        }
        closedir(d);
        return s;
}

static void test_kill_writer(void) {
        _cleanup_free_ char *dir = make_scratch_dir("crash");
        unsigned bundles = 0, leftovers = 0;
        struct timespec start, end;

        srand((unsigned) time(NULL));
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (unsigned i = 0; i < KILLS; i++) {
                bool tmpfile = i % 2 == 0;
                unsigned removed = 0;
                pid_t pid;
                int status;
                Seen s;

                pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0)
                        writer_child(dir, tmpfile, i);

                /* Look while it writes: nothing partial may ever show. */
                usleep((useconds_t) (rand() % 8000));
                s = check_dir(dir, false);
                usleep((useconds_t) (rand() % 12000));
                ASSERT_OK(kill(pid, SIGKILL));
                ASSERT_EQ(waitpid(pid, &status, 0), pid);
                ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

                s = check_dir(dir, true);
                bundles += s.bundles;
                /* O_TMPFILE never leaves anything behind. */
                if (tmpfile)
                        ASSERT_EQ(s.temporaries, 0);
                /* What the daemon does at start. */
                ASSERT_OK(bundle_dir_remove_leftovers(dir, &removed));
                ASSERT_EQ(removed, s.temporaries);
                leftovers += removed;
                s = check_dir(dir, true);
                ASSERT_EQ(s.temporaries, 0);
        }
        clock_gettime(CLOCK_MONOTONIC, &end);
        printf("  %d kills: %u complete bundles verified, %u leftover temporaries removed, %.1f s\n", KILLS, bundles,
               leftovers, (double) (end.tv_sec - start.tv_sec) + (double) (end.tv_nsec - start.tv_nsec) / 1e9);
        /* The kills must have landed both between and inside bundles. */
        ASSERT_TRUE(bundles > 0);
        ASSERT_TRUE(leftovers > 0);
        rm_rf(dir);
}

RUN_TESTS(TEST(test_kill_writer));
