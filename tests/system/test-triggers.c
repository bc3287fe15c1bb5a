/* SPDX-License-Identifier: MIT */

/*
 * The automatic triggers end to end with real BPF on this kernel and the
 * emulated PMU, in process as tests/unit/test-manager.c runs the manager:
 * a child process does the slow thing (a function that sometimes sleeps, a
 * wakeup behind a real-time CPU hog, a slow read on a pipe, a blocked
 * thread, a NULL dereference, a storm of function hits); the manager's
 * event loop runs here; the bundles written are read back and their
 * trigger details checked. Heartbeat watchdogs and a bad [Trigger:NAME]
 * next to good ones are checked too.
 *
 * Needs root and a kernel with BTF, BPF ring buffers and uprobes; each
 * test skips (77) saying what is missing.
 */

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/bundle/bundle.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/manager.h"
#include "daemon/trigger/bpf.h"
#include "daemon/trigger/set.h"
#include "ptraced-client.h"
#include "sim-test-source.h"
#include "test.h"

#define N_CPUS 2

static char self[4096];

/* Probed by the function triggers (uprobes on this executable). */
__attribute__((noinline, used)) void pttest_work(unsigned ms);
__attribute__((noinline, used)) void pttest_work(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        (void) nanosleep(&ts, NULL);
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) int pttest_storm_fn(int x);
__attribute__((noinline, used)) int pttest_storm_fn(int x) {
        __asm__ volatile("" ::: "memory");
        return x + 1;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static uint64_t mono_ms(void) {
        return now_nsec(CLOCK_MONOTONIC) / NSEC_PER_MSEC;
}

/* ---- the environment: a manager on the emulated PMU with triggers ---- */

typedef struct Env {
        char dir[64];
        char socket[96];
        Manager *m;
        pid_t children[8];
        size_t n_children;
} Env;

typedef enum EnvFlags {
        ENV_IMAGES = 1 << 0,  /* copy user images into bundles (slow: only where checked) */
} EnvFlags;

static void require_bpf(TriggerType type) {
        _cleanup_free_ char *why = NULL;

        if (geteuid() != 0)
                test_skip("needs root: BPF programs and the emulated CPUs' system-wide side-band");
        if (trigger_bpf_probe(type, &why) < 0)
                test_skip("%s", why);
}

static void env_start_flags(Env *e, const char *triggers, unsigned flags) {
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        PtracedConfig c;

        *e = (Env){};
        snprintf(e->dir, sizeof e->dir, "/tmp/test-triggers-XXXXXX");
        ASSERT_NOT_NULL(mkdtemp(e->dir));

        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "test.conf", triggers,
                                    &c, &warnings, &error));
        ASSERT_OK(trigger_config_check_all(c.trigger_list, &warnings));
        for (char **w = warnings; w && *w; w++)
                printf("config: %s\n", *w);
        c.directory = strdup(e->dir);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;
        if (!(flags & ENV_IMAGES))
                c.image_budget = 4096; /* images are not what is tested */
        snprintf(e->socket, sizeof e->socket, "%s/io.ptraced", e->dir);
        c.control.socket = strdup(e->socket);
        /* The per-trigger governance is under test, not [Triggers]'. */
        c.triggers.interval = 0;
        c.triggers.warmup = 0;
        c.triggers.duplicate_window = 0;

        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(N_CPUS, 4 << 20, NULL), &e->m));
        ASSERT_OK(manager_start(e->m, 0));
        /* The manager serves the control socket, at env.socket. */
        ptraced_config_done(&c);
}

static void env_start(Env *e, const char *triggers) {
        env_start_flags(e, triggers, 0);
}

static void env_run(Env *e, unsigned ms) {
        uint64_t end = mono_ms() + ms;

        while (mono_ms() < end)
                ASSERT_OK(sd_event_run(manager_get_event(e->m), 10 * USEC_PER_MSEC));
}

static uint64_t env_bundles_written(Env *e) {
        SnapshotStats st;
        manager_get_stats(e->m, &st);
        return st.bundles_written;
}

/* Run until n bundles are written (or the timeout), then a while longer
 * to see that no more come. */
static void env_wait_bundles(Env *e, uint64_t n, unsigned timeout_ms, unsigned settle_ms) {
        uint64_t end = mono_ms() + timeout_ms;

        while (env_bundles_written(e) < n && mono_ms() < end)
                ASSERT_OK(sd_event_run(manager_get_event(e->m), 10 * USEC_PER_MSEC));
        env_run(e, settle_ms);
}

static pid_t env_spawn(Env *e, const char *comm, void (*fn)(void *), void *arg) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                sigset_t all;
                sigemptyset(&all);
                (void) sigprocmask(SIG_SETMASK, &all, NULL);
                (void) prctl(PR_SET_NAME, comm);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                fn(arg);
                _exit(0);
        }
        ASSERT_TRUE(e->n_children < ELEMENTSOF(e->children));
        e->children[e->n_children++] = pid;
        return pid;
}

static void env_stop(Env *e) {
        for (size_t i = 0; i < e->n_children; i++) {
                (void) kill(e->children[i], SIGKILL);
                (void) waitpid(e->children[i], NULL, 0);
        }
        e->m = manager_free(e->m);
        ASSERT_OK(rm_rf(e->dir));
}

static const TriggerInfo *env_trigger(Env *e, const char *name) {
        static TriggerInfo info;
        TriggerSet *s = manager_get_triggers(e->m);

        for (size_t i = 0; i < trigger_set_count(s); i++) {
                ASSERT_OK(trigger_set_info(s, i, &info));
                if (streq(info.name, name))
                        return &info;
        }
        test_fail("no trigger %s", name);
}

/* ---- bundles ---- */

typedef struct Bundle {
        BundleReader *reader;
        const BundleManifest *mf;
        struct json_object *details;
} Bundle;

/* Bundle names have a one-second time stamp and a random id: order by the
 * time each was written. */
static int cmp_mtime(const void *a, const void *b) {
        struct stat x, y;

        ASSERT_EQ(stat(*(char *const *) a, &x), 0);
        ASSERT_EQ(stat(*(char *const *) b, &y), 0);
        if (x.st_mtim.tv_sec != y.st_mtim.tv_sec)
                return x.st_mtim.tv_sec < y.st_mtim.tv_sec ? -1 : 1;
        return x.st_mtim.tv_nsec < y.st_mtim.tv_nsec ? -1 : x.st_mtim.tv_nsec > y.st_mtim.tv_nsec;
}

/* The bundles in the directory, oldest first. */
static char **env_list(Env *e) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        DIR *d = opendir(e->dir);
        struct dirent *de;

        ASSERT_NOT_NULL(d);
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                char *p;
                if (n < 5 || !streq(de->d_name + n - 4, ".tar") || de->d_name[0] == '.')
                        continue;
                ASSERT_TRUE(asprintf(&p, "%s/%s", e->dir, de->d_name) > 0);
                ASSERT_OK(strv_consume(&l, p));
        }
        closedir(d);
        qsort(l, strv_length(l), sizeof(char *), cmp_mtime);
        return TAKE_PTR(l);
}

static void bundle_open(const char *path, Bundle *b) {
        _cleanup_free_ char *error = NULL;

        if (bundle_reader_open(path, NULL, &b->reader, &error) < 0)
                test_fail("cannot open %s: %s", path, strna(error));
        b->mf = bundle_reader_manifest(b->reader);
        b->details = b->mf->trigger.details;
        ASSERT_NOT_NULL(b->details);
        printf("bundle %s: reason %s, source %s, details %s\n", path, b->mf->trigger.reason,
               b->mf->trigger.source, json_object_to_json_string_ext(b->details, JSON_C_TO_STRING_PLAIN));
}

static void bundle_close(Bundle *b) {
        bundle_reader_free(b->reader);
}

static const char *detail_str(Bundle *b, const char *key) {
        struct json_object *v;
        if (!json_object_object_get_ex(b->details, key, &v))
                test_fail("no %s in the trigger details", key);
        return json_object_get_string(v);
}

static int64_t detail_int(Bundle *b, const char *key) {
        struct json_object *v;
        if (!json_object_object_get_ex(b->details, key, &v))
                test_fail("no %s in the trigger details", key);
        return json_object_get_int64(v);
}

static bool detail_bool(Bundle *b, const char *key) {
        struct json_object *v;
        if (!json_object_object_get_ex(b->details, key, &v))
                test_fail("no %s in the trigger details", key);
        return json_object_get_boolean(v);
}

/* What every latency bundle says about its interval. */
static void check_interval(Bundle *b, uint64_t min_ns, uint64_t max_ns) {
        uint64_t latency = (uint64_t) detail_int(b, "latency_ns");
        uint64_t start = (uint64_t) detail_int(b, "start_time_ns"),
                 end = (uint64_t) detail_int(b, "end_time_ns");
        char want[96];

        printf("latency %.3f ms\n", latency / 1e6);
        ASSERT_TRUE(latency >= min_ns);
        ASSERT_TRUE(latency <= max_ns);
        ASSERT_EQ(end - start, latency);
        /* The interval ends just before the trigger the bundle records.
         * Both are CLOCK_MONOTONIC converted to perf time through rdtsc,
         * each on its own (the emulated TSC follows the kernel's perf
         * clock, as on hardware): they agree to the conversion's jitter. */
        ASSERT_TRUE(end <= b->mf->trigger.perf_time + 50 * NSEC_PER_USEC);
        ASSERT_TRUE(b->mf->trigger.perf_time + 50 * NSEC_PER_USEC - end < 100 * NSEC_PER_MSEC);
        snprintf(want, sizeof want, "%" PRIu64 ".%09" PRIu64 ",%" PRIu64 ".%09" PRIu64, start / NSEC_PER_SEC,
                 start % NSEC_PER_SEC, end / NSEC_PER_SEC, end % NSEC_PER_SEC);
        ASSERT_STREQ(detail_str(b, "decode_time"), want);
        /* Frozen right after the kernel's event. */
        ASSERT_TRUE((uint64_t) detail_int(b, "freeze_latency_ns") < 50 * NSEC_PER_MSEC);
}

/* ---- function-latency ---- */

/* Fast calls, then one slow one; nothing after it, so that the bundle
 * being written (which loads both CPUs) cannot slow down a fast call. */
static void child_function(void *arg) {
        for (int i = 0; i < 10; i++)
                pttest_work(2);
        pttest_work(80);
}

static void test_function_latency(void) {
        _cleanup_free_ char *conf = NULL;
        _cleanup_strv_free_ char **l = NULL;
        Env e;
        Bundle b;
        pid_t pid;

        require_bpf(TRIGGER_TYPE_FUNCTION_LATENCY);
        ASSERT_TRUE(asprintf(&conf,
                             "[Trigger:slowwork]\nType=function-latency\nBinary=%s\nFunction=pttest_work\n"
                             "Threshold=30ms\nComm=pttest-func\nMinIntervalSec=0\n",
                             self) > 0);
        env_start(&e, conf);
        ASSERT_TRUE(env_trigger(&e, "slowwork")->running);
        pid = env_spawn(&e, "pttest-func", child_function, NULL);
        env_wait_bundles(&e, 1, 20000, 500);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "function-latency:slowwork");
        ASSERT_STREQ(b.mf->trigger.source, "latency:slowwork");
        ASSERT_STREQ(detail_str(&b, "trigger"), "slowwork");
        ASSERT_STREQ(detail_str(&b, "function"), "pttest_work");
        ASSERT_STREQ(detail_str(&b, "binary"), self);
        ASSERT_STREQ(detail_str(&b, "comm"), "pttest-func");
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        ASSERT_EQ(detail_int(&b, "tid"), pid);
        ASSERT_EQ(detail_int(&b, "threshold_ns"), 30 * NSEC_PER_MSEC);
        ASSERT_TRUE(detail_int(&b, "cpu") >= 0);
        check_interval(&b, 80 * NSEC_PER_MSEC, 130 * NSEC_PER_MSEC);
        bundle_close(&b);
        ASSERT_EQ(env_trigger(&e, "slowwork")->fired, 1);
        ASSERT_EQ(env_trigger(&e, "slowwork")->snapshots, 1);
        env_stop(&e);
}

/* ---- sched-latency ---- */

static void pin(int cpu) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
                _exit(4);
}

static void child_wakee(void *arg) {
        uint64_t end = mono_ms() + 900;

        pin(1);
        while (mono_ms() < end)
                sleep_ms(1);
}

static void child_hog(void *arg) {
        struct sched_param p = { .sched_priority = 10 };
        uint64_t end;

        pin(1);
        sleep_ms(200); /* the wakee is in its loop by now */
        if (sched_setscheduler(0, SCHED_FIFO, &p) < 0)
                _exit(3);
        end = mono_ms() + 250;
        while (mono_ms() < end)
                __asm__ volatile("" ::: "memory");
}

/* PF_KTHREAD in the flags field (the 9th) of /proc/PID/stat. */
static bool is_kernel_thread(pid_t pid) {
        _cleanup_free_ char *path = NULL, *stat = NULL;
        unsigned long flags;
        const char *p;

        if (pid <= 0)
                return pid == 0; /* the idle task */
        if (asprintf(&path, "/proc/%d/stat", (int) pid) < 0)
                return false;
        if (read_full_file(path, 4096, &stat, NULL) < 0)
                return false;
        p = strrchr(stat, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
                return false;
        return flags & 0x00200000;
}

static void test_sched_latency(void) {
        _cleanup_strv_free_ char **l = NULL;
        Env e;
        Bundle b;
        pid_t wakee, hog;
        int status;

        require_bpf(TRIGGER_TYPE_SCHED_LATENCY);
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                test_skip("needs two CPUs: one for the hog and its victim, one for the daemon");
        env_start(&e, "[Trigger:runq]\nType=sched-latency\nThreshold=50ms\nComm=pttest-wakee\n"
                      "MinIntervalSec=60s\n");
        wakee = env_spawn(&e, "pttest-wakee", child_wakee, NULL);
        hog = env_spawn(&e, "pttest-hog", child_hog, NULL);
        env_wait_bundles(&e, 1, 5000, 800);
        ASSERT_EQ(waitpid(hog, &status, 0), hog);
        e.children[1] = 0;
        e.n_children = 1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
                test_skip("cannot make the CPU hog SCHED_FIFO here");

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "sched-latency:runq");
        ASSERT_STREQ(detail_str(&b, "comm"), "pttest-wakee");
        ASSERT_EQ(detail_int(&b, "pid"), wakee);
        /* The hog woke it (its timer interrupted the hog) or held the CPU
         * right before it ran. Neither is certain on a loaded machine: the
         * wakee's timer may have migrated to the other CPU (so the waker is
         * whatever ran there), and a kernel thread starved by the hog (a
         * kworker, ksoftirqd) may run between the hog and the wakee. So
         * the accepted third case is a kernel thread running just before. */
        fprintf(stderr, "waker %s[%" PRIi64 "], running before %s[%" PRIi64 "]\n",
                detail_str(&b, "waker_comm"), detail_int(&b, "waker_pid"),
                detail_str(&b, "running_comm"), detail_int(&b, "running_pid"));
        ASSERT_TRUE(streq(detail_str(&b, "waker_comm"), "pttest-hog") ||
                    streq(detail_str(&b, "running_comm"), "pttest-hog") ||
                    is_kernel_thread((pid_t) detail_int(&b, "running_pid")));
        ASSERT_FALSE(detail_bool(&b, "preempted"));
        ASSERT_EQ(detail_int(&b, "cpu"), 1);
        check_interval(&b, 50 * NSEC_PER_MSEC, 300 * NSEC_PER_MSEC);
        bundle_close(&b);
        env_stop(&e);
}

/* ---- syscall-latency ---- */

static void writer_after(int fd, unsigned ms) {
        pid_t pid = fork();

        if (pid == 0) {
                (void) prctl(PR_SET_NAME, "pttest-writer");
                sleep_ms(ms);
                (void) !write(fd, "x", 1);
                _exit(0);
        }
}

static void child_syscall(void *arg) {
        int p[2];
        char c;

        if (pipe(p) < 0)
                _exit(2);
        for (int i = 0; i < 3; i++)
                sleep_ms(5);
        writer_after(p[1], 200);
        (void) !read(p[0], &c, 1);
        (void) wait(NULL);
}

static void test_syscall_latency(void) {
        _cleanup_strv_free_ char **l = NULL;
        Env e;
        Bundle b;
        pid_t pid;

        require_bpf(TRIGGER_TYPE_SYSCALL_LATENCY);
        env_start(&e, "[Trigger:slowread]\nType=syscall-latency\nSyscall=read nanosleep\nThreshold=100ms\n"
                      "Comm=pttest-sys\nMinIntervalSec=0\n");
        pid = env_spawn(&e, "pttest-sys", child_syscall, NULL);
        env_wait_bundles(&e, 1, 20000, 500);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "syscall-latency:slowread");
        ASSERT_STREQ(detail_str(&b, "syscall"), "read");
        ASSERT_EQ(detail_int(&b, "return"), 1);
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        check_interval(&b, 100 * NSEC_PER_MSEC, 400 * NSEC_PER_MSEC);
        bundle_close(&b);
        env_stop(&e);
}

/* ---- offcpu ---- */

static void child_blocked(void *arg) {
        int p[2];
        char c;

        if (pipe(p) < 0)
                _exit(2);
        writer_after(p[1], 400);
        (void) !read(p[0], &c, 1);
        (void) wait(NULL);
}

/* The same as another user: the report made while the thread is blocked
 * names that user and the thread's cgroup, as the one made at wake-up. */
#define OFFCPU_UID 65534

static void child_blocked_as_nobody(void *arg) {
        if (setresgid(OFFCPU_UID, OFFCPU_UID, OFFCPU_UID) < 0 || setresuid(OFFCPU_UID, OFFCPU_UID, OFFCPU_UID) < 0)
                _exit(3);
        child_blocked(arg);
}

static void test_offcpu(void) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *line = NULL;
        char *cgroup;
        Env e;
        Bundle b;
        pid_t pid;

        require_bpf(TRIGGER_TYPE_OFFCPU);
        env_start(&e,
                  "[Trigger:blocked]\nType=offcpu\nThreshold=100ms\nComm=pttest-block\nMinIntervalSec=0\n");
        pid = env_spawn(&e, "pttest-block", child_blocked_as_nobody, NULL);
        /* Our cgroup2 path, which the child inherits (the line "0::/path"). */
        ASSERT_OK(read_full_file("/proc/self/cgroup", 65536, &line, NULL));
        cgroup = strstr(line, "0::/");
        ASSERT_TRUE(cgroup && (cgroup == line || cgroup[-1] == '\n'));
        cgroup[strcspn(cgroup, "\n")] = 0;
        env_wait_bundles(&e, 1, 5000, 0);
        /* Reported while blocked; the end of the interval, when the pipe is
         * written, comes from the BPF program and is not reported twice. */
        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
        e.n_children = 0;
        env_run(&e, 300);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "offcpu:blocked");
        ASSERT_STREQ(detail_str(&b, "comm"), "pttest-block");
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        ASSERT_EQ(detail_int(&b, "uid"), OFFCPU_UID);
        ASSERT_STREQ(detail_str(&b, "cgroup"), cgroup + 3);
        ASSERT_STREQ(detail_str(&b, "state"), "S");
        ASSERT_TRUE(detail_bool(&b, "still_blocked"));
        check_interval(&b, 100 * NSEC_PER_MSEC, 350 * NSEC_PER_MSEC);
        bundle_close(&b);
        ASSERT_TRUE(env_trigger(&e, "blocked")->kernel_reported >= 1);
        ASSERT_EQ(env_trigger(&e, "blocked")->fired, 1);
        env_stop(&e);
}

/* ---- crash ---- */

/* The NULL store is the point: not a sanitizer finding. */
__attribute__((no_sanitize("undefined"))) static void child_crash(void *arg) {
        struct rlimit no_core = {};

        (void) setrlimit(RLIMIT_CORE, &no_core);
        /* A crash with the default action (sanitizers install a handler). */
        (void) signal(SIGSEGV, SIG_DFL);
        sleep_ms(100);
        *(volatile int *) NULL = 1;
}

static void test_crash(void) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ void *sb = NULL;
        _cleanup_free_ char *error = NULL;
        size_t sb_size;
        Env e;
        Bundle b;
        pid_t pid;
        int status;
        bool image = false;

        require_bpf(TRIGGER_TYPE_CRASH);
        env_start_flags(&e, "[Trigger:segv]\nType=crash\nComm=pttest-crash\nMinIntervalSec=0\n", ENV_IMAGES);
        pid = env_spawn(&e, "pttest-crash", child_crash, NULL);
        env_wait_bundles(&e, 1, 5000, 300);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        e.n_children = 0;
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "crash:segv");
        ASSERT_STREQ(b.mf->trigger.source, "crash:segv");
        ASSERT_EQ(detail_int(&b, "signal"), SIGSEGV);
        ASSERT_STREQ(detail_str(&b, "signal_name"), "SIGSEGV");
        ASSERT_EQ(detail_int(&b, "si_code"), 1); /* SEGV_MAPERR */
        ASSERT_STREQ(detail_str(&b, "fault_address"), "0x0000000000000000");
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        ASSERT_EQ(detail_int(&b, "tid"), pid);
        ASSERT_STREQ(detail_str(&b, "exe"), self);
        ASSERT_NOT_NULL(detail_str(&b, "cgroup"));
        ASSERT_TRUE((uint64_t) detail_int(&b, "freeze_latency_ns") < 50 * NSEC_PER_MSEC);

        /* The crashed program is in the bundle, to decode its branches. */
        for (size_t i = 0; i < b.mf->n_images; i++)
                for (char **p = b.mf->images[i].paths; p && *p; p++)
                        if (streq(*p, self) && b.mf->images[i].member)
                                image = true;
        ASSERT_TRUE(image);

        /* Frozen while the process still lived: its exit, if the side-band
         * has it at all, came after the trigger. */
        ASSERT_OK(bundle_reader_read_member(b.reader, "sideband.perf", &sb, &sb_size, &error));
        PerfRecordStream st;
        const void *rec;
        size_t rs;
        perf_record_stream_init(&st, sb, sb_size);
        while (perf_record_stream_next(&st, &rec, &rs) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, rs, PTRACED_SAMPLE_TYPE, true, &r) < 0 ||
                    r.type != PERF_RECORD_EXIT || r.exit.pid != (uint32_t) pid)
                        continue;
                printf("exit of %d %.3f ms after the trigger\n", (int) pid,
                       ((double) r.exit.time - (double) b.mf->trigger.perf_time) / 1e6);
                ASSERT_TRUE(r.exit.time > b.mf->trigger.perf_time);
        }
        bundle_close(&b);
        env_stop(&e);
}

/* A thread renamed "pttest-worker" of process "pttest-mtcrash" crashes:
 * Comm= matches the process's name, ThreadComm= the thread's, and Comm=
 * with the thread's name does not match. */
__attribute__((no_sanitize("undefined"))) static void *worker_crash(void *arg) {
        (void) prctl(PR_SET_NAME, "pttest-worker");
        sleep_ms(100);
        *(volatile int *) NULL = 1;
        return NULL;
}

static void child_thread_crash(void *arg) {
        struct rlimit no_core = {};
        pthread_t t;

        (void) setrlimit(RLIMIT_CORE, &no_core);
        (void) signal(SIGSEGV, SIG_DFL);
        if (pthread_create(&t, NULL, worker_crash, NULL) != 0)
                _exit(2);
        (void) pthread_join(t, NULL);
}

static void test_crash_thread(void) {
        _cleanup_strv_free_ char **l = NULL;
        Env e;
        Bundle b;
        pid_t pid;
        int status;

        require_bpf(TRIGGER_TYPE_CRASH);
        env_start(&e, "[Trigger:byprocess]\nType=crash\nComm=pttest-mtcrash\nMinIntervalSec=0\n"
                      "[Trigger:bythread]\nType=crash\nThreadComm=pttest-worker\nMinIntervalSec=0\n"
                      "[Trigger:both]\nType=crash\nComm=pttest-mtcrash\nThreadComm=pttest-worker\n"
                      "MinIntervalSec=0\n"
                      "[Trigger:notthread]\nType=crash\nComm=pttest-worker\nMinIntervalSec=0\n"
                      "[Trigger:notmain]\nType=crash\nComm=pttest-mtcrash\nThreadComm=pttest-mtcrash\n"
                      "MinIntervalSec=0\n");
        pid = env_spawn(&e, "pttest-mtcrash", child_thread_crash, NULL);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        e.n_children = 0;
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
        env_wait_bundles(&e, 1, 5000, 500);

        printf("fired: byprocess %" PRIu64 ", bythread %" PRIu64 ", both %" PRIu64 ", notthread %" PRIu64
               ", notmain %" PRIu64 "\n",
               env_trigger(&e, "byprocess")->fired, env_trigger(&e, "bythread")->fired,
               env_trigger(&e, "both")->fired, env_trigger(&e, "notthread")->fired,
               env_trigger(&e, "notmain")->fired);
        ASSERT_EQ(env_trigger(&e, "byprocess")->fired, 1);
        ASSERT_EQ(env_trigger(&e, "bythread")->fired, 1);
        ASSERT_EQ(env_trigger(&e, "both")->fired, 1);
        ASSERT_EQ(env_trigger(&e, "notthread")->fired, 0);
        ASSERT_EQ(env_trigger(&e, "notmain")->fired, 0);

        l = env_list(&e);
        ASSERT_TRUE(strv_length(l) >= 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(detail_str(&b, "comm"), "pttest-worker");
        ASSERT_STREQ(detail_str(&b, "process_comm"), "pttest-mtcrash");
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        ASSERT_TRUE(detail_int(&b, "tid") != pid);
        bundle_close(&b);
        env_stop(&e);
}

/* A signal that kills without a core dump (SIGTERM), sent to a process of
 * two threads: the kernel turns it into SIGKILL for each thread, the
 * trigger still reports SIGTERM, once. */
static void *idle_thread(void *arg) {
        sleep_ms(20000);
        return NULL;
}

static void child_terminated(void *arg) {
        pthread_t t;

        if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                _exit(2);
        (void) pthread_join(t, NULL);
}

static void test_crash_signal(void) {
        _cleanup_strv_free_ char **l = NULL;
        Env e;
        Bundle b;
        pid_t pid;
        int status;

        require_bpf(TRIGGER_TYPE_CRASH);
        env_start(&e, "[Trigger:term]\nType=crash\nSignals=SIGTERM SIGINT\nComm=pttest-term\nMinIntervalSec=0\n"
                      "[Trigger:kill]\nType=crash\nSignals=SIGKILL\nComm=pttest-term\nMinIntervalSec=0\n");
        pid = env_spawn(&e, "pttest-term", child_terminated, NULL);
        env_run(&e, 200);
        ASSERT_OK(kill(pid, SIGTERM));
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        e.n_children = 0;
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        env_wait_bundles(&e, 1, 5000, 500);

        printf("fired: term %" PRIu64 ", kill %" PRIu64 "\n", env_trigger(&e, "term")->fired,
               env_trigger(&e, "kill")->fired);
        ASSERT_EQ(env_trigger(&e, "term")->fired, 1);
        ASSERT_EQ(env_trigger(&e, "kill")->fired, 0);
        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "crash:term");
        ASSERT_EQ(detail_int(&b, "signal"), SIGTERM);
        ASSERT_STREQ(detail_str(&b, "signal_name"), "SIGTERM");
        ASSERT_EQ(detail_int(&b, "pid"), pid);
        ASSERT_STREQ(detail_str(&b, "process_comm"), "pttest-term");
        bundle_close(&b);
        env_stop(&e);
}

/* ---- heartbeat watchdogs ---- */

static void test_watchdog(void) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *error = NULL;
        TriggerWatchdogs *w;
        struct ucred me = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        Env e;
        Bundle b;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        env_start(&e, "");
        w = trigger_set_watchdogs(manager_get_triggers(e.m));
        ASSERT_EQ(trigger_watchdog_register(w, "kept", 300 * USEC_PER_MSEC, &me, &error), 0);
        ASSERT_EQ(trigger_watchdog_register(w, "missed", 100 * USEC_PER_MSEC, &me, &error), 0);
        ASSERT_EQ(trigger_watchdog_register(w, "missed", 150 * USEC_PER_MSEC, &me, &error), 1);
        ASSERT_ERROR(trigger_watchdog_register(w, "bad name", USEC_PER_SEC, &me, &error), EINVAL);
        error = mfree(error);
        ASSERT_ERROR(trigger_watchdog_register(w, "fast", USEC_PER_MSEC, &me, &error), EINVAL);
        error = mfree(error);
        ASSERT_ERROR(trigger_watchdog_ping(w, "nobody", &me), ENOENT);

        /* "kept" is pinged in time; "missed" never: one snapshot, not one per
         * timeout, and none for "kept". */
        uint64_t end = mono_ms() + 1500, limit = mono_ms() + 20000;
        while ((mono_ms() < end || env_bundles_written(&e) < 1) && mono_ms() < limit) {
                env_run(&e, 50);
                ASSERT_OK(trigger_watchdog_ping(w, "kept", &me));
        }
        ASSERT_OK(trigger_watchdog_remove(w, "kept"));
        env_run(&e, 300);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 1);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "watchdog:missed");
        ASSERT_STREQ(b.mf->trigger.source, "watchdog");
        ASSERT_TRUE(b.mf->trigger.has_requester);
        ASSERT_EQ(b.mf->trigger.requester_pid, getpid());
        ASSERT_STREQ(detail_str(&b, "watchdog"), "missed");
        ASSERT_EQ(detail_int(&b, "timeout_usec"), 150 * USEC_PER_MSEC);
        ASSERT_TRUE(detail_int(&b, "since_last_ping_usec") >= 150 * (int64_t) USEC_PER_MSEC);
        bundle_close(&b);

        /* A ping arms it again. */
        ASSERT_OK(trigger_watchdog_ping(w, "missed", &me));
        env_wait_bundles(&e, 2, 20000, 300);
        strv_free(l);
        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 2);
        ASSERT_EQ(trigger_watchdogs_count(w), 1);
        env_stop(&e);
}

/* Two processes use one watchdog name in turn: each missed deadline names
 * the process that registered last, not the first one, which is gone. */
static void child_idle(void *arg) {
        sleep_ms(20000);
}

static void test_watchdog_owner(void) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *error = NULL;
        TriggerWatchdogs *w;
        struct ucred first, second;
        Env e;
        Bundle b;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        env_start(&e, "");
        w = trigger_set_watchdogs(manager_get_triggers(e.m));
        first = (struct ucred){ .pid = env_spawn(&e, "pttest-wd-one", child_idle, NULL), .uid = 0 };
        second = (struct ucred){ .pid = env_spawn(&e, "pttest-wd-two", child_idle, NULL), .uid = 0 };
        sleep_ms(50); /* their names are set */

        ASSERT_EQ(trigger_watchdog_register(w, "shared", 100 * USEC_PER_MSEC, &first, &error), 0);
        env_wait_bundles(&e, 1, 20000, 0);
        /* The first process ends; the second takes the name over. */
        ASSERT_OK(kill(first.pid, SIGKILL));
        ASSERT_EQ(waitpid(first.pid, NULL, 0), first.pid);
        ASSERT_EQ(trigger_watchdog_register(w, "shared", 100 * USEC_PER_MSEC, &second, &error), 1);
        env_wait_bundles(&e, 2, 20000, 300);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 2);
        bundle_open(l[0], &b);
        ASSERT_EQ(b.mf->trigger.requester_pid, first.pid);
        ASSERT_STREQ(b.mf->trigger.requester_comm, "pttest-wd-one");
        bundle_close(&b);
        bundle_open(l[1], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "watchdog:shared");
        ASSERT_EQ(b.mf->trigger.requester_pid, second.pid);
        ASSERT_STREQ(b.mf->trigger.requester_comm, "pttest-wd-two");
        bundle_close(&b);

        /* A ping from a third process hands it over too. */
        struct ucred me = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        TriggerWatchdogInfo info;
        ASSERT_OK(trigger_watchdog_ping(w, "shared", &me));
        ASSERT_OK(trigger_watchdog_get(w, 0, &info));
        ASSERT_EQ(info.pid, (uint32_t) getpid());
        env_stop(&e);
}

/* ---- libptraced-client against the daemon's control socket ---- */

static void test_client(void) {
        _cleanup_strv_free_ char **l = NULL;
        TriggerWatchdogs *w;
        TriggerWatchdogInfo info;
        Bundle b;
        Env e;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        env_start(&e, "");
        ASSERT_EQ(setenv("PTRACED_SOCKET", e.socket, 1), 0);
        ptraced_client_close();
        w = trigger_set_watchdogs(manager_get_triggers(e.m));

        /* Pinged in time through the library for a second, then not. */
        for (int i = 0; i < 10; i++) {
                ASSERT_OK(ptraced_watchdog_ping("app-loop", 300 * USEC_PER_MSEC));
                env_run(&e, 100);
        }
        ASSERT_EQ(trigger_watchdogs_count(w), 1);
        ASSERT_OK(trigger_watchdog_get(w, 0, &info));
        ASSERT_STREQ(info.name, "app-loop");
        ASSERT_EQ(info.pings, 10);
        ASSERT_EQ(info.pid, getpid());
        ASSERT_EQ(env_bundles_written(&e), 0);
        env_wait_bundles(&e, 1, 20000, 300);

        /* And a snapshot asked for by name. */
        ASSERT_OK(ptraced_watchdog_remove("app-loop"));
        ASSERT_OK(ptraced_trigger("frame took 40ms"));
        env_wait_bundles(&e, 2, 20000, 300);
        ASSERT_EQ(trigger_watchdogs_count(w), 0);

        l = env_list(&e);
        ASSERT_EQ(strv_length(l), 2);
        bundle_open(l[0], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "watchdog:app-loop");
        ASSERT_EQ(b.mf->trigger.requester_pid, getpid());
        bundle_close(&b);
        bundle_open(l[1], &b);
        ASSERT_STREQ(b.mf->trigger.reason, "frame took 40ms");
        ASSERT_STREQ(b.mf->trigger.source, "varlink");
        bundle_close(&b);
        ptraced_client_close();
        env_stop(&e);
}

/* ---- the overhead guard ---- */

static void child_storm(void *arg) {
        uint64_t end = mono_ms() + 8000;
        int x = 0;

        while (mono_ms() < end) {
                x = pttest_storm_fn(x);
                sleep_ms(5);
        }
}

static void test_storm(void) {
        _cleanup_free_ char *conf = NULL;
        const TriggerInfo *t;
        uint64_t end, bundles;
        Env e;

        require_bpf(TRIGGER_TYPE_FUNCTION_HIT);
        /* 0.3% of a minute: 180 ms of dump CPU time, a few bundles. */
        ASSERT_TRUE(asprintf(&conf,
                             "[Trigger:storm]\nType=function-hit\nBinary=%s\nFunction=pttest_storm_fn\n"
                             "Comm=pttest-storm\nMinIntervalSec=0\nMaxPerHour=0\nMaxDumpCPUPercent=0.3\n",
                             self) > 0);
        env_start(&e, conf);
        (void) env_spawn(&e, "pttest-storm", child_storm, NULL);

        end = mono_ms() + 7000;
        while (!env_trigger(&e, "storm")->suspended && mono_ms() < end)
                env_run(&e, 50);
        t = env_trigger(&e, "storm");
        printf("storm: %" PRIu64 " fired, %" PRIu64 " bundles, %" PRIu64 " throttled, %.1f ms dump CPU\n",
               t->fired, t->snapshots, t->throttled, t->guard_cpu_ns / 1e6);
        ASSERT_TRUE(t->suspended);
        ASSERT_TRUE(t->snapshots >= 1);
        ASSERT_TRUE(t->guard_cpu_ns > 180 * NSEC_PER_MSEC);
        ASSERT_TRUE(t->snapshots >= 2);
        ASSERT_CONTAINS(manager_status_text(e.m), "suspended: storm");

        /* Suspended: the BPF program stays quiet, no more bundles once the
         * one or two still being written are done. */
        ASSERT_TRUE(t->fired <= t->snapshots + t->refused + TRIGGER_GUARD_IN_FLIGHT_MAX);
        end = mono_ms() + 10000;
        do {
                bundles = env_bundles_written(&e);
                env_run(&e, 500);
        } while (env_bundles_written(&e) != bundles && mono_ms() < end);
        uint64_t suppressed = env_trigger(&e, "storm")->kernel_suppressed;
        env_run(&e, 1000);
        ASSERT_EQ(env_bundles_written(&e), bundles);
        ASSERT_TRUE(env_trigger(&e, "storm")->kernel_suppressed > suppressed);
        ASSERT_TRUE(env_trigger(&e, "storm")->suspended_until > now_usec(CLOCK_MONOTONIC));
        env_stop(&e);
}

/* ---- events lost to a full ring buffer ---- */

static void child_flood(void *arg) {
        uint64_t end = mono_ms() + 1500;
        int x = 0;

        while (mono_ms() < end)
                x = pttest_storm_fn(x);
}

/* The daemon does not read the BPF ring while a thread calls the function
 * in a tight loop: the ring fills and the program drops events. The loss
 * shows in the status line and in the bundle the trigger then takes. */
static void test_ring_full(void) {
        _cleanup_free_ char *conf = NULL;
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *log = NULL;
        char log_path[] = "/tmp/test-triggers-log-XXXXXX";
        int log_fd, saved_stderr;
        uint64_t end;
        Bundle b;
        Env e;

        require_bpf(TRIGGER_TYPE_FUNCTION_HIT);
        /* The daemon's log (stderr here), to see the loss reported. */
        log_fd = mkstemp(log_path);
        ASSERT_TRUE(log_fd >= 0);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        ASSERT_TRUE(saved_stderr >= 0 && dup2(log_fd, STDERR_FILENO) >= 0);
        ASSERT_TRUE(asprintf(&conf,
                             "[Trigger:flood]\nType=function-hit\nBinary=%s\nFunction=pttest_storm_fn\n"
                             "Comm=pttest-flood\nMinIntervalSec=0\nMaxPerHour=0\n",
                             self) > 0);
        env_start(&e, conf);
        (void) env_spawn(&e, "pttest-flood", child_flood, NULL);
        sleep_ms(1000); /* the loop does not run: nobody reads the ring */
        end = mono_ms() + 10000;
        while (env_bundles_written(&e) < 1 && mono_ms() < end)
                env_run(&e, 50);
        env_run(&e, 1500); /* the manager's status line is redone every second */
        fflush(stderr);
        ASSERT_TRUE(dup2(saved_stderr, STDERR_FILENO) >= 0);
        (void) close(saved_stderr);
        (void) close(log_fd);
        ASSERT_OK(read_full_file(log_path, 64 << 20, &log, NULL));
        (void) unlink(log_path);
        ASSERT_CONTAINS(log, "[Trigger:flood] lost ");
        ASSERT_CONTAINS(log, "events: the BPF ring buffer was full");
        printf("flood: %" PRIu64 " reported, %" PRIu64 " dropped, %" PRIu64 " bundles; status: %s\n",
               env_trigger(&e, "flood")->kernel_reported, env_trigger(&e, "flood")->kernel_dropped,
               env_bundles_written(&e), manager_status_text(e.m));
        ASSERT_TRUE(env_trigger(&e, "flood")->kernel_dropped > 0);
        ASSERT_CONTAINS(manager_status_text(e.m), "events lost: flood ");
        l = env_list(&e);
        ASSERT_TRUE(strv_length(l) >= 1);
        bundle_open(l[0], &b);
        ASSERT_TRUE(detail_int(&b, "events_dropped") > 0);
        bundle_close(&b);
        env_stop(&e);
}

/* ---- a bad trigger next to good ones ---- */

static void test_bad_config(void) {
        _cleanup_free_ char *conf = NULL;
        Env e;

        require_bpf(TRIGGER_TYPE_CRASH);
        ASSERT_TRUE(asprintf(&conf,
                             "[Trigger:good]\nType=crash\nComm=nobody-here\n"
                             "[Trigger:nosym]\nType=function-hit\nBinary=%s\nFunction=not_a_function_here\n"
                             "[Trigger:typo]\nType=sched-latncy\nThreshold=1ms\n"
                             "[Trigger:alsogood]\nType=syscall-latency\nSyscall=fsync\nThreshold=5s\n",
                             self) > 0);
        env_start(&e, conf);
        ASSERT_TRUE(env_trigger(&e, "good")->running);
        ASSERT_TRUE(env_trigger(&e, "alsogood")->running);
        ASSERT_FALSE(env_trigger(&e, "nosym")->running);
        ASSERT_CONTAINS(env_trigger(&e, "nosym")->error,
                        "test.conf:7: [Trigger:nosym] Function=not_a_function_here");
        ASSERT_FALSE(env_trigger(&e, "typo")->running);
        ASSERT_CONTAINS(env_trigger(&e, "typo")->error, "test.conf:9: invalid value in Type=sched-latncy");
        ASSERT_CONTAINS(manager_status_text(e.m), "2 triggers (2 not running)");
        env_stop(&e);
}

int main(int argc, char **argv) {
        static const TestCase tests[] = {
                TEST(test_function_latency), TEST(test_sched_latency), TEST(test_syscall_latency),
                TEST(test_offcpu),           TEST(test_crash),         TEST(test_watchdog),
                TEST(test_storm),            TEST(test_bad_config),    TEST(test_client),
                TEST(test_watchdog_owner),   TEST(test_crash_thread),
                TEST(test_crash_signal),     TEST(test_ring_full),
        };
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

        ASSERT_TRUE(n > 0);
        self[n] = 0;
        log_set_max_level(LOG_INFO);
        return test_run(tests, ELEMENTSOF(tests), argc, argv);
}
