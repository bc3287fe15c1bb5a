/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/verbs/pager.h"

static pid_t pager_pid = 0;
static bool pager_has_stderr = false;

static bool same_terminal(int a, int b) {
        struct stat sa, sb;

        return isatty(a) && isatty(b) && fstat(a, &sa) >= 0 && fstat(b, &sb) >= 0 && sa.st_rdev == sb.st_rdev;
}

static const char *pager_command(void) {
        const char *p = getenv("PTCTL_PAGER");

        if (!p)
                p = getenv("PAGER");
        if (!p)
                return "less";
        if (!*p || streq(p, "cat"))
                return NULL;
        return p;
}

int ptctl_pager_open(bool no_pager) {
        const char *cmd;
        bool with_stderr;
        int fd[2];

        if (no_pager || pager_pid > 0 || !isatty(STDOUT_FILENO))
                return 0;
        cmd = pager_command();
        if (!cmd)
                return 0;
        with_stderr = same_terminal(STDOUT_FILENO, STDERR_FILENO);

        fflush(stdout);
        if (pipe2(fd, O_CLOEXEC) < 0)
                return -errno;
        pager_pid = fork();
        if (pager_pid < 0) {
                int r = -errno;
                close(fd[0]);
                close(fd[1]);
                pager_pid = 0;
                return r;
        }
        if (pager_pid == 0) {
                /* The pager: reads the pipe, writes the terminal. */
                if (dup2(fd[0], STDIN_FILENO) < 0)
                        _exit(EXIT_FAILURE);
                setenv("LESS", "FRSX", 0);
                (void) signal(SIGPIPE, SIG_DFL);
                execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
                fprintf(stderr, "ptctl: cannot run the pager '%s': %m\n", cmd);
                _exit(EXIT_FAILURE);
        }
        if (dup2(fd[1], STDOUT_FILENO) < 0 || (with_stderr && dup2(fd[1], STDERR_FILENO) < 0)) {
                int r = -errno;
                close(fd[0]);
                close(fd[1]);
                ptctl_pager_close();
                return r;
        }
        close(fd[0]);
        close(fd[1]);
        pager_has_stderr = with_stderr;
        atexit(ptctl_pager_close);
        return 1;
}

void ptctl_pager_close(void) {
        if (pager_pid <= 0)
                return;
        /* The pager ends at EOF, or when the user quits it. */
        fflush(stdout);
        fflush(stderr);
        (void) close(STDOUT_FILENO);
        if (pager_has_stderr)
                (void) close(STDERR_FILENO);
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}
