/* SPDX-License-Identifier: MIT */

/*
 * Process churn at a paced rate, for the side-band benchmark: fork + exec
 * of /bin/true (or --exec PATH) N times per second, spread over worker
 * processes, optionally watching another process's CPU time and memory
 * over consecutive windows while the load runs.
 *
 *   bench-loadgen --rate N [--seconds S] [--windows K] [--workers W]
 *                 [--ramp S] [--watch PID] [--exec PATH] [--json FILE]
 *
 * The load runs for ramp + K x S seconds; window i reports the spawns
 * done in it (the achieved rate: a small machine cannot do 5,000 exec
 * per second, and the report must say what it really did), and for
 * --watch PID the watched process's CPU time (all threads, from its CPU
 * clock, and utime+stime from /proc/PID/stat), its main thread's CPU time
 * (/proc/PID/task/PID/schedstat), and VmRSS / VmHWM from /proc/PID/status
 * at the window's end.
 *
 * Pacing: each worker has absolute deadlines (clock_nanosleep with
 * TIMER_ABSTIME) at rate/W per second; a worker that falls behind by more
 * than 100 ms drops the missed slots instead of bursting to catch up, so
 * the load is never burstier than asked.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC UINT64_C(1000000000)
#define MAX_WORKERS 64

typedef struct Counters {
        _Atomic uint64_t spawned;
        _Atomic uint64_t failed;
} Counters;

typedef struct Sample {
        double wall;        /* CLOCK_MONOTONIC, seconds */
        uint64_t spawned;
        double cpu;         /* watched process, all threads, seconds */
        double cpu_ticks;   /* utime + stime from /proc/PID/stat, seconds */
        double main_cpu;    /* its main thread */
        long rss_kb, hwm_kb;
        bool alive;
} Sample;

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
        struct timespec ts = { .tv_sec = (time_t) (t / NSEC_PER_SEC), .tv_nsec = (long) (t % NSEC_PER_SEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* The CPU time of the whole process (every thread, live or gone), from
 * its CPU clock: nanoseconds, where /proc/PID/stat has 10 ms ticks. */
static int read_process_cpu(pid_t pid, double *ret) {
        struct timespec ts;
        clockid_t clock;

        if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) < 0)
                return -ESRCH;
        *ret = (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
        return 0;
}

/* The main thread's: the kernel gives other processes' thread clocks to
 * nobody, /proc/PID/task/PID/schedstat has the same sum (ns on CPU). */
static int read_main_thread_cpu(pid_t pid, double *ret) {
        char path[64];
        unsigned long long ns;
        FILE *f;
        int n;

        snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int) pid, (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fscanf(f, "%llu", &ns);
        fclose(f);
        if (n != 1)
                return -EBADMSG;
        *ret = (double) ns / 1e9;
        return 0;
}

/* utime + stime (fields 14 and 15 of /proc/PID/stat), in seconds. The
 * command name (field 2) may hold spaces and parentheses: parse after the
 * last ')'. */
static int read_stat_ticks(pid_t pid, double *ret) {
        char path[64], buf[4096], *p;
        unsigned long utime, stime;
        size_t n;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return -EBADMSG;
        *ret = (double) (utime + stime) / (double) sysconf(_SC_CLK_TCK);
        return 0;
}

static void read_status(pid_t pid, long *ret_rss, long *ret_hwm) {
        char path[64], line[256];
        FILE *f;

        *ret_rss = *ret_hwm = -1;
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof line, f)) {
                if (strncmp(line, "VmRSS:", 6) == 0)
                        *ret_rss = strtol(line + 6, NULL, 10);
                else if (strncmp(line, "VmHWM:", 6) == 0)
                        *ret_hwm = strtol(line + 6, NULL, 10);
        }
        fclose(f);
}

static void sample(pid_t watch, const Counters *c, Sample *s) {
        *s = (Sample){
                .wall = (double) now_ns(CLOCK_MONOTONIC) / 1e9,
                .spawned = atomic_load(&c->spawned),
                .rss_kb = -1,
                .hwm_kb = -1,
        };
        if (watch <= 0)
                return;
        s->alive = read_process_cpu(watch, &s->cpu) >= 0 && read_main_thread_cpu(watch, &s->main_cpu) >= 0 &&
                   read_stat_ticks(watch, &s->cpu_ticks) >= 0;
        read_status(watch, &s->rss_kb, &s->hwm_kb);
}

/* vfork + execve, as posix_spawn does: the kernel sees the same FORK,
 * COMM (exec), MMAP2 and EXIT records as after fork, and it costs the
 * generator less, so a small machine gets closer to the rate asked. */
static int spawn_one(char *const argv[]) {
        pid_t pid = vfork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                static char *const envp[] = { (char *) "PATH=/usr/bin:/bin", NULL };
                execve(argv[0], argv, envp);
                _exit(127);
        }
        return 0;
}

/* One worker: `rate` spawns per second until `end`. Children are reaped
 * by the kernel (SIGCHLD ignored), so none are left as zombies. */
static void worker(double rate, uint64_t start, uint64_t end, char *const argv[], Counters *c) {
        uint64_t period = (uint64_t) ((double) NSEC_PER_SEC / rate), next = start;

        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        for (;;) {
                uint64_t t;

                sleep_until(next);
                if (next >= end)
                        break;
                if (spawn_one(argv) < 0)
                        atomic_fetch_add(&c->failed, 1);
                else
                        atomic_fetch_add(&c->spawned, 1);
                next += period;
                t = now_ns(CLOCK_MONOTONIC);
                if (t > next + NSEC_PER_SEC / 10)
                        next = t; /* behind: drop the missed slots */
        }
        _exit(0);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "rate", required_argument, NULL, 'r' },    { "seconds", required_argument, NULL, 's' },
                { "windows", required_argument, NULL, 'k' }, { "workers", required_argument, NULL, 'w' },
                { "ramp", required_argument, NULL, 'R' },    { "watch", required_argument, NULL, 'p' },
                { "exec", required_argument, NULL, 'e' },    { "json", required_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },          {},
        };
        double rate = 0, seconds = 3, ramp = 0.5;
        unsigned windows = 1, workers = 0;
        pid_t watch = 0, pids[MAX_WORKERS];
        char *exe = (char *) "/bin/true", *json = NULL;
        Sample *s;
        Counters *c;
        uint64_t start, end;
        int opt;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (opt) {
                case 'r':
                        rate = atof(optarg);
                        break;
                case 's':
                        seconds = atof(optarg);
                        break;
                case 'k':
                        windows = (unsigned) atoi(optarg);
                        break;
                case 'w':
                        workers = (unsigned) atoi(optarg);
                        break;
                case 'R':
                        ramp = atof(optarg);
                        break;
                case 'p':
                        watch = (pid_t) atoi(optarg);
                        break;
                case 'e':
                        exe = optarg;
                        break;
                case 'j':
                        json = optarg;
                        break;
                case 'h':
                        printf("usage: bench-loadgen --rate N [--seconds S] [--windows K] [--workers W] [--ramp S]\n"
                               "                     [--watch PID] [--exec PATH] [--json FILE]\n");
                        return 0;
                default:
                        return 2;
                }
        if (rate < 0 || seconds <= 0 || windows == 0 || windows > 1000 || ramp < 0 || workers > MAX_WORKERS) {
                fprintf(stderr, "bench-loadgen: bad arguments (see --help)\n");
                return 2;
        }
        if (workers == 0) {
                /* One spawner per online CPU, at most one per 250 spawns a
                 * second: a fork + exec of /bin/true costs a few hundred
                 * microseconds, so a single spawner tops out near 2,000/s. */
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                unsigned want = (unsigned) (rate / 250) + 1;
                workers = want < (unsigned) (n > 0 ? n : 1) ? want : (unsigned) (n > 0 ? n : 1);
        }
        if (watch > 0 && kill(watch, 0) < 0) {
                fprintf(stderr, "bench-loadgen: no process %d to watch\n", (int) watch);
                return 1;
        }

        c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        s = calloc(windows + 1, sizeof *s);
        if (c == MAP_FAILED || !s)
                return 1;
        atomic_init(&c->spawned, 0);
        atomic_init(&c->failed, 0);
        /* The workers' children are reaped by the kernel. */
        signal(SIGCHLD, SIG_IGN);

        start = now_ns(CLOCK_MONOTONIC) + NSEC_PER_SEC / 20;
        end = start + (uint64_t) ((ramp + seconds * windows) * (double) NSEC_PER_SEC);
        for (unsigned i = 0; rate > 0 && i < workers; i++) {
                char *child_argv[] = { exe, NULL };

                pids[i] = fork();
                if (pids[i] < 0) {
                        perror("fork");
                        return 1;
                }
                if (pids[i] == 0)
                        /* Staggered so the workers' slots interleave. */
                        worker(rate / workers, start + (uint64_t) ((double) NSEC_PER_SEC / rate * i), end,
                               child_argv, c);
        }

        for (unsigned w = 0; w <= windows; w++) {
                sleep_until(start + (uint64_t) ((ramp + seconds * w) * (double) NSEC_PER_SEC));
                sample(watch, c, &s[w]);
        }
        /* SIGCHLD is ignored: waiting returns when every worker is gone. */
        while (wait(NULL) > 0 || errno == EINTR)
                ;

        FILE *f = json ? fopen(json, "we") : stdout;
        if (!f) {
                perror(json);
                return 1;
        }
        fprintf(f, "{\"rate_requested\": %.0f, \"workers\": %u, \"seconds\": %g, \"ramp\": %g, \"exec\": \"%s\",\n", rate,
                workers, seconds, ramp, exe);
        fprintf(f, " \"failed\": %" PRIu64 ", \"watch\": %d, \"windows\": [\n", atomic_load(&c->failed), (int) watch);
        for (unsigned w = 1; w <= windows; w++) {
                const Sample *a = &s[w - 1], *b = &s[w];
                double dt = b->wall - a->wall;

                fprintf(f, "  {\"wall_s\": %.6f, \"spawned\": %" PRIu64 ", \"rate\": %.1f", dt, b->spawned - a->spawned,
                        (double) (b->spawned - a->spawned) / dt);
                if (watch > 0 && a->alive && b->alive)
                        fprintf(f,
                                ", \"cpu_s\": %.6f, \"cpu_ticks_s\": %.2f, \"main_thread_cpu_s\": %.6f, \"rss_kb\": %ld, "
                                "\"hwm_kb\": %ld",
                                b->cpu - a->cpu, b->cpu_ticks - a->cpu_ticks, b->main_cpu - a->main_cpu, b->rss_kb,
                                b->hwm_kb);
                else if (watch > 0)
                        fprintf(f, ", \"watched_process_gone\": true");
                fprintf(f, "}%s\n", w < windows ? "," : "");
        }
        fprintf(f, "]}\n");
        if (f != stdout)
                fclose(f);
        for (unsigned w = 1; w <= windows; w++)
                if (watch > 0 && !(s[w - 1].alive && s[w].alive)) {
                        fprintf(stderr, "bench-loadgen: process %d went away during the run\n", (int) watch);
                        return 1;
                }
        free(s);
        return 0;
}
