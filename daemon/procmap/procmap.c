/* SPDX-License-Identifier: MIT */

/* ProcMap: the model of common/model/, with the daemon's answers to what
 * it asks (build-ids from files, names of kthreadd's children from /proc)
 * and its side-band records applied at their own time. /proc scans are in
 * scan.c. */

#include <fcntl.h>

#include "daemon/procmap/internal.h"

static int hook_build_id(void *userdata, uint32_t pid, uint64_t start, uint64_t end, const char *path,
                         uint32_t *maj, uint32_t *min, uint64_t *ino, uint8_t id[static PERF_BUILD_ID_MAX],
                         uint8_t *ret_size) {
        ProcMap *m = userdata;
        int pid_fd = m->scan_pid == pid ? m->scan_pid_fd : -EBADF;

        return buildid_reader_resolve(m->buildids, pid_fd, pid, start, end, path, maj, min, ino, id, ret_size);
}

static int hook_task_comm(void *userdata, uint32_t pid, char buf[static PERF_COMM_MAX]) {
        return procmap_read_task_comm(userdata, pid, buf);
}

int procmap_new(const ProcMapOptions *opts, ProcMap **ret) {
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = opts ? *opts : (ProcMapOptions){};
        ModelOptions mo = {};
        int r;

        assert(ret);

        m = calloc(1, sizeof(ProcMap));
        if (!m)
                return -ENOMEM;
        m->proc_fd = m->scan_pid_fd = -EBADF;
        m->proc_root = strdup(o.proc_root ?: "/proc");
        if (!m->proc_root)
                return -ENOMEM;
        m->proc_fd = open(m->proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (m->proc_fd < 0)
                return -errno;

        if (o.retention == 0)
                o.retention = PROCMAP_RETENTION_DEFAULT;
        if (o.retention == USEC_INFINITY || o.retention > UINT64_MAX / NSEC_PER_USEC)
                mo.retention = MODEL_TIME_INFINITY;
        else
                mo.retention = o.retention * NSEC_PER_USEC;
        mo.max_processes = o.max_processes ?: PROCMAP_MAX_PROCESSES_DEFAULT;
        mo.max_mappings = m->max_mappings = o.max_mappings ?: PROCMAP_MAX_MAPPINGS_DEFAULT;
        mo.max_threads = m->max_threads = o.max_threads ?: PROCMAP_MAX_THREADS_DEFAULT;
        mo.hooks = (ModelHooks){
                .build_id = hook_build_id,
                .task_comm = hook_task_comm,
                .userdata = m,
        };

        r = buildid_reader_new(m->proc_fd, &m->buildids);
        if (r < 0)
                return r;
        r = model_new(&mo, &m->model);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

ProcMap *procmap_free(ProcMap *m) {
        if (!m)
                return NULL;

        model_free(m->model);
        buildid_reader_free(m->buildids);
        safe_close(m->proc_fd);
        free(m->proc_root);
        return mfree(m);
}

int procmap_apply(ProcMap *m, const PerfRecord *r) {
        assert(m);
        assert(r);

        if (!r->has_sample_id || !(r->sid.sample_type & PERF_SAMPLE_TIME)) {
                /* Never guessed: the daemon has the time of every record it
                 * asked for. */
                m->records_untimed++;
                return 0;
        }
        return model_apply(m->model, r, r->sid.time, NULL);
}

void procmap_prefetch_build_id(ProcMap *m, const PerfRecord *r) {
        uint32_t maj = r->mmap2.maj, min = r->mmap2.min;
        uint64_t ino = r->mmap2.ino;
        uint8_t id[PERF_BUILD_ID_MAX], size;

        assert(m);
        assert(r->type == PERF_RECORD_MMAP2);
        (void) buildid_reader_resolve(m->buildids, -EBADF, r->mmap2.pid, r->mmap2.addr, r->mmap2.addr + r->mmap2.len,
                                      r->mmap2.filename, &maj, &min, &ino, id, &size);
}

Model *procmap_model(ProcMap *m) {
        assert(m);
        return m->model;
}

void procmap_expire(ProcMap *m, uint64_t horizon) {
        assert(m);
        model_expire(m->model, horizon);
}

int procmap_synthesize(ProcMap *m, uint64_t t0, uint64_t t1, Buffer *out) {
        assert(m);
        return model_synthesize(m->model, t0, t1, out);
}

int procmap_get_process(ProcMap *m, pid_t pid, uint64_t time, ProcMapProcessInfo *ret) {
        assert(m);
        return model_get_process(m->model, pid, time, ret);
}

void procmap_get_stats(const ProcMap *m, ProcMapStats *ret) {
        BuildIdReaderStats b;
        ModelStats s;

        assert(m);
        assert(ret);

        model_get_stats(m->model, &s);
        buildid_reader_get_stats(m->buildids, &b);
        *ret = (ProcMapStats){
                .processes_live = s.processes_live,
                .processes_dead = s.processes_dead,
                .threads_live = s.threads_live,
                .threads_dead = s.threads_dead,
                .mappings_live = s.mappings_live,
                .mappings_dead = s.mappings_dead,
                .images = s.images,
                .buildid_cache_entries = b.cache_entries,
                .bytes = s.bytes + b.bytes + sizeof(ProcMap),
                .records_applied = s.records_applied,
                .records_ignored = s.records_ignored + m->records_untimed,
                .records_stale = s.records_stale,
                .rescans = s.rescans,
                .rescan_changes = s.rescan_changes,
                .limit_refused = s.limit_refused,
                .limit_evicted = s.limit_evicted,
                .expired_processes = s.expired_processes,
                .buildid_reads = b.reads,
                .buildid_read_failures = b.read_failures,
        };
}
