/* SPDX-License-Identifier: MIT */

/*
 * [Trigger:NAME] sections: every type parses and resolves (system calls,
 * signals, Function= in Binary= through libelf); every kind of mistake is
 * a message naming file:line while the other triggers still load.
 */

#include <signal.h>
#include <sys/syscall.h>

#include "common/basic/fileio.h"
#include "daemon/manager/config.h"
#include "daemon/trigger/config.h"
#include "daemon/trigger/elf.h"
#include "test.h"

/* A function for Function= to find in this very executable. */
__attribute__((noinline, used)) int test_trigger_config_probe_me(int x);
__attribute__((noinline, used)) int test_trigger_config_probe_me(int x) {
        return x * 3 + 1;
}

static char self[4096];

static void load_self(void) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        ASSERT_TRUE(n > 0);
        self[n] = 0;
}

typedef struct Parsed {
        PtracedConfig config;
        char **warnings;
        char *error;
} Parsed;

static void parsed_done(Parsed *p) {
        ptraced_config_done(&p->config);
        strv_free(p->warnings);
        free(p->error);
}

static int parse(const char *text, Parsed *p) {
        int r;

        *p = (Parsed){};
        ptraced_config_init(&p->config);
        r = config_parse_text(ptraced_config_items, ptraced_config_templates, "t.conf", text, &p->config,
                              &p->warnings, &p->error);
        if (r < 0)
                return r;
        return trigger_config_check_all(p->config.trigger_list, &p->warnings);
}

static TriggerConfig *find(Parsed *p, const char *name) {
        for (TriggerConfig *t = p->config.trigger_list; t; t = t->next)
                if (streq(t->name, name))
                        return t;
        test_fail("no trigger %s", name);
}

static void test_good(void) {
        _cleanup_free_ char *text = NULL;
        Parsed p;
        TriggerConfig *t;

        ASSERT_TRUE(asprintf(&text,
                             "[Trigger:runq]\n"
                             "Type=sched-latency\n"
                             "Threshold=5ms\n"
                             "Comm=nginx postgres\n"
                             "PID=1 42\n"
                             "Cgroup=/system.slice/nginx.service\n"
                             "MinIntervalSec=30s\n"
                             "MaxPerHour=4\n"
                             "MaxDumpCPUPercent=0.5\n"
                             "[Trigger:io]\n"
                             "Type=syscall-latency\n"
                             "Threshold=100ms\n"
                             "Syscall=read nanosleep fsync\n"
                             "[Trigger:slowcall]\n"
                             "Type=function-latency\n"
                             "Threshold=1ms\n"
                             "Binary=%s\n"
                             "Function=test_trigger_config_probe_me\n"
                             "[Trigger:hit]\n"
                             "Type=function-hit\n"
                             "Binary=%s\n"
                             "Function=test_trigger_config_probe_me\n"
                             "MaxDumpCPUPercent=2%%\n"
                             "[Trigger:hang]\n"
                             "Type=offcpu\n"
                             "Threshold=10s\n"
                             "State=uninterruptible\n"
                             "ThreadComm=kworker/0:1 jbd2/sda1-8\n"
                             "[Trigger:segv]\n"
                             "Type=crash\n"
                             "[Trigger:abort-too]\n"
                             "Type=crash\n"
                             "Signals=SIGABRT segv 7\n"
                             "IncludeHandled=yes\n"
                             "[Trigger:units]\n"
                             "Type=unit\n"
                             "Units=myapp.service *.mount\n"
                             "Result=watchdog core-dump\n",
                             self, self) > 0);
        ASSERT_OK(parse(text, &p));
        for (char **w = p.warnings; w && *w; w++)
                fprintf(stderr, "unexpected warning: %s\n", *w);
        ASSERT_EQ(strv_length(p.warnings), 0);

        t = find(&p, "runq");
        ASSERT_NULL(t->error);
        ASSERT_EQ(t->type, TRIGGER_TYPE_SCHED_LATENCY);
        ASSERT_EQ(t->threshold, 5000);
        ASSERT_EQ(strv_length(t->comms), 2);
        ASSERT_NULL(t->thread_comms);
        ASSERT_EQ(t->n_pids, 2);
        ASSERT_EQ(t->pids[1], 42);
        ASSERT_STREQ(t->cgroup, "/system.slice/nginx.service");
        ASSERT_EQ(t->min_interval, 30 * USEC_PER_SEC);
        ASSERT_EQ(t->max_per_hour, 4);
        ASSERT_EQ(t->max_dump_cpu, 50);
        ASSERT_STREQ(t->file, "t.conf");
        ASSERT_EQ(t->line, 1);

        t = find(&p, "io");
        ASSERT_NULL(t->error);
        ASSERT_TRUE(t->syscall_mask[SYS_read / 64] & (UINT64_C(1) << (SYS_read % 64)));
        ASSERT_TRUE(t->syscall_mask[SYS_nanosleep / 64] & (UINT64_C(1) << (SYS_nanosleep % 64)));
        ASSERT_TRUE(t->syscall_mask[SYS_fsync / 64] & (UINT64_C(1) << (SYS_fsync % 64)));
        ASSERT_FALSE(t->syscall_mask[SYS_write / 64] & (UINT64_C(1) << (SYS_write % 64)));
        /* Defaults. */
        ASSERT_EQ(t->min_interval, TRIGGER_MIN_INTERVAL_DEFAULT);
        ASSERT_EQ(t->max_per_hour, TRIGGER_MAX_PER_HOUR_DEFAULT);
        ASSERT_EQ(t->max_dump_cpu, TRIGGER_MAX_DUMP_CPU_DEFAULT);

        t = find(&p, "slowcall");
        ASSERT_NULL(t->error);
        /* The runtime address is the symbol's plus the load bias, a whole
         * number of pages. */
        ASSERT_EQ(((uint64_t) (uintptr_t) test_trigger_config_probe_me - t->function_address) % 4096, 0);
        ASSERT_TRUE(t->function_offset > 0);
        ASSERT_EQ(find(&p, "hit")->max_dump_cpu, 200);

        t = find(&p, "hang");
        ASSERT_EQ(t->offcpu_state, TRIGGER_OFFCPU_UNINTERRUPTIBLE);

        t = find(&p, "segv");
        ASSERT_EQ(t->signal_mask, (UINT64_C(1) << SIGSEGV) | (UINT64_C(1) << SIGBUS) |
                                          (UINT64_C(1) << SIGILL) | (UINT64_C(1) << SIGFPE) |
                                          (UINT64_C(1) << SIGABRT));
        t = find(&p, "abort-too");
        ASSERT_EQ(t->signal_mask,
                  (UINT64_C(1) << SIGABRT) | (UINT64_C(1) << SIGSEGV) | (UINT64_C(1) << SIGBUS));
        ASSERT_TRUE(t->include_handled);

        t = find(&p, "units");
        ASSERT_EQ(strv_length(t->units), 2);
        ASSERT_EQ(strv_length(t->results), 2);

        /* The manager keeps a deep copy. */
        TriggerConfig *copy = NULL;
        ASSERT_OK(trigger_config_list_copy(p.config.trigger_list, &copy));
        parsed_done(&p);
        size_t n = 0;
        for (TriggerConfig *c = copy; c; c = c->next)
                n++;
        ASSERT_EQ(n, 8);
        ASSERT_STREQ(copy->name, "runq");
        ASSERT_STREQ(copy->cgroup, "/system.slice/nginx.service");
        ASSERT_STREQ(copy->where[TRIGGER_KEY_THRESHOLD].file, "t.conf");
        ASSERT_EQ(copy->where[TRIGGER_KEY_THRESHOLD].line, 3);
        trigger_config_list_free(copy);
}

/* Each mistake names its file:line and only its own trigger fails. */
static void test_errors(void) {
        _cleanup_free_ char *text = NULL;
        Parsed p;

        ASSERT_TRUE(asprintf(&text,
                             "[Trigger:good]\n"               /* 1 */
                             "Type=sched-latency\n"           /* 2 */
                             "Threshold=5ms\n"                /* 3 */
                             "[Trigger:telepathy]\n"          /* 4 */
                             "Type=telepathy\n"               /* 5 */
                             "[Trigger:nosym]\n"              /* 6 */
                             "Type=function-latency\n"        /* 7 */
                             "Threshold=1ms\n"                /* 8 */
                             "Binary=%s\n"                    /* 9 */
                             "Function=no_such_function_x\n"  /* 10 */
                             "[Trigger:badthreshold]\n"       /* 11 */
                             "Type=offcpu\n"                  /* 12 */
                             "Threshold=fast\n"               /* 13 */
                             "[Trigger:zero]\n"               /* 14 */
                             "Type=offcpu\n"                  /* 15 */
                             "Threshold=0\n"                  /* 16 */
                             "[Trigger:nothreshold]\n"        /* 17 */
                             "Type=syscall-latency\n"         /* 18 */
                             "Syscall=read\n"                 /* 19 */
                             "[Trigger:notype]\n"             /* 20 */
                             "Threshold=1s\n"                 /* 21 */
                             "[Trigger:wrongkey]\n"           /* 22 */
                             "Type=sched-latency\n"           /* 23 */
                             "Threshold=1ms\n"                /* 24 */
                             "Binary=/bin/true\n"             /* 25 */
                             "[Trigger:badsyscall]\n"         /* 26 */
                             "Type=syscall-latency\n"         /* 27 */
                             "Threshold=1ms\n"                /* 28 */
                             "Syscall=read frobnicate\n"      /* 29 */
                             "[Trigger:badsignal]\n"          /* 30 */
                             "Type=crash\n"                   /* 31 */
                             "Signals=SIGSEGV SIGWHAT\n"      /* 32 */
                             "[Trigger:longcomm]\n"           /* 33 */
                             "Type=crash\n"                   /* 34 */
                             "Comm=averyveryverylongname\n"   /* 35 */
                             "[Trigger:badpid]\n"             /* 36 */
                             "Type=crash\n"                   /* 37 */
                             "PID=12 twelve\n"                /* 38 */
                             "[Trigger:percent]\n"            /* 39 */
                             "Type=crash\n"                   /* 40 */
                             "MaxDumpCPUPercent=150\n"        /* 41 */
                             "[Trigger:nobinary]\n"           /* 42 */
                             "Type=function-hit\n"            /* 43 */
                             "Binary=/nonexistent/x\n"        /* 44 */
                             "Function=main\n"                /* 45 */
                             "[Trigger:unknownkey]\n"         /* 46 */
                             "Type=crash\n"                   /* 47 */
                             "Treshold=1ms\n"                 /* 48 */
                             "[Trigger:bad name]\n"           /* 49 */
                             "Type=crash\n"                   /* 50 */
                             "[Trigger:nounits]\n"            /* 51 */
                             "Type=unit\n"                    /* 52 */
                             "[Trigger:badresult]\n"          /* 53 */
                             "Type=unit\n"                    /* 54 */
                             "Units=*.service\n"              /* 55 */
                             "Result=success\n"               /* 56 */
                             "[Trigger:second]\n"             /* 57 */
                             "Type=crash\n",                  /* 58 */
                             self) > 0);
        ASSERT_OK(parse(text, &p));
        for (char **w = p.warnings; w && *w; w++)
                printf("warning: %s\n", *w);

        static const struct {
                const char *name;
                const char *message;
        } expect[] = {
                { "telepathy", "t.conf:5: invalid value in Type=telepathy: expected one of: sched-latency" },
                { "nosym", "t.conf:10: [Trigger:nosym] Function=no_such_function_x: no function "
                           "'no_such_function_x' in " },
                { "badthreshold",
                  "t.conf:13: invalid value in Threshold=fast: expected a duration above 0" },
                { "zero", "t.conf:16: invalid value in Threshold=0" },
                { "nothreshold", "t.conf:18: [Trigger:nothreshold] Type=syscall-latency needs Threshold=" },
                { "notype", "t.conf:20: [Trigger:notype] has no Type=" },
                { "wrongkey", "t.conf:25: [Trigger:wrongkey] Binary= does not apply to Type=sched-latency" },
                { "badsyscall", "t.conf:29: [Trigger:badsyscall] Syscall=frobnicate: unknown system call" },
                { "badsignal", "t.conf:32: [Trigger:badsignal] Signals=SIGWHAT: unknown signal" },
                { "longcomm",
                  "t.conf:35: invalid value in Comm=averyveryverylongname: expected command names of "
                  "at most 15 characters" },
                { "badpid", "t.conf:38: [Trigger:badpid] PID=twelve: not a process id" },
                { "percent", "t.conf:41: invalid value in MaxDumpCPUPercent=150" },
                { "nobinary",
                  "t.conf:44: [Trigger:nobinary] Binary=/nonexistent/x: cannot open /nonexistent/x: No "
                  "such file or directory" },
                { "unknownkey",
                  "t.conf:48: unknown key 'Treshold' in section [Trigger:unknownkey]: valid keys are "
                  "Type=, Threshold=" },
                { "nounits", "t.conf:52: [Trigger:nounits] Type=unit needs Units=" },
                { "badresult", "t.conf:56: [Trigger:badresult] Result=success: not a failed unit's result" },
        };

        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                TriggerConfig *t = find(&p, expect[i].name);
                bool warned = false;

                ASSERT_NOT_NULL(t->error);
                ASSERT_CONTAINS(t->error, expect[i].message);
                for (char **w = p.warnings; w && *w; w++)
                        if (strstr(*w, expect[i].message))
                                warned = true;
                ASSERT_TRUE(warned);
        }
        /* The bad name is refused with the section, and nothing else. */
        bool bad_name = false;
        for (char **w = p.warnings; w && *w; w++)
                if (strstr(*w, "t.conf:49: [Trigger:bad name]: trigger names are"))
                        bad_name = true;
        ASSERT_TRUE(bad_name);
        ASSERT_EQ(strv_length(p.warnings), ELEMENTSOF(expect) + 1);

        /* The good ones load. */
        ASSERT_NULL(find(&p, "good")->error);
        ASSERT_NULL(find(&p, "second")->error);
        parsed_done(&p);
}

/* Drop-ins add to a trigger of the same name; messages name their file. */
static void test_files(void) {
        char dir[] = "/tmp/test-trigger-config-XXXXXX", path[256], dropin[512];
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        PtracedConfig c;
        TriggerConfig *t;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/ptraced.conf", dir);
        ASSERT_OK(write_string_file(path, "[Trigger:a]\nType=sched-latency\nThreshold=5ms\n"
                                          "[Trigger:b]\nType=offcpu\nThreshold=1s\n"));
        snprintf(dropin, sizeof dropin, "%s.d", path);
        ASSERT_OK(mkdir_p(dropin, 0755));
        snprintf(dropin, sizeof dropin, "%s.d/10-more.conf", path);
        ASSERT_OK(write_string_file(dropin, "[Trigger:a]\nThreshold=20ms\n\n[Trigger:b]\nState=sleepy\n"));

        ptraced_config_init(&c);
        ASSERT_OK(ptraced_config_load(&c, path, &warnings, &error));
        ASSERT_NULL(error);
        ASSERT_EQ(strv_length(warnings), 1);
        ASSERT_CONTAINS(warnings[0], "10-more.conf:5: invalid value in State=sleepy: expected one of: any, "
                                     "uninterruptible");
        t = c.trigger_list;
        ASSERT_STREQ(t->name, "a");
        ASSERT_NULL(t->error);
        ASSERT_EQ(t->threshold, 20 * USEC_PER_MSEC);
        ASSERT_CONTAINS(t->where[TRIGGER_KEY_THRESHOLD].file, "10-more.conf");
        ASSERT_STREQ(t->next->name, "b");
        ASSERT_NOT_NULL(t->next->error);
        ptraced_config_done(&c);
        ASSERT_OK(rm_rf(dir));
}

static void test_lookups(void) {

        ASSERT_EQ(trigger_syscall_from_name("read"), SYS_read);
        ASSERT_EQ(trigger_syscall_from_name("nanosleep"), SYS_nanosleep);
        ASSERT_EQ(trigger_syscall_from_name("449"), 449);
        ASSERT_ERROR(trigger_syscall_from_name("nope"), ENOENT);
        ASSERT_STREQ(trigger_syscall_to_name(SYS_futex), "futex");
        ASSERT_EQ(trigger_signal_from_string("SIGSEGV"), SIGSEGV);
        ASSERT_EQ(trigger_signal_from_string("abrt"), SIGABRT);
        ASSERT_EQ(trigger_signal_from_string("7"), 7);
        ASSERT_ERROR(trigger_signal_from_string("SIGFOO"), ENOENT);
}

static void test_elf(void) {
        _cleanup_free_ char *error = NULL;
        TriggerElfSymbol s;

        ASSERT_OK(trigger_elf_find_function(self, "test_trigger_config_probe_me", &s, &error));
        ASSERT_TRUE(s.size > 0);
        ASSERT_TRUE(s.offset > 0);
        ASSERT_ERROR(trigger_elf_find_function(self, "nope_nothing_here", &s, &error), ESRCH);
        ASSERT_CONTAINS(error, "no function 'nope_nothing_here'");
        error = mfree(error);
        ASSERT_ERROR(trigger_elf_find_function("/proc/self/status", "x", &s, &error), EBADMSG);
        ASSERT_CONTAINS(error, "not an ELF file");
}

int main(int argc, char **argv) {
        static const TestCase tests[] = {
                TEST(test_good), TEST(test_errors), TEST(test_files), TEST(test_lookups), TEST(test_elf),
        };

        load_self();
        return test_run(tests, ELEMENTSOF(tests), argc, argv);
}
