/* SPDX-License-Identifier: MIT */

#include <cpuid.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/bundle/buildid-cache.h"
#include "common/perf/attr.h"
#include "common/perf/jitdump.h"
#include "common/perf/record.h"
#include "common/pt/scan.h"
#include "daemon/dump/assemble.h"

/* ---- the manifest ---- */

/* The build-id cache, beside the bundles (a hidden directory: no bundle). */
static char *buildid_cache_dir(const char *directory) {
        char *p;
        return asprintf(&p, "%s/.build-id", directory) < 0 ? NULL : p;
}

static int fill_manifest(const DumpSources *src, DumpJob *j, TriggerRequest *first, const RecorderSnapshot *s) {
        BundleManifest *mf = j->manifest;
        int k;

        k = bundle_manifest_fill_host(mf);
        if (k < 0)
                return k;
        if (asprintf(&mf->generator, "ptraced %s", PACKAGE_VERSION) < 0)
                return -ENOMEM;
        mf->simulated = src->backend->simulated;
        mf->lookback_ns = src->lookback_ns;

        mf->pmu.name = strdup(src->pmu->name);
        mf->pmu.type = src->pmu->type;
        mf->pmu.config_text = strdup(src->event->text);
        if (!mf->pmu.name || !mf->pmu.config_text)
                return -ENOMEM;
        memcpy(mf->pmu.config, src->event->config, sizeof mf->pmu.config);
        /* The filters as the kernel has them: the decoder's libipt needs
         * the ranges (client/decode/addr-filters.h). */
        if (recorder_addr_filter(src->recorder)) {
                mf->pmu.addr_filter = strdup(recorder_addr_filter(src->recorder));
                if (!mf->pmu.addr_filter)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < src->pmu->n_caps; i++) {
                k = bundle_manifest_add_cap(mf, src->pmu->caps[i].name, src->pmu->caps[i].value);
                if (k < 0)
                        return k;
        }

        (void) recorder_tsc_conversion(src->recorder, &mf->tsc.conversion);
        {
                _cleanup_free_ char *p = NULL, *v = NULL;
                uint32_t ratio;
                if (asprintf(&p, "%s/max_nonturbo_ratio", src->pmu->path) >= 0 && read_one_line_file(p, &v) >= 0 &&
                    parse_uint32(v, &ratio) >= 0)
                        mf->tsc.nominal_freq = ratio;
        }
        const PmuCpuIdentity *cpu = src->backend->emulated_cpu;
        if (cpu) {
                mf->tsc.cpuid_15_eax = cpu->cpuid_15_eax;
                mf->tsc.cpuid_15_ebx = cpu->cpuid_15_ebx;
                mf->tsc.tsc_hz = cpu->tsc_hz;
                mf->tsc.tsc_hz_source = cpu->tsc_hz ? BUNDLE_TSC_HZ_EMULATED : BUNDLE_TSC_HZ_UNKNOWN;
                free(mf->cpuid.vendor);
                mf->cpuid.vendor = strdup(cpu->vendor);
                if (!mf->cpuid.vendor)
                        return -ENOMEM;
                mf->cpuid.family = cpu->family;
                mf->cpuid.model = cpu->model;
                mf->cpuid.stepping = cpu->stepping;
        } else {
                unsigned eax = 0, ebx = 0, ecx = 0, edx = 0, base_mhz = 0;
                if (__get_cpuid(0x15, &eax, &ebx, &ecx, &edx)) {
                        mf->tsc.cpuid_15_eax = eax;
                        mf->tsc.cpuid_15_ebx = ebx;
                        mf->tsc.cpuid_15_ecx = ecx; /* 0 on Skylake-era servers: no crystal Hz */
                }
                if (__get_cpuid(0x16, &eax, &ebx, &ecx, &edx)) /* 0 when the CPU lacks the leaf */
                        base_mhz = eax;
                bundle_tsc_derive_hz(&mf->tsc, base_mhz);
        }
        {
                uint64_t v;
                if (pt_event_config_get(src->pmu, src->event, "mtc_period", &v) >= 0)
                        mf->tsc.mtc_freq = (uint32_t) v;
        }

        BundleTrigger *t = &mf->trigger;
        t->reason = strdup(first->reason);
        t->source = strdup(first->source);
        if (!t->reason || !t->source)
                return -ENOMEM;
        t->has_requester = first->has_requester;
        t->requester_pid = first->requester_pid;
        t->requester_uid = first->requester_uid;
        if (first->requester_comm && !(t->requester_comm = strdup(first->requester_comm)))
                return -ENOMEM;
        t->perf_time = recorder_mono_to_perf_time(src->recorder, s->trigger_at);
        t->monotonic_ns = s->trigger_at;
        j->perf_minus_monotonic = (int64_t) (t->perf_time - s->trigger_at);
        t->realtime_usec = now_usec(CLOCK_REALTIME) - (now_nsec(CLOCK_MONOTONIC) - s->trigger_at) / NSEC_PER_USEC;
        if (first->details)
                t->details = TAKE_PTR(first->details);
        k = bundle_trigger_set_detail_u64(t, "freeze_latency_ns", s->frozen_at - s->trigger_at);
        if (k < 0)
                return k;

        mf->sideband.sample_type = PTRACED_SAMPLE_TYPE;
        mf->sideband.sample_id_all = true;
        return 0;
}

/* ---- images ---- */

/* The images a bundle needs: every executable file (and vDSO) mapped by a
 * process that ran on a traced CPU in the window, as the side-band going
 * into the bundle says (synthesized state first, then the records). Which
 * processes ran comes from context switches and ITRACE_START; without any
 * (no context_switch side-band) every process in the side-band counts. */
typedef struct PidSet {
        uint32_t *v;
        size_t n, allocated;
} PidSet;

static bool pid_set_has(const PidSet *s, uint32_t pid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->v[i] == pid)
                        return true;
        return false;
}

static int pid_set_add(PidSet *s, uint32_t pid) {
        if (pid == 0 || pid == UINT32_MAX || pid_set_has(s, pid))
                return 0;
        if (s->n == s->allocated) {
                size_t n = MAX(s->allocated * 2, (size_t) 64);
                uint32_t *a = realloc(s->v, n * sizeof(uint32_t));
                if (!a)
                        return -ENOMEM;
                s->v = a;
                s->allocated = n;
        }
        s->v[s->n++] = pid;
        return 0;
}

static bool image_known(const DumpJob *j, const char *path, const uint8_t *id, size_t id_size, bool vdso, uint32_t pid) {
        for (size_t i = 0; i < j->n_images; i++) {
                const DumpImage *d = &j->images[i];
                if (vdso || d->vdso) {
                        if (vdso && d->vdso && d->pid == pid)
                                return true;
                        continue;
                }
                /* One file under two paths (a copy, a hard link) is one
                 * image, but each path is kept: stock perf finds a file by
                 * the path its MMAP2 names (under --symfs), so the bundle
                 * lists every path (bundle_images_add_file() adds it to the
                 * image of that build-id). */
                if (id_size > 0 && d->build_id_size == id_size && memcmp(d->build_id, id, id_size) == 0 &&
                    streq(d->path, path))
                        return true;
                if (id_size == 0 && d->build_id_size == 0 && streq(d->path, path))
                        return true;
        }
        return false;
}

/* A jitdump file a process mapped, as perf finds it (jit_process() in
 * tools/perf/util/jitdump.c looks at every MMAP2 for jit_detect()'s
 * "jit-<pid>.dump"): the JIT maps it executable just so a record names it. */
static int add_jit_dump(DumpJob *j, const PerfRecord *r) {
        DumpImage *a;

        for (size_t i = 0; i < j->n_jit_dumps; i++)
                if (j->jit_dumps[i].pid == r->mmap2.pid)
                        return 0; /* the first is the one perf takes too */
        a = reallocarray(j->jit_dumps, j->n_jit_dumps + 1, sizeof *a);
        if (!a)
                return -ENOMEM;
        j->jit_dumps = a;
        a[j->n_jit_dumps] = (DumpImage){ .pid = r->mmap2.pid, .path = strdup(r->mmap2.filename) };
        if (!a[j->n_jit_dumps].path)
                return -ENOMEM;
        j->n_jit_dumps++;
        return 0;
}

static int add_image(DumpJob *j, const PerfRecord *r) {
        bool vdso = streq(r->mmap2.filename, "[vdso]");
        const uint8_t *id = r->mmap2.has_build_id ? r->mmap2.build_id : NULL;
        size_t id_size = r->mmap2.has_build_id ? r->mmap2.build_id_size : 0;
        DumpImage *a, *d;

        if (!vdso && r->mmap2.filename[0] != '/')
                return 0; /* anonymous or special mappings: not files */
        if (jitdump_is_dump_name(r->mmap2.filename, r->mmap2.pid))
                return add_jit_dump(j, r);
        if (image_known(j, r->mmap2.filename, id, id_size, vdso, r->mmap2.pid))
                return 0;
        a = realloc(j->images, sizeof(DumpImage) * (j->n_images + 1));
        if (!a)
                return -ENOMEM;
        j->images = a;
        d = &j->images[j->n_images];
        *d = (DumpImage){
                .pid = r->mmap2.pid,
                .vdso = vdso,
                .start = r->mmap2.addr,
                .end = r->mmap2.addr + r->mmap2.len,
        };
        d->path = strdup(r->mmap2.filename);
        if (!d->path)
                return -ENOMEM;
        if (id && id_size <= sizeof d->build_id) {
                memcpy(d->build_id, id, id_size);
                d->build_id_size = id_size;
        }
        j->n_images++;
        return 0;
}

static int collect_images(DumpJob *j) {
        _cleanup_free_ uint32_t *pids = NULL;
        PidSet ran = {}, mapped = {};
        PerfRecordStream st;
        const void *rec;
        size_t size;
        bool have_switches = false;
        int k = 0;

        perf_record_stream_init(&st, j->sideband.data, j->sideband.size);
        while (k >= 0 && perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0)
                        continue;
                if (r.type == PERF_RECORD_SWITCH_CPU_WIDE) {
                        have_switches = true;
                        k = pid_set_add(&ran, r.sid.pid);
                        if (k >= 0)
                                k = pid_set_add(&ran, r.switch_.next_prev_pid);
                } else if (r.type == PERF_RECORD_ITRACE_START)
                        k = pid_set_add(&ran, r.itrace_start.pid);
        }
        pids = ran.v;
        if (k < 0)
                return k;

        perf_record_stream_init(&st, j->sideband.data, j->sideband.size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || r.type != PERF_RECORD_MMAP2 ||
                    !(r.mmap2.prot & PROT_EXEC))
                        continue;
                if (have_switches && !pid_set_has(&ran, r.mmap2.pid))
                        continue;
                k = add_image(j, &r);
                if (k >= 0)
                        k = pid_set_add(&mapped, r.mmap2.pid);
                if (k < 0) {
                        free(mapped.v);
                        return k;
                }
        }
        /* JIT code is looked for in every process that ran (or, without
         * switch records, that the side-band maps code in). */
        if (have_switches) {
                free(mapped.v);
                j->jit_pids = TAKE_PTR(pids);
                j->n_jit_pids = ran.n;
        } else {
                j->jit_pids = mapped.v;
                j->n_jit_pids = mapped.n;
        }
        return 0;
}

/* ---- the side-band window ---- */

/* Where the oldest trace of any CPU starts, in perf time, from the first
 * TSC after its first PSB (a few packets to read: cheap on the loop), less
 * a margin for the records that set up the state it runs in. UINT64_MAX
 * when no CPU's trace has a TSC or there is no conversion. */
static uint64_t snapshot_window_start(const RecorderSnapshot *s, const PerfTscConversion *conv) {
        uint64_t t0 = UINT64_MAX;

        if (!conv->cap_user_time_zero)
                return UINT64_MAX;
        for (size_t i = 0; i < s->n_cpus; i++) {
                PtScanResult scan;

                if (!s->cpus[i].data || pt_scan_tsc_range(s->cpus[i].data, s->cpus[i].size, &scan) < 0 ||
                    !scan.has_tsc)
                        continue;
                t0 = MIN(t0, perf_tsc_to_time(conv, scan.first_tsc));
        }
        if (t0 == UINT64_MAX)
                return t0;
        return t0 > DUMP_WINDOW_MARGIN_NSEC ? t0 - DUMP_WINDOW_MARGIN_NSEC : 0;
}

/* Who runs on each traced CPU at t0, as an ITRACE_START at t0 (id 0, as
 * perf's synthesized records: evlist__event2evsel() gives them the first
 * event). The kernel writes one when the intel_pt event starts
 * (perf_log_itrace_start() names current) and then only context switches
 * tell; a task that switched in before the window's oldest record, and
 * ran on since (a busy loop, an isolated CPU), would otherwise be known to
 * no decoder: perf's intel_pt_process_itrace_start() sets the CPU's
 * current tid from it, as ptctl does, where perf had no thread and failed
 * to read any instruction. */
static int synthesize_running(const DumpSources *src, const RecorderSnapshot *s, uint64_t t0, Buffer *out) {
        _cleanup_free_ SidebandRunning *run = NULL;
        unsigned n = 0;
        int k;

        for (size_t i = 0; i < s->n_cpus; i++)
                n = MAX(n, s->cpus[i].cpu + 1);
        if (n == 0)
                return 0;
        run = calloc(n, sizeof *run);
        if (!run)
                return -ENOMEM;
        k = sideband_log_running_at(src->sideband, t0, run, n);
        if (k < 0)
                return k;
        for (size_t i = 0; i < s->n_cpus; i++) {
                const SidebandRunning *r = &run[s->cpus[i].cpu];
                PerfSampleId sid = { .pid = r->pid,
                                     .tid = r->tid,
                                     .time = t0,
                                     .cpu = s->cpus[i].cpu,
                                     .sample_type = PTRACED_SAMPLE_TYPE };

                if (!r->known)
                        continue;
                k = perf_record_append_itrace_start(out, r->pid, r->tid, &sid);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* ---- the job ---- */

int dump_job_assemble(const DumpSettings *settings, const DumpSources *src, TriggerRequest *first,
                      RecorderSnapshot *s, uint64_t seq, DumpJob **ret) {
        _cleanup_(dump_job_freep) DumpJob *j = calloc(1, sizeof(DumpJob));
        uint64_t t0, t1, n = 0;
        bool complete = true;
        int k;

        if (!j)
                return -ENOMEM;
        j->seq = seq;
        k = bundle_manifest_new(&j->manifest);
        if (k < 0)
                return k;
        k = fill_manifest(src, j, first, s);
        if (k < 0)
                return k;

        /* The side-band of the window: process state as of its start, then
         * every record since. The window ends now (the newest side-band
         * seen, or the trigger) and starts at the oldest trace of any CPU;
         * when the trace tells no time (tsc=0, or nothing captured), what
         * the rings can hold by the measured rates. */
        t1 = MAX(src->latest_time, j->manifest->trigger.perf_time);
        t0 = snapshot_window_start(s, &j->manifest->tsc.conversion);
        if (t0 == UINT64_MAX)
                t0 = t1 > src->window_ns ? t1 - src->window_ns : 0;
        t0 = MIN(t0, t1);
        k = procmap_synthesize(src->procmap, t0, t1, &j->sideband);
        if (k < 0)
                return k;
        k = synthesize_running(src, s, t0, &j->sideband);
        if (k < 0)
                return k;
        k = sideband_log_slice(src->sideband, t0, &j->sideband, &n, &complete);
        if (k < 0)
                return k;
        j->sideband_records = n; /* from the kernel: synthesized state not counted */
        j->sideband_dropped_until = complete ? 0 : MAX(sideband_log_dropped_until(src->sideband), (uint64_t) 1);
        j->sideband_lost = src->sideband_lost;

        k = collect_images(j);
        if (k < 0)
                return k;

        j->limits = settings->limits;
        j->directory = strdup(settings->directory);
        if (!j->directory || !(j->buildid_cache = buildid_cache_dir(settings->directory)))
                return -ENOMEM;
        j->writer = BUNDLE_WRITER_OPTIONS_DEFAULT;
        j->writer.compress = settings->compress;
        j->writer.compress_level = settings->compress_level;
        j->image_budget = settings->image_budget;
        j->image_file_max = settings->image_max;
        j->debuginfo_budget = settings->debuginfo_budget;

        /* Attached last, so a failure leaves it with the caller. */
        j->snapshot = s;
        *ret = TAKE_PTR(j);
        return 0;
}

/* ---- retention ---- */

int dump_job_make_room(const DumpSettings *settings, DumpJob *j, BundleVacuumResult *ret, char **ret_error) {
        BundleVacuumOptions vo = { .fs_free_override = UINT64_MAX, .buildid_cache = j->buildid_cache };
        uint64_t estimate = j->sideband.size;
        int k;

        /* The bundle being written never counts against itself; compression
         * roughly halves trace. */
        for (size_t i = 0; i < j->snapshot->n_cpus; i++)
                estimate += j->snapshot->cpus[i].size;
        vo.reserve = MAX(estimate / 2, (uint64_t) 1);
        k = bundle_vacuum(settings->directory, &settings->limits, &vo, ret, ret_error);
        if (k < 0)
                return k;
        if (ret->allowed_size != UINT64_MAX) {
                j->writer.max_size = ret->allowed_size;
                snprintf(j->max_size_limit, sizeof j->max_size_limit, "%s", ret->allowed_by);
                j->writer.max_size_limit = j->max_size_limit;
        }
        return 0;
}

int dump_vacuum(const DumpSettings *settings, const char *just_written, BundleVacuumResult *ret, char **ret_error) {
        _cleanup_free_ char *cache = buildid_cache_dir(settings->directory);
        BundleVacuumOptions vo = { .exclude = just_written, .fs_free_override = UINT64_MAX, .buildid_cache = cache };

        if (!cache)
                return -ENOMEM;
        return bundle_vacuum(settings->directory, &settings->limits, &vo, ret, ret_error);
}

int dump_directory_ensure(const DumpSettings *settings) {
        struct stat st;
        int k;

        if (stat(settings->directory, &st) >= 0)
                return 0;
        if (errno != ENOENT)
                return -errno;
        k = mkdir_p(settings->directory, settings->directory_mode & 07777);
        if (k < 0)
                return k;
        /* mkdir() applied the umask; the group is ours to give when we are
         * in it (ptraced runs with SupplementaryGroups=ptraced). */
        if (chmod(settings->directory, settings->directory_mode & 07777) < 0 ||
            chown(settings->directory, (uid_t) -1, settings->directory_gid) < 0)
                return -errno;
        return 1;
}

int dump_directory_prepare(const char *directory, unsigned *ret_removed, int *ret_cleanup_error) {
        _cleanup_free_ char *staging = NULL, *cache = NULL;
        unsigned cache_tmps = 0;
        int k;

        *ret_removed = 0;
        *ret_cleanup_error = 0;
        k = mkdir_p(directory, 0750);
        if (k < 0)
                return k;
        if (asprintf(&staging, "%s/.staging", directory) < 0 || !(cache = buildid_cache_dir(directory)))
                return -ENOMEM;
        (void) rm_rf(staging); /* images staged by a dump that never finished */
        *ret_cleanup_error = MIN(bundle_dir_remove_leftovers(directory, ret_removed), 0);
        /* No copy into the cache is under way before the dump thread runs. */
        k = buildid_cache_remove_temporaries(cache, &cache_tmps);
        if (k < 0 && *ret_cleanup_error == 0)
                *ret_cleanup_error = k;
        *ret_removed += cache_tmps;
        return 0;
}
