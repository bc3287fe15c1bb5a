/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * [Trigger:NAME] sections of ptraced.conf: any number of automatic triggers,
 * each with a Type= and the keys that type takes. Parsed through the config
 * parser's section template (conf-parser.h): an error in one section
 * invalidates that trigger only, with a message naming file:line, and the
 * others still load. After parsing, trigger_config_check() validates what a
 * single key cannot (a type's required keys, keys that do not apply to the
 * type) and resolves names: system calls to numbers, signals to a mask,
 * Function= to a file offset in Binary= (libelf), with the same file:line
 * messages.
 *
 * The items are TRIGGER_CONFIG_ITEMS, spliced into ptraced_config_items so
 * one table (and ptraced.conf(5)'s check) covers every key.
 *
 * Crash triggers and systemd unit watches are types of [Trigger:NAME] too
 * (Type=crash, Type=unit), not sections of their own: one syntax, and the
 * same per-trigger governance (MinIntervalSec=, MaxPerHour=, the guard)
 * for everything that snapshots by itself. Heartbeat watchdogs are not
 * configured at all: clients register them (daemon/trigger/watchdog.h).
 */

#include "common/basic/conf-parser.h"
#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/trigger/event.h"

typedef enum TriggerType {
        TRIGGER_TYPE_SCHED_LATENCY,
        TRIGGER_TYPE_SYSCALL_LATENCY,
        TRIGGER_TYPE_FUNCTION_LATENCY,
        TRIGGER_TYPE_FUNCTION_HIT,
        TRIGGER_TYPE_OFFCPU,
        TRIGGER_TYPE_CRASH,
        TRIGGER_TYPE_UNIT,
        _TRIGGER_TYPE_MAX,
        _TRIGGER_TYPE_INVALID = -1,
} TriggerType;

extern const char *const trigger_type_names[];

/* State= of Type=offcpu. */
typedef enum TriggerOffcpuState {
        TRIGGER_OFFCPU_ANY,             /* any sleep that is not runnable */
        TRIGGER_OFFCPU_UNINTERRUPTIBLE, /* D state, as the hung task detector */
        _TRIGGER_OFFCPU_STATE_MAX,
} TriggerOffcpuState;

extern const char *const trigger_offcpu_state_names[];

/* Keys whose place in the files is remembered, for messages written after
 * parsing (trigger_config_check()). */
typedef enum TriggerKey {
        TRIGGER_KEY_TYPE,
        TRIGGER_KEY_THRESHOLD,
        TRIGGER_KEY_COMM,
        TRIGGER_KEY_THREAD_COMM,
        TRIGGER_KEY_PID,
        TRIGGER_KEY_CGROUP,
        TRIGGER_KEY_SYSCALL,
        TRIGGER_KEY_BINARY,
        TRIGGER_KEY_FUNCTION,
        TRIGGER_KEY_SIGNALS,
        TRIGGER_KEY_INCLUDE_HANDLED,
        TRIGGER_KEY_STATE,
        TRIGGER_KEY_UNITS,
        TRIGGER_KEY_RESULT,
        TRIGGER_KEY_MIN_INTERVAL,
        TRIGGER_KEY_MAX_PER_HOUR,
        TRIGGER_KEY_MAX_DUMP_CPU,
        _TRIGGER_KEY_MAX,
} TriggerKey;

typedef struct TriggerLocation {
        char *file; /* NULL: the key was not given */
        unsigned line;
} TriggerLocation;

/* Per-trigger governance defaults (documented in ptraced.conf(5)). */
#define TRIGGER_MIN_INTERVAL_DEFAULT (10 * USEC_PER_SEC)
#define TRIGGER_MAX_PER_HOUR_DEFAULT 60
#define TRIGGER_MAX_DUMP_CPU_DEFAULT 500 /* hundredths of a percent: 5% */
#define TRIGGER_NAME_MAX 64
#define TRIGGER_UNITS_MAX 64

typedef struct TriggerConfig TriggerConfig;

struct TriggerConfig {
        TriggerConfig *next;
        char *name;
        char *file; /* where the section first appeared */
        unsigned line;
        char *error; /* non-NULL: invalid, not loaded; the message */

        int type; /* TriggerType */
        usec_t threshold;
        char **comms;        /* the process's (thread group leader's) name */
        char **thread_comms; /* the thread's own name */
        char **pid_list;
        char *cgroup;
        char **syscalls;
        char *binary;
        char *function;
        char **signals;
        bool include_handled;
        int offcpu_state; /* TriggerOffcpuState */
        char **units;     /* fnmatch() globs */
        char **results;   /* systemd Result= values; empty: any failure */
        usec_t min_interval;
        uint32_t max_per_hour;  /* 0: unlimited */
        uint32_t max_dump_cpu;  /* hundredths of a percent; 0: no guard */
        TriggerLocation where[_TRIGGER_KEY_MAX];

        /* Resolved by trigger_config_check(). */
        uint32_t pids[TRIGGER_FILTER_PIDS_MAX];
        unsigned n_pids;
        uint64_t syscall_mask[TRIGGER_SYSCALL_NR_MAX / 64];
        uint64_t signal_mask;
        uint64_t function_offset;  /* file offset of Function= in Binary= (the uprobe's) */
        uint64_t function_address; /* its st_value */
};

/* The [Trigger:NAME] section of a config parser's template (see
 * ptraced_config_templates): the trigger of that name in *list, added at
 * its end when new (a repeated name, in a drop-in, adds to the same one).
 * NULL with *ret_error for a bad name, NULL alone without memory. */
void *trigger_config_list_section(TriggerConfig **list, const char *name, const char *filename, unsigned line,
                                  char **ret_error);
/* An error in the trigger's section: it stays in the list, not running. */
void trigger_config_invalidate(TriggerConfig *t, const char *error);

int trigger_config_parse_type(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid);
int trigger_config_parse_threshold(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                   char **ret_valid);
int trigger_config_parse_comm(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid);
int trigger_config_parse_words(const ConfigParserContext *ctx, const char *rvalue, void *field,
                               char **ret_valid);
int trigger_config_parse_path(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid);
int trigger_config_parse_string(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                char **ret_valid);
int trigger_config_parse_bool(const ConfigParserContext *ctx, const char *rvalue, void *field,
                              char **ret_valid);
int trigger_config_parse_state(const ConfigParserContext *ctx, const char *rvalue, void *field,
                               char **ret_valid);
int trigger_config_parse_duration(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                  char **ret_valid);
int trigger_config_parse_uint32(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                char **ret_valid);
int trigger_config_parse_percent(const ConfigParserContext *ctx, const char *rvalue, void *field,
                                 char **ret_valid);

/* Each parser records where its key was set: .arg is the key's TriggerKey. */
#define TRIGGER_ITEM(key, parser, field, k)                                                                 \
        { "Trigger:", key, parser, offsetof(TriggerConfig, field), (const void *) (uintptr_t) (k) }

#define TRIGGER_CONFIG_ITEMS                                                                                \
        TRIGGER_ITEM("Type", trigger_config_parse_type, type, TRIGGER_KEY_TYPE),                            \
        TRIGGER_ITEM("Threshold", trigger_config_parse_threshold, threshold, TRIGGER_KEY_THRESHOLD),        \
        TRIGGER_ITEM("Comm", trigger_config_parse_comm, comms, TRIGGER_KEY_COMM),                           \
        TRIGGER_ITEM("ThreadComm", trigger_config_parse_comm, thread_comms, TRIGGER_KEY_THREAD_COMM),       \
        TRIGGER_ITEM("PID", trigger_config_parse_words, pid_list, TRIGGER_KEY_PID),                         \
        TRIGGER_ITEM("Cgroup", trigger_config_parse_path, cgroup, TRIGGER_KEY_CGROUP),                      \
        TRIGGER_ITEM("Syscall", trigger_config_parse_words, syscalls, TRIGGER_KEY_SYSCALL),                 \
        TRIGGER_ITEM("Binary", trigger_config_parse_path, binary, TRIGGER_KEY_BINARY),                      \
        TRIGGER_ITEM("Function", trigger_config_parse_string, function, TRIGGER_KEY_FUNCTION),              \
        TRIGGER_ITEM("Signals", trigger_config_parse_words, signals, TRIGGER_KEY_SIGNALS),                  \
        TRIGGER_ITEM("IncludeHandled", trigger_config_parse_bool, include_handled,                          \
                     TRIGGER_KEY_INCLUDE_HANDLED),                                                          \
        TRIGGER_ITEM("State", trigger_config_parse_state, offcpu_state, TRIGGER_KEY_STATE),                 \
        TRIGGER_ITEM("Units", trigger_config_parse_words, units, TRIGGER_KEY_UNITS),                        \
        TRIGGER_ITEM("Result", trigger_config_parse_words, results, TRIGGER_KEY_RESULT),                    \
        TRIGGER_ITEM("MinIntervalSec", trigger_config_parse_duration, min_interval,                         \
                     TRIGGER_KEY_MIN_INTERVAL),                                                             \
        TRIGGER_ITEM("MaxPerHour", trigger_config_parse_uint32, max_per_hour, TRIGGER_KEY_MAX_PER_HOUR),    \
        TRIGGER_ITEM("MaxDumpCPUPercent", trigger_config_parse_percent, max_dump_cpu,                       \
                     TRIGGER_KEY_MAX_DUMP_CPU)

TriggerConfig *trigger_config_free(TriggerConfig *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerConfig *, trigger_config_free);
/* Free a whole list. */
void trigger_config_list_free(TriggerConfig *list);
/* Deep copy of a list (the manager keeps its own). */
int trigger_config_list_copy(const TriggerConfig *list, TriggerConfig **ret);

/* Do both lists ask for the same triggers, in the same order? (ptraced's
 * reload keeps the running triggers, counters and suspensions, when so.) */
bool trigger_config_list_equal(const TriggerConfig *a, const TriggerConfig *b);

/* Validate and resolve one trigger. On a problem returns -EINVAL and sets
 * t->error to "FILE:LINE: [Trigger:NAME] ...". -ENOMEM otherwise. */
int trigger_config_check(TriggerConfig *t);
/* Check every trigger of the list; each invalid one's message is appended to
 * *warnings (the others load). */
int trigger_config_check_all(TriggerConfig *list, char ***warnings);

/* Lookups, also used by the daemon for details and messages. */
int trigger_syscall_from_name(const char *name);
const char *trigger_syscall_to_name(long nr);
int trigger_signal_from_string(const char *s);
