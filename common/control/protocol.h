/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The io.ptraced control interface: the one contract ptraced and its clients
 * share (chrony's candm.h habit). Method and error names, which method needs
 * which privilege, the parameters each method takes with their types and
 * bounds, and the varlink interface description served by
 * org.varlink.service.GetInterfaceDescription. The daemon validates every
 * call against this table before it dispatches; clients use the names.
 *
 * Every io.ptraced error carries "message", a sentence for humans that says
 * what to do; some carry more (retry_after_usec, parameter, limit).
 */

#include "common/control/varlink.h"

#define PTRACED_INTERFACE "io.ptraced"
#define VARLINK_SERVICE_INTERFACE "org.varlink.service"

#define PTRACED_METHOD_SNAPSHOT "io.ptraced.Snapshot"
#define PTRACED_METHOD_GET_SNAPSHOT "io.ptraced.GetSnapshot"
#define PTRACED_METHOD_STATUS "io.ptraced.Status"
#define PTRACED_METHOD_LIST_BUNDLES "io.ptraced.ListBundles"
/* Heartbeat watchdogs (daemon/trigger/control.c): a missed deadline takes a
 * snapshot with reason "watchdog:NAME". */
#define PTRACED_METHOD_WATCHDOG "io.ptraced.Watchdog"
#define PTRACED_METHOD_WATCHDOG_PING "io.ptraced.WatchdogPing"
#define PTRACED_METHOD_WATCHDOG_REMOVE "io.ptraced.WatchdogRemove"
#define VARLINK_METHOD_GET_INFO "org.varlink.service.GetInfo"
#define VARLINK_METHOD_GET_INTERFACE_DESCRIPTION "org.varlink.service.GetInterfaceDescription"

/* Trigger governance (ptraced.conf [Triggers]); + retry_after_usec. */
#define PTRACED_ERROR_RATE_LIMITED "io.ptraced.RateLimited"
#define PTRACED_ERROR_WARMING_UP "io.ptraced.WarmingUp"
#define PTRACED_ERROR_DUPLICATE "io.ptraced.DuplicateSuppressed"
/* The caller may not do this (SO_PEERCRED: root and group ptraced). */
#define PTRACED_ERROR_PERMISSION_DENIED "io.ptraced.PermissionDenied"
/* Snapshots that could not be taken or written. */
#define PTRACED_ERROR_NOT_RECORDING "io.ptraced.NotRecording"
#define PTRACED_ERROR_BUSY "io.ptraced.Busy"
#define PTRACED_ERROR_FAILED "io.ptraced.Failed"
#define PTRACED_ERROR_DUMP_FAILED "io.ptraced.DumpFailed"
#define PTRACED_ERROR_SHUTTING_DOWN "io.ptraced.ShuttingDown"
#define PTRACED_ERROR_NO_SUCH_SNAPSHOT "io.ptraced.NoSuchSnapshot"
#define PTRACED_ERROR_NO_SUCH_WATCHDOG "io.ptraced.NoSuchWatchdog"
#define PTRACED_ERROR_TOO_MANY_WATCHDOGS "io.ptraced.TooManyWatchdogs"
/* Watchdog(name=): letters, digits and -_.@: */
#define PTRACED_WATCHDOG_NAME_MAX 64
/* The call itself; + parameter. */
#define PTRACED_ERROR_INVALID_PARAMETER "io.ptraced.InvalidParameter"
/* The connection: the daemon closes it after these. */
#define PTRACED_ERROR_PROTOCOL "io.ptraced.ProtocolError"
#define PTRACED_ERROR_MESSAGE_TOO_LARGE "io.ptraced.MessageTooLarge" /* + limit */
#define PTRACED_ERROR_TIMEOUT "io.ptraced.Timeout"
#define PTRACED_ERROR_TOO_MANY_CONNECTIONS "io.ptraced.TooManyConnections"

/* The standard ones, with the standard parameters only. */
#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"

/* Snapshot(reason=): bytes, printable UTF-8 without control characters. */
#define PTRACED_REASON_MAX 256
#define PTRACED_REASON_DEFAULT "manual"
/* Pending ids of Snapshot(wait=false): 32 lower-case hex digits. */
#define PTRACED_PENDING_ID_LEN 32
/* GetSnapshot() remembers this many of the newest snapshot requests. */
#define PTRACED_PENDING_KEEP 128
/* ListBundles() returns at most this many (the newest). */
#define PTRACED_LIST_BUNDLES_MAX 1024

typedef enum ProtocolType {
        PROTOCOL_STRING, /* printable UTF-8, no control characters, within max_length bytes */
        PROTOCOL_BOOL,
        PROTOCOL_INT,
        PROTOCOL_HEX_ID, /* PTRACED_PENDING_ID_LEN lower-case hex digits */
} ProtocolType;

typedef enum ProtocolAccess {
        PROTOCOL_ACCESS_ANYONE,     /* org.varlink.service: whoever can connect */
        PROTOCOL_ACCESS_READ,       /* read-only: privileged callers, others per [Control] ReadOnlyAccess= */
        PROTOCOL_ACCESS_PRIVILEGED, /* root and group ptraced */
} ProtocolAccess;

typedef struct ProtocolParameter {
        const char *name;
        ProtocolType type;
        bool required;
        size_t max_length; /* PROTOCOL_STRING */
} ProtocolParameter;

typedef struct ProtocolMethod {
        const char *name; /* full: "io.ptraced.Snapshot" */
        ProtocolAccess access;
        const ProtocolParameter *parameters; /* terminated by { NULL } */
} ProtocolMethod;

/* Every method the daemon serves, terminated by { NULL }. */
extern const ProtocolMethod protocol_methods[];
/* The interfaces, as GetInfo lists them; NULL-terminated. */
extern const char *const protocol_interfaces[];

const ProtocolMethod *protocol_method_find(const char *name);
bool protocol_interface_is_known(const char *interface, size_t length);

/* Check a call's parameters against the method's table: every given
 * parameter is known and of its type, every required one is there.
 * -EINVAL with *ret_parameter (the parameter's name: static, or pointing
 * into `parameters`; "" for an unknown name too odd to echo back) and
 * *ret_error (a sentence) on the first problem. */
int protocol_check_parameters(const ProtocolMethod *m, struct json_object *parameters, const char **ret_parameter,
                              char **ret_error);

/* The varlink interface description (IDL text) of an interface, or NULL. */
const char *protocol_interface_description(const char *interface);

/* Is this one of the errors the interfaces declare? */
bool protocol_error_is_known(const char *name);

/* Text for a parameter: printable UTF-8 and no control characters. */
bool protocol_text_is_valid(const char *s, size_t length);
