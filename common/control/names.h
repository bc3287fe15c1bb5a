/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The io.ptraced names and limits as plain constants: the method and error
 * names and the bounds a client must respect. Header-only and free of any
 * dependency, so libptraced-client (libc and pthreads only, lib/) builds
 * its messages from the same names the daemon dispatches on;
 * common/control/protocol.h includes this and adds the parameter tables.
 */

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
/* Watchdog(name=): 1 to this many letters, digits and -_.@: */
#define PTRACED_WATCHDOG_NAME_MAX 64
/* Watchdog(timeout_usec=): 10 ms to 24 h. */
#define PTRACED_WATCHDOG_TIMEOUT_MIN_USEC (10ULL * 1000ULL)
#define PTRACED_WATCHDOG_TIMEOUT_MAX_USEC (24ULL * 3600ULL * 1000000ULL)
/* Pending ids of Snapshot(wait=false): 32 lower-case hex digits. */
#define PTRACED_PENDING_ID_LEN 32
/* GetSnapshot() remembers this many of the newest snapshot requests. */
#define PTRACED_PENDING_KEEP 128
/* ListBundles() returns at most this many (the newest). */
#define PTRACED_LIST_BUNDLES_MAX 1024
