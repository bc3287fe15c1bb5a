/* SPDX-License-Identifier: MIT */

#include <stdarg.h>

#include "common/control/protocol.h"

static const ProtocolParameter snapshot_parameters[] = {
        { "reason", PROTOCOL_STRING, false, PTRACED_REASON_MAX },
        { "wait", PROTOCOL_BOOL, false },
        { NULL },
};

static const ProtocolParameter get_snapshot_parameters[] = {
        { "pending", PROTOCOL_HEX_ID, true },
        { NULL },
};

static const ProtocolParameter no_parameters[] = {
        { NULL },
};

static const ProtocolParameter watchdog_parameters[] = {
        { "name", PROTOCOL_STRING, true, PTRACED_WATCHDOG_NAME_MAX },
        { "timeout_usec", PROTOCOL_INT, true },
        { NULL },
};

static const ProtocolParameter watchdog_name_parameters[] = {
        { "name", PROTOCOL_STRING, true, PTRACED_WATCHDOG_NAME_MAX },
        { NULL },
};

static const ProtocolParameter get_interface_description_parameters[] = {
        { "interface", PROTOCOL_STRING, true, VARLINK_METHOD_NAME_MAX },
        { NULL },
};

const ProtocolMethod protocol_methods[] = {
        { PTRACED_METHOD_SNAPSHOT, PROTOCOL_ACCESS_PRIVILEGED, snapshot_parameters },
        { PTRACED_METHOD_GET_SNAPSHOT, PROTOCOL_ACCESS_READ, get_snapshot_parameters },
        { PTRACED_METHOD_STATUS, PROTOCOL_ACCESS_READ, no_parameters },
        { PTRACED_METHOD_LIST_BUNDLES, PROTOCOL_ACCESS_READ, no_parameters },
        { PTRACED_METHOD_WATCHDOG, PROTOCOL_ACCESS_PRIVILEGED, watchdog_parameters },
        { PTRACED_METHOD_WATCHDOG_PING, PROTOCOL_ACCESS_PRIVILEGED, watchdog_name_parameters },
        { PTRACED_METHOD_WATCHDOG_REMOVE, PROTOCOL_ACCESS_PRIVILEGED, watchdog_name_parameters },
        { VARLINK_METHOD_GET_INFO, PROTOCOL_ACCESS_ANYONE, no_parameters },
        { VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, PROTOCOL_ACCESS_ANYONE, get_interface_description_parameters },
        { NULL },
};

const char *const protocol_interfaces[] = {
        VARLINK_SERVICE_INTERFACE,
        PTRACED_INTERFACE,
        NULL,
};

/* The standard interface every varlink service provides, as the
 * specification defines it (method and error signatures are fixed by it). */
static const char varlink_service_description[] =
        "# The varlink service interface: every varlink service provides it, to\n"
        "# describe itself and the interfaces it implements.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Who made the service, its version, and the interfaces it implements.\n"
        "method GetInfo() -> (\n"
        "\tvendor: string,\n"
        "\tproduct: string,\n"
        "\tversion: string,\n"
        "\turl: string,\n"
        "\tinterfaces: []string\n"
        ")\n"
        "\n"
        "# The description of one of the interfaces the service implements.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "# The service does not implement that interface.\n"
        "error InterfaceNotFound (interface: string)\n"
        "\n"
        "# The interface has no such method.\n"
        "error MethodNotFound (method: string)\n"
        "\n"
        "# The interface declares the method, but this service does not implement it.\n"
        "error MethodNotImplemented (method: string)\n"
        "\n"
        "# A parameter is missing, unknown, or of the wrong type.\n"
        "error InvalidParameter (parameter: string)\n";

static const char ptraced_description[] =
        "# ptraced, the Intel Processor Trace flight recorder: take snapshots of\n"
        "# every CPU's trace and ask what the daemon records. See ptraced(8).\n"
        "#\n"
        "# Snapshot needs root or the ptraced group (checked with SO_PEERCRED);\n"
        "# Status, ListBundles and GetSnapshot are read-only and allowed to others\n"
        "# when ptraced.conf says [Control] ReadOnlyAccess=everyone.\n"
        "interface io.ptraced\n"
        "\n"
        "# A bundle in the bundles directory.\n"
        "type Bundle (\n"
        "\t# File name and full path.\n"
        "\tfile: string,\n"
        "\tpath: string,\n"
        "\t# Bytes on disk.\n"
        "\tsize: int,\n"
        "\t# Trigger time in microseconds since the epoch (the file's modification\n"
        "\t# time when its manifest cannot be read).\n"
        "\ttime_usec: int,\n"
        "\t# From the manifest; null when it cannot be read.\n"
        "\tid: ?string,\n"
        "\treason: ?string,\n"
        "\tsource: ?string,\n"
        "\tcpus: ?int,\n"
        "\tsimulated: ?bool\n"
        ")\n"
        "\n"
        "# Freeze every CPU's trace and write a bundle. The reason (default\n"
        "# \"manual\", at most 256 bytes of printable text) is stored in the bundle.\n"
        "# With wait (the default) the reply comes when the bundle is written and\n"
        "# names it; without, it comes at once with a pending id for GetSnapshot.\n"
        "# A request that arrives while a snapshot is being frozen joins it\n"
        "# (coalesced: the same bundle).\n"
        "method Snapshot(reason: ?string, wait: ?bool) -> (\n"
        "\t# With wait: the bundle.\n"
        "\tid: ?string,\n"
        "\tpath: ?string,\n"
        "\tsize: ?int,\n"
        "\tcoalesced: ?bool,\n"
        "\t# Without wait: the request, for GetSnapshot.\n"
        "\tpending: ?string\n"
        ")\n"
        "\n"
        "# The outcome of a snapshot requested without wait; the daemon remembers\n"
        "# the newest 128 requests. state is \"pending\", \"written\" or \"failed\";\n"
        "# a failed one has the error's name and message.\n"
        "method GetSnapshot(pending: string) -> (\n"
        "\tstate: string,\n"
        "\tid: ?string,\n"
        "\tpath: ?string,\n"
        "\tsize: ?int,\n"
        "\tcoalesced: ?bool,\n"
        "\terror: ?string,\n"
        "\tmessage: ?string\n"
        ")\n"
        "\n"
        "# A CPU whose trace was restarted: how often, and when last (microseconds\n"
        "# since the epoch).\n"
        "type CpuRestart (cpu: int, count: int, time_usec: int)\n"
        "\n"
        "# A [Trigger:NAME] of ptraced.conf. state: \"running\", \"suspended\" (by its\n"
        "# overhead guard, for suspended_remaining_usec) or \"not-running\" (error\n"
        "# says why). fired: requests sent; snapshots: bundles written for them;\n"
        "# refused: refused by governance or failed; throttled: events dropped by\n"
        "# MinIntervalSec=, MaxPerHour= or a suspension. The BPF program's own\n"
        "# counts: events reported, suppressed in the kernel while the trigger\n"
        "# may not fire, dropped because its ring was full. guard_cpu_usec: CPU\n"
        "# time its bundles cost within the overhead guard's window.\n"
        "type Trigger (name: string, type: ?string, state: string, error: ?string,\n"
        "\tsuspended_remaining_usec: int, fired: int, snapshots: int, refused: int,\n"
        "\tthrottled: int, kernel_reported: int, kernel_suppressed: int,\n"
        "\tkernel_dropped: int, guard_cpu_usec: int)\n"
        "\n"
        "# A heartbeat watchdog. armed is false once it fired, until its next ping;\n"
        "# last_ping_usec is wall-clock; pid, uid and comm name who pings it.\n"
        "type Watchdog (name: string, timeout_usec: int, remaining_usec: int,\n"
        "\tarmed: bool, last_ping_usec: int, pings: int, fired: int, pid: ?int,\n"
        "\tuid: ?int, comm: ?string)\n"
        "\n"
        "# The control socket since start: connections open now, accepted,\n"
        "# refused by the limits, closed by TimeoutSec=, protocol errors, calls,\n"
        "# and commands read from the FIFO.\n"
        "type ControlCounters (connections: int, accepted: int, refused: int,\n"
        "\ttimed_out: int, protocol_errors: int, calls: int, fifo_commands: int)\n"
        "\n"
        "# What the daemon records and what it has done since it started.\n"
        "method Status() -> (\n"
        "\t# \"warming-up\", \"recording\", \"degraded\" (some CPUs failed) or\n"
        "\t# \"not-recording\".\n"
        "\tstate: string,\n"
        "\t# The status line, as sent to systemd with STATUS=.\n"
        "\tstatus: string,\n"
        "\t# \"kernel\" (the intel_pt PMU) or \"sim\" (the emulated one).\n"
        "\tsource: string,\n"
        "\tsimulated: bool,\n"
        "\tcpus_recording: int,\n"
        "\tcpus_total: int,\n"
        "\t# CPUs whose trace was restarted: their events were reopened after\n"
        "\t# the CPU went offline and came back, or after a resume from\n"
        "\t# suspend; its trace from before that time is gone.\n"
        "\tcpu_restarts: []CpuRestart,\n"
        "\t# Bytes per CPU of the trace ring and of the side-band ring, and the\n"
        "\t# memory cap of all trace rings with their snapshot copies.\n"
        "\tbuffer_size: int,\n"
        "\tsideband_buffer_size: int,\n"
        "\tmemory_max: int,\n"
        "\t# History the rings hold at the busiest CPU's measured rate; 0 until\n"
        "\t# measured.\n"
        "\tlookback_usec: int,\n"
        "\t# Trace bytes per second of the busiest CPU; 0 until measured.\n"
        "\tmax_rate: int,\n"
        "\tsnapshots: int,\n"
        "\tbundles_written: int,\n"
        "\tbundles_failed: int,\n"
        "\ttriggers_coalesced: int,\n"
        "\ttriggers_refused: int,\n"
        "\tsideband_lost: int,\n"
        "\t# The newest refusal or failure, for humans; null when none.\n"
        "\tlast_error: ?string,\n"
        "\tdirectory: string,\n"
        "\tuptime_usec: int,\n"
        "\t# [Triggers] RateLimitIntervalSec= and RateLimitBurst=, and how many\n"
        "\t# snapshots the global limit allows right now.\n"
        "\trate_limit_interval_usec: int,\n"
        "\trate_limit_burst: int,\n"
        "\trate_limit_remaining: int,\n"
        "\twarmup_remaining_usec: int,\n"
        "\ttriggers: []Trigger,\n"
        "\twatchdogs: []Watchdog,\n"
        "\tcontrol: ControlCounters\n"
        ")\n"
        "\n"
        "# The bundles in the bundles directory, oldest first; at most the newest\n"
        "# 1024 (truncated says whether there were more).\n"
        "method ListBundles() -> (directory: string, bundles: []Bundle, truncated: bool)\n"
        "\n"
        "# Register a heartbeat watchdog, or change its timeout, and ping it: when\n"
        "# timeout_usec passes without a ping, the daemon takes a snapshot with\n"
        "# reason \"watchdog:NAME\" (once; the next ping arms it again). name: 1 to\n"
        "# 64 letters, digits and -_.@: characters; timeout_usec: 10 ms to 24 h.\n"
        "# registered is false when the watchdog existed. Calling it on every\n"
        "# ping (oneway) also survives a daemon restart.\n"
        "method Watchdog(name: string, timeout_usec: int) -> (registered: bool)\n"
        "\n"
        "# Ping a registered watchdog: its deadline moves to now + its timeout.\n"
        "method WatchdogPing(name: string) -> ()\n"
        "\n"
        "# Unregister a watchdog (a client that stops on purpose).\n"
        "method WatchdogRemove(name: string) -> ()\n"
        "\n"
        "# More snapshots than [Triggers] RateLimitBurst= (all sources) or\n"
        "# SourceRateLimitBurst= (this source) within RateLimitIntervalSec=.\n"
        "error RateLimited (message: string, retry_after_usec: int)\n"
        "\n"
        "# The daemon started less than [Triggers] WarmupSec= ago: the rings hold\n"
        "# too little yet.\n"
        "error WarmingUp (message: string, retry_after_usec: int)\n"
        "\n"
        "# A snapshot with the same reason was taken less than\n"
        "# [Triggers] DuplicateSuppressionSec= ago.\n"
        "error DuplicateSuppressed (message: string, retry_after_usec: int)\n"
        "\n"
        "# Only root and members of group ptraced may do this.\n"
        "error PermissionDenied (message: string)\n"
        "\n"
        "# No CPU is recording (the message says why).\n"
        "error NotRecording (message: string)\n"
        "\n"
        "# The memory for the next snapshot is not ready yet; retry.\n"
        "error Busy (message: string)\n"
        "\n"
        "# The snapshot could not be taken.\n"
        "error Failed (message: string)\n"
        "\n"
        "# The snapshot was taken but its bundle could not be written.\n"
        "error DumpFailed (message: string)\n"
        "\n"
        "# The daemon is stopping.\n"
        "error ShuttingDown (message: string)\n"
        "\n"
        "# GetSnapshot: the id is unknown or too old.\n"
        "error NoSuchSnapshot (message: string)\n"
        "\n"
        "# WatchdogPing, WatchdogRemove: no watchdog has that name.\n"
        "error NoSuchWatchdog (message: string)\n"
        "\n"
        "# Watchdog: 256 watchdogs are registered already.\n"
        "error TooManyWatchdogs (message: string)\n"
        "\n"
        "# A parameter is unknown, missing, of the wrong type or out of bounds.\n"
        "error InvalidParameter (parameter: string, message: string)\n"
        "\n"
        "# The message was not a valid call; the daemon closes the connection.\n"
        "error ProtocolError (message: string)\n"
        "\n"
        "# The message was longer than limit bytes; the daemon closes the\n"
        "# connection.\n"
        "error MessageTooLarge (message: string, limit: int)\n"
        "\n"
        "# No complete call arrived within [Control] TimeoutSec=; the daemon\n"
        "# closes the connection.\n"
        "error Timeout (message: string)\n"
        "\n"
        "# [Control] MaxConnections= reached; the daemon closes the connection.\n"
        "error TooManyConnections (message: string)\n";

static const char *const known_errors[] = {
        PTRACED_ERROR_RATE_LIMITED,
        PTRACED_ERROR_WARMING_UP,
        PTRACED_ERROR_DUPLICATE,
        PTRACED_ERROR_PERMISSION_DENIED,
        PTRACED_ERROR_NOT_RECORDING,
        PTRACED_ERROR_BUSY,
        PTRACED_ERROR_FAILED,
        PTRACED_ERROR_DUMP_FAILED,
        PTRACED_ERROR_SHUTTING_DOWN,
        PTRACED_ERROR_NO_SUCH_SNAPSHOT,
        PTRACED_ERROR_NO_SUCH_WATCHDOG,
        PTRACED_ERROR_TOO_MANY_WATCHDOGS,
        PTRACED_ERROR_INVALID_PARAMETER,
        PTRACED_ERROR_PROTOCOL,
        PTRACED_ERROR_MESSAGE_TOO_LARGE,
        PTRACED_ERROR_TIMEOUT,
        PTRACED_ERROR_TOO_MANY_CONNECTIONS,
        VARLINK_ERROR_INTERFACE_NOT_FOUND,
        VARLINK_ERROR_METHOD_NOT_FOUND,
        VARLINK_ERROR_METHOD_NOT_IMPLEMENTED,
        VARLINK_ERROR_INVALID_PARAMETER,
        NULL,
};

const ProtocolMethod *protocol_method_find(const char *name) {
        for (const ProtocolMethod *m = protocol_methods; m->name; m++)
                if (streq(m->name, name))
                        return m;
        return NULL;
}

bool protocol_interface_is_known(const char *interface, size_t length) {
        for (const char *const *i = protocol_interfaces; *i; i++)
                if (strlen(*i) == length && strncmp(*i, interface, length) == 0)
                        return true;
        return false;
}

const char *protocol_interface_description(const char *interface) {
        if (streq(interface, PTRACED_INTERFACE))
                return ptraced_description;
        if (streq(interface, VARLINK_SERVICE_INTERFACE))
                return varlink_service_description;
        return NULL;
}

bool protocol_error_is_known(const char *name) {
        for (const char *const *e = known_errors; *e; e++)
                if (streq(*e, name))
                        return true;
        return false;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF),
 * and no C0/C1 control characters or DEL: reasons end up in the journal,
 * in terminals and in file listings. */
bool protocol_text_is_valid(const char *s, size_t length) {
        const uint8_t *p = (const uint8_t *) s, *end = p + length;

        while (p < end) {
                uint32_t c;
                size_t n;

                if (p[0] < 0x80) {
                        if (p[0] < 0x20 || p[0] == 0x7f)
                                return false;
                        p++;
                        continue;
                }
                if ((p[0] & 0xe0) == 0xc0) {
                        c = p[0] & 0x1f;
                        n = 2;
                } else if ((p[0] & 0xf0) == 0xe0) {
                        c = p[0] & 0x0f;
                        n = 3;
                } else if ((p[0] & 0xf8) == 0xf0) {
                        c = p[0] & 0x07;
                        n = 4;
                } else
                        return false;
                if ((size_t) (end - p) < n)
                        return false;
                for (size_t i = 1; i < n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        c = (c << 6) | (p[i] & 0x3f);
                }
                if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff ||
                    (c >= 0xd800 && c <= 0xdfff) || (c >= 0x80 && c <= 0x9f))
                        return false;
                p += n;
        }
        return true;
}

static int invalid(const char *name, const char **ret_parameter, char **ret_error, const char *fmt, ...)
        _printf_(4, 5);
static int invalid(const char *name, const char **ret_parameter, char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        *ret_parameter = name;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(*ret_error);
        *ret_error = s;
        return -EINVAL;
}

static int check_value(const ProtocolParameter *p, struct json_object *v, const char **ret_parameter,
                       char **ret_error) {
        const char *s;
        size_t n;

        switch (p->type) {
        case PROTOCOL_BOOL:
                if (!json_object_is_type(v, json_type_boolean))
                        return invalid(p->name, ret_parameter, ret_error, "%s must be true or false", p->name);
                return 0;
        case PROTOCOL_INT:
                if (!json_object_is_type(v, json_type_int))
                        return invalid(p->name, ret_parameter, ret_error, "%s must be an integer", p->name);
                return 0;
        case PROTOCOL_STRING:
                if (!json_object_is_type(v, json_type_string))
                        return invalid(p->name, ret_parameter, ret_error, "%s must be a string", p->name);
                s = json_object_get_string(v);
                n = (size_t) json_object_get_string_len(v);
                if (n == 0)
                        return invalid(p->name, ret_parameter, ret_error, "%s must not be empty", p->name);
                if (n > p->max_length)
                        return invalid(p->name, ret_parameter, ret_error, "%s is %zu bytes; at most %zu are allowed",
                                       p->name, n, p->max_length);
                if (strlen(s) != n || !protocol_text_is_valid(s, n))
                        return invalid(p->name, ret_parameter, ret_error,
                                       "%s must be printable UTF-8 text without control characters", p->name);
                return 0;
        case PROTOCOL_HEX_ID:
                if (!json_object_is_type(v, json_type_string))
                        return invalid(p->name, ret_parameter, ret_error, "%s must be a string", p->name);
                s = json_object_get_string(v);
                n = (size_t) json_object_get_string_len(v);
                if (n != PTRACED_PENDING_ID_LEN || strspn(s, "0123456789abcdef") != n)
                        return invalid(p->name, ret_parameter, ret_error,
                                       "%s must be an id of %d lower-case hex digits, as Snapshot returned it",
                                       p->name, PTRACED_PENDING_ID_LEN);
                return 0;
        }
        return invalid(p->name, ret_parameter, ret_error, "%s has an unknown type", p->name);
}

int protocol_check_parameters(const ProtocolMethod *m, struct json_object *parameters, const char **ret_parameter,
                              char **ret_error) {
        int r;

        json_object_object_foreach(parameters, key, value) {
                const ProtocolParameter *p = NULL;

                for (const ProtocolParameter *i = m->parameters; i->name; i++)
                        if (streq(i->name, key)) {
                                p = i;
                                break;
                        }
                if (!p) {
                        char names[256] = "";
                        for (const ProtocolParameter *i = m->parameters; i->name; i++) {
                                size_t l = strlen(names);
                                snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", i->name);
                        }
                        /* The key points into the caller's parameters object; an
                         * absurd one is not echoed back. */
                        return invalid(strlen(key) <= 64 && protocol_text_is_valid(key, strlen(key)) ? key : "",
                                       ret_parameter, ret_error, "%s takes no such parameter (it takes %s)", m->name,
                                       names[0] ? names : "none");
                }
                /* A null value is the same as leaving the parameter out. */
                if (json_object_is_type(value, json_type_null))
                        continue;
                r = check_value(p, value, ret_parameter, ret_error);
                if (r < 0)
                        return r;
        }

        for (const ProtocolParameter *p = m->parameters; p->name; p++) {
                struct json_object *v;
                if (p->required &&
                    (!json_object_object_get_ex(parameters, p->name, &v) || json_object_is_type(v, json_type_null)))
                        return invalid(p->name, ret_parameter, ret_error, "%s needs the parameter %s", m->name,
                                       p->name);
        }
        return 0;
}
