/* SPDX-License-Identifier: MIT */

/*
 * ptctl list: the bundles in the bundles directory, oldest first (like
 * coredumpctl list), read directly from the directory — the daemon need
 * not run. Exits PTCTL_EXIT_NO_MATCH when nothing matches, so scripts can
 * test for "is there a bundle since X".
 */

#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>

#include "client/verbs/bundles.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"

#define ID_SHOWN 12
#define REASON_SHOWN 24
#define SOURCE_SHOWN 10

typedef struct ListArgs {
        const char *directory;
        uint64_t max_rows; /* -n; UINT64_MAX = all */
        usec_t since, until;
        const char *reason;
} ListArgs;

static void help(void) {
        printf("Usage: ptctl list [OPTIONS...]\n"
               "\n"
               "List the bundles in the bundles directory, oldest first.\n"
               "\n"
               "  -h --help               Show this help\n"
               "  -D --directory DIR      Bundles directory (default %s)\n"
               "  -n N                    Show only the N most recent bundles\n"
               "  -S --since TIME         Only bundles triggered at or after TIME\n"
               "  -U --until TIME         Only bundles triggered at or before TIME\n"
               "  -r --reason PATTERN     Only bundles whose reason matches (shell glob)\n"
               "     --json               JSON array instead of a table\n"
               "\n"
               "TIME: \"2024-05-01 12:00\", \"today\", \"yesterday\", \"-1h\", \"30min ago\", \"@EPOCH\".\n"
               "Exits 4 when no bundle matches.\n",
               PTRACED_BUNDLE_DIR);
}

/* Also exposed through verb_list, so ptctl(1) can be checked against it. */
static const struct option list_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "directory", required_argument, NULL, 'D' },
        { "since", required_argument, NULL, 'S' },
        { "until", required_argument, NULL, 'U' },
        { "reason", required_argument, NULL, 'r' },
        {},
};
#define LIST_SHORT_OPTIONS "hD:n:S:U:r:"

static int parse_args(int argc, char **argv, ListArgs *a) {
        usec_t now = now_usec(CLOCK_REALTIME);
        int c;

        while ((c = getopt_long(argc, argv, LIST_SHORT_OPTIONS, list_options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'D':
                        a->directory = optarg;
                        break;
                case 'n':
                        if (parse_uint64(optarg, &a->max_rows) < 0 || a->max_rows == 0) {
                                log_error("-n needs a positive number, not '%s'", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'S':
                case 'U':
                        if (ptctl_parse_timestamp(optarg, now, c == 'S' ? &a->since : &a->until) < 0) {
                                log_error("invalid time '%s' for --%s; see 'ptctl list --help'", optarg,
                                          c == 'S' ? "since" : "until");
                                return -EINVAL;
                        }
                        break;
                case 'r':
                        a->reason = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("ptctl list takes no arguments; unexpected '%s'", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static bool row_matches(const ListArgs *a, const BundleRow *r) {
        if (r->time_usec < a->since || r->time_usec > a->until)
                return false;
        /* A bundle we cannot read has no known reason: it cannot match one. */
        if (a->reason && (!r->reason || fnmatch(a->reason, r->reason, 0) != 0))
                return false;
        return true;
}

static char *format_cpus(const BundleRow *r, char buf[static 24]) {
        if (!r->id)
                snprintf(buf, 24, "-");
        else if (r->cpus_with_data == r->cpus_total)
                snprintf(buf, 24, "%u", r->cpus_total);
        else
                snprintf(buf, 24, "%u/%u", r->cpus_with_data, r->cpus_total);
        return buf;
}

static char *format_lookback(const BundleRow *r, char buf[static FORMAT_TIMESPAN_MAX]) {
        if (!r->id || r->lookback_ns == 0)
                return strcpy(buf, "-");
        /* Lookbacks are milliseconds; keep sub-ms visible. */
        if (r->lookback_ns < NSEC_PER_MSEC)
                snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "us", r->lookback_ns / NSEC_PER_USEC);
        else
                format_timespan(buf, FORMAT_TIMESPAN_MAX, r->lookback_ns / NSEC_PER_USEC);
        return buf;
}

/* Escaped strings are ASCII except for a cut's "…" (3 bytes, 1 column). */
static void print_padded(const char *s, size_t width) {
        size_t cols = strlen(s);

        if (strstr(s, "\xe2\x80\xa6"))
                cols -= 2;
        printf("%s%*s ", s, (int) (width - MIN(cols, width)), "");
}

static int print_table(BundleRow *rows, size_t n) {
        printf("%-19s %-*s %-*s %-*s %5s %10s %8s %s\n", "TIME", ID_SHOWN, "ID", REASON_SHOWN, "REASON", SOURCE_SHOWN,
               "SOURCE", "CPUS", "SIZE", "LOOKBACK", "STATE");
        for (size_t i = 0; i < n; i++) {
                const BundleRow *r = &rows[i];
                char t[FORMAT_TIMESTAMP_MAX], cpus[24], size[FORMAT_BYTES_MAX], lb[FORMAT_TIMESPAN_MAX];
                _cleanup_free_ char *reason = escape_string(r->reason ?: "-", REASON_SHOWN),
                                    *source = escape_string(r->source ?: "-", SOURCE_SHOWN);

                if (!reason || !source)
                        return log_oom();
                printf("%-19s %-*.*s ", format_timestamp(t, sizeof t, r->time_usec), ID_SHOWN, ID_SHOWN,
                       r->id ?: "-");
                print_padded(reason, REASON_SHOWN);
                print_padded(source, SOURCE_SHOWN);
                printf("%5s %10s %8s %s%s\n", format_cpus(r, cpus), format_bytes(size, sizeof size, r->file_size),
                       format_lookback(r, lb), bundle_state_to_string(r->state), r->simulated ? " (simulated)" : "");
        }
        return 0;
}

static int print_json(BundleRow *rows, size_t n) {
        struct json_object *a = json_object_new_array();
        const char *s;

        if (!a)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                const BundleRow *r = &rows[i];
                struct json_object *o = json_object_new_object();
                char t[FORMAT_TIMESTAMP_MAX];

                if (!o) {
                        json_object_put(a);
                        return log_oom();
                }
                json_object_object_add(o, "time", json_object_new_string(format_timestamp(t, sizeof t, r->time_usec)));
                json_object_object_add(o, "time_usec", json_object_new_uint64(r->time_usec));
                json_object_object_add(o, "id", r->id ? json_object_new_string(r->id) : NULL);
                json_object_object_add(o, "path", json_object_new_string(r->path));
                json_object_object_add(o, "reason", r->reason ? json_object_new_string(r->reason) : NULL);
                json_object_object_add(o, "source", r->source ? json_object_new_string(r->source) : NULL);
                json_object_object_add(o, "cpus", r->id ? json_object_new_int64(r->cpus_with_data) : NULL);
                json_object_object_add(o, "cpus_total", r->id ? json_object_new_int64(r->cpus_total) : NULL);
                json_object_object_add(o, "size", json_object_new_uint64(r->file_size));
                json_object_object_add(o, "lookback_ns", r->id ? json_object_new_uint64(r->lookback_ns) : NULL);
                json_object_object_add(o, "state", json_object_new_string(bundle_state_to_string(r->state)));
                json_object_object_add(o, "simulated", r->id ? json_object_new_boolean(r->simulated) : NULL);
                if (r->error)
                        json_object_object_add(o, "error", json_object_new_string(r->error));
                json_object_array_add(a, o);
        }
        s = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s) {
                json_object_put(a);
                return log_oom();
        }
        puts(s);
        json_object_put(a);
        return 0;
}

static int verb_list_run(int argc, char **argv) {
        ListArgs a = { .directory = PTRACED_BUNDLE_DIR, .max_rows = UINT64_MAX, .until = USEC_INFINITY };
        _cleanup_free_ char *error = NULL;
        BundleRow *rows = NULL;
        size_t n = 0, k = 0, first;
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? PTCTL_EXIT_USAGE : PTCTL_EXIT_OK;

        r = bundle_rows_load(a.directory, &rows, &n, &error);
        if (r == -ENOENT) {
                log_error("No bundles: %s does not exist.", a.directory);
                return PTCTL_EXIT_NO_MATCH;
        }
        if (r == -EACCES || r == -EPERM) {
                log_error("%s (bundles are readable by root and the ptraced group)", error);
                return PTCTL_EXIT_DENIED;
        }
        if (r < 0) {
                log_error_errno(r, "%s", error ?: "Failed to list bundles: %m");
                return PTCTL_EXIT_FAILURE;
        }

        /* Filter in place, then keep the newest max_rows. */
        for (size_t i = 0; i < n; i++)
                if (row_matches(&a, &rows[i])) {
                        BundleRow tmp = rows[k];
                        rows[k] = rows[i];
                        rows[i] = tmp;
                        k++;
                }
        first = k > a.max_rows ? k - (size_t) a.max_rows : 0;

        if (k == 0) {
                bundle_rows_free(rows, n);
                if (arg_globals.json)
                        puts("[]");
                else
                        log_error("No bundles found.");
                return PTCTL_EXIT_NO_MATCH;
        }
        r = arg_globals.json ? print_json(rows + first, k - first) : print_table(rows + first, k - first);
        bundle_rows_free(rows, n);
        return r < 0 ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
}

const Verb verb_list = {
        .name = "list",
        .summary = "List bundles (no daemon needed)",
        .run = verb_list_run,
        .options = list_options,
        .short_options = LIST_SHORT_OPTIONS,
};
