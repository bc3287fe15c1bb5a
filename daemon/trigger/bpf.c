/* SPDX-License-Identifier: MIT */

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "daemon/trigger/bpf.h"
#include "daemon/trigger/bpf/crash.skel.h"
#include "daemon/trigger/bpf/func.skel.h"
#include "daemon/trigger/bpf/offcpu.skel.h"
#include "daemon/trigger/bpf/runq.skel.h"
#include "daemon/trigger/bpf/syscall.skel.h"

static int fail(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;

        errno = -error; /* for %m */
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return *ret_error ? error : -ENOMEM;
}

/* ---- the ring ---- */

struct TriggerRing {
        int map_fd;
        struct ring_buffer *rb;
        TriggerRingHandler handler;
        void *userdata;
};

/* Leaf-first NUL-separated components to "/a/b/c". */
static int exe_path(const struct trigger_crash_event *c, char *buf, size_t size) {
        const char *comp[TRIGGER_EXE_DEPTH_MAX];
        size_t n = 0, len = MIN((size_t) c->exe_len, (size_t) TRIGGER_EXE_MAX), l = 0;

        for (size_t i = 0; i < len && n < ELEMENTSOF(comp);) {
                const char *p = c->exe + i;
                size_t k = strnlen(p, len - i);
                if (k == len - i)
                        break; /* not terminated: cut off */
                comp[n++] = p;
                i += k + 1;
        }
        if (n == 0)
                return -ENODATA;
        buf[0] = 0;
        if (!c->exe_complete)
                l = (size_t) snprintf(buf, size, "...");
        for (size_t i = n; i > 0 && l < size; i--)
                l += (size_t) snprintf(buf + l, size - l, "/%s", comp[i - 1]);
        return l < size ? 0 : -ENAMETOOLONG;
}

static int ring_sample(void *ctx, void *data, size_t size) {
        TriggerRing *r = ctx;
        struct trigger_crash_event c;
        char exe[TRIGGER_EXE_MAX + 8];

        /* From the kernel, but still checked: a record of another size is a
         * program and daemon out of step. */
        if (size == sizeof(struct trigger_event)) {
                memcpy(&c.base, data, sizeof(c.base));
                r->handler(&c.base, NULL, r->userdata);
        } else if (size == sizeof(struct trigger_crash_event)) {
                memcpy(&c, data, sizeof(c));
                r->handler(&c.base, exe_path(&c, exe, sizeof exe) >= 0 ? exe : NULL, r->userdata);
        }
        /* Anything else is dropped. */
        return 0;
}

int trigger_ring_new(TriggerRingHandler handler, void *userdata, TriggerRing **ret, char **ret_error) {
        _cleanup_(trigger_ring_freep) TriggerRing *r = calloc(1, sizeof(TriggerRing));
        int k;

        if (!r)
                return -ENOMEM;
        r->handler = handler;
        r->userdata = userdata;
        r->map_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ptraced_events", 0, 0, TRIGGER_RING_SIZE, NULL);
        if (r->map_fd < 0) {
                k = r->map_fd;
                r->map_fd = -EBADF;
                return fail(ret_error, k,
                            "cannot create a BPF ring buffer: %m (needs Linux 5.8 or later, and "
                            "root or CAP_BPF with CAP_PERFMON)");
        }
        r->rb = ring_buffer__new(r->map_fd, ring_sample, r, NULL);
        if (!r->rb)
                return fail(ret_error, negative_errno(), "cannot map the BPF ring buffer: %m");
        *ret = TAKE_PTR(r);
        return 0;
}

TriggerRing *trigger_ring_free(TriggerRing *r) {
        if (!r)
                return NULL;
        ring_buffer__free(r->rb);
        safe_close(r->map_fd);
        return mfree(r);
}

int trigger_ring_epoll_fd(TriggerRing *r) {
        return ring_buffer__epoll_fd(r->rb);
}

int trigger_ring_consume(TriggerRing *r) {
        return ring_buffer__consume(r->rb);
}

/* ---- feature probes ---- */

static bool kernel_has_tracepoint(struct btf *vmlinux, const char *name) {
        char t[128];

        snprintf(t, sizeof t, "btf_trace_%s", name);
        return btf__find_by_name_kind(vmlinux, t, BTF_KIND_TYPEDEF) > 0;
}

int trigger_bpf_probe(TriggerType type, char **ret_reason) {
        static const char *const tracepoints[_TRIGGER_TYPE_MAX][3] = {
                [TRIGGER_TYPE_SCHED_LATENCY] = { "sched_wakeup", "sched_wakeup_new", "sched_switch" },
                [TRIGGER_TYPE_SYSCALL_LATENCY] = { "sys_enter", "sys_exit" },
                [TRIGGER_TYPE_OFFCPU] = { "sched_switch" },
                [TRIGGER_TYPE_CRASH] = { "signal_deliver" },
        };
        struct btf *vmlinux;

        assert(type >= 0 && type < _TRIGGER_TYPE_MAX && type != TRIGGER_TYPE_UNIT);

        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
                return fail(ret_reason, -EOPNOTSUPP,
                            "this kernel has no BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y), "
                            "which the "
                            "triggers' CO-RE BPF programs are relocated against");
        if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) <= 0)
                return fail(ret_reason, -EOPNOTSUPP,
                            "this kernel has no BPF ring buffers (Linux 5.8 or later), or BPF is not "
                            "allowed to "
                            "us (root or CAP_BPF with CAP_PERFMON)");
        if (type == TRIGGER_TYPE_FUNCTION_LATENCY || type == TRIGGER_TYPE_FUNCTION_HIT) {
                if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) < 0)
                        return fail(ret_reason, -EOPNOTSUPP,
                                    "this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS=y, "
                                    "/sys/bus/event_source/devices/uprobe)");
                return 0;
        }
        /* libbpf cannot probe tracing programs without a target; the
         * btf_trace_* typedefs came with BTF-enabled tracepoints (5.5) and
         * name the tracepoints this kernel has. */
        vmlinux = btf__load_vmlinux_btf();
        if (!vmlinux)
                return fail(ret_reason, -EOPNOTSUPP, "cannot read the kernel's BTF: %m");
        for (size_t i = 0; i < ELEMENTSOF(tracepoints[type]) && tracepoints[type][i]; i++)
                if (!kernel_has_tracepoint(vmlinux, tracepoints[type][i])) {
                        btf__free(vmlinux);
                        return fail(ret_reason, -EOPNOTSUPP,
                                    "this kernel has no BTF-enabled %s tracepoint (tp_btf, Linux 5.5 or "
                                    "later)",
                                    tracepoints[type][i]);
                }
        btf__free(vmlinux);
        return 0;
}

/* ---- one trigger's programs ---- */

struct TriggerBpf {
        TriggerType type;
        union {
                struct trigger_runq *runq;
                struct trigger_offcpu *offcpu;
                struct trigger_syscall *syscall;
                struct trigger_func *func;
                struct trigger_crash *crash;
        };
        /* The same variables in whichever skeleton, mmapped. */
        volatile struct trigger_shared *shared;
        volatile __u64 *cgroup_id;
        volatile __u32 *cgroup_level;
        struct bpf_link *links[2];
        int blocked_fd; /* offcpu: its `start` map */
};

/* Filters and the threshold, named the same in every program's rodata. */
#define SET_COMMON_RODATA(skel, c, id)                                                                      \
        do {                                                                                                \
                (skel)->rodata->trigger_id = (id);                                                          \
                (skel)->rodata->threshold_ns = (c)->threshold * NSEC_PER_USEC;                              \
                (skel)->rodata->n_pids = (c)->n_pids;                                                       \
                for (unsigned _i = 0; _i < (c)->n_pids; _i++)                                               \
                        (skel)->rodata->pids[_i] = (c)->pids[_i];                                           \
                (skel)->rodata->n_comms = (__u32) strv_length((c)->comms);                                  \
                for (unsigned _i = 0; (c)->comms && (c)->comms[_i] && _i < TRIGGER_FILTER_COMMS_MAX; _i++)  \
                        strncpy((char *) (skel)->rodata->comms[_i], (c)->comms[_i], TRIGGER_COMM_LEN - 1);  \
                (skel)->rodata->n_thread_comms = (__u32) strv_length((c)->thread_comms);                    \
                for (unsigned _i = 0; (c)->thread_comms && (c)->thread_comms[_i] &&                         \
                                      _i < TRIGGER_FILTER_COMMS_MAX;                                        \
                     _i++)                                                                                  \
                        strncpy((char *) (skel)->rodata->thread_comms[_i], (c)->thread_comms[_i],           \
                                TRIGGER_COMM_LEN - 1);                                                      \
                (skel)->rodata->cgroup_filter = (c)->cgroup != NULL;                                        \
        } while (0)

#define TAKE_COMMON_BSS(b, skel)                                                                            \
        do {                                                                                                \
                (b)->shared = &(skel)->bss->shared;                                                         \
                (b)->cgroup_id = &(skel)->bss->cgroup_id;                                                   \
                (b)->cgroup_level = &(skel)->bss->cgroup_level;                                             \
        } while (0)

TriggerBpf *trigger_bpf_free(TriggerBpf *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(b->links); i++)
                bpf_link__destroy(b->links[i]);
        switch (b->type) {
        case TRIGGER_TYPE_SCHED_LATENCY:
                trigger_runq__destroy(b->runq);
                break;
        case TRIGGER_TYPE_OFFCPU:
                trigger_offcpu__destroy(b->offcpu);
                break;
        case TRIGGER_TYPE_SYSCALL_LATENCY:
                trigger_syscall__destroy(b->syscall);
                break;
        case TRIGGER_TYPE_FUNCTION_LATENCY:
        case TRIGGER_TYPE_FUNCTION_HIT:
                trigger_func__destroy(b->func);
                break;
        case TRIGGER_TYPE_CRASH:
                trigger_crash__destroy(b->crash);
                break;
        default:
                break;
        }
        return mfree(b);
}

static int attach_uprobe(TriggerBpf *b, const TriggerConfig *c, struct bpf_program *prog, bool retprobe,
                         struct bpf_link **ret, char **ret_error) {
        /* One PID= process: the kernel filters, the others never trap. */
        pid_t pid = c->n_pids == 1 ? (pid_t) c->pids[0] : -1;

        *ret = bpf_program__attach_uprobe(prog, retprobe, pid, c->binary, c->function_offset);
        if (!*ret)
                return fail(ret_error, negative_errno(),
                            "cannot place a %s on %s in %s (offset 0x%" PRIx64 "): %m",
                            retprobe ? "uretprobe" : "uprobe", c->function, c->binary, c->function_offset);
        return 0;
}

static int load_error(char **ret_error, int k, const TriggerConfig *c, const char *what) {
        return fail(ret_error, k,
                    "cannot %s the BPF programs of Type=%s: %m (the libbpf messages above say more)", what,
                    trigger_type_names[c->type]);
}

int trigger_bpf_new(const TriggerConfig *c, uint32_t id, TriggerRing *ring, TriggerBpf **ret,
                    char **ret_error) {
        _cleanup_(trigger_bpf_freep) TriggerBpf *b = calloc(1, sizeof(TriggerBpf));
        int k;

        if (!b)
                return -ENOMEM;
        b->type = c->type;
        b->blocked_fd = -EBADF;

        switch (c->type) {
        case TRIGGER_TYPE_SCHED_LATENCY:
                b->runq = trigger_runq__open();
                if (!b->runq)
                        return load_error(ret_error, negative_errno(), c, "open");
                SET_COMMON_RODATA(b->runq, c, id);
                k = bpf_map__reuse_fd(b->runq->maps.events, ring->map_fd);
                if (k >= 0)
                        k = trigger_runq__load(b->runq);
                if (k < 0)
                        return load_error(ret_error, k, c, "load");
                k = trigger_runq__attach(b->runq);
                if (k < 0)
                        return load_error(ret_error, k, c, "attach");
                TAKE_COMMON_BSS(b, b->runq);
                break;

        case TRIGGER_TYPE_OFFCPU:
                b->offcpu = trigger_offcpu__open();
                if (!b->offcpu)
                        return load_error(ret_error, negative_errno(), c, "open");
                SET_COMMON_RODATA(b->offcpu, c, id);
                b->offcpu->rodata->uninterruptible_only = c->offcpu_state == TRIGGER_OFFCPU_UNINTERRUPTIBLE;
                k = bpf_map__reuse_fd(b->offcpu->maps.events, ring->map_fd);
                if (k >= 0)
                        k = trigger_offcpu__load(b->offcpu);
                if (k < 0)
                        return load_error(ret_error, k, c, "load");
                k = trigger_offcpu__attach(b->offcpu);
                if (k < 0)
                        return load_error(ret_error, k, c, "attach");
                TAKE_COMMON_BSS(b, b->offcpu);
                b->blocked_fd = bpf_map__fd(b->offcpu->maps.start);
                break;

        case TRIGGER_TYPE_SYSCALL_LATENCY:
                b->syscall = trigger_syscall__open();
                if (!b->syscall)
                        return load_error(ret_error, negative_errno(), c, "open");
                SET_COMMON_RODATA(b->syscall, c, id);
                memcpy((void *) b->syscall->rodata->syscall_mask, c->syscall_mask, sizeof(c->syscall_mask));
                k = bpf_map__reuse_fd(b->syscall->maps.events, ring->map_fd);
                if (k >= 0)
                        k = trigger_syscall__load(b->syscall);
                if (k < 0)
                        return load_error(ret_error, k, c, "load");
                k = trigger_syscall__attach(b->syscall);
                if (k < 0)
                        return load_error(ret_error, k, c, "attach");
                TAKE_COMMON_BSS(b, b->syscall);
                break;

        case TRIGGER_TYPE_FUNCTION_LATENCY:
        case TRIGGER_TYPE_FUNCTION_HIT: {
                bool hit = c->type == TRIGGER_TYPE_FUNCTION_HIT;

                b->func = trigger_func__open();
                if (!b->func)
                        return load_error(ret_error, negative_errno(), c, "open");
                SET_COMMON_RODATA(b->func, c, id);
                /* Only the programs this type uses are loaded. */
                bpf_program__set_autoload(b->func->progs.func_entry, !hit);
                bpf_program__set_autoload(b->func->progs.func_return, !hit);
                bpf_program__set_autoload(b->func->progs.func_hit, hit);
                k = bpf_map__reuse_fd(b->func->maps.events, ring->map_fd);
                if (k >= 0)
                        k = trigger_func__load(b->func);
                if (k < 0)
                        return load_error(ret_error, k, c, "load");
                if (hit)
                        k = attach_uprobe(b, c, b->func->progs.func_hit, false, &b->links[0], ret_error);
                else {
                        /* The return probe first: an entry without it would
                         * leave starts behind. */
                        k = attach_uprobe(b, c, b->func->progs.func_return, true, &b->links[1], ret_error);
                        if (k >= 0)
                                k = attach_uprobe(b, c, b->func->progs.func_entry, false, &b->links[0],
                                                  ret_error);
                }
                if (k < 0)
                        return k;
                TAKE_COMMON_BSS(b, b->func);
                break;
        }

        case TRIGGER_TYPE_CRASH:
                b->crash = trigger_crash__open();
                if (!b->crash)
                        return load_error(ret_error, negative_errno(), c, "open");
                SET_COMMON_RODATA(b->crash, c, id);
                b->crash->rodata->signal_mask = c->signal_mask;
                b->crash->rodata->include_handled = c->include_handled;
                k = bpf_map__reuse_fd(b->crash->maps.events, ring->map_fd);
                if (k >= 0)
                        k = trigger_crash__load(b->crash);
                if (k < 0)
                        return load_error(ret_error, k, c, "load");
                k = trigger_crash__attach(b->crash);
                if (k < 0)
                        return load_error(ret_error, k, c, "attach");
                TAKE_COMMON_BSS(b, b->crash);
                break;

        default:
                return fail(ret_error, -EINVAL, "Type=%s has no BPF programs", trigger_type_names[c->type]);
        }

        *ret = TAKE_PTR(b);
        return 0;
}

void trigger_bpf_set_quiet(TriggerBpf *b, uint64_t until_ns) {
        __atomic_store_n(&b->shared->quiet_until_ns, until_ns, __ATOMIC_RELAXED);
}

void trigger_bpf_counters(TriggerBpf *b, struct trigger_shared *ret) {
        *ret = (struct trigger_shared){
                .quiet_until_ns = __atomic_load_n(&b->shared->quiet_until_ns, __ATOMIC_RELAXED),
                .reported = __atomic_load_n(&b->shared->reported, __ATOMIC_RELAXED),
                .suppressed = __atomic_load_n(&b->shared->suppressed, __ATOMIC_RELAXED),
                .dropped = __atomic_load_n(&b->shared->dropped, __ATOMIC_RELAXED),
        };
}

void trigger_bpf_set_cgroup(TriggerBpf *b, uint64_t id, unsigned level) {
        /* Level first: with the old id a wrong level only matches nothing. */
        __atomic_store_n(b->cgroup_level, level, __ATOMIC_RELAXED);
        __atomic_store_n(b->cgroup_id, id, __ATOMIC_RELEASE);
}

int trigger_bpf_foreach_blocked(TriggerBpf *b, TriggerBpfBlockedCallback cb, void *userdata) {
        enum { CHUNK = 256 };
        __u32 keys[CHUNK], out = 0;
        struct trigger_offcpu_start values[CHUNK];
        bool first = true;
        int k;

        if (b->blocked_fd < 0)
                return -EOPNOTSUPP;
        for (;;) {
                __u32 n = CHUNK;
                DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);

                k = bpf_map_lookup_batch(b->blocked_fd, first ? NULL : &out, &out, keys, values, &n, &opts);
                first = false;
                if (k < 0 && k != -ENOENT)
                        return k;
                for (__u32 i = 0; i < n && i < CHUNK; i++) {
                        int r = cb(keys[i], &values[i], userdata);
                        if (r < 0)
                                return r;
                }
                if (k == -ENOENT)
                        return 0; /* that was the last chunk */
        }
}

/* ---- cgroups ---- */

static int cgroup2_root(char **ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096];

        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                char mnt[4096], *sep = strstr(line, " - ");
                char fstype[64];

                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER" */
                if (!sep || sscanf(sep, " - %63s", fstype) != 1 || !streq(fstype, "cgroup2"))
                        continue;
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
                        continue;
                *ret = strdup(mnt);
                return *ret ? 0 : -ENOMEM;
        }
        return -EOPNOTSUPP;
}

int trigger_cgroup_resolve(const char *path, uint64_t *ret_id, unsigned *ret_level) {
        _cleanup_free_ char *root = NULL, *full = NULL;
        struct {
                struct file_handle fh;
                uint64_t id;
        } h = { .fh.handle_bytes = sizeof(uint64_t) };
        unsigned level = 0;
        int mount_id, k;

        k = cgroup2_root(&root);
        if (k < 0)
                return k;
        /* Depth: the number of components. */
        for (const char *p = path; *p; p++)
                if (*p != '/' && (p == path || p[-1] == '/'))
                        level++;
        if (level >= TRIGGER_CGROUP_LEVEL_MAX)
                return -E2BIG;
        if (asprintf(&full, "%s%s", root, path) < 0)
                return -ENOMEM;
        /* The cgroup id is the kernfs node id, which is what a file handle
         * of a cgroup2 directory holds. */
        if (name_to_handle_at(AT_FDCWD, full, &h.fh, &mount_id, 0) < 0)
                return -errno;
        if (h.fh.handle_bytes != sizeof(uint64_t))
                return -EOPNOTSUPP;
        *ret_id = h.id;
        *ret_level = level;
        return 0;
}

int trigger_cgroup_path(uint64_t id, char **ret) {
        _cleanup_free_ char *root = NULL;
        _cleanup_close_ int root_fd = -EBADF, fd = -EBADF;
        struct {
                struct file_handle fh;
                uint64_t id;
        } h = { .fh.handle_bytes = sizeof(uint64_t), .fh.handle_type = 0xfe /* FILEID_KERNFS */, .id = id };
        char link[64], target[PATH_MAX];
        const char *rel;
        ssize_t n;
        int k;

        k = cgroup2_root(&root);
        if (k < 0)
                return k;
        root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return -errno;
        fd = open_by_handle_at(root_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof target - 1);
        if (n < 0)
                return -errno;
        target[n] = 0;
        rel = startswith(target, root);
        if (!rel)
                return -EXDEV; /* another cgroup2 mount */
        *ret = strdup(*rel ? rel : "/");
        return *ret ? 0 : -ENOMEM;
}
