/* SPDX-License-Identifier: MIT */

/*
 * OUTDIR/data, a file mode perf.data. What goes where, and why:
 *
 *   attrs   the intel_pt event (type, config and exclusions from the
 *           manifest) and the dummy tracking event (mmap, mmap2, comm,
 *           task, context_switch...), both with the side-band's
 *           sample_type and sample_id_all. Their ids are the ids the
 *           side-band records carry: AUX, ITRACE_START and
 *           AUX_OUTPUT_HW_ID come from the intel_pt event's own ring, every
 *           other record from the dummy event. perf refuses a record whose
 *           id no event claims, so every id seen is claimed.
 *   records AUXTRACE_INFO (Intel PT: pmu type, the TSC conversion, the
 *           config bits of tsc/noretcomp/mtc/cyc and the mtc_period field,
 *           have_sched_switch = 3 (cpu-wide switch records), snapshot mode,
 *           per-CPU mmaps, CPUID 0x15's TSC/CTC ratio, max non-turbo ratio,
 *           no filter: the manifest does not record one), TIME_CONV, a
 *           kernel MMAP for [kernel.kallsyms]_text when the side-band has
 *           none (perf takes the kernel map and its relocation from it),
 *           the side-band records unchanged, one AUXTRACE per CPU with its
 *           trace bytes (idx = the CPU's position, tid -1, padded to 8 bytes
 *           with zeros as perf record pads), FINISHED_ROUND.
 *   features HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID
 *           (perf applies errata by it), CMDLINE, EVENT_DESC (names),
 *           BUILD_ID (every user image, and the kernel's when the side-band
 *           has it), PMU_MAPPINGS, AUXTRACE (the index: perf queues all
 *           trace before the side-band, so thread switches interleave with
 *           the decode by time), CLOCK_DATA (the trigger's perf time and
 *           wall-clock time, for perf script -F +tod). Not written: CPU and
 *           NUMA topology, caches, memory: the bundle does not record them
 *           and perf script and perf report do not need them.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <time.h>

#include "client/export/internal.h"
#include "common/perf/attr.h"
#include "common/perf/data.h"
#include "common/perf/record.h"

/* ---- the side-band: ids, what it has, time range ---- */

typedef struct IdSet {
        uint64_t *ids;
        size_t n;
} IdSet;

static int idset_add(IdSet *s, uint64_t id) {
        uint64_t *l;

        for (size_t i = 0; i < s->n; i++)
                if (s->ids[i] == id)
                        return 0;
        l = reallocarray(s->ids, s->n + 1, sizeof(uint64_t));
        if (!l)
                return -ENOMEM;
        s->ids = l;
        s->ids[s->n++] = id;
        return 0;
}

static bool idset_has(const IdSet *s, uint64_t id) {
        for (size_t i = 0; i < s->n; i++)
                if (s->ids[i] == id)
                        return true;
        return false;
}

typedef struct SidebandFacts {
        IdSet pt_ids, sb_ids;
        uint64_t max_id;
        bool kernel_mmap;
        bool has_kernel_build_id;
        uint8_t kernel_build_id[PERF_BUILD_ID_MAX];
        size_t kernel_build_id_size;
        bool has_time;
        uint64_t first_time;
        uint64_t n_records;
        size_t valid_size; /* bytes of whole, parseable-header records */
} SidebandFacts;

static void sideband_facts_done(SidebandFacts *f) {
        free(f->pt_ids.ids);
        free(f->sb_ids.ids);
}

static bool is_kernel_mmap_name(const char *name) {
        return startswith(name, PERF_DATA_KERNEL_NAME);
}

static int scan_sideband(const uint8_t *data, size_t size, uint64_t sample_type, bool sample_id_all,
                         SidebandFacts *f, ExportPerfResult *res) {
        PerfRecordStream s;
        const void *rec;
        size_t n;
        int k, r;

        perf_record_stream_init(&s, data, size);
        while ((k = perf_record_stream_next(&s, &rec, &n)) > 0) {
                PerfRecord pr;

                f->n_records++;
                f->valid_size = s.offset;
                r = perf_record_parse(rec, n, sample_type, sample_id_all, &pr);
                if (r == -EBADMSG)
                        continue; /* copied as is; perf will judge it */
                if (r < 0 && r != -EOPNOTSUPP)
                        return r;
                if (pr.has_sample_id) {
                        if (pr.sid.sample_type & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) {
                                bool pt = pr.type == PERF_RECORD_AUX ||
                                          pr.type == PERF_RECORD_ITRACE_START ||
                                          pr.type == PERF_RECORD_AUX_OUTPUT_HW_ID;
                                if (pr.sid.id != 0) {
                                        r = idset_add(pt ? &f->pt_ids : &f->sb_ids, pr.sid.id);
                                        if (r < 0)
                                                return r;
                                        f->max_id = MAX(f->max_id, pr.sid.id);
                                }
                        }
                        if ((pr.sid.sample_type & PERF_SAMPLE_TIME) &&
                            (!f->has_time || pr.sid.time < f->first_time)) {
                                f->has_time = true;
                                f->first_time = pr.sid.time;
                        }
                }
                if (r == -EOPNOTSUPP)
                        continue;
                if (pr.type == PERF_RECORD_MMAP2 && is_kernel_mmap_name(pr.mmap2.filename)) {
                        f->kernel_mmap = true;
                        if (pr.mmap2.has_build_id && pr.mmap2.build_id_size > 0) {
                                f->has_kernel_build_id = true;
                                f->kernel_build_id_size = pr.mmap2.build_id_size;
                                memcpy(f->kernel_build_id, pr.mmap2.build_id, pr.mmap2.build_id_size);
                        }
                } else if (pr.type == PERF_RECORD_MMAP && is_kernel_mmap_name(pr.mmap.filename))
                        f->kernel_mmap = true;
        }
        if (k < 0)
                return export_note(res,
                            "side-band is malformed after %zu bytes (%" PRIu64
                            " records): the rest is left out",
                            f->valid_size, f->n_records);
        /* An id both kinds of record carry stays with the intel_pt event:
         * an id belongs to one event only. */
        for (size_t i = 0; i < f->sb_ids.n;)
                if (idset_has(&f->pt_ids, f->sb_ids.ids[i]))
                        f->sb_ids.ids[i] = f->sb_ids.ids[--f->sb_ids.n];
                else
                        i++;
        return 0;
}

/* ---- attrs ---- */

/* The modifiers after the last '/' of "intel_pt/.../u": u = user only, k =
 * kernel only, both or none = both. */
static void pt_exclusions(const char *config_text, bool *ret_exclude_user, bool *ret_exclude_kernel) {
        const char *slash = config_text ? strrchr(config_text, '/') : NULL;
        bool u, k;

        *ret_exclude_user = *ret_exclude_kernel = false;
        if (!slash || slash == config_text)
                return;
        u = strchr(slash + 1, 'u');
        k = strchr(slash + 1, 'k');
        if (u && !k)
                *ret_exclude_kernel = true;
        else if (k && !u)
                *ret_exclude_user = true;
}

/* Ids for an event no side-band record names: perf only needs one to
 * hang the event's name on. */
static int invent_ids(IdSet *s, uint64_t *next, size_t n) {
        for (size_t i = 0; i < MAX(n, (size_t) 1); i++) {
                int r = idset_add(s, ++*next);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_string_feature(PerfDataWriter *w, PerfDataFeature f, const char *s) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        int r;

        if (!s)
                return 0;
        r = perf_data_feature_append_string(&b, s);
        if (r < 0)
                return r;
        return perf_data_writer_set_feature(w, f, b.data, b.size);
}

static int add_features(PerfDataWriter *w, const BundleManifest *m, const SidebandFacts *f,
                        const char *const *cmdline) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        char buf[256];
        uint32_t max_cpu = 0;
        int r;

        if ((r = add_string_feature(w, PERF_DATA_FEAT_HOSTNAME, m->host.hostname)) < 0 ||
            (r = add_string_feature(w, PERF_DATA_FEAT_OSRELEASE, m->host.kernel_release)) < 0 ||
            (r = add_string_feature(w, PERF_DATA_FEAT_VERSION,
                                    "ptraced " PACKAGE_VERSION " (ptctl export --perf)")) < 0 ||
            (r = add_string_feature(w, PERF_DATA_FEAT_ARCH, m->host.machine ?: "x86_64")) < 0)
                return r;

        for (size_t i = 0; i < m->n_cpus; i++)
                max_cpu = MAX(max_cpu, m->cpus[i].cpu);
        {
                uint32_t nr[2] = { m->n_cpus > 0 ? max_cpu + 1 : 0, (uint32_t) m->n_cpus };
                r = perf_data_writer_set_feature(w, PERF_DATA_FEAT_NRCPUS, nr, sizeof(nr));
                if (r < 0)
                        return r;
        }

        if (m->cpuid.vendor || m->cpuid.family > 0) {
                /* x86 perf writes "vendor,family,model,stepping"; errata
                 * workarounds key on it. */
                snprintf(buf, sizeof buf, "%s,%" PRIu32 ",%" PRIu32 ",%" PRIu32,
                         m->cpuid.vendor ?: "GenuineIntel", m->cpuid.family, m->cpuid.model,
                         m->cpuid.stepping);
                if ((r = add_string_feature(w, PERF_DATA_FEAT_CPUID, buf)) < 0)
                        return r;
                /* The model name is not in the manifest; say what is known. */
                snprintf(buf, sizeof buf, "%s family %" PRIu32 " model %" PRIu32 " stepping %" PRIu32 "%s",
                         m->cpuid.vendor ?: "GenuineIntel", m->cpuid.family, m->cpuid.model,
                         m->cpuid.stepping, m->simulated ? " (simulated)" : "");
                if ((r = add_string_feature(w, PERF_DATA_FEAT_CPUDESC, buf)) < 0)
                        return r;
        }

        if (cmdline) {
                r = perf_data_feature_append_string_list(&b, cmdline);
                if (r >= 0)
                        r = perf_data_writer_set_feature(w, PERF_DATA_FEAT_CMDLINE, b.data, b.size);
                if (r < 0)
                        return r;
                buffer_clear(&b);
        }

        if (f->has_kernel_build_id) {
                r = perf_data_feature_append_build_id(&b, PERF_DATA_HOST_KERNEL_PID, PERF_RECORD_MISC_KERNEL,
                                                      f->kernel_build_id, f->kernel_build_id_size,
                                                      PERF_DATA_KERNEL_NAME);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *img = &m->images[i];

                if (img->build_id_size == 0 || img->kind != BUNDLE_IMAGE_FILE)
                        continue;
                for (char **p = img->paths; p && *p; p++) {
                        _cleanup_free_ char *rel = export_symfs_path(*p);

                        /* The same paths symfs gets: plain absolute ones. */
                        if (!rel)
                                continue;
                        r = perf_data_feature_append_build_id(&b, PERF_DATA_HOST_KERNEL_PID,
                                                              PERF_RECORD_MISC_USER, img->build_id,
                                                              img->build_id_size, *p);
                        if (r == -EINVAL)
                                continue; /* a path too long for a build-id entry */
                        if (r < 0)
                                return r;
                }
        }
        if (b.size > 0) {
                r = perf_data_writer_set_feature(w, PERF_DATA_FEAT_BUILD_ID, b.data, b.size);
                if (r < 0)
                        return r;
                buffer_clear(&b);
        }

        {
                uint32_t nr = 2, sw = PERF_TYPE_SOFTWARE, pt = m->pmu.type;

                r = buffer_append(&b, &nr, sizeof(nr));
                if (r >= 0)
                        r = buffer_append(&b, &sw, sizeof(sw));
                if (r >= 0)
                        r = perf_data_feature_append_string(&b, "software");
                if (r >= 0)
                        r = buffer_append(&b, &pt, sizeof(pt));
                if (r >= 0)
                        r = perf_data_feature_append_string(&b, m->pmu.name ?: "intel_pt");
                if (r >= 0)
                        r = perf_data_writer_set_feature(w, PERF_DATA_FEAT_PMU_MAPPINGS, b.data, b.size);
                if (r < 0)
                        return r;
                buffer_clear(&b);
        }

        if (m->trigger.perf_time > 0 && m->trigger.realtime_usec > 0) {
                /* The one moment whose perf time and wall-clock time the
                 * daemon both took. perf prints the clockid only; the records'
                 * clock is the perf clock. */
                struct {
                        uint32_t version, clockid;
                        uint64_t tod_ns, clockid_ns;
                } cd = {
                        .version = 1,
                        .clockid = CLOCK_MONOTONIC,
                        .tod_ns = m->trigger.realtime_usec * 1000,
                        .clockid_ns = m->trigger.perf_time,
                };
                r = perf_data_writer_set_feature(w, PERF_DATA_FEAT_CLOCK_DATA, &cd, sizeof(cd));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The kernel MMAP perf record synthesizes: [kernel.kallsyms]_text at the
 * kernel text with pgoff = _text's address, pid -1. */
static int kernel_mmap_record(Buffer *b, const BundleManifest *m, const char *kallsyms, uint64_t sample_type,
                              bool sample_id_all, uint64_t time, uint64_t id) {
        uint64_t text = 0, start = m->kernel.text_start, end = m->kernel.text_end;
        PerfSampleId sid = {
                .pid = UINT32_MAX,
                .tid = UINT32_MAX,
                .time = time,
                .id = id,
                .cpu = 0,
                .sample_type = sample_type & PERF_SAMPLE_ID_MASK,
        };
        const char *p = kallsyms;

        /* _text's address, as perf's ref_reloc_sym. */
        while (p && *p) {
                const char *nl = strchrnul(p, '\n');
                unsigned long long a;
                char type, name[64];

                if (sscanf(p, "%llx %c %63s", &a, &type, name) == 3 && streq(name, "_text")) {
                        text = a;
                        break;
                }
                p = *nl ? nl + 1 : nl;
        }
        if (text == 0)
                return -ENODATA;
        if (start == 0 || end <= start) {
                start = text;
                end = m->kernel.modules_end > text ? m->kernel.modules_end : text + (UINT64_C(1) << 30);
        }
        return perf_record_append_mmap2(b, PERF_RECORD_MISC_KERNEL, UINT32_MAX, 0, start, end - start, text,
                                        NULL, 0, 0, 0, 0, PROT_READ | PROT_EXEC, 0,
                                        PERF_DATA_KERNEL_NAME "_text", sample_id_all ? &sid : NULL);
}

/* An MMAP2 of a jitdump, naming the copy in OUTDIR/jit/ instead (jit.c):
 * appended to b; 0 when rec is no such record. */
static int jit_mmap_record(Buffer *b, const void *rec, size_t n, uint64_t sample_type, bool sample_id_all,
                           const ExportJitDumps *jit) {
        PerfRecord r;
        const char *to;

        if (!jit || jit->n == 0 || perf_record_parse(rec, n, sample_type, sample_id_all, &r) < 0 ||
            r.type != PERF_RECORD_MMAP2)
                return 0;
        to = export_jit_dump_path(jit, r.mmap2.pid, r.mmap2.filename);
        if (!to)
                return 0;
        return perf_record_append_mmap2(b, r.misc, r.mmap2.pid, r.mmap2.tid, r.mmap2.addr, r.mmap2.len,
                                        r.mmap2.pgoff, NULL, 0, r.mmap2.maj, r.mmap2.min, r.mmap2.ino, r.mmap2.prot,
                                        r.mmap2.flags, to, r.has_sample_id ? &r.sid : NULL) ?: 1;
}

int export_perf_data(BundleReader *br, const BundleManifest *m, int outfd, const char *const *cmdline,
                     const ExportJitDumps *jit, ExportPerfResult *res, char **ret_error) {
        _cleanup_(perf_data_writer_freep) PerfDataWriter *w = NULL;
        _cleanup_free_ void *sb = NULL, *kallsyms = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        SidebandFacts f = {};
        uint64_t sample_type = m->sideband.sample_type ?: PTRACED_SAMPLE_TYPE, next_id;
        bool sample_id_all = m->sideband.member ? m->sideband.sample_id_all : true;
        bool exclude_user, exclude_kernel;
        size_t sb_size = 0, ks_size = 0;
        int r;

        if (m->sideband.member) {
                r = bundle_reader_read_member(br, m->sideband.member, &sb, &sb_size, &error);
                if (r < 0)
                        return export_member_error(ret_error, r, m->sideband.member, error);
        } else if ((r = export_note(res, "the bundle has no side-band: perf cannot tell threads or find images")) <
                   0)
                return r;
        r = scan_sideband(sb, sb_size, sample_type, sample_id_all, &f, res);
        if (r < 0)
                goto finish;
        if (m->kernel.kallsyms_member) {
                r = bundle_reader_read_member(br, m->kernel.kallsyms_member, &kallsyms, &ks_size, &error);
                if (r < 0) {
                        sideband_facts_done(&f);
                        return export_member_error(ret_error, r, m->kernel.kallsyms_member, error);
                }
        }

        fd = openat(outfd, "data", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                r = -errno;
                goto finish;
        }
        r = perf_data_writer_new(fd, false, &w);
        if (r < 0)
                goto finish;

        /* Events. */
        next_id = f.max_id;
        if (f.pt_ids.n == 0 && (r = invent_ids(&f.pt_ids, &next_id, m->n_cpus)) < 0)
                goto finish;
        if (f.sb_ids.n == 0 && (r = invent_ids(&f.sb_ids, &next_id, m->n_cpus)) < 0)
                goto finish;
        pt_exclusions(m->pmu.config_text, &exclude_user, &exclude_kernel);
        {
                struct perf_event_attr pt = {
                        .type = m->pmu.type,
                        .config = m->pmu.config[0],
                        .config1 = m->pmu.config[1],
                        .config2 = m->pmu.config[2],
                        .sample_period = 1,
                        /* IP as perf record sets it: perf script checks the
                         * event it synthesizes branches from has it. It is
                         * not part of the records' sample_id trailer. */
                        .sample_type = sample_type | PERF_SAMPLE_IP,
                        .sample_id_all = sample_id_all,
                        .exclude_user = exclude_user,
                        .exclude_kernel = exclude_kernel,
                        .exclude_hv = 1,
                        .exclude_guest = 1,
                        .disabled = 1,
                };
                struct perf_event_attr dummy = {
                        .type = PERF_TYPE_SOFTWARE,
                        .config = PERF_COUNT_SW_DUMMY,
                        .sample_period = 1,
                        .sample_type = sample_type,
                        .sample_id_all = sample_id_all,
                        .exclude_kernel = exclude_kernel,
                        .exclude_hv = 1,
                        .mmap = 1,
                        .mmap2 = 1,
                        .comm = 1,
                        .comm_exec = 1,
                        .task = 1,
                        .context_switch = 1,
                        .ksymbol = 1,
                        .bpf_event = 1,
                        .text_poke = 1,
                };
                r = perf_data_writer_add_event(w, &pt, m->pmu.config_text ?: "intel_pt//", f.pt_ids.ids,
                                               f.pt_ids.n);
                if (r >= 0)
                        r = perf_data_writer_add_event(w, &dummy, exclude_kernel ? "dummy:u" : "dummy:HG",
                                                       f.sb_ids.ids, f.sb_ids.n);
                if (r < 0)
                        goto finish;
        }
        r = add_features(w, m, &f, cmdline);
        if (r < 0)
                goto finish;

        /* Records. */
        {
                PerfIntelPtInfo info = {
                        .pmu_type = m->pmu.type,
                        .tc = m->tsc.conversion,
                        .tsc_bit = PERF_INTEL_PT_CONFIG_TSC,
                        .noretcomp_bit = PERF_INTEL_PT_CONFIG_NORETCOMP,
                        .have_sched_switch = PERF_INTEL_PT_SWITCH_CPU_WIDE,
                        /* ptraced's rings are always overwriting snapshots. */
                        .snapshot_mode = true,
                        .per_cpu_mmaps = true,
                        .mtc_bit = PERF_INTEL_PT_CONFIG_MTC,
                        .mtc_freq_bits = PERF_INTEL_PT_CONFIG_MTC_PERIOD,
                        .tsc_ctc_ratio_n = m->tsc.cpuid_15_ebx,
                        .tsc_ctc_ratio_d = m->tsc.cpuid_15_eax,
                        .cyc_bit = PERF_INTEL_PT_CONFIG_CYC,
                        .max_nonturbo_ratio = m->tsc.nominal_freq,
                };
                const PerfTscConversion *tc = &m->tsc.conversion;
                PerfTimeConvRecord tcr = {
                        .header = { .type = PERF_DATA_RECORD_TIME_CONV, .size = sizeof(tcr) },
                        .time_shift = tc->time_shift,
                        .time_mult = tc->time_mult,
                        .time_zero = tc->time_zero,
                        .time_cycles = tc->time_cycles,
                        .time_mask = tc->time_mask,
                        .cap_user_time_zero = tc->cap_user_time_zero,
                        .cap_user_time_short = tc->cap_user_time_short,
                };

                r = perf_intel_pt_info_append(&b, &info);
                if (r >= 0)
                        r = buffer_append(&b, &tcr, sizeof(tcr));
                if (r < 0)
                        goto finish;
        }
        if (!f.kernel_mmap && !exclude_kernel) {
                r = kernel_mmap_record(&b, m, kallsyms, sample_type, sample_id_all,
                                       f.has_time ? f.first_time : 0, f.sb_ids.ids[0]);
                if (r == -ENODATA)
                        r = export_note(res, "no kernel MMAP: the side-band has none and kallsyms has no _text");
                else if (r >= 0)
                        res->n_synthesized++;
                if (r < 0)
                        goto finish;
        }
        for (PerfRecordStream s = { .data = b.data, .size = b.size };;) {
                const void *rec;
                size_t n;
                int k = perf_record_stream_next(&s, &rec, &n);
                if (k <= 0)
                        break;
                r = perf_data_writer_add_record(w, rec, n);
                if (r < 0)
                        goto finish;
        }
        {
                PerfRecordStream s;
                const void *rec;
                size_t n;

                perf_record_stream_init(&s, sb, f.valid_size);
                while (perf_record_stream_next(&s, &rec, &n) > 0) {
                        _cleanup_buffer_ Buffer moved = BUFFER_NULL;

                        r = jit_mmap_record(&moved, rec, n, sample_type, sample_id_all, jit);
                        if (r < 0)
                                goto finish;
                        if (r > 0) {
                                rec = moved.data;
                                n = moved.size;
                        }
                        r = perf_data_writer_add_record(w, rec, n);
                        if (r < 0)
                                goto finish;
                        res->n_sideband++;
                }
        }

        for (size_t i = 0, idx = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                _cleanup_free_ void *trace = NULL;
                size_t size = 0;

                if (!c->member)
                        continue;
                r = bundle_reader_read_member(br, c->member, &trace, &size, &error);
                if (r < 0) {
                        sideband_facts_done(&f);
                        return export_member_error(ret_error, r, c->member, error);
                }
                r = perf_data_writer_add_auxtrace(w, (uint32_t) idx++, c->cpu, UINT32_MAX, 0,
                                                  c->has_time ? c->last_tsc : 0, trace, size);
                if (r < 0)
                        goto finish;
                res->n_cpus++;
                res->trace_bytes += size;
        }
        {
                struct perf_event_header fr = { .type = PERF_DATA_RECORD_FINISHED_ROUND,
                                                .size = sizeof(fr) };
                r = perf_data_writer_add_record(w, &fr, sizeof(fr));
        }
        if (r >= 0)
                r = perf_data_writer_finish(w);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
finish:
        sideband_facts_done(&f);
        if (r < 0 && r != -ENOMEM)
                return export_error(ret_error, r, "cannot write the perf.data file: %s", strerror(-r));
        return r;
}
