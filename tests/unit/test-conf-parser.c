/* SPDX-License-Identifier: MIT */

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/basic/conf-parser.h"
#include "common/basic/fileio.h"
#include "test.h"

typedef struct Trig {
        char *name;
        int type;
        usec_t threshold;
        bool invalid;
        struct Trig *next;
} Trig;

typedef struct Conf {
        uint64_t buffer_size;
        usec_t lookback;
        bool compress;
        char *event;
        char **filters;
        int source;
        uint32_t mode;
        Trig *triggers;
} Conf;

static const char *const source_names[] = { "kernel", "sim", NULL };
static const char *const trig_types[] = { "sched-latency", "offcpu", NULL };

static void *trig_new(const char *name, const char *filename, unsigned line, void *userdata, char **ret_error) {
        Conf *c = userdata;
        Trig *t;

        if (strchr(name, ' ')) {
                *ret_error = strdup("trigger names may not contain spaces");
                return NULL;
        }
        for (t = c->triggers; t; t = t->next)
                if (streq(t->name, name))
                        return t;
        t = calloc(1, sizeof(*t));
        t->name = strdup(name);
        t->type = -1;
        t->next = c->triggers;
        c->triggers = t;
        return t;
}

static void trig_invalidate(void *object, const char *error, void *userdata) {
        ((Trig *) object)->invalid = true;
}

static const ConfigItem items[] = {
        { "Trace", "BufferSize", config_parse_size, offsetof(Conf, buffer_size) },
        { "Trace", "Lookback", config_parse_duration, offsetof(Conf, lookback) },
        { "Trace", "Event", config_parse_string, offsetof(Conf, event) },
        { "Trace", "Filter", config_parse_strv, offsetof(Conf, filters) },
        { "Trace", "Source", config_parse_enum, offsetof(Conf, source), source_names },
        { "Storage", "Compress", config_parse_bool, offsetof(Conf, compress) },
        { "Control", "SocketMode", config_parse_mode, offsetof(Conf, mode) },
        { "Trigger:", "Type", config_parse_enum, offsetof(Trig, type), trig_types },
        { "Trigger:", "Threshold", config_parse_duration, offsetof(Trig, threshold) },
        {},
};

static const ConfigSectionTemplate templates[] = {
        { "Trigger:", trig_new, trig_invalidate },
        {},
};

static void conf_done(Conf *c) {
        free(c->event);
        strv_free(c->filters);
        while (c->triggers) {
                Trig *n = c->triggers->next;
                free(c->triggers->name);
                free(c->triggers);
                c->triggers = n;
        }
}

static int parse(const char *text, Conf *c, char **err) {
        _cleanup_strv_free_ char **warnings = NULL;
        return config_parse_text(items, templates, "test.conf", text, c, &warnings, err);
}

static void test_good(void) {
        Conf c = {};
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(parse("# comment\n"
                        "[Trace]\n"
                        "BufferSize = 4M\n"
                        "Lookback=20ms\n"
                        "Event=intel_pt/tsc,mtc/u\n"
                        "Filter=a b\n"
                        "Filter=c\n"
                        "Source=sim\n"
                        "; another comment\n"
                        "[Storage]\n"
                        "Compress=no\n"
                        "[Control]\n"
                        "SocketMode=0660\n",
                        &c, &err));
        ASSERT_EQ(c.buffer_size, 4 << 20);
        ASSERT_EQ(c.lookback, 20000);
        ASSERT_STREQ(c.event, "intel_pt/tsc,mtc/u");
        ASSERT_EQ(strv_length(c.filters), 3);
        ASSERT_STREQ(c.filters[2], "c");
        ASSERT_EQ(c.source, 1);
        ASSERT_FALSE(c.compress);
        ASSERT_EQ(c.mode, 0660);

        /* Empty assignment resets a list; later assignment wins. */
        ASSERT_OK(parse("[Trace]\nFilter=\nFilter=x\nBufferSize=8M\n", &c, &err));
        ASSERT_EQ(strv_length(c.filters), 1);
        ASSERT_EQ(c.buffer_size, 8 << 20);

        /* Continuation lines. */
        ASSERT_OK(parse("[Trace]\nFilter=\nFilter=a \\\n  b\n", &c, &err));
        ASSERT_EQ(strv_length(c.filters), 2);
        conf_done(&c);
}

static void test_errors(void) {
        Conf c = {};
        char *err = NULL;

        ASSERT_ERROR(parse("[Trace]\nBufferSize=lots\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "test.conf:2:");
        ASSERT_CONTAINS(err, "BufferSize=lots");
        ASSERT_CONTAINS(err, "e.g. 4M");
        err = mfree(err);

        ASSERT_ERROR(parse("[Trace]\n\nBufferSiz=4M\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "test.conf:3: unknown key 'BufferSiz' in section [Trace]");
        ASSERT_CONTAINS(err, "BufferSize=");
        err = mfree(err);

        ASSERT_ERROR(parse("[Tracing]\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "unknown section [Tracing]");
        ASSERT_CONTAINS(err, "[Trace]");
        ASSERT_CONTAINS(err, "[Trigger:NAME]");
        err = mfree(err);

        ASSERT_ERROR(parse("BufferSize=4M\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "outside of a section");
        err = mfree(err);

        ASSERT_ERROR(parse("[Trace]\nBufferSize\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "expected Key=Value");
        err = mfree(err);

        ASSERT_ERROR(parse("[Trace]\nSource=hardware\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "one of: kernel, sim");
        err = mfree(err);

        ASSERT_ERROR(parse("[Control]\nSocketMode=999\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "octal");
        err = mfree(err);

        ASSERT_ERROR(parse("[Trace\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "invalid section header");
        err = mfree(err);
        conf_done(&c);
}

static void test_templates(void) {
        Conf c = {};
        _cleanup_strv_free_ char **warnings = NULL;
        char *err = NULL;

        /* A bad trigger is reported and marked invalid; the good one loads,
         * and the parse as a whole succeeds. */
        ASSERT_OK(config_parse_text(items, templates, "t.conf",
                                      "[Trigger:slow]\nType=sched-latency\nThreshold=5ms\n"
                                      "[Trigger:bad]\nType=telepathy\nThreshold=1ms\n"
                                      "[Trigger:]\nType=offcpu\n"
                                      "[Trigger:has space]\nType=offcpu\n"
                                      "[Trigger:slow]\nThreshold=6ms\n",
                                      &c, &warnings, &err));
        ASSERT_NULL(err);
        ASSERT_EQ(strv_length(warnings), 3);
        ASSERT_CONTAINS(warnings[0], "t.conf:5: invalid value in Type=telepathy");
        ASSERT_CONTAINS(warnings[1], "t.conf:7: section [Trigger:] needs a name");
        ASSERT_CONTAINS(warnings[2], "spaces");

        int n = 0;
        for (Trig *t = c.triggers; t; t = t->next) {
                n++;
                if (streq(t->name, "slow")) {
                        ASSERT_FALSE(t->invalid);
                        ASSERT_EQ(t->type, 0);
                        ASSERT_EQ(t->threshold, 6000);
                } else if (streq(t->name, "bad"))
                        ASSERT_TRUE(t->invalid);
        }
        ASSERT_EQ(n, 2);
        conf_done(&c);
}

static void test_files_and_dropins(void) {
        char dir[] = "/tmp/test-conf-XXXXXX";
        char path[256], d1[300], d2[300], f[400];
        _cleanup_strv_free_ char **files = NULL;
        Conf c = {};
        char *err = NULL;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/ptraced.conf", dir);
        ASSERT_OK(write_string_file(path, "[Trace]\nBufferSize=1M\nLookback=1s\n"));

        /* Own drop-in dir <file>.d, sorted by name. */
        snprintf(d1, sizeof d1, "%s.d", path);
        ASSERT_OK(mkdir_p(d1, 0755));
        snprintf(f, sizeof f, "%s/20-b.conf", d1);
        ASSERT_OK(write_string_file(f, "[Trace]\nBufferSize=4M\n"));
        snprintf(f, sizeof f, "%s/10-a.conf", d1);
        ASSERT_OK(write_string_file(f, "[Trace]\nBufferSize=2M\nLookback=7ms\n"));
        snprintf(f, sizeof f, "%s/ignored.txt", d1);
        ASSERT_OK(write_string_file(f, "garbage"));

        ASSERT_OK(config_files_list(path, NULL, &files));
        ASSERT_EQ(strv_length(files), 3);
        ASSERT_OK(config_parse_files(items, templates, files, &c, NULL, &err));
        ASSERT_EQ(c.buffer_size, 4 << 20);
        ASSERT_EQ(c.lookback, 7000);
        strv_free(files);
        files = NULL;

        /* Explicit directories: a drop-in in an earlier directory masks the
         * same name in a later one. */
        snprintf(d2, sizeof d2, "%s/usr.d", dir);
        ASSERT_OK(mkdir_p(d2, 0755));
        snprintf(f, sizeof f, "%s/20-b.conf", d2);
        ASSERT_OK(write_string_file(f, "[Trace]\nBufferSize=64M\n"));
        snprintf(f, sizeof f, "%s/30-c.conf", d2);
        ASSERT_OK(write_string_file(f, "[Trace]\nLookback=9ms\n"));
        const char *dirs[] = { d1, d2, NULL };
        ASSERT_OK(config_files_list(path, dirs, &files));
        ASSERT_EQ(strv_length(files), 4);
        ASSERT_OK(config_parse_files(items, templates, files, &c, NULL, &err));
        ASSERT_EQ(c.buffer_size, 4 << 20);
        ASSERT_EQ(c.lookback, 9000);

        /* Errors in drop-ins name the drop-in. */
        snprintf(f, sizeof f, "%s/40-bad.conf", d2);
        ASSERT_OK(write_string_file(f, "[Trace]\n\nCompress=yes\n"));
        strv_free(files);
        files = NULL;
        ASSERT_OK(config_files_list(path, dirs, &files));
        ASSERT_ERROR(config_parse_files(items, templates, files, &c, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "40-bad.conf:3: unknown key 'Compress'");
        free(err);
        conf_done(&c);

        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ASSERT_EQ(system(cmd), 0);
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void on_alarm(int sig) {
        static const char m[] = "FAIL: opening the configuration hung (a FIFO?)\n";
        (void) !write(STDERR_FILENO, m, sizeof m - 1);
        _exit(1);
}

/* Issue 17: a FIFO as --config hung in open() (with SIGTERM blocked in
 * ptraced); a directory or a device is no configuration either. */
static void test_not_regular(void) {
        char dir[] = "/tmp/test-conf-XXXXXX", fifo[300];
        char *files[] = { fifo, NULL };
        Conf c = {};
        char *err = NULL;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(fifo, sizeof fifo, "%s/fifo.conf", dir);
        ASSERT_EQ(mkfifo(fifo, 0600), 0);
        signal(SIGALRM, on_alarm);
        alarm(10);
        ASSERT_ERROR(config_parse_files(items, templates, files, &c, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "fifo.conf: not a regular file (a FIFO, socket or device)");
        err = mfree(err);
        files[0] = "/dev/null";
        ASSERT_ERROR(config_parse_files(items, templates, files, &c, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "not a regular file");
        err = mfree(err);
        files[0] = dir;
        ASSERT_ERROR(config_parse_files(items, templates, files, &c, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "not a regular file (a directory)");
        err = mfree(err);
        alarm(0);
        unlink(fifo);
        rmdir(dir);
        conf_done(&c);
}

/* Issue 17: 80,000 continued lines took 4.7 s (each step copied the whole
 * line so far). Now each byte is copied once and a logical line is bounded
 * like a physical one. */
static void test_continuations(void) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        const size_t n = 80000;
        size_t o = 0;
        Conf c = {};
        double t0, dt;

        text = malloc(64 + n * 8);
        ASSERT_NOT_NULL(text);
        o += (size_t) sprintf(text + o, "[Trace]\nFilter=");
        for (size_t i = 0; i < n; i++)
                o += (size_t) sprintf(text + o, "x%zu\\\n", i % 10);
        o += (size_t) sprintf(text + o, "end\n");
        t0 = now_s();
        ASSERT_ERROR(parse(text, &c, &err), EINVAL);
        dt = now_s() - t0;
        printf("  %zu continued lines (%zu bytes): refused in %.3f s\n", n, o, dt);
        ASSERT_CONTAINS(err, "line longer than 65536 bytes (continuations included)");
        ASSERT_TRUE(dt < 0.5);
        err = mfree(err);

        /* Up to the bound they join, and fast: 20,000 lines of 3 bytes. */
        o = (size_t) sprintf(text, "[Trace]\nEvent=");
        for (size_t i = 0; i < 20000; i++)
                o += (size_t) sprintf(text + o, "a%zu\\\n", i % 10);
        o += (size_t) sprintf(text + o, "end\n");
        t0 = now_s();
        ASSERT_OK(parse(text, &c, &err));
        dt = now_s() - t0;
        printf("  20000 continued lines joined in %.3f s\n", dt);
        ASSERT_EQ(strlen(c.event), 20000 * 3 + 3);
        ASSERT_TRUE(startswith(c.event, "a0 a1 a2 "));
        ASSERT_STREQ(c.event + strlen(c.event) - 6, "a9 end");
        ASSERT_TRUE(dt < 0.5);
        conf_done(&c);
}

/* Issue 17: binary garbage in a config was echoed raw to the terminal. */
static void test_escaped(void) {
        Conf c = {};
        char *err = NULL;

        ASSERT_ERROR(parse("[Trace]\nBuffer\x1b[31mSize\x07=4M\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "unknown key 'Buffer\\x1b[31mSize\\x07'");
        ASSERT_NULL(strchr(err, '\x1b'));
        err = mfree(err);
        ASSERT_ERROR(parse("[Tr\xff\xfe]\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "unknown section [Tr\\xff\\xfe]");
        err = mfree(err);
        ASSERT_ERROR(parse("[Trace]\nBufferSize=\x1b]0;owned\x07\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "BufferSize=\\x1b]0;owned\\x07: expected a size");
        err = mfree(err);
        /* Printable UTF-8 stays as it is. */
        ASSERT_ERROR(parse("[Trace]\nGröße=1\n", &c, &err), EINVAL);
        ASSERT_CONTAINS(err, "unknown key 'Größe'");
        err = mfree(err);
        conf_done(&c);
}

RUN_TESTS(TEST(test_good), TEST(test_errors), TEST(test_templates), TEST(test_files_and_dropins),
          TEST(test_not_regular), TEST(test_continuations), TEST(test_escaped));
