/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Logging for the top layers (the daemon's manager and handlers, ptctl's
 * verbs). Library modules return negative errno and log at debug level at
 * most.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) messages go to the journal
 * with structured fields; otherwise to stderr. The log_*_errno() helpers
 * make %m expand to the given error and return it negated, so a handler can
 * write `return log_error_errno(r, "Failed to open %s: %m", path);`.
 */

#include <syslog.h>

#include "common/basic/macro.h"

typedef enum LogTarget {
        LOG_TARGET_AUTO,    /* journal when JOURNAL_STREAM matches stderr, else stderr */
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
        LOG_TARGET_NULL,
} LogTarget;

void log_set_target(LogTarget target);
/* Resolve LOG_TARGET_AUTO and read $PTRACED_LOG_LEVEL / $SYSTEMD_LOG_LEVEL. */
void log_open(void);
/* for tests: the programs take their level from the environment in
 * log_open(); a test or benchmark running the daemon's code in its own
 * process quiets it with this instead. */
void log_set_max_level(int level);
int log_get_max_level(void);
/* Name printed before messages on stderr ("ptctl: ..."); NULL for none. */
void log_set_ident(const char *ident);
/* "debug", "info", "notice", "warning", "err"/"error", "crit", "alert", "emerg" or 0..7. */
int log_level_from_string(const char *s);

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                 ...) _printf_(6, 7);

/* fields: NULL-terminated array of "KEY=value" strings added to the journal
 * entry (MESSAGE_ID=..., BUNDLE_PATH=...); ignored on stderr. */
int log_struct_internal(int level, int error, const char *const *fields, const char *file, int line,
                        const char *func, const char *format, ...) _printf_(7, 8);

#define log_full_errno(level, error, ...)                                                                    \
        ({                                                                                                  \
                int _level = (level), _e = (error);                                                         \
                _level <= log_get_max_level()                                                               \
                        ? log_internal(_level, _e, __FILE__, __LINE__, __func__, __VA_ARGS__)               \
                        : -abs(_e);                                                                         \
        })

#define log_full(level, ...) (void) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, error, __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)

/* log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_X, path_field), "Bundle %s written", path) */
#define FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define log_struct(level, error, fields, ...)                                                               \
        log_struct_internal(level, error, fields, __FILE__, __LINE__, __func__, __VA_ARGS__)

/* An errno value made up by the caller rather than returned by a call;
 * kept distinct so greps find where errors originate. */
#define SYNTHETIC_ERRNO(e) (e)

/* Out of memory: the one message every allocation failure path shares. */
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
