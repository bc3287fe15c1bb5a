/* SPDX-License-Identifier: MIT */
#ifndef PTRACED_CLIENT_H
#define PTRACED_CLIENT_H

/*
 * libptraced-client: ask the ptraced flight recorder for a snapshot, or keep
 * a heartbeat watchdog alive, from an application's hot path. See
 * libptraced-client(3).
 *
 * Every call is cheap and bounded: it never waits for the daemon. It makes
 * at most one non-blocking connect() and two non-blocking send() system
 * calls on a connection it keeps open, and never reads. When the daemon is
 * not running, calls return -ENOTCONN at once; a new connection is tried
 * at most every 100 ms. Calls are thread-safe (a mutex held only around
 * those system calls) and safe across fork() (the child connects anew);
 * they are not async-signal-safe.
 *
 * Return values are 0 when the message was handed to the kernel for the
 * daemon, or a negative errno value: -EINVAL (bad argument), -ENOTCONN (no
 * daemon), -EACCES (not root or in group ptraced), -EAGAIN (the daemon is
 * not keeping up: the message was dropped), -ENOMEM. Whether the daemon
 * then takes the snapshot (rate limits apply) is not waited for.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Ask for a snapshot. reason: 1 to 256 bytes of printable UTF-8 without
 * control characters; it is stored in the bundle (ptctl list shows it). */
int ptraced_trigger(const char *reason);

/* Register the heartbeat watchdog `name` (1 to 64 letters, digits and
 * -_.@: characters) with a timeout of timeout_usec microseconds (10 ms to
 * 24 h), or ping it when it exists: the daemon takes a snapshot with
 * reason "watchdog:NAME" when timeout_usec passes without a ping. Each
 * ping states the timeout, so a restarted daemon learns the watchdog
 * again from the next ping. */
int ptraced_watchdog_ping(const char *name, uint64_t timeout_usec);

/* Unregister a watchdog (before exiting on purpose). */
int ptraced_watchdog_remove(const char *name);

/* Close the connection now (it is also closed at exit). */
void ptraced_client_close(void);

#ifdef __cplusplus
}
#endif

#endif
