/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/bundle/buildid-cache.h"
#include "common/bundle/bundle.h"
#include "common/bundle/images.h"
#include "common/bundle/kcore-copy.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "common/pt/scan.h"
#include "daemon/dump/dump.h"
#include "daemon/procmap/procmap.h"

/* /proc/kallsyms is a few MiB on a big kernel; refuse anything absurd. */
#define KALLSYMS_MAX (64U << 20)
#define MODULES_MAX (4U << 20)
#define KCORE_COPY_MAX (UINT64_C(1) << 30)

DumpJob *dump_job_free(DumpJob *j) {
        if (!j)
                return NULL;
        free(j->id);
        bundle_writer_free(j->bundle); /* a bundle not finished leaves nothing behind */
        recorder_snapshot_free(j->snapshot);
        buffer_done(&j->sideband);
        for (size_t i = 0; i < j->n_images; i++)
                free(j->images[i].path);
        free(j->images);
        free(j->jit_pids);
        for (size_t i = 0; i < j->n_jit_dumps; i++)
                free(j->jit_dumps[i].path);
        free(j->jit_dumps);
        bundle_manifest_free(j->manifest);
        free(j->directory);
        free(j->buildid_cache);
        free(j->error_text);
        free(j->path);
        return mfree(j);
}

static int job_fail(DumpJob *j, int error, const char *fmt, ...) _printf_(3, 4);
static int job_fail(DumpJob *j, int error, const char *fmt, ...) {
        va_list ap;

        j->error = error;
        free(j->error_text);
        va_start(ap, fmt);
        if (vasprintf(&j->error_text, fmt, ap) < 0)
                j->error_text = NULL;
        va_end(ap);
        return error;
}

/* The flags of the intel_pt events' PERF_RECORD_AUX records in the
 * bundle's side-band: the kernel writes one at every stop of the event
 * (pt_event_stop() -> perf_aux_output_end()), flagged PARTIAL when a VMX
 * guest ran untraced during that transaction (intel_pt_handle_vmx()),
 * TRUNCATED after a ToPA STOP (pt_handle_status()), COLLISION when AUX
 * data collided. A record counts for a CPU when its transaction ended
 * within that CPU's captured trace: the gap may lie in what we have. */
static void mark_aux_flags(DumpJob *j) {
        BundleManifest *m = j->manifest;
        PerfRecordStream st;
        const void *rec;
        size_t size;

        perf_record_stream_init(&st, j->sideband.data, j->sideband.size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;

                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || r.type != PERF_RECORD_AUX ||
                    !r.has_sample_id)
                        continue;
                for (size_t i = 0; i < m->n_cpus; i++) {
                        BundleCpu *bc = &m->cpus[i];

                        if (bc->cpu != r.sid.cpu || (bc->has_time && r.sid.time < bc->first_time))
                                continue;
                        bc->truncated = bc->truncated || (r.aux.flags & PERF_AUX_FLAG_TRUNCATED);
                        bc->partial = bc->partial || (r.aux.flags & PERF_AUX_FLAG_PARTIAL);
                        bc->collision = bc->collision || (r.aux.flags & PERF_AUX_FLAG_COLLISION);
                        bc->lost = bc->lost || bc->collision;
                }
        }
}

/* Per-CPU coverage: bytes, wrap, blackout, and the time range the trace
 * itself shows (first/last TSC), converted to perf time. The bundle's
 * lookback is what its trace measures: how far back from its end every
 * CPU's trace reaches (the shortest span among the CPUs with time), not an
 * estimate from rates (issue 14, defect 3); unknown (0) when no CPU's
 * trace tells time. */
static int describe_cpus(DumpJob *j) {
        RecorderSnapshot *s = j->snapshot;
        BundleManifest *m = j->manifest;
        uint64_t lookback = UINT64_MAX;

        for (size_t i = 0; i < s->n_cpus; i++) {
                SnapshotCpu *sc = &s->cpus[i];
                BundleCpu *bc = bundle_manifest_add_cpu(m, sc->cpu);
                PtScanResult scan;

                if (!bc)
                        return -ENOMEM;
                bc->buffer_size = sc->aux_size;
                bc->wrapped = sc->wrapped;
                bc->blackout_ns = sc->enabled_at > sc->disabled_at ? sc->enabled_at - sc->disabled_at : 0;
                bc->restarts = sc->restarts;
                bc->restarted_time = sc->restarted_time;
                if (sc->error < 0) {
                        bc->lost = true;
                        if (asprintf(&bc->error, "could not be frozen or copied: %s", strerror(-sc->error)) < 0)
                                return -ENOMEM;
                        if (!sc->data)
                                continue;
                }
                if (asprintf(&bc->member, "cpu%u.pt", sc->cpu) < 0)
                        return -ENOMEM;
                bc->bytes = sc->size;

                if (pt_scan_tsc_range(sc->data, sc->size, &scan) >= 0 && scan.has_tsc) {
                        bc->has_time = true;
                        bc->first_tsc = scan.first_tsc;
                        bc->last_tsc = scan.last_tsc;
                        if (m->tsc.conversion.cap_user_time_zero) {
                                bc->first_time = perf_tsc_to_time(&m->tsc.conversion, scan.first_tsc);
                                bc->last_time = perf_tsc_to_time(&m->tsc.conversion, scan.last_tsc);
                        } else
                                bc->has_time = false; /* TSC without a conversion says nothing in perf time */
                }
                if (bc->has_time)
                        lookback = MIN(lookback, bc->last_time - bc->first_time);
        }
        m->lookback_ns = lookback == UINT64_MAX ? 0 : lookback;
        bundle_manifest_compute_window(m);
        mark_aux_flags(j);
        return 0;
}

/* kallsyms, modules and, where /proc/kcore exists, the kernel and module
 * text: so kernel addresses decode on another machine. */
static int add_kernel(DumpJob *j, BundleWriter *w) {
        BundleKernel *k = &j->manifest->kernel;
        _cleanup_free_ char *kallsyms = NULL, *modules = NULL, *error = NULL;
        size_t ks = 0, ms = 0;
        int r;

        r = read_full_file("/proc/kallsyms", KALLSYMS_MAX, &kallsyms, &ks);
        if (r >= 0) {
                r = bundle_writer_add_member(w, "kallsyms", kallsyms, ks, 0, &error);
                if (r < 0)
                        return job_fail(j, r, "cannot add kallsyms: %s", strna(error));
                k->kallsyms_member = strdup("kallsyms");
                if (!k->kallsyms_member)
                        return -ENOMEM;
        }
        r = read_full_file("/proc/modules", MODULES_MAX, &modules, &ms);
        if (r >= 0) {
                r = bundle_writer_add_member(w, "modules", modules, ms, 0, &error);
                if (r < 0)
                        return job_fail(j, r, "cannot add modules: %s", strna(error));
                k->modules_member = strdup("modules");
                if (!k->modules_member)
                        return -ENOMEM;
        }

        if (access("/proc/kcore", R_OK) < 0) {
                k->kcore_absent_reason = strdup(errno == ENOENT ? "this host has no /proc/kcore (CONFIG_PROC_KCORE off)"
                                                                : "/proc/kcore is not readable");
                return k->kcore_absent_reason ? 0 : -ENOMEM;
        }
        if (!kallsyms) {
                k->kcore_absent_reason = strdup("kernel text not copied: /proc/kallsyms unreadable");
                return k->kcore_absent_reason ? 0 : -ENOMEM;
        }

        _cleanup_close_ int fd = open(j->directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        KcoreCopyResult res;
        if (fd < 0)
                return job_fail(j, -errno, "cannot create a temporary file in %s for the kernel image: %m",
                                j->directory);
        r = kcore_copy("/proc/kcore", kallsyms, modules ?: "", fd, KCORE_COPY_MAX, &res, &error);
        if (r < 0) {
                if (asprintf(&k->kcore_absent_reason, "kernel text copy failed: %s", strna(error)) < 0)
                        return -ENOMEM;
                return 0;
        }
        if (lseek(fd, 0, SEEK_SET) < 0)
                return job_fail(j, -errno, "cannot rewind the kernel image: %m");
        r = bundle_writer_add_member_fd(w, "kcore.elf", fd, 0, &error);
        if (r < 0)
                return job_fail(j, r, "cannot add the kernel image: %s", strna(error));
        k->kcore_member = strdup("kcore.elf");
        if (!k->kcore_member)
                return -ENOMEM;
        k->text_start = res.text.start;
        k->text_end = res.text.end;
        k->modules_start = res.modules.start;
        k->modules_end = res.modules.end;
        return 0;
}

/* JIT code of one process, as it is now (ptraced-bundle(5), "JIT code"):
 * its executable anonymous and memfd memory, its perf map and its jitdump.
 * Nothing here stops the dump: what cannot be read is listed missing. */
static int add_jit(DumpJob *j, BundleImages *imgs, pid_t pid) {
        _cleanup_free_ ProcMapCodeRegion *regions = NULL;
        _cleanup_free_ char *map_path = NULL, *map_open = NULL;
        char proc[32];
        struct stat st;
        size_t n = 0;
        int r;

        if (procmap_read_code_regions(pid, &regions, &n) < 0)
                return 0; /* gone: its code with it */
        (void) snprintf(proc, sizeof proc, "/proc/%d", (int) pid);
        if (stat(proc, &st) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t t = (uint64_t) ((int64_t) now_nsec(CLOCK_MONOTONIC) + j->perf_minus_monotonic);

                r = bundle_images_add_jit(imgs, pid, regions[i].start, regions[i].end - regions[i].start,
                                          regions[i].name, t);
                if (r == -ENOMEM)
                        return r;
        }
        /* A perf map only matters beside JIT memory; dso__load_perf_map()
         * reads /tmp/perf-<pid>.map in the process's mount namespace under
         * its namespace's pid, and so do we. */
        if (n > 0) {
                if (asprintf(&map_path, "/tmp/perf-%d.map", (int) procmap_ns_pid(pid)) < 0 ||
                    asprintf(&map_open, "%s/root%s", proc, map_path) < 0)
                        return -ENOMEM;
                if (access(map_open, F_OK) >= 0) {
                        r = bundle_images_add_jit_file(
                                imgs, pid, BUNDLE_JIT_PERF_MAP, map_open, map_path, st.st_uid,
                                (uint64_t) ((int64_t) now_nsec(CLOCK_MONOTONIC) + j->perf_minus_monotonic));
                        if (r == -ENOMEM)
                                return r;
                }
        }
        for (size_t i = 0; i < j->n_jit_dumps; i++) {
                _cleanup_free_ char *open_path = NULL;

                if (j->jit_dumps[i].pid != (uint32_t) pid)
                        continue;
                if (asprintf(&open_path, "%s/root%s", proc, j->jit_dumps[i].path) < 0)
                        return -ENOMEM;
                r = bundle_images_add_jit_file(
                        imgs, pid, BUNDLE_JIT_DUMP, open_path, j->jit_dumps[i].path, st.st_uid,
                        (uint64_t) ((int64_t) now_nsec(CLOCK_MONOTONIC) + j->perf_minus_monotonic));
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}

static int add_images(DumpJob *j, BundleWriter *w) {
        _cleanup_(buildid_cache_freep) BuildIdCache *cache = NULL;
        _cleanup_(bundle_images_freep) BundleImages *imgs = NULL;
        _cleanup_free_ char *error = NULL;
        BundleImageBudget budget = { .max_file_size = j->image_file_max,
                                     .max_bundle_size = j->image_budget,
                                     .max_debug_size = j->debuginfo_budget };
        int r;

        if (j->n_images == 0 && j->n_jit_pids == 0)
                return 0;
        if (j->buildid_cache) {
                r = buildid_cache_new(j->buildid_cache, &cache);
                if (r < 0)
                        cache = NULL; /* images are then staged without the cache */
        }
        /* A private staging directory under <bundles>/.staging (same file
         * system as the cache, for hard links); the daemon empties
         * .staging at start, so a crash leaves nothing behind for long. */
        _cleanup_free_ char *staging = NULL, *staging_root = NULL;
        if (asprintf(&staging_root, "%s/.staging", j->directory) < 0 ||
            asprintf(&staging, "%s/%s", staging_root, j->manifest->id) < 0)
                return -ENOMEM;
        r = mkdir_p(staging_root, 0700);
        if (r < 0)
                return job_fail(j, r, "cannot create %s: %s", staging_root, strerror(-r));
        r = bundle_images_new(cache, staging, &budget, &imgs);
        if (r < 0)
                return job_fail(j, r, "cannot stage images: %s", strerror(-r));

        for (size_t i = 0; i < j->n_images; i++) {
                DumpImage *img = &j->images[i];

                if (img->vdso) {
                        (void) bundle_images_add_vdso(imgs, (pid_t) img->pid, img->start, img->end);
                        continue;
                }
                /* Open through the process's root, so a file replaced or
                 * in another mount namespace is still the one it mapped. */
                _cleanup_free_ char *open_path = NULL;
                if (img->pid > 0 && img->path[0] == '/' &&
                    asprintf(&open_path, "/proc/%u/root%s", img->pid, img->path) < 0)
                        return -ENOMEM;
                if (open_path && access(open_path, R_OK) < 0)
                        open_path = mfree(open_path);
                (void) bundle_images_add_file(imgs, open_path ?: img->path, img->path,
                                              img->build_id_size ? img->build_id : NULL, img->build_id_size);
        }
        /* After the files: the image budget goes to ELF images first. */
        for (size_t i = 0; i < j->n_jit_pids; i++) {
                r = add_jit(j, imgs, (pid_t) j->jit_pids[i]);
                if (r < 0)
                        return job_fail(j, r, "cannot add JIT code: %s", strerror(-r));
        }

        r = bundle_images_fill_manifest(imgs, j->manifest);
        if (r < 0)
                return job_fail(j, r, "cannot describe images: %s", strerror(-r));
        r = bundle_images_write(imgs, w, &error);
        if (r < 0)
                return job_fail(j, r, "cannot add images: %s", strna(error));
        return 0;
}

static char *bundle_file_name(const DumpJob *j) {
        char ts[32];
        time_t t = (time_t) (j->manifest->created_realtime_usec / USEC_PER_SEC);
        struct tm tm;
        char *s;

        if (!gmtime_r(&t, &tm) || strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm) == 0)
                snprintf(ts, sizeof ts, "%llu", (unsigned long long) t);
        if (asprintf(&s, "ptraced-%s-%.8s.tar", ts, j->manifest->id) < 0)
                return NULL;
        return s;
}

/* Stage 1: the trace, then the kernel. The kernel's text is read last:
 * every TEXT_POKE before that read is in the rings by then, and the late
 * side-band taken after this stage has it. */
static int dump_job_capture(DumpJob *j) {
        _cleanup_free_ char *name = NULL, *error = NULL;
        BundleManifest *m = j->manifest;
        int r;

        j->started_at = now_nsec(CLOCK_MONOTONIC);
        if (!m->created_realtime_usec)
                m->created_realtime_usec = now_usec(CLOCK_REALTIME);

        r = describe_cpus(j);
        if (r < 0)
                return job_fail(j, r, "cannot describe the snapshot: %s", strerror(-r));

        name = bundle_file_name(j);
        if (!name)
                return job_fail(j, -ENOMEM, "out of memory");
        r = bundle_writer_new(j->directory, name, &j->writer, &j->bundle, &error);
        if (r < 0)
                return job_fail(j, r, "cannot start bundle %s/%s: %s", j->directory, name, strna(error));

        for (size_t i = 0; i < j->snapshot->n_cpus; i++) {
                SnapshotCpu *sc = &j->snapshot->cpus[i];
                char member[32];

                if (!sc->data)
                        continue;
                snprintf(member, sizeof member, "cpu%u.pt", sc->cpu);
                r = bundle_writer_add_member(j->bundle, member, sc->data, sc->size, 0, &error);
                if (r < 0)
                        return job_fail(j, r, "cannot write %s: %s", member, strna(error));
                /* The trace is on disk (or in the writer's spool): give the
                 * memory back now, not when the whole bundle is done. */
                recorder_snapshot_release_cpu(j->snapshot, i);
        }

        r = add_kernel(j, j->bundle);
        if (r < 0)
                return j->error ? j->error : job_fail(j, r, "cannot add the kernel: %s", strerror(-r));
        j->captured = true;
        return 0;
}

/* Stage 2: the side-band (with its late records), images, the manifest. */
static int dump_job_write(DumpJob *j) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = TAKE_PTR(j->bundle);
        _cleanup_free_ char *error = NULL;
        BundleManifest *m = j->manifest;
        struct stat st;
        int r;

        m->sideband.member = strdup("sideband.perf");
        if (!m->sideband.member)
                return job_fail(j, -ENOMEM, "out of memory");
        m->sideband.n_records = j->sideband_records;
        m->sideband.n_lost = j->sideband_lost;
        m->sideband.dropped_until = j->sideband_dropped_until;
        r = bundle_writer_add_member(w, "sideband.perf", j->sideband.data, j->sideband.size, 0, &error);
        if (r < 0)
                return job_fail(j, r, "cannot write the side-band: %s", strna(error));

        r = add_images(j, w);
        if (r < 0)
                return j->error ? j->error : job_fail(j, r, "cannot add images: %s", strerror(-r));

        /* Room for this bundle among the others, now that they are on
         * disk (the ones queued before it included): a failure here leaves
         * the vacuum after the bundle to try again. */
        (void) bundle_vacuum(j->directory, &j->limits,
                             &(BundleVacuumOptions){ .reserve = 1, .buildid_cache = j->buildid_cache,
                                                     .fs_free_override = UINT64_MAX },
                             &j->link_vacuum, NULL);
        r = bundle_writer_finish(w, m, &j->path, &error);
        if (r < 0)
                return job_fail(j, r, "cannot finish bundle %s: %s", m->id, strna(error));
        if (stat(j->path, &st) >= 0)
                j->size = (uint64_t) st.st_size;
        j->finished_at = now_nsec(CLOCK_MONOTONIC);
        return 0;
}

int dump_job_run(DumpJob *j) {
        int r;

        if (!j->captured) {
                r = dump_job_capture(j);
                if (r < 0)
                        return r;
        }
        return dump_job_write(j);
}

int dump_job_step(DumpJob *j) {
        if (j->captured || !j->late_sideband)
                return dump_job_run(j);
        return dump_job_capture(j);
}

bool dump_job_awaits_sideband(const DumpJob *j) {
        return j->captured && j->late_sideband && !j->late_added && j->error >= 0;
}

int dump_job_add_late_sideband(DumpJob *j, const void *records, size_t size, uint64_t lost) {
        PerfRecordStream st;
        const void *rec;
        size_t n;
        int r;

        j->late_added = true;
        r = buffer_append(&j->sideband, records, size);
        if (r < 0)
                return r;
        perf_record_stream_init(&st, records, size);
        while (perf_record_stream_next(&st, &rec, &n) > 0)
                j->sideband_records++;
        j->sideband_lost += lost;
        return 0;
}

/* ---- the dump thread ---- */

struct Dumper {
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        DumpJob **todo;
        size_t n_todo;
        DumpJob **done;
        size_t n_done;
        bool busy;
        bool quit;
        int fd;
};

static void *dumper_thread(void *userdata) {
        Dumper *d = userdata;

        pthread_mutex_lock(&d->lock);
        for (;;) {
                DumpJob *j;

                while (!d->quit && d->n_todo == 0)
                        pthread_cond_wait(&d->cond, &d->lock);
                if (d->n_todo == 0)
                        break; /* quit, and nothing left to write */
                j = d->todo[0];
                memmove(d->todo, d->todo + 1, sizeof(DumpJob *) * --d->n_todo);
                d->busy = true;
                bool quitting = d->quit;
                pthread_mutex_unlock(&d->lock);

                nsec_t cpu0 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
                /* Stopping: nobody will hand a job its late side-band. */
                (void) (quitting ? dump_job_run(j) : dump_job_step(j));
                j->cpu_ns += now_nsec(CLOCK_THREAD_CPUTIME_ID) - cpu0;

                pthread_mutex_lock(&d->lock);
                d->busy = false;
                DumpJob **a = realloc(d->done, sizeof(DumpJob *) * (d->n_done + 1));
                if (a) {
                        d->done = a;
                        d->done[d->n_done++] = j;
                        uint64_t one = 1;
                        (void) !write(d->fd, &one, sizeof one);
                } else
                        dump_job_free(j);
        }
        pthread_mutex_unlock(&d->lock);
        return NULL;
}

int dumper_new(Dumper **ret) {
        _cleanup_(dumper_freep) Dumper *d = calloc(1, sizeof(Dumper));

        if (!d)
                return -ENOMEM;
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->cond, NULL);
        d->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d->fd < 0)
                return -errno;
        if (pthread_create(&d->thread, NULL, dumper_thread, d) != 0)
                return -EAGAIN;
        d->started = true;
        *ret = TAKE_PTR(d);
        return 0;
}

static void dumper_join(Dumper *d) {
        if (!d->started)
                return;
        pthread_mutex_lock(&d->lock);
        d->quit = true;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        d->started = false;
}

void dumper_stop(Dumper *d) {
        pthread_mutex_lock(&d->lock);
        DumpJob **a = d->n_todo > 0 ? reallocarray(d->done, d->n_done + d->n_todo, sizeof(DumpJob *)) : NULL;
        if (a) {
                size_t kept = 0;

                d->done = a;
                for (size_t i = 0; i < d->n_todo; i++) {
                        DumpJob *j = d->todo[i];

                        /* A job back for its second stage has its trace and
                         * kernel on disk already: the thread finishes it. */
                        if (j->captured) {
                                d->todo[kept++] = j;
                                continue;
                        }
                        (void) job_fail(j, -ECANCELED, "ptraced stopped before writing the bundle");
                        d->done[d->n_done++] = j;
                }
                d->n_todo = kept;
                uint64_t one = 1;
                (void) !write(d->fd, &one, sizeof one);
        }
        /* Without memory to hand them back the thread writes them all. */
        pthread_mutex_unlock(&d->lock);
        dumper_join(d);
}

Dumper *dumper_free(Dumper *d) {
        if (!d)
                return NULL;
        /* Finish what was queued: a snapshot taken is a bundle owed. */
        dumper_join(d);
        for (size_t i = 0; i < d->n_todo; i++)
                dump_job_free(d->todo[i]);
        for (size_t i = 0; i < d->n_done; i++) {
                /* Written without the late side-band nobody will hand it now. */
                if (dump_job_awaits_sideband(d->done[i]))
                        (void) dump_job_run(d->done[i]);
                dump_job_free(d->done[i]);
        }
        free(d->todo);
        free(d->done);
        safe_close(d->fd);
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->cond);
        return mfree(d);
}

int dumper_submit(Dumper *d, DumpJob *j) {
        DumpJob **a;

        pthread_mutex_lock(&d->lock);
        a = realloc(d->todo, sizeof(DumpJob *) * (d->n_todo + 1));
        if (!a) {
                pthread_mutex_unlock(&d->lock);
                dump_job_free(j);
                return -ENOMEM;
        }
        d->todo = a;
        d->todo[d->n_todo++] = j;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
        return 0;
}

int dumper_fd(Dumper *d) {
        return d->fd;
}

int dumper_take(Dumper *d, DumpJob **ret) {
        uint64_t v;

        pthread_mutex_lock(&d->lock);
        if (d->n_done == 0) {
                /* Under the lock, which the dump thread holds when it
                 * signals: this consumes the signals of jobs taken already,
                 * never that of one just done (a job handed back for its
                 * late side-band comes back within moments). */
                (void) !read(d->fd, &v, sizeof v);
                pthread_mutex_unlock(&d->lock);
                return 0;
        }
        *ret = d->done[0];
        memmove(d->done, d->done + 1, sizeof(DumpJob *) * --d->n_done);
        pthread_mutex_unlock(&d->lock);
        return 1;
}
