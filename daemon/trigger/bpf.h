/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The user-space half of the BPF triggers (libbpf-bootstrap's x.bpf.c / x.c
 * / x.h triplet, with daemon/trigger/event.h as the shared x.h): one TriggerRing,
 * a BPF ring buffer every program writes its events into, and one
 * TriggerBpf per [Trigger:NAME] of a BPF type, which opens the type's
 * skeleton (generated at build time by bpftool), sets the filters and the
 * threshold as read-only data, points the program at the shared ring,
 * loads (CO-RE relocations against the running kernel's BTF) and attaches.
 *
 * No logging here: errors come back as negative errno and a sentence in
 * *ret_error; daemon/trigger/set.c decides what to tell the user.
 */

#include "common/basic/macro.h"
#include "daemon/trigger/config.h"
#include "daemon/trigger/event.h"

/* Events the ring holds before programs start dropping (each takes 176
 * bytes with its header): a storm of more than about 1500 in the time the
 * daemon takes to read them loses some, counted in trigger_shared.dropped. */
#define TRIGGER_RING_SIZE (256U * 1024U)

typedef struct TriggerRing TriggerRing;

/* Called for every well-formed event, in ring order. exe: for crash
 * events, the executable's path as the BPF program found it (prefixed with
 * ".../" when the walk stopped early), else NULL. */
typedef void (*TriggerRingHandler)(const struct trigger_event *e, const char *exe, void *userdata);

int trigger_ring_new(TriggerRingHandler handler, void *userdata, TriggerRing **ret, char **ret_error);
TriggerRing *trigger_ring_free(TriggerRing *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerRing *, trigger_ring_free);
/* Readable (EPOLLIN) when events wait: for sd_event_add_io(). */
int trigger_ring_epoll_fd(TriggerRing *r);
/* Hand every waiting event to the handler; returns how many. */
int trigger_ring_consume(TriggerRing *r);

typedef struct TriggerBpf TriggerBpf;

/* Can the running kernel run this type? 0, or -EOPNOTSUPP with a sentence
 * saying what is missing (BTF, ring buffers, uprobes...). */
int trigger_bpf_probe(TriggerType type, char **ret_reason);

/* Load and attach the programs for one trigger. id comes back in every event
 * of this trigger. The cgroup filter starts unresolved (matching nothing)
 * when the trigger has Cgroup=: set it with trigger_bpf_set_cgroup(). */
int trigger_bpf_new(const TriggerConfig *c, uint32_t id, TriggerRing *ring, TriggerBpf **ret,
                    char **ret_error);
TriggerBpf *trigger_bpf_free(TriggerBpf *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerBpf *, trigger_bpf_free);

/* No events before this bpf_ktime_get_ns() value (UINT64_MAX: none). */
void trigger_bpf_set_quiet(TriggerBpf *b, uint64_t until_ns);
/* The program's counters (reported, suppressed, dropped), for trigger_set_info()
 * (statistics the observability work will report in Status()). */
void trigger_bpf_counters(TriggerBpf *b, struct trigger_shared *ret);
void trigger_bpf_set_cgroup(TriggerBpf *b, uint64_t id, unsigned level);

/* Type=offcpu: every thread blocked now, with when it left the CPU. A
 * callback error stops the walk and is returned. */
typedef int (*TriggerBpfBlockedCallback)(uint32_t tid, const struct trigger_offcpu_start *s, void *userdata);
int trigger_bpf_foreach_blocked(TriggerBpf *b, TriggerBpfBlockedCallback cb, void *userdata);

/* Cgroup=: a cgroup2 path ("/system.slice/foo.service") to the id the
 * kernel reports and its depth below the root. -ENOENT when it does not
 * exist (yet), -EOPNOTSUPP without a cgroup2 hierarchy. */
int trigger_cgroup_resolve(const char *path, uint64_t *ret_id, unsigned *ret_level);
/* The other way: a cgroup id (as bpf_get_current_cgroup_id() gives it) to
 * its path below the cgroup2 root ("/" for the root). -ESTALE when no such
 * cgroup exists any more. */
int trigger_cgroup_path(uint64_t id, char **ret);
