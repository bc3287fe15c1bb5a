/* SPDX-License-Identifier: MIT */

/*
 * The manifest as data: names of its enums, hex and member-name rules,
 * construction and release, lookups and summaries. Reading the running
 * system's facts is in host.c; checking a manifest in manifest-validate.c;
 * its JSON form in manifest-serialize.c (out) and manifest-parse.c (in).
 */

#include <json-c/json.h>
#include <sys/random.h>

#include "common/basic/json-util.h"
#include "common/basic/strv.h"
#include "common/bundle/internal.h"
#include "common/bundle/manifest.h"


static const char *const compression_table[_BUNDLE_COMPRESSION_MAX] = {
        [BUNDLE_COMPRESSION_NONE] = "none",
        [BUNDLE_COMPRESSION_ZSTD] = "zstd",
};

static const char *const image_kind_table[_BUNDLE_IMAGE_KIND_MAX] = {
        [BUNDLE_IMAGE_FILE] = "file",
        [BUNDLE_IMAGE_VDSO] = "vdso",
};

const char *bundle_compression_to_string(BundleCompression c) {
        return c >= 0 && c < _BUNDLE_COMPRESSION_MAX ? compression_table[c] : NULL;
}

int bundle_compression_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(compression_table); i++)
                if (s && streq(s, compression_table[i]))
                        return (int) i;
        return -EINVAL;
}

static const char *const jit_kind_table[_BUNDLE_JIT_KIND_MAX] = {
        [BUNDLE_JIT_MEMORY] = "memory",
        [BUNDLE_JIT_PERF_MAP] = "perf-map",
        [BUNDLE_JIT_DUMP] = "jitdump",
};

const char *bundle_jit_kind_to_string(BundleJitKind k) {
        return k >= 0 && k < _BUNDLE_JIT_KIND_MAX ? jit_kind_table[k] : NULL;
}

int bundle_jit_kind_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(jit_kind_table); i++)
                if (s && streq(s, jit_kind_table[i]))
                        return (int) i;
        return -EINVAL;
}

const char *bundle_image_kind_to_string(BundleImageKind k) {
        return k >= 0 && k < _BUNDLE_IMAGE_KIND_MAX ? image_kind_table[k] : NULL;
}

int bundle_image_kind_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(image_kind_table); i++)
                if (s && streq(s, image_kind_table[i]))
                        return (int) i;
        return -EINVAL;
}

char *bundle_hex_encode(const uint8_t *p, size_t n) {
        static const char digits[] = "0123456789abcdef";
        char *s = malloc(n * 2 + 1);

        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                s[2 * i] = digits[p[i] >> 4];
                s[2 * i + 1] = digits[p[i] & 15];
        }
        s[2 * n] = 0;
        return s;
}

static int unhex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int bundle_hex_decode(const char *s, uint8_t *buf, size_t max, size_t *ret_n) {
        size_t l = strlen(s);

        if (l % 2 != 0)
                return -EINVAL;
        if (l / 2 > max)
                return -E2BIG;
        for (size_t i = 0; i < l / 2; i++) {
                int hi = unhex_digit(s[2 * i]), lo = unhex_digit(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                buf[i] = (uint8_t) (hi << 4 | lo);
        }
        *ret_n = l / 2;
        return 0;
}

static bool member_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == '+';
}

bool bundle_member_name_is_valid(const char *name) {
        size_t l, components = 1;
        bool component_start = true;

        if (!name)
                return false;
        l = strnlen(name, BUNDLE_MEMBER_NAME_MAX + 1);
        if (l == 0 || l > BUNDLE_MEMBER_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++) {
                if (*p == '/') {
                        /* No empty component, no trailing slash, at most one level. */
                        if (component_start || ++components > 2)
                                return false;
                        component_start = true;
                        continue;
                }
                if (!member_char_ok(*p))
                        return false;
                /* A leading dot forbids ".", ".." and hidden names in one rule. */
                if (component_start && *p == '.')
                        return false;
                component_start = false;
        }
        return !component_start;
}

static void member_done(BundleMember *mb) {
        free(mb->name);
        free(mb->stored_name);
}

static void cpu_done(BundleCpu *c) {
        free(c->member);
        free(c->error);
}

static void image_done(BundleImage *img) {
        strv_free(img->paths);
        free(img->member);
        free(img->missing_reason);
        free(img->debug_member);
}

BundleManifest *bundle_manifest_free(BundleManifest *m) {
        if (!m)
                return NULL;
        free(m->id);
        free(m->generator);
        free(m->host.hostname);
        free(m->host.kernel_release);
        free(m->host.kernel_version);
        free(m->host.machine);
        free(m->host.boot_id);
        free(m->host.machine_id);
        free(m->cpuid.vendor);
        free(m->pmu.name);
        free(m->pmu.config_text);
        free(m->pmu.addr_filter);
        for (size_t i = 0; i < m->pmu.n_caps; i++) {
                free(m->pmu.caps[i].name);
                free(m->pmu.caps[i].value);
        }
        free(m->pmu.caps);
        free(m->trigger.reason);
        free(m->trigger.source);
        free(m->trigger.requester_comm);
        if (m->trigger.details)
                json_object_put(m->trigger.details);
        for (size_t i = 0; i < m->n_cpus; i++)
                cpu_done(&m->cpus[i]);
        free(m->cpus);
        free(m->sideband.member);
        free(m->kernel.kcore_member);
        free(m->kernel.kcore_absent_reason);
        free(m->kernel.kallsyms_member);
        free(m->kernel.modules_member);
        for (size_t i = 0; i < m->n_images; i++)
                image_done(&m->images[i]);
        free(m->images);
        for (size_t i = 0; i < m->n_jit; i++) {
                free(m->jit[i].member);
                free(m->jit[i].path);
                free(m->jit[i].missing_reason);
        }
        free(m->jit);
        for (size_t i = 0; i < m->n_members; i++)
                member_done(&m->members[i]);
        free(m->members);
        free(m);
        return NULL;
}

static int random_id(char **ret) {
        uint8_t b[BUNDLE_ID_LEN / 2];
        size_t got = 0;

        while (got < sizeof b) {
                ssize_t n = getrandom(b + got, sizeof b - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t) n;
        }
        *ret = bundle_hex_encode(b, sizeof b);
        return *ret ? 0 : -ENOMEM;
}

int bundle_manifest_new(BundleManifest **ret) {
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->format_version = BUNDLE_FORMAT_VERSION;
        r = random_id(&m->id);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* Grow *array of n elements of size sz by one zeroed element. */
static void *grow_one(void **array, size_t *n, size_t sz, size_t max) {
        void *p;

        if (*n >= max)
                return NULL;
        p = reallocarray(*array, *n + 1, sz);
        if (!p)
                return NULL;
        *array = p;
        memset((uint8_t *) p + *n * sz, 0, sz);
        return (uint8_t *) p + (*n)++ * sz;
}

BundleCpu *bundle_manifest_add_cpu(BundleManifest *m, uint32_t cpu) {
        BundleCpu *c = grow_one((void **) &m->cpus, &m->n_cpus, sizeof *m->cpus, BUNDLE_MAX_CPUS);
        if (c)
                c->cpu = cpu;
        return c;
}

BundleImage *bundle_manifest_add_image(BundleManifest *m) {
        return grow_one((void **) &m->images, &m->n_images, sizeof *m->images, BUNDLE_MAX_IMAGES);
}

BundleJit *bundle_manifest_add_jit(BundleManifest *m) {
        return grow_one((void **) &m->jit, &m->n_jit, sizeof *m->jit, BUNDLE_MAX_JIT);
}

int bundle_manifest_add_cap(BundleManifest *m, const char *name, const char *value) {
        _cleanup_free_ char *n = strdup(name), *v = strdup(value);
        BundlePmuCap *c;

        if (!n || !v)
                return -ENOMEM;
        c = grow_one((void **) &m->pmu.caps, &m->pmu.n_caps, sizeof *m->pmu.caps, BUNDLE_MAX_CAPS);
        if (!c)
                return m->pmu.n_caps >= BUNDLE_MAX_CAPS ? -E2BIG : -ENOMEM;
        c->name = TAKE_PTR(n);
        c->value = TAKE_PTR(v);
        return 0;
}

int bundle_image_add_path(BundleImage *img, const char *path) {
        size_t n = 0;
        char **l;

        while (img->paths && img->paths[n]) {
                if (streq(img->paths[n], path))
                        return 0;
                n++;
        }
        if (n >= BUNDLE_MAX_IMAGE_PATHS)
                return -E2BIG;
        l = reallocarray(img->paths, n + 2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        img->paths = l;
        l[n] = strdup(path);
        if (!l[n])
                return -ENOMEM;
        l[n + 1] = NULL;
        return 0;
}

void bundle_manifest_compute_window(BundleManifest *m) {
        BundleWindow w = { .valid = false };

        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                if (!c->has_time)
                        continue;
                if (!w.valid) {
                        w = (BundleWindow){ true, c->first_time, c->last_time, c->first_tsc, c->last_tsc };
                        continue;
                }
                w.start_time = MAX(w.start_time, c->first_time);
                w.end_time = MIN(w.end_time, c->last_time);
                w.start_tsc = MAX(w.start_tsc, c->first_tsc);
                w.end_tsc = MIN(w.end_tsc, c->last_tsc);
        }
        /* CPUs whose ranges do not overlap have no common window. */
        if (w.valid && (w.start_time > w.end_time || w.start_tsc > w.end_tsc))
                w = (BundleWindow){ .valid = false };
        m->window = w;
}

const BundleMember *bundle_manifest_find_member(const BundleManifest *m, const char *name) {
        for (size_t i = 0; i < m->n_members; i++)
                if (streq(m->members[i].name, name))
                        return &m->members[i];
        return NULL;
}

const BundleImage *bundle_manifest_find_image(const BundleManifest *m, const uint8_t *build_id, size_t size) {
        for (size_t i = 0; i < m->n_images; i++)
                if (m->images[i].build_id_size == size && memcmp(m->images[i].build_id, build_id, size) == 0)
                        return &m->images[i];
        return NULL;
}

bool bundle_manifest_is_truncated(const BundleManifest *m) {
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].truncated || m->cpus[i].partial || m->cpus[i].lost)
                        return true;
        return m->sideband.n_lost > 0 || m->sideband.dropped_until > 0;
}

int bundle_manifest_describe_losses(const BundleManifest *m, char **ret) {
        _cleanup_strv_free_ char **l = NULL;
        const BundleSideband *sb = &m->sideband;
        int k = 0;

        for (size_t i = 0; i < m->n_cpus && k >= 0; i++) {
                const BundleCpu *c = &m->cpus[i];

                if (c->truncated)
                        k = strv_extendf(&l, "CPU %" PRIu32 " truncated (PERF_AUX_FLAG_TRUNCATED)", c->cpu);
                if (k >= 0 && c->partial)
                        k = strv_extendf(&l, "CPU %" PRIu32 " partial (PERF_AUX_FLAG_PARTIAL)", c->cpu);
                if (k >= 0 && c->lost)
                        k = strv_extendf(&l, "CPU %" PRIu32 " lost trace%s", c->cpu,
                                         c->collision ? " (PERF_AUX_FLAG_COLLISION)" : "");
        }
        if (k >= 0 && sb->n_lost > 0)
                k = strv_extendf(&l, "side-band: %" PRIu64 " records lost (PERF_RECORD_LOST)", sb->n_lost);
        /* Relative to the trigger, as ptctl info shows times. */
        if (k >= 0 && sb->dropped_until > 0 && m->trigger.perf_time >= sb->dropped_until)
                k = strv_extendf(&l, "side-band: records until %.3f ms before the trigger dropped "
                                 "(SidebandMemoryMax=)", (double) (m->trigger.perf_time - sb->dropped_until) / 1e6);
        else if (k >= 0 && sb->dropped_until > 0) /* during a long freeze */
                k = strv_extendf(&l, "side-band: records until %.3f ms after the trigger dropped "
                                 "(SidebandMemoryMax=)", (double) (sb->dropped_until - m->trigger.perf_time) / 1e6);
        if (k < 0)
                return k;
        if (!l) {
                *ret = NULL;
                return 0;
        }
        *ret = strv_join(l, ", ");
        return *ret ? 0 : -ENOMEM;
}

bool bundle_manifest_has_cpu_errors(const BundleManifest *m) {
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].error)
                        return true;
        return false;
}

uint64_t bundle_manifest_trace_bytes(const BundleManifest *m) {
        uint64_t s = 0;
        for (size_t i = 0; i < m->n_cpus; i++)
                s += m->cpus[i].bytes;
        return s;
}

static int set_detail(BundleTrigger *t, const char *key, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (!t->details) {
                t->details = json_object_new_object();
                if (!t->details) {
                        json_object_put(v);
                        return -ENOMEM;
                }
        }
        return json_add_value(t->details, key, v);
}

int bundle_trigger_set_detail_string(BundleTrigger *t, const char *key, const char *value) {
        return set_detail(t, key, json_object_new_string(value));
}

int bundle_trigger_set_detail_u64(BundleTrigger *t, const char *key, uint64_t value) {
        return set_detail(t, key, json_object_new_uint64(value));
}

int bundle_trigger_set_detail_i64(BundleTrigger *t, const char *key, int64_t value) {
        return set_detail(t, key, json_object_new_int64(value));
}

int bundle_trigger_set_detail_bool(BundleTrigger *t, const char *key, bool value) {
        return set_detail(t, key, json_object_new_boolean(value));
}

