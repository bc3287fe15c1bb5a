/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>

#include "common/basic/parse-util.h"
#include "daemon/trigger/config.h"
#include "daemon/trigger/elf.h"
#include "daemon/trigger/syscall-names.h"

const char *const trigger_type_names[] = {
        [TRIGGER_TYPE_SCHED_LATENCY] = "sched-latency",
        [TRIGGER_TYPE_SYSCALL_LATENCY] = "syscall-latency",
        [TRIGGER_TYPE_FUNCTION_LATENCY] = "function-latency",
        [TRIGGER_TYPE_FUNCTION_HIT] = "function-hit",
        [TRIGGER_TYPE_OFFCPU] = "offcpu",
        [TRIGGER_TYPE_CRASH] = "crash",
        [TRIGGER_TYPE_UNIT] = "unit",
        NULL,
};

const char *const trigger_offcpu_state_names[] = {
        [TRIGGER_OFFCPU_ANY] = "any",
        [TRIGGER_OFFCPU_UNINTERRUPTIBLE] = "uninterruptible",
        NULL,
};

static const char *const key_names[_TRIGGER_KEY_MAX] = {
        [TRIGGER_KEY_TYPE] = "Type",
        [TRIGGER_KEY_THRESHOLD] = "Threshold",
        [TRIGGER_KEY_COMM] = "Comm",
        [TRIGGER_KEY_THREAD_COMM] = "ThreadComm",
        [TRIGGER_KEY_PID] = "PID",
        [TRIGGER_KEY_CGROUP] = "Cgroup",
        [TRIGGER_KEY_SYSCALL] = "Syscall",
        [TRIGGER_KEY_BINARY] = "Binary",
        [TRIGGER_KEY_FUNCTION] = "Function",
        [TRIGGER_KEY_SIGNALS] = "Signals",
        [TRIGGER_KEY_INCLUDE_HANDLED] = "IncludeHandled",
        [TRIGGER_KEY_STATE] = "State",
        [TRIGGER_KEY_UNITS] = "Units",
        [TRIGGER_KEY_RESULT] = "Result",
        [TRIGGER_KEY_MIN_INTERVAL] = "MinIntervalSec",
        [TRIGGER_KEY_MAX_PER_HOUR] = "MaxPerHour",
        [TRIGGER_KEY_MAX_DUMP_CPU] = "MaxDumpCPUPercent",
};

/* Where each key's field is, to get from the field a parser is given back
 * to the trigger it belongs to. */
static const size_t key_offsets[_TRIGGER_KEY_MAX] = {
        [TRIGGER_KEY_TYPE] = offsetof(TriggerConfig, type),
        [TRIGGER_KEY_THRESHOLD] = offsetof(TriggerConfig, threshold),
        [TRIGGER_KEY_COMM] = offsetof(TriggerConfig, comms),
        [TRIGGER_KEY_THREAD_COMM] = offsetof(TriggerConfig, thread_comms),
        [TRIGGER_KEY_PID] = offsetof(TriggerConfig, pid_list),
        [TRIGGER_KEY_CGROUP] = offsetof(TriggerConfig, cgroup),
        [TRIGGER_KEY_SYSCALL] = offsetof(TriggerConfig, syscalls),
        [TRIGGER_KEY_BINARY] = offsetof(TriggerConfig, binary),
        [TRIGGER_KEY_FUNCTION] = offsetof(TriggerConfig, function),
        [TRIGGER_KEY_SIGNALS] = offsetof(TriggerConfig, signals),
        [TRIGGER_KEY_INCLUDE_HANDLED] = offsetof(TriggerConfig, include_handled),
        [TRIGGER_KEY_STATE] = offsetof(TriggerConfig, offcpu_state),
        [TRIGGER_KEY_UNITS] = offsetof(TriggerConfig, units),
        [TRIGGER_KEY_RESULT] = offsetof(TriggerConfig, results),
        [TRIGGER_KEY_MIN_INTERVAL] = offsetof(TriggerConfig, min_interval),
        [TRIGGER_KEY_MAX_PER_HOUR] = offsetof(TriggerConfig, max_per_hour),
        [TRIGGER_KEY_MAX_DUMP_CPU] = offsetof(TriggerConfig, max_dump_cpu),
};

/* Which keys each type takes besides Type= and the governance keys. */
#define KEY(k) (1U << (k))
#define FILTER_KEYS                                                                                         \
        (KEY(TRIGGER_KEY_COMM) | KEY(TRIGGER_KEY_THREAD_COMM) | KEY(TRIGGER_KEY_PID) | KEY(TRIGGER_KEY_CGROUP))
static const unsigned type_keys[_TRIGGER_TYPE_MAX] = {
        [TRIGGER_TYPE_SCHED_LATENCY] = KEY(TRIGGER_KEY_THRESHOLD) | FILTER_KEYS,
        [TRIGGER_TYPE_SYSCALL_LATENCY] = KEY(TRIGGER_KEY_THRESHOLD) | KEY(TRIGGER_KEY_SYSCALL) | FILTER_KEYS,
        [TRIGGER_TYPE_FUNCTION_LATENCY] = KEY(TRIGGER_KEY_THRESHOLD) | KEY(TRIGGER_KEY_BINARY) |
                                          KEY(TRIGGER_KEY_FUNCTION) | FILTER_KEYS,
        [TRIGGER_TYPE_FUNCTION_HIT] = KEY(TRIGGER_KEY_BINARY) | KEY(TRIGGER_KEY_FUNCTION) | FILTER_KEYS,
        [TRIGGER_TYPE_OFFCPU] = KEY(TRIGGER_KEY_THRESHOLD) | KEY(TRIGGER_KEY_STATE) | FILTER_KEYS,
        [TRIGGER_TYPE_CRASH] = KEY(TRIGGER_KEY_SIGNALS) | KEY(TRIGGER_KEY_INCLUDE_HANDLED) | FILTER_KEYS,
        [TRIGGER_TYPE_UNIT] = KEY(TRIGGER_KEY_UNITS) | KEY(TRIGGER_KEY_RESULT),
};
#define GOVERNANCE_KEYS                                                                                     \
        (KEY(TRIGGER_KEY_TYPE) | KEY(TRIGGER_KEY_MIN_INTERVAL) | KEY(TRIGGER_KEY_MAX_PER_HOUR) |            \
         KEY(TRIGGER_KEY_MAX_DUMP_CPU))

/* Crash triggers watch these unless Signals= says otherwise. */
static const int default_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* systemd's Result= values of a failed unit (service, socket, mount, ...). */
static const char *const unit_results[] = {
        "protocol",        "timeout",  "exit-code", "signal",         "core-dump",      "watchdog",
        "start-limit-hit", "resources", "oom-kill",  "exec-condition", "condition",      "trigger-limit-hit",
        "success",         NULL,
};

/* ---- lookups ---- */

int trigger_syscall_from_name(const char *name) {
        uint32_t nr;

        for (size_t i = 0; i < ELEMENTSOF(trigger_syscalls); i++)
                if (streq(trigger_syscalls[i].name, name))
                        return trigger_syscalls[i].nr;
        /* A number, for system calls newer than our table. */
        if (parse_uint32(name, &nr) >= 0 && nr < TRIGGER_SYSCALL_NR_MAX)
                return (int) nr;
        return -ENOENT;
}

const char *trigger_syscall_to_name(long nr) {
        for (size_t i = 0; i < ELEMENTSOF(trigger_syscalls); i++)
                if (trigger_syscalls[i].nr == nr)
                        return trigger_syscalls[i].name;
        return NULL;
}

/* "SIGSEGV", "SEGV", "segv" or "11". */
int trigger_signal_from_string(const char *s) {
        const char *n = s;
        uint32_t v;

        if (strncasecmp(n, "SIG", 3) == 0)
                n += 3;
        for (int sig = 1; sig < 64; sig++) {
                const char *a = sigabbrev_np(sig);
                if (a && strcasecmp(a, n) == 0)
                        return sig;
        }
        if (parse_uint32(s, &v) >= 0 && v >= 1 && v < 64)
                return (int) v;
        return -ENOENT;
}

/* ---- objects ---- */

TriggerConfig *trigger_config_free(TriggerConfig *t) {
        if (!t)
                return NULL;
        free(t->name);
        free(t->file);
        free(t->error);
        strv_free(t->comms);
        strv_free(t->thread_comms);
        strv_free(t->pid_list);
        free(t->cgroup);
        strv_free(t->syscalls);
        free(t->binary);
        free(t->function);
        strv_free(t->signals);
        strv_free(t->units);
        strv_free(t->results);
        for (size_t i = 0; i < _TRIGGER_KEY_MAX; i++)
                free(t->where[i].file);
        return mfree(t);
}

void trigger_config_list_free(TriggerConfig *list) {
        while (list) {
                TriggerConfig *n = list->next;
                trigger_config_free(list);
                list = n;
        }
}

static int dup_str(char **dst, const char *src) {
        *dst = NULL;
        if (!src)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

static int dup_strv(char ***dst, char *const *src) {
        *dst = NULL;
        if (!src)
                return 0;
        *dst = strv_copy(src);
        return *dst ? 0 : -ENOMEM;
}

static int trigger_config_copy(const TriggerConfig *t, TriggerConfig **ret) {
        _cleanup_(trigger_config_freep) TriggerConfig *c = malloc(sizeof(TriggerConfig));

        if (!c)
                return -ENOMEM;
        *c = *t;
        c->next = NULL;
        /* The pointers are t's until each is replaced: clear them first so a
         * failure half way frees only our own. */
        c->name = c->file = c->error = c->cgroup = c->binary = c->function = NULL;
        c->comms = c->thread_comms = c->pid_list = c->syscalls = c->signals = c->units = c->results = NULL;
        for (size_t i = 0; i < _TRIGGER_KEY_MAX; i++)
                c->where[i].file = NULL;

        if (dup_str(&c->name, t->name) < 0 || dup_str(&c->file, t->file) < 0 ||
            dup_str(&c->error, t->error) < 0 || dup_str(&c->cgroup, t->cgroup) < 0 ||
            dup_str(&c->binary, t->binary) < 0 || dup_str(&c->function, t->function) < 0 ||
            dup_strv(&c->comms, t->comms) < 0 || dup_strv(&c->thread_comms, t->thread_comms) < 0 ||
            dup_strv(&c->pid_list, t->pid_list) < 0 ||
            dup_strv(&c->syscalls, t->syscalls) < 0 || dup_strv(&c->signals, t->signals) < 0 ||
            dup_strv(&c->units, t->units) < 0 || dup_strv(&c->results, t->results) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < _TRIGGER_KEY_MAX; i++)
                if (dup_str(&c->where[i].file, t->where[i].file) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int trigger_config_list_copy(const TriggerConfig *list, TriggerConfig **ret) {
        TriggerConfig *head = NULL, **tail = &head;
        int k;

        for (const TriggerConfig *t = list; t; t = t->next) {
                k = trigger_config_copy(t, tail);
                if (k < 0) {
                        trigger_config_list_free(head);
                        return k;
                }
                tail = &(*tail)->next;
        }
        *ret = head;
        return 0;
}

static bool strv_equal_null(char **a, char **b) {
        for (; a && *a && b && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !(a && *a) && !(b && *b);
}

/* What a trigger does and how it is governed; where each key was written
 * (file, line) does not matter. */
static bool trigger_config_equal(const TriggerConfig *a, const TriggerConfig *b) {
        return streq(a->name, b->name) && streq_ptr(a->error, b->error) && a->type == b->type &&
               a->threshold == b->threshold && strv_equal_null(a->comms, b->comms) &&
               strv_equal_null(a->thread_comms, b->thread_comms) && strv_equal_null(a->pid_list, b->pid_list) &&
               streq_ptr(a->cgroup, b->cgroup) && strv_equal_null(a->syscalls, b->syscalls) &&
               streq_ptr(a->binary, b->binary) && streq_ptr(a->function, b->function) &&
               strv_equal_null(a->signals, b->signals) && a->include_handled == b->include_handled &&
               a->offcpu_state == b->offcpu_state && strv_equal_null(a->units, b->units) &&
               strv_equal_null(a->results, b->results) && a->min_interval == b->min_interval &&
               a->max_per_hour == b->max_per_hour && a->max_dump_cpu == b->max_dump_cpu &&
               a->function_offset == b->function_offset && a->function_address == b->function_address;
}

bool trigger_config_list_equal(const TriggerConfig *a, const TriggerConfig *b) {
        for (; a && b; a = a->next, b = b->next)
                if (!trigger_config_equal(a, b))
                        return false;
        return !a && !b;
}

static bool name_is_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > TRIGGER_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("-_.@:", *p))
                        return false;
        return true;
}

void *trigger_config_list_section(TriggerConfig **list, const char *name, const char *filename, unsigned line,
                                  char **ret_error) {
        TriggerConfig **tail = list, *t;

        if (!name_is_valid(name)) {
                if (asprintf(ret_error,
                             "trigger names are 1 to %d characters of letters, digits and -_.@: (they "
                             "appear in "
                             "snapshot reasons)",
                             TRIGGER_NAME_MAX) < 0)
                        *ret_error = NULL;
                return NULL;
        }
        /* A repeated name (a drop-in) adds to the same trigger. */
        for (; *tail; tail = &(*tail)->next)
                if (streq((*tail)->name, name))
                        return *tail;

        t = calloc(1, sizeof(TriggerConfig));
        if (!t)
                return NULL;
        t->type = _TRIGGER_TYPE_INVALID;
        t->min_interval = TRIGGER_MIN_INTERVAL_DEFAULT;
        t->max_per_hour = TRIGGER_MAX_PER_HOUR_DEFAULT;
        t->max_dump_cpu = TRIGGER_MAX_DUMP_CPU_DEFAULT;
        t->name = strdup(name);
        t->file = strdup(filename);
        t->line = line;
        if (!t->name || !t->file)
                return trigger_config_free(t);
        *tail = t;
        return t;
}

void trigger_config_invalidate(TriggerConfig *t, const char *error) {
        /* The first error is the one to fix first. */
        if (!t->error)
                t->error = strdup(error);
}

/* ---- parsers ---- */

/* Remember where the key was set; the field tells us which trigger. */
static int record(const ConfigParserContext *ctx, void *field) {
        TriggerKey k = (TriggerKey) (uintptr_t) ctx->arg;
        TriggerConfig *t;
        char *f;

        assert(k < _TRIGGER_KEY_MAX);
        t = (TriggerConfig *) ((uint8_t *) field - key_offsets[k]);
        f = strdup(ctx->filename);
        if (!f)
                return -ENOMEM;
        free(t->where[k].file);
        t->where[k].file = f;
        t->where[k].line = ctx->line;
        return 0;
}

static int valid(char **ret_valid, const char *text) {
        *ret_valid = strdup(text);
        return *ret_valid ? -EINVAL : -ENOMEM;
}

int trigger_config_parse_type(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid) {
        for (int i = 0; i < _TRIGGER_TYPE_MAX; i++)
                if (streq(rvalue, trigger_type_names[i])) {
                        *(int *) field = i;
                        return record(ctx, field);
                }
        return valid(ret_valid,
                     "one of: sched-latency, syscall-latency, function-latency, function-hit, offcpu, "
                     "crash, unit");
}

int trigger_config_parse_threshold(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                   char **ret_valid) {
        usec_t v;

        if (parse_duration(rvalue, &v) < 0 || v == 0 || v == USEC_INFINITY || v > 24 * USEC_PER_HOUR)
                return valid(ret_valid,
                             "a duration above 0 and at most 24h with unit us, ms, s or min, e.g. 10ms");
        *(usec_t *) field = v;
        return record(ctx, field);
}

int trigger_config_parse_words(const ConfigParserContext *ctx, const char *rvalue, void *field,
                               char **ret_valid) {
        int k = config_parse_strv(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        return record(ctx, field);
}

int trigger_config_parse_comm(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid) {
        _cleanup_strv_free_ char **words = NULL;
        int k;

        k = strv_split_words(rvalue, &words);
        if (k < 0)
                return k;
        for (char **w = words; *w; w++)
                if (strlen(*w) >= TRIGGER_COMM_LEN)
                        return valid(ret_valid,
                                     "command names of at most 15 characters (the kernel keeps the "
                                     "first 15 of a program's name, as ps -o comm shows)");
        return trigger_config_parse_words(ctx, rvalue, field, ret_valid);
}

int trigger_config_parse_path(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid) {
        int k = config_parse_path(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        if (strstr(rvalue, "/../") || (strlen(rvalue) >= 3 && streq(rvalue + strlen(rvalue) - 3, "/..")))
                return valid(ret_valid, "an absolute path without .. components");
        return record(ctx, field);
}

int trigger_config_parse_string(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                char **ret_valid) {
        int k = config_parse_string(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        return record(ctx, field);
}

int trigger_config_parse_bool(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid) {
        int k = config_parse_bool(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        return record(ctx, field);
}

int trigger_config_parse_state(const ConfigParserContext *ctx, const char *rvalue, void *field,
                               char **ret_valid) {
        for (int i = 0; i < _TRIGGER_OFFCPU_STATE_MAX; i++)
                if (streq(rvalue, trigger_offcpu_state_names[i])) {
                        *(int *) field = i;
                        return record(ctx, field);
                }
        return valid(ret_valid, "one of: any, uninterruptible");
}

int trigger_config_parse_duration(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                  char **ret_valid) {
        int k = config_parse_duration(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        return record(ctx, field);
}

int trigger_config_parse_uint32(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                char **ret_valid) {
        int k = config_parse_uint32(ctx, rvalue, field, ret_valid);
        if (k < 0)
                return k;
        return record(ctx, field);
}

/* "5", "0.5", "2.25%": stored in hundredths of a percent. */
int trigger_config_parse_percent(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                 char **ret_valid) {
        uint64_t ip = 0, fp = 0;
        unsigned digits = 0;
        const char *p = rvalue;

        if (!isdigit((unsigned char) *p))
                goto bad;
        for (; isdigit((unsigned char) *p); p++) {
                ip = ip * 10 + (uint64_t) (*p - '0');
                if (ip > 100)
                        goto bad;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        goto bad;
                for (; isdigit((unsigned char) *p); p++)
                        if (digits < 2) {
                                fp = fp * 10 + (uint64_t) (*p - '0');
                                digits++;
                        }
        }
        for (; digits < 2; digits++)
                fp *= 10;
        if (*p == '%')
                p++;
        if (*p != 0 || ip * 100 + fp > 10000)
                goto bad;
        *(uint32_t *) field = (uint32_t) (ip * 100 + fp);
        return record(ctx, field);
bad:
        return valid(ret_valid,
                     "a percentage from 0 to 100 with at most two decimals, e.g. 5 or 0.5 (0 turns "
                     "the guard off)");
}

/* ---- checks ---- */

static int check_fail(TriggerConfig *t, TriggerKey k, const char *fmt, ...) _printf_(3, 4);
static int check_fail(TriggerConfig *t, TriggerKey k, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        const char *file = t->file;
        unsigned line = t->line;
        va_list ap;
        int r;

        if (k < _TRIGGER_KEY_MAX && t->where[k].file) {
                file = t->where[k].file;
                line = t->where[k].line;
        }
        va_start(ap, fmt);
        r = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(t->error);
        if (asprintf(&t->error, "%s:%u: [Trigger:%s] %s", file, line, t->name, what) < 0) {
                t->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static bool is_set(const TriggerConfig *t, TriggerKey k) {
        return t->where[k].file != NULL;
}

static int check_pids(TriggerConfig *t) {
        t->n_pids = 0;
        for (char **p = t->pid_list; p && *p; p++) {
                uint32_t v;

                if (parse_uint32(*p, &v) < 0 || v == 0)
                        return check_fail(t, TRIGGER_KEY_PID, "PID=%s: not a process id", *p);
                if (t->n_pids >= TRIGGER_FILTER_PIDS_MAX)
                        return check_fail(t, TRIGGER_KEY_PID, "PID= lists more than %d processes",
                                          TRIGGER_FILTER_PIDS_MAX);
                t->pids[t->n_pids++] = v;
        }
        return 0;
}

static int check_type_specific(TriggerConfig *t) {
        switch (t->type) {
        case TRIGGER_TYPE_SYSCALL_LATENCY:
                if (!t->syscalls || !t->syscalls[0])
                        return check_fail(t, TRIGGER_KEY_TYPE,
                                          "Type=syscall-latency needs Syscall=, the system calls to time, "
                                          "e.g. "
                                          "Syscall=read write fsync");
                memset(t->syscall_mask, 0, sizeof t->syscall_mask);
                for (char **s = t->syscalls; *s; s++) {
                        int nr = trigger_syscall_from_name(*s);
                        if (nr < 0)
                                return check_fail(t, TRIGGER_KEY_SYSCALL,
                                                  "Syscall=%s: unknown system call (x86-64 names as in "
                                                  "syscalls(2), e.g. read, nanosleep, futex)",
                                                  *s);
                        t->syscall_mask[nr / 64] |= UINT64_C(1) << (nr % 64);
                }
                break;

        case TRIGGER_TYPE_FUNCTION_LATENCY:
        case TRIGGER_TYPE_FUNCTION_HIT: {
                _cleanup_free_ char *error = NULL;
                TriggerElfSymbol sym;
                int k;

                if (!t->binary || !t->function)
                        return check_fail(t, TRIGGER_KEY_TYPE,
                                          "Type=%s needs Binary= (the executable or library) and Function= "
                                          "(the "
                                          "symbol to probe)",
                                          trigger_type_names[t->type]);
                k = trigger_elf_find_function(t->binary, t->function, &sym, &error);
                if (k == -ENOMEM)
                        return k;
                if (k == -ESRCH || k == -ENOTUNIQ)
                        return check_fail(t, TRIGGER_KEY_FUNCTION, "Function=%s: %s", t->function,
                                          strna(error));
                if (k < 0)
                        return check_fail(t, TRIGGER_KEY_BINARY, "Binary=%s: %s", t->binary, strna(error));
                t->function_offset = sym.offset;
                t->function_address = sym.address;
                break;
        }

        case TRIGGER_TYPE_CRASH:
                t->signal_mask = 0;
                if (!t->signals || !t->signals[0])
                        for (size_t i = 0; i < ELEMENTSOF(default_signals); i++)
                                t->signal_mask |= UINT64_C(1) << default_signals[i];
                for (char **s = t->signals; s && *s; s++) {
                        int sig = trigger_signal_from_string(*s);
                        if (sig < 0)
                                return check_fail(t, TRIGGER_KEY_SIGNALS,
                                                  "Signals=%s: unknown signal (names such as SIGSEGV or "
                                                  "SEGV, or "
                                                  "numbers)",
                                                  *s);
                        t->signal_mask |= UINT64_C(1) << sig;
                }
                break;

        case TRIGGER_TYPE_UNIT:
                if (!t->units || !t->units[0])
                        return check_fail(t, TRIGGER_KEY_TYPE,
                                          "Type=unit needs Units=, the units to watch (globs, e.g. "
                                          "Units=myapp.service *.mount)");
                if (strv_length(t->units) > TRIGGER_UNITS_MAX)
                        return check_fail(t, TRIGGER_KEY_UNITS, "Units= lists more than %d patterns",
                                          TRIGGER_UNITS_MAX);
                for (char **r = t->results; r && *r; r++) {
                        bool known = false;
                        for (size_t i = 0; unit_results[i]; i++)
                                if (streq(unit_results[i], *r))
                                        known = true;
                        if (!known || streq(*r, "success"))
                                return check_fail(t, TRIGGER_KEY_RESULT,
                                                  "Result=%s: not a failed unit's result (one of: protocol, "
                                                  "timeout, exit-code, signal, core-dump, watchdog, "
                                                  "start-limit-hit, resources, oom-kill)",
                                                  *r);
                }
                break;

        default:
                break;
        }
        return 0;
}

int trigger_config_check(TriggerConfig *t) {
        unsigned allowed;
        int k;

        if (t->error)
                return -EINVAL; /* from parsing, with its file:line */
        if (t->type < 0 || t->type >= _TRIGGER_TYPE_MAX)
                return check_fail(t, _TRIGGER_KEY_MAX,
                                  "has no Type=: one of sched-latency, syscall-latency, function-latency, "
                                  "function-hit, offcpu, crash, unit");

        allowed = type_keys[t->type] | GOVERNANCE_KEYS;
        for (unsigned i = 0; i < _TRIGGER_KEY_MAX; i++)
                if (is_set(t, i) && !(allowed & KEY(i)))
                        return check_fail(t, i, "%s= does not apply to Type=%s", key_names[i],
                                          trigger_type_names[t->type]);

        if ((type_keys[t->type] & KEY(TRIGGER_KEY_THRESHOLD)) && t->threshold == 0)
                return check_fail(t, TRIGGER_KEY_TYPE, "Type=%s needs Threshold=, e.g. Threshold=10ms",
                                  trigger_type_names[t->type]);
        if (strv_length(t->comms) > TRIGGER_FILTER_COMMS_MAX)
                return check_fail(t, TRIGGER_KEY_COMM, "Comm= lists more than %d names",
                                  TRIGGER_FILTER_COMMS_MAX);
        if (strv_length(t->thread_comms) > TRIGGER_FILTER_COMMS_MAX)
                return check_fail(t, TRIGGER_KEY_THREAD_COMM, "ThreadComm= lists more than %d names",
                                  TRIGGER_FILTER_COMMS_MAX);
        k = check_pids(t);
        if (k < 0)
                return k;
        if (t->cgroup && strlen(t->cgroup) > 4096)
                return check_fail(t, TRIGGER_KEY_CGROUP, "Cgroup= is longer than a path can be");
        if (t->max_per_hour > 3600)
                return check_fail(t, TRIGGER_KEY_MAX_PER_HOUR,
                                  "MaxPerHour=%" PRIu32 " is above 3600 (one a second); use 0 for no limit",
                                  t->max_per_hour);
        if (t->min_interval == USEC_INFINITY)
                return check_fail(t, TRIGGER_KEY_MIN_INTERVAL,
                                  "MinIntervalSec=infinity would never snapshot; remove the trigger "
                                  "instead");
        return check_type_specific(t);
}

int trigger_config_check_all(TriggerConfig *list, char ***warnings) {
        for (TriggerConfig *t = list; t; t = t->next) {
                bool reported = t->error != NULL; /* the parser reported it already */
                int k = trigger_config_check(t);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && !reported && warnings) {
                        k = strv_extend(warnings, t->error);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}
