/* SPDX-License-Identifier: MIT */

#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>

#include "common/basic/log.h"

static LogTarget log_target = LOG_TARGET_AUTO;
static int log_max_level = LOG_INFO;
static const char *log_ident = NULL;

void log_set_target(LogTarget target) {
        log_target = target;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

void log_set_ident(const char *ident) {
        log_ident = ident;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "err",
                [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
        };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == 0)
                return s[0] - '0';
        return -EINVAL;
}

/* systemd sets JOURNAL_STREAM=dev:ino for the stream it connected to our
 * stderr; only when it still is our stderr do we talk to the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_open(void) {
        const char *e;

        if (log_target == LOG_TARGET_AUTO)
                log_target = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;

        e = getenv("PTRACED_LOG_LEVEL") ?: getenv("SYSTEMD_LOG_LEVEL");
        if (e) {
                int l = log_level_from_string(e);
                if (l >= 0)
                        log_max_level = l;
        }
}

static int log_dispatch(int level, int error, const char *const *fields, const char *file, int line,
                        const char *func, const char *message) {
        LogTarget t = log_target;

        if (t == LOG_TARGET_AUTO)
                t = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;

        if (t == LOG_TARGET_JOURNAL) {
                char prio[32], errno_field[32], line_field[32];
                size_t nfields = 0, n = 0;
                int r;

                for (const char *const *f = fields; f && *f; f++)
                        nfields++;

                struct iovec iov[nfields + 7];
                _cleanup_free_ char *msg = NULL;

                if (asprintf(&msg, "MESSAGE=%s", message) < 0)
                        return -ENOMEM;
                iov[n++] = (struct iovec){ msg, strlen(msg) };
                snprintf(prio, sizeof prio, "PRIORITY=%i", level);
                iov[n++] = (struct iovec){ prio, strlen(prio) };
                if (error != 0) {
                        snprintf(errno_field, sizeof errno_field, "ERRNO=%i", abs(error));
                        iov[n++] = (struct iovec){ errno_field, strlen(errno_field) };
                }
                snprintf(line_field, sizeof line_field, "CODE_LINE=%i", line);
                iov[n++] = (struct iovec){ line_field, strlen(line_field) };
                _cleanup_free_ char *file_field = NULL, *func_field = NULL;
                if (asprintf(&file_field, "CODE_FILE=%s", file) >= 0)
                        iov[n++] = (struct iovec){ file_field, strlen(file_field) };
                if (asprintf(&func_field, "CODE_FUNC=%s", func) >= 0)
                        iov[n++] = (struct iovec){ func_field, strlen(func_field) };
                for (const char *const *f = fields; f && *f; f++)
                        iov[n++] = (struct iovec){ (void *) *f, strlen(*f) };

                r = sd_journal_sendv(iov, (int) n);
                if (r >= 0)
                        return 0;
                /* Journal gone (e.g. during shutdown): fall through to stderr. */
        }

        if (t == LOG_TARGET_NULL)
                return 0;

        if (log_ident)
                fprintf(stderr, "%s: %s\n", log_ident, message);
        else
                fprintf(stderr, "%s\n", message);
        return 0;
}

static int log_formatv(int level, int error, const char *const *fields, const char *file, int line,
                       const char *func, const char *format, va_list ap) _printf_(7, 0);
static int log_formatv(int level, int error, const char *const *fields, const char *file, int line,
                       const char *func, const char *format, va_list ap) {
        char buf[2048];
        int saved = errno;

        /* Make %m print the error we were given, not whatever errno is. */
        errno = abs(error);
        vsnprintf(buf, sizeof buf, format, ap);
        (void) log_dispatch(level, error, fields, file, line, func, buf);
        errno = saved;
        return -abs(error);
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_formatv(level, error, NULL, file, line, func, format, ap);
        va_end(ap);
        return r;
}

int log_struct_internal(int level, int error, const char *const *fields, const char *file, int line,
                        const char *func, const char *format, ...) {
        va_list ap;
        int r;

        if (level > log_max_level)
                return -abs(error);

        va_start(ap, format);
        r = log_formatv(level, error, fields, file, line, func, format, ap);
        va_end(ap);
        return r;
}
