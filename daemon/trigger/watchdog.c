/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <stdio.h>

#include "common/basic/fileio.h"
#include "daemon/trigger/watchdog.h"

typedef struct Watchdog {
        TriggerWatchdogs *owner;
        TriggerWatchdogInfo info;
        char *name, *comm;
        sd_event_source *timer;
        bool grace_used;
} Watchdog;

struct TriggerWatchdogs {
        sd_event *event;
        TriggerWatchdogFired fired;
        void *userdata;
        Watchdog **list;
        size_t n;
};

/* Deadlines are kept to the millisecond: sd-event's default accuracy
 * (250 ms) would let a 100 ms watchdog fire a quarter second late. */
#define TIMER_ACCURACY USEC_PER_MSEC
/* Below the control socket's priority: a ping that waits in the same turn
 * of the loop as the deadline is read first. */
#define TIMER_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 20)
/* A deadline noticed this late means the daemon itself was stalled and the
 * client's pings may still wait unread in the socket: look again after
 * one more turn of the loop before blaming the client. */
#define LATE_USEC (50 * USEC_PER_MSEC)
#define GRACE_USEC (20 * USEC_PER_MSEC)

static Watchdog *watchdog_free(Watchdog *d) {
        if (!d)
                return NULL;
        sd_event_source_disable_unref(d->timer);
        free(d->name);
        free(d->comm);
        return mfree(d);
}

int trigger_watchdogs_new(sd_event *event, TriggerWatchdogFired fired, void *userdata,
                          TriggerWatchdogs **ret) {
        TriggerWatchdogs *w = calloc(1, sizeof(TriggerWatchdogs));

        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->fired = fired;
        w->userdata = userdata;
        *ret = w;
        return 0;
}

TriggerWatchdogs *trigger_watchdogs_free(TriggerWatchdogs *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n; i++)
                watchdog_free(w->list[i]);
        free(w->list);
        sd_event_unref(w->event);
        return mfree(w);
}

void trigger_watchdogs_set_fired(TriggerWatchdogs *w, TriggerWatchdogFired fired, void *userdata) {
        w->fired = fired;
        w->userdata = userdata;
}

bool trigger_watchdog_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > TRIGGER_WATCHDOG_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("-_.@:", *p))
                        return false;
        return true;
}

static Watchdog *find(TriggerWatchdogs *w, const char *name, size_t *ret_index) {
        for (size_t i = 0; i < w->n; i++)
                if (streq(w->list[i]->name, name)) {
                        if (ret_index)
                                *ret_index = i;
                        return w->list[i];
                }
        return NULL;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Watchdog *d = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        TriggerWatchdogInfo info;
        int k;

        if (d->info.deadline == 0)
                return 0; /* fired already, waiting for a ping */
        if (now < d->info.deadline || (now - d->info.deadline > LATE_USEC && !d->grace_used)) {
                /* A ping came (in this very turn of the loop), or we are late
                 * ourselves: check again later. */
                if (now >= d->info.deadline)
                        d->grace_used = true;
                k = sd_event_source_set_time(s, MAX(d->info.deadline, now + GRACE_USEC));
                if (k >= 0)
                        k = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return k;
        }

        /* Disarmed until the next ping: one snapshot per miss. */
        d->info.deadline = 0;
        d->info.fired++;
        info = d->info;
        info.name = d->name;
        info.comm = d->comm;
        d->owner->fired(&info, now, d->owner->userdata);
        return 0;
}

static int arm(Watchdog *d, usec_t now) {
        int k;

        d->info.last_ping = now;
        d->info.last_ping_realtime = now_usec(CLOCK_REALTIME);
        d->info.deadline = now + d->info.timeout;
        d->info.pings++;
        d->grace_used = false;
        if (!d->timer)
                return sd_event_add_time(d->owner->event, &d->timer, CLOCK_MONOTONIC, d->info.deadline,
                                         TIMER_ACCURACY, on_deadline, d);
        k = sd_event_source_set_time(d->timer, d->info.deadline);
        if (k < 0)
                return k;
        return sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

static char *peer_comm(pid_t pid) {
        char path[64];
        char *comm = NULL;

        snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
        if (read_one_line_file(path, &comm) < 0)
                return NULL;
        return comm;
}

/* The process that registered or pinged last is the one the bundle names:
 * two processes may use one watchdog name in turn, and the first may be
 * gone by the time the second misses a deadline. */
static void set_owner(Watchdog *d, const struct ucred *peer) {
        if (!peer || (d->info.has_owner && d->info.pid == (uint32_t) peer->pid && d->info.uid == (uint32_t) peer->uid))
                return;
        d->info.has_owner = true;
        d->info.pid = (uint32_t) peer->pid;
        d->info.uid = (uint32_t) peer->uid;
        free(d->comm);
        d->comm = peer_comm(peer->pid);
}

int trigger_watchdog_register(TriggerWatchdogs *w, const char *name, usec_t timeout,
                              const struct ucred *peer, char **ret_error) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        Watchdog *d;
        int k;

        if (!trigger_watchdog_name_is_valid(name)) {
                *ret_error = strdup("a watchdog name is 1 to 64 characters of letters, digits and -_.@:");
                return *ret_error ? -EINVAL : -ENOMEM;
        }
        if (timeout < TRIGGER_WATCHDOG_TIMEOUT_MIN || timeout > TRIGGER_WATCHDOG_TIMEOUT_MAX) {
                *ret_error = strdup("the timeout must be between 10 ms and 24 h");
                return *ret_error ? -EINVAL : -ENOMEM;
        }

        d = find(w, name, NULL);
        if (d) {
                d->info.timeout = timeout;
                set_owner(d, peer);
                k = arm(d, now);
                return k < 0 ? k : 1;
        }

        if (w->n >= TRIGGER_WATCHDOGS_MAX) {
                if (asprintf(ret_error, "%d watchdogs are registered already; remove unused ones first",
                             TRIGGER_WATCHDOGS_MAX) < 0)
                        *ret_error = NULL;
                return *ret_error ? -ENOSPC : -ENOMEM;
        }
        Watchdog **a = realloc(w->list, sizeof(Watchdog *) * (w->n + 1));
        if (!a)
                return -ENOMEM;
        w->list = a;
        d = calloc(1, sizeof(Watchdog));
        if (!d)
                return -ENOMEM;
        d->owner = w;
        d->name = strdup(name);
        if (!d->name) {
                watchdog_free(d);
                return -ENOMEM;
        }
        d->info.timeout = timeout;
        d->info.registered_at = now;
        set_owner(d, peer);
        k = arm(d, now);
        if (k < 0) {
                watchdog_free(d);
                return k;
        }
        (void) sd_event_source_set_priority(d->timer, TIMER_PRIORITY);
        w->list[w->n++] = d;
        return 0;
}

int trigger_watchdog_ping(TriggerWatchdogs *w, const char *name, const struct ucred *peer) {
        Watchdog *d = find(w, name, NULL);

        if (!d)
                return -ENOENT;
        set_owner(d, peer);
        return arm(d, now_usec(CLOCK_MONOTONIC));
}

int trigger_watchdog_remove(TriggerWatchdogs *w, const char *name) {
        size_t i;
        Watchdog *d = find(w, name, &i);

        if (!d)
                return -ENOENT;
        watchdog_free(d);
        memmove(w->list + i, w->list + i + 1, sizeof(Watchdog *) * (w->n - i - 1));
        w->n--;
        return 0;
}

size_t trigger_watchdogs_count(TriggerWatchdogs *w) {
        return w->n;
}

int trigger_watchdog_get(TriggerWatchdogs *w, size_t i, TriggerWatchdogInfo *ret) {
        if (i >= w->n)
                return -ENOENT;
        *ret = w->list[i]->info;
        ret->name = w->list[i]->name;
        ret->comm = w->list[i]->comm;
        return 0;
}
