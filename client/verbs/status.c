/* SPDX-License-Identifier: MIT */

/*
 * ptctl status: what ptraced records and what it has done
 * (io.ptraced.Status), for humans like `chronyc tracking`, or as JSON.
 * Exits 0 whenever the daemon answered, whatever its state; the state is
 * the first line (and "state" in JSON) for scripts.
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "client/verbs/bundles.h"
#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

#define STATUS_TIMEOUT (10 * USEC_PER_SEC)

static const struct option status_options[] = {
        { "help", no_argument, NULL, 'h' },
        {},
};

static void help(void) {
        printf("Usage: ptctl status [OPTIONS...]\n"
               "\n"
               "Show what ptraced records: state, CPUs, buffers, achieved lookback,\n"
               "snapshots and bundles, rate limits, every trigger with its counters, the\n"
               "watchdogs, the control socket's counters, the last error.\n"
               "\n"
               "  -h --help               Show this help\n"
               "     --json               The daemon's Status reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n",
               PTRACED_SOCKET_PATH);
}

static void field(const char *name, const char *fmt, ...) _printf_(2, 3);
static void field(const char *name, const char *fmt, ...) {
        va_list ap;

        printf("%12s: ", name);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
}

static void print_text_field(const char *name, const char *value) {
        printf("%12s: ", name);
        fputs_escaped(stdout, value, 0);
        putchar('\n');
}

/* CPUs whose events were reopened after a hotplug or a resume: their trace
 * from before then is gone. */
static void print_restarts(struct json_object *s) {
        struct json_object *list;
        char t[FORMAT_TIMESTAMP_MAX];

        if (!json_object_object_get_ex(s, "cpu_restarts", &list) || !json_object_is_type(list, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *e = json_object_array_get_idx(list, i);
                int64_t count = ptctl_json_int(e, "count", 0);

                field("Restarted", "CPU %" PRIi64 ": %" PRIi64 " time%s, last %s (hotplug or resume: its trace "
                                   "before then is gone)",
                      ptctl_json_int(e, "cpu", -1), count, count == 1 ? "" : "s",
                      format_timestamp(t, sizeof t, (usec_t) MAX(ptctl_json_int(e, "time_usec", 0), (int64_t) 0)));
        }
}

static struct json_object *array_of(struct json_object *s, const char *key) {
        struct json_object *a;

        if (!json_object_object_get_ex(s, key, &a) || !json_object_is_type(a, json_type_array))
                return NULL;
        return a;
}

/* Each [Trigger:NAME]: state, then what it did, the BPF program's own
 * counts where it has one. */
static void print_triggers(struct json_object *s) {
        struct json_object *list = array_of(s, "triggers");
        char t[FORMAT_TIMESPAN_MAX];

        for (size_t i = 0; list && i < json_object_array_length(list); i++) {
                struct json_object *e = json_object_array_get_idx(list, i);
                const char *state = ptctl_json_string(e, "state") ?: "unknown", *error = ptctl_json_string(e, "error");
                int64_t left = ptctl_json_int(e, "suspended_remaining_usec", 0);

                printf("%12s: ", i == 0 ? "Triggers" : "");
                fputs_escaped(stdout, strna(ptctl_json_string(e, "name")), 32);
                printf(" (%s) %s", strna(ptctl_json_string(e, "type")), state);
                if (streq(state, "suspended") && left > 0)
                        printf(" for %s", format_timespan(t, sizeof t, (usec_t) left));
                printf(": %" PRIi64 " fired, %" PRIi64 " snapshots, %" PRIi64 " refused, %" PRIi64 " throttled",
                       ptctl_json_int(e, "fired", 0), ptctl_json_int(e, "snapshots", 0),
                       ptctl_json_int(e, "refused", 0), ptctl_json_int(e, "throttled", 0));
                if (ptctl_json_int(e, "kernel_reported", 0) || ptctl_json_int(e, "kernel_suppressed", 0) ||
                    ptctl_json_int(e, "kernel_dropped", 0))
                        printf("; BPF events %" PRIi64 " reported, %" PRIi64 " suppressed, %" PRIi64 " dropped",
                               ptctl_json_int(e, "kernel_reported", 0), ptctl_json_int(e, "kernel_suppressed", 0),
                               ptctl_json_int(e, "kernel_dropped", 0));
                if (error) {
                        fputs(" (", stdout);
                        fputs_escaped(stdout, error, 0);
                        putchar(')');
                }
                putchar('\n');
        }
}

static void print_watchdogs_and_control(struct json_object *s) {
        struct json_object *list = array_of(s, "watchdogs"), *c;
        char t[FORMAT_TIMESPAN_MAX];

        for (size_t i = 0; list && i < json_object_array_length(list); i++) {
                struct json_object *e = json_object_array_get_idx(list, i);

                printf("%12s: ", i == 0 ? "Watchdogs" : "");
                fputs_escaped(stdout, strna(ptctl_json_string(e, "name")), 64);
                printf(" every %s, %s; %" PRIi64 " pings, %" PRIi64 " fired\n",
                       format_timespan(t, sizeof t, (usec_t) MAX(ptctl_json_int(e, "timeout_usec", 0), (int64_t) 0)),
                       ptctl_json_bool(e, "armed", false) ? "armed" : "fired (waits for a ping)",
                       ptctl_json_int(e, "pings", 0), ptctl_json_int(e, "fired", 0));
        }
        if (json_object_object_get_ex(s, "control", &c))
                field("Control", "%" PRIi64 " connections now, %" PRIi64 " accepted, %" PRIi64 " refused, %" PRIi64
                                 " timed out, %" PRIi64 " protocol errors",
                      ptctl_json_int(c, "connections", 0), ptctl_json_int(c, "accepted", 0),
                      ptctl_json_int(c, "refused", 0), ptctl_json_int(c, "timed_out", 0),
                      ptctl_json_int(c, "protocol_errors", 0));
}

static void print_human(struct json_object *s) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];
        const char *state = ptctl_json_string(s, "state") ?: "unknown";
        const char *status = ptctl_json_string(s, "status"), *last = ptctl_json_string(s, "last_error");
        int64_t rec = ptctl_json_int(s, "cpus_recording", 0), total = ptctl_json_int(s, "cpus_total", 0);
        int64_t lookback = ptctl_json_int(s, "lookback_usec", 0), rate = ptctl_json_int(s, "max_rate", 0);
        int64_t interval = ptctl_json_int(s, "rate_limit_interval_usec", 0);
        int64_t burst = ptctl_json_int(s, "rate_limit_burst", 0), left = ptctl_json_int(s, "rate_limit_remaining", -1);
        int64_t warmup = ptctl_json_int(s, "warmup_remaining_usec", 0);

        printf("ptraced: ");
        fputs_escaped(stdout, state, 0);
        puts(ptctl_json_bool(s, "simulated", false) ? " (simulated: the emulated intel_pt PMU)" : "");
        if (status)
                print_text_field("Status", status);
        print_text_field("Source", ptctl_json_string(s, "source") ?: "unknown");
        field("CPUs", "%" PRIi64 " of %" PRIi64 " recording", rec, total);
        print_restarts(s);
        field("Buffers", "%s trace + %s side-band per CPU (MemoryMax %s)",
              format_bytes(a, sizeof a, (uint64_t) MAX(ptctl_json_int(s, "buffer_size", 0), (int64_t) 0)),
              format_bytes(b, sizeof b, (uint64_t) MAX(ptctl_json_int(s, "sideband_buffer_size", 0), (int64_t) 0)),
              format_bytes(c, sizeof c, (uint64_t) MAX(ptctl_json_int(s, "memory_max", 0), (int64_t) 0)));
        if (lookback > 0)
                /* An estimate from measured rates (a bundle's window is
                 * what ptctl list and info show): it says so. */
                field("Lookback", "≈ %s, estimated at the busiest CPU's %s/s", format_timespan(t, sizeof t, (usec_t) lookback),
                      format_bytes(a, sizeof a, (uint64_t) MAX(rate, (int64_t) 0)));
        else
                field("Lookback", "not measured yet");
        field("Snapshots", "%" PRIi64 " taken, %" PRIi64 " written, %" PRIi64 " failed, %" PRIi64 " coalesced, %" PRIi64
                           " refused",
              ptctl_json_int(s, "snapshots", 0), ptctl_json_int(s, "bundles_written", 0),
              ptctl_json_int(s, "bundles_failed", 0), ptctl_json_int(s, "triggers_coalesced", 0),
              ptctl_json_int(s, "triggers_refused", 0));
        if (interval > 0 && burst > 0)
                field("Rate limit", "%" PRIi64 " of %" PRIi64 " snapshots left per %s", MAX(left, (int64_t) 0), burst,
                      format_timespan(t, sizeof t, (usec_t) interval));
        else
                field("Rate limit", "none");
        if (warmup > 0)
                field("Warm-up", "%s left", format_timespan(t, sizeof t, (usec_t) warmup));
        if (ptctl_json_int(s, "sideband_lost", 0) > 0)
                field("Side-band", "%" PRIi64 " records lost (repaired from /proc)", ptctl_json_int(s, "sideband_lost", 0));
        print_triggers(s);
        print_watchdogs_and_control(s);
        if (last)
                print_text_field("Last error", last);
        print_text_field("Bundles", ptctl_json_string(s, "directory") ?: "unknown");
        field("Uptime", "%s", format_timespan(t, sizeof t, (usec_t) MAX(ptctl_json_int(s, "uptime_usec", 0), (int64_t) 0)));
}

static int verb_status_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        VarlinkReply reply = {};
        int r;

        r = ptctl_parse_help_only(&verb_status, argc, argv, 0, help);
        if (r >= 0)
                return r;
        r = ptctl_daemon_connect_and_call(&c, PTRACED_METHOD_STATUS, NULL, STATUS_TIMEOUT, "Status", &reply);
        if (r != 0)
                return r;
        if (arg_globals.json)
                r = ptctl_print_json(reply.parameters);
        else
                print_human(reply.parameters);
        varlink_reply_done(&reply);
        return r < 0 ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
}

static const char *const status_methods[] = { PTRACED_METHOD_STATUS, NULL };

const Verb verb_status = {
        .name = "status",
        .summary = "Show what ptraced records and has done",
        .run = verb_status_run,
        .options = status_options,
        .short_options = "h",
        .methods = status_methods,
};
