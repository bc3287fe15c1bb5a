/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Helpers shared by the bundle tests: scratch directories, a manifest with
 * every field set, deterministic test data and raw tar construction for
 * hostile bundles (written with libarchive directly, bypassing every check
 * of our writer).
 */

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "common/bundle/bundle.h"
#include "test.h"

static inline int rm_rf_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static inline void rm_rf(const char *path) {
        (void) nftw(path, rm_rf_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory under $TMPDIR (or /var/tmp: O_TMPFILE needs a real file
 * system, /tmp may be tmpfs which has it too). Caller frees and rm_rf()s. */
static inline char *make_scratch_dir(const char *tag) {
        const char *base = getenv("TMPDIR") ?: "/var/tmp";
        char *p = NULL;
        ASSERT_TRUE(asprintf(&p, "%s/ptraced-%s-XXXXXX", base, tag) > 0);
        ASSERT_NOT_NULL(mkdtemp(p));
        return p;
}

/* Bytes that look a bit like trace: compressible but not trivially. */
static inline void fill_pattern(uint8_t *p, size_t n, uint32_t seed) {
        uint32_t x = seed * 2654435761U + 1;
        for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                /* Mostly a few symbols, sometimes random: zstd gets ~3x. */
                p[i] = (x & 0xf0) ? (uint8_t) ("\x02\x82\x99\x19\x4d\xfe"[x % 6]) : (uint8_t) (x >> 8);
        }
}

static inline void fill_random(uint8_t *p, size_t n, uint32_t seed) {
        uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 7;
        for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                p[i] = (uint8_t) (x >> 24);
        }
}

/* A manifest with every field set; members are added by the writer.
 * cpu_members: how many cpuN.pt members the test writes (CPUs 0..n-1 have
 * members of cpu_bytes bytes each). */
static inline BundleManifest *make_test_manifest(size_t n_cpus, uint64_t cpu_bytes) {
        BundleManifest *m = NULL;
        BundleCpu *c;

        ASSERT_OK(bundle_manifest_new(&m));
        m->generator = strdup("test-bundle");
        m->simulated = true;
        ASSERT_OK(bundle_manifest_fill_host(m));
        free(m->cpuid.vendor);
        m->cpuid.vendor = strdup("GenuineIntel");
        m->cpuid.family = 6;
        m->cpuid.model = 85;
        m->cpuid.stepping = 4;
        m->pmu.name = strdup("intel_pt");
        m->pmu.type = 8;
        m->pmu.config_text = strdup("intel_pt/tsc,mtc,mtc_period=3,cyc=0/u");
        m->pmu.addr_filter = strdup("filter 0x1040/0x200@/usr/bin/app");
        m->pmu.config[0] = 0x2001 | (3ULL << 14);
        m->pmu.config[2] = 0xdeadbeefcafef00dULL;
        ASSERT_OK(bundle_manifest_add_cap(m, "mtc_periods", "249"));
        ASSERT_OK(bundle_manifest_add_cap(m, "psb_cyc", "1"));
        m->tsc.conversion = (PerfTscConversion){ .time_shift = 31, .time_mult = 1193046471, .time_zero =
                                                         0xfffffff012345678ULL,
                                                 .cap_user_time_zero = true };
        m->tsc.cpuid_15_eax = 2;
        m->tsc.cpuid_15_ebx = 188;
        m->tsc.nominal_freq = 24;
        m->tsc.mtc_freq = 3;
        m->tsc.tsc_hz = 2400000000ULL; /* a Skylake-SP: no crystal Hz in CPUID 0x15 ecx */
        m->tsc.tsc_hz_source = BUNDLE_TSC_HZ_MAX_NONTURBO_RATIO;
        m->trigger.reason = strdup("latency spike in \"checkout\"");
        m->trigger.source = strdup("varlink");
        m->trigger.has_requester = true;
        m->trigger.requester_pid = 4242;
        m->trigger.requester_uid = 1000;
        m->trigger.requester_comm = strdup("ptctl");
        m->trigger.perf_time = 123456789012345ULL;
        m->trigger.realtime_usec = 1700000000000000ULL;
        ASSERT_OK(bundle_trigger_set_detail_u64(&m->trigger, "latency_ns", 1500000));
        ASSERT_OK(bundle_trigger_set_detail_string(&m->trigger, "probe", "tcp_sendmsg"));
        ASSERT_OK(bundle_trigger_set_detail_bool(&m->trigger, "over_threshold", true));
        ASSERT_OK(bundle_trigger_set_detail_i64(&m->trigger, "delta", -7));
        for (size_t i = 0; i < n_cpus; i++) {
                c = bundle_manifest_add_cpu(m, (uint32_t) i);
                ASSERT_NOT_NULL(c);
                ASSERT_TRUE(asprintf(&c->member, "cpu%zu.pt", i) > 0);
                c->bytes = cpu_bytes;
                c->buffer_size = 4 << 20;
                c->wrapped = i % 2;
                c->has_time = true;
                c->first_tsc = 1000000 + i * 10;
                c->last_tsc = 9000000 - i * 10;
                c->first_time = 500000 + i;
                c->last_time = 900000 - i;
                c->blackout_ns = 12000 + i;
        }
        /* One CPU that failed. */
        c = bundle_manifest_add_cpu(m, 63);
        c->error = strdup("mmap of the AUX area failed: Cannot allocate memory");
        bundle_manifest_compute_window(m);
        m->lookback_ns = 12000000;
        m->sideband.member = strdup("sideband.perf");
        m->sideband.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
        m->sideband.sample_id_all = true;
        m->sideband.n_records = 321;
        m->sideband.n_lost = 0;
        m->kernel.kcore_absent_reason = strdup("/proc/kcore does not exist");
        m->kernel.kallsyms_member = strdup("kallsyms");
        return m;
}

/* One entry of a hand-made tar. */
typedef struct RawEntry {
        const char *name;
        const void *data;
        size_t size;
        int type;           /* AE_IFREG when 0 */
        int64_t header_size; /* -1: use size */
} RawEntry;

static inline la_ssize_t raw_write_cb(struct archive *a, void *ud, const void *buf, size_t n) {
        (void) a;
        return write(*(int *) ud, buf, n);
}

static inline void write_raw_tar(const char *path, const RawEntry *entries, size_t n) {
        struct archive *a = archive_write_new();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
        ASSERT_EQ(archive_write_set_bytes_per_block(a, 0), ARCHIVE_OK);
        ASSERT_EQ(archive_write_open(a, &fd, NULL, raw_write_cb, NULL), ARCHIVE_OK);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *e = archive_entry_new();
                archive_entry_set_pathname(e, entries[i].name);
                archive_entry_set_filetype(e, entries[i].type ? (unsigned) entries[i].type : AE_IFREG);
                archive_entry_set_perm(e, 0644);
                if (entries[i].type == AE_IFLNK)
                        archive_entry_set_symlink(e, "/etc/passwd");
                archive_entry_set_size(e, entries[i].header_size >= 0 ? entries[i].header_size
                                                                      : (int64_t) entries[i].size);
                ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK);
                if (entries[i].size > 0)
                        ASSERT_EQ(archive_write_data(a, entries[i].data, entries[i].size), (la_ssize_t) entries[i].size);
                archive_entry_free(e);
        }
        ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
        close(fd);
}

static inline void write_file(const char *path, const void *p, size_t n) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, p, n), (ssize_t) n);
        close(fd);
}

static inline void *read_file(const char *path, size_t *ret_size) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        void *p;
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fstat(fd, &st));
        p = malloc((size_t) st.st_size + 1);
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(pread(fd, p, (size_t) st.st_size, 0), st.st_size);
        close(fd);
        *ret_size = (size_t) st.st_size;
        return p;
}
