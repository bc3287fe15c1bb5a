/* SPDX-License-Identifier: MIT */

/*
 * Run one command and report what it cost: wall time, user and system CPU
 * time and peak RSS (wait4's rusage), like GNU time -f, which Debian does
 * not install by default.
 *
 *   bench-run --json FILE [--stdin FILE] [--stdout FILE] -- COMMAND [ARGS...]
 *
 * The command's standard output goes to /dev/null unless --stdout says
 * otherwise; its standard error is this program's. The peak RSS is the
 * command's own: ru_maxrss also counts the memory of the process before it
 * called execve, which for a child of a Python script is the interpreter's
 * (some 17 MiB, more than small commands use); forked from this small
 * program it is negligible.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int redirect(const char *path, int flags, int target) {
        int fd = open(path, flags | O_CLOEXEC, 0644);

        if (fd < 0 || dup2(fd, target) < 0)
                return -errno;
        close(fd);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "json", required_argument, NULL, 'j' },
                { "stdin", required_argument, NULL, 'i' },
                { "stdout", required_argument, NULL, 'o' },
                {},
        };
        const char *json = NULL, *in = "/dev/null", *out = "/dev/null";
        struct rusage ru;
        int opt, status;
        double t0, wall;
        pid_t pid;
        FILE *f;

        while ((opt = getopt_long(argc, argv, "+", options, NULL)) >= 0)
                switch (opt) {
                case 'j':
                        json = optarg;
                        break;
                case 'i':
                        in = optarg;
                        break;
                case 'o':
                        out = optarg;
                        break;
                default:
                        return 2;
                }
        if (!json || optind >= argc) {
                fprintf(stderr, "usage: bench-run --json FILE [--stdin FILE] [--stdout FILE] -- COMMAND [ARGS...]\n");
                return 2;
        }

        t0 = now();
        pid = fork();
        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                if (redirect(in, O_RDONLY, STDIN_FILENO) < 0 ||
                    redirect(out, O_WRONLY | O_CREAT | O_TRUNC, STDOUT_FILENO) < 0) {
                        perror("bench-run: redirect");
                        _exit(126);
                }
                execvp(argv[optind], argv + optind);
                fprintf(stderr, "bench-run: %s: %s\n", argv[optind], strerror(errno));
                _exit(127);
        }
        while (wait4(pid, &status, 0, &ru) < 0)
                if (errno != EINTR) {
                        perror("wait4");
                        return 1;
                }
        wall = now() - t0;

        f = fopen(json, "we");
        if (!f) {
                perror(json);
                return 1;
        }
        fprintf(f,
                "{\"wall_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, \"maxrss_kb\": %ld, \"rc\": %d, "
                "\"signal\": %d}\n",
                wall, (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6,
                (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        fclose(f);
        return 0;
}
