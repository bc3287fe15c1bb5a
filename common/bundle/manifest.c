/* SPDX-License-Identifier: MIT */

/*
 * manifest.json: one serializer and one validating parser, so what the
 * daemon writes and what ptctl reads cannot drift apart. The parser treats
 * its input as hostile: every key is type-checked, every number range-
 * checked, every string and array bounded before it is copied, and the
 * json-c tokener runs with a depth limit.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/utsname.h>

#include "common/bundle/manifest.h"
#include "common/basic/fileio.h"
#include "common/basic/json-util.h"

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

/* ------------------------------------------------------------------ */
/* Construction */

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
        for (size_t i = 0; i < m->n_jit; i++)
                free(m->jit[i].member);
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

const BundleCpu *bundle_manifest_find_cpu(const BundleManifest *m, uint32_t cpu) {
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].cpu == cpu)
                        return &m->cpus[i];
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
                if (m->cpus[i].truncated || m->cpus[i].lost)
                        return true;
        return m->sideband.n_lost > 0;
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
        if (json_object_object_add(t->details, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
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

/* ------------------------------------------------------------------ */
/* Host facts */

static char *read_line_or_null(const char *path) {
        char *s = NULL;
        if (read_one_line_file(path, &s) < 0)
                return NULL;
        if (!*s)
                return mfree(s);
        return s;
}

static int fill_cpuid(BundleCpuId *c) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];
        bool seen_family = false, seen_model = false, seen_stepping = false;

        if (!f)
                return -errno;
        /* The first processor block is enough: bundles describe one model. */
        while (fgets(line, sizeof line, f)) {
                char *colon = strchr(line, ':'), *v;
                if (line[0] == '\n')
                        break;
                if (!colon)
                        continue;
                v = colon + 1;
                v += strspn(v, " \t");
                v[strcspn(v, "\n")] = 0;
                if (startswith(line, "vendor_id") && !c->vendor) {
                        c->vendor = strdup(v);
                        if (!c->vendor)
                                return -ENOMEM;
                } else if (startswith(line, "cpu family") && !seen_family) {
                        c->family = (uint32_t) strtoul(v, NULL, 10);
                        seen_family = true;
                } else if (startswith(line, "model\t") && !seen_model) {
                        c->model = (uint32_t) strtoul(v, NULL, 10);
                        seen_model = true;
                } else if (startswith(line, "stepping") && !seen_stepping) {
                        c->stepping = (uint32_t) strtoul(v, NULL, 10);
                        seen_stepping = true;
                }
        }
        return 0;
}

int bundle_manifest_fill_host(BundleManifest *m) {
        struct utsname u;
        char hn[256];

        if (uname(&u) >= 0) {
                free(m->host.kernel_release);
                free(m->host.kernel_version);
                free(m->host.machine);
                m->host.kernel_release = strdup(u.release);
                m->host.kernel_version = strdup(u.version);
                m->host.machine = strdup(u.machine);
                if (!m->host.kernel_release || !m->host.kernel_version || !m->host.machine)
                        return -ENOMEM;
        }
        if (gethostname(hn, sizeof hn - 1) >= 0) {
                hn[sizeof hn - 1] = 0;
                free(m->host.hostname);
                m->host.hostname = strdup(hn);
                if (!m->host.hostname)
                        return -ENOMEM;
        }
        free(m->host.boot_id);
        m->host.boot_id = read_line_or_null("/proc/sys/kernel/random/boot_id");
        free(m->host.machine_id);
        m->host.machine_id = read_line_or_null("/etc/machine-id");
        /* /proc/cpuinfo missing is not fatal: the decoder then needs --cpu-model. */
        if (fill_cpuid(&m->cpuid) == -ENOMEM)
                return -ENOMEM;
        return 0;
}

/* ------------------------------------------------------------------ */
/* Validation shared by both directions */

_printf_(3, 0) static int fail_va(int error, char **ret_error, const char *fmt, va_list ap) {
        if (ret_error) {
                free(*ret_error);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
        }
        return error;
}

/* Set *ret_error and return the given negative errno. */
_printf_(3, 4) static int fail_errno(int error, char **ret_error, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        error = fail_va(error, ret_error, fmt, ap);
        va_end(ap);
        return error;
}

/* The common case: the manifest says something impossible. */
_printf_(2, 3) static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;
        int r;
        va_start(ap, fmt);
        r = fail_va(-EBADMSG, ret_error, fmt, ap);
        va_end(ap);
        return r;
}

static bool is_lower_hex(const char *s, size_t len) {
        if (strlen(s) != len)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

static int cmp_str_ptr(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int cmp_member_ptr(const void *a, const void *b) {
        return strcmp((*(const BundleMember *const *) a)->name, (*(const BundleMember *const *) b)->name);
}

static int cmp_image_ptr(const void *a, const void *b) {
        const BundleImage *x = *(const BundleImage *const *) a, *y = *(const BundleImage *const *) b;
        if (x->build_id_size != y->build_id_size)
                return x->build_id_size < y->build_id_size ? -1 : 1;
        return memcmp(x->build_id, y->build_id, x->build_id_size);
}

/* Members sorted by name, so that references resolve in O(log n): a
 * hostile manifest with 65536 images and 65536 members must not cost
 * billions of comparisons. */
typedef struct MemberIndex {
        const BundleMember **v;
        size_t n;
} MemberIndex;

static const BundleMember *member_index_find(const MemberIndex *idx, const char *name) {
        BundleMember key = { .name = (char *) name };
        const BundleMember *kp = &key, **hit;

        hit = bsearch(&kp, idx->v, idx->n, sizeof *idx->v, cmp_member_ptr);
        return hit ? *hit : NULL;
}

static int check_ref(const MemberIndex *idx, const char *what, const char *name, uint64_t expected_size,
                     bool check_size, char **ret_error) {
        const BundleMember *mb;

        if (!name)
                return 0;
        if (!bundle_member_name_is_valid(name) || streq(name, BUNDLE_MANIFEST_NAME))
                return fail(ret_error, "%s names an invalid member \"%s\"", what, name);
        if (!idx)
                return 0;
        mb = member_index_find(idx, name);
        if (!mb)
                return fail(ret_error, "%s names member \"%s\", which the bundle does not contain", what, name);
        if (check_size && mb->size != expected_size)
                return fail(ret_error, "%s says %" PRIu64 " bytes but member \"%s\" holds %" PRIu64, what,
                            expected_size, name, mb->size);
        return 0;
}

int bundle_manifest_validate(const BundleManifest *m, bool check_members, char **ret_error) {
        _cleanup_free_ const BundleMember **member_v = NULL;
        _cleanup_free_ const BundleImage **image_v = NULL;
        _cleanup_free_ uint8_t *cpu_seen = NULL;
        MemberIndex index = {}, *idx = NULL;
        char what[96];
        int r;

        if (m->format_version < 1 || m->format_version > BUNDLE_FORMAT_VERSION)
                return fail(ret_error, "format_version %" PRIu32 " is not supported", m->format_version);
        if (!m->id || !is_lower_hex(m->id, BUNDLE_ID_LEN))
                return fail(ret_error, "id must be %d lowercase hex characters", BUNDLE_ID_LEN);
        if (!m->trigger.reason || !m->trigger.source)
                return fail(ret_error, "trigger needs a reason and a source");
        if (m->tsc.conversion.time_shift >= 64)
                return fail(ret_error, "tsc.time_shift %u is out of range (0..63)",
                            (unsigned) m->tsc.conversion.time_shift);
        if (m->window.valid && (m->window.start_time > m->window.end_time || m->window.start_tsc > m->window.end_tsc))
                return fail(ret_error, "window ends before it starts");
        if (m->trigger.details && !json_object_is_type(m->trigger.details, json_type_object))
                return fail(ret_error, "trigger.details must be an object");
        if (m->n_cpus > BUNDLE_MAX_CPUS || m->n_images > BUNDLE_MAX_IMAGES || m->n_jit > BUNDLE_MAX_JIT ||
            m->n_members > BUNDLE_MAX_MEMBERS || m->pmu.n_caps > BUNDLE_MAX_CAPS)
                return fail(ret_error, "too many entries");

        for (size_t i = 0; i < m->pmu.n_caps; i++)
                if (!m->pmu.caps[i].name || !*m->pmu.caps[i].name || !m->pmu.caps[i].value)
                        return fail(ret_error, "pmu.caps[%zu] needs a name and a value", i);

        /* Members: names valid and unique, stored form consistent. Quadratic
         * in the worst case is fine at this size only with a cheap check:
         * members are few hundred in practice; BUNDLE_MAX_MEMBERS bounds it. */
        for (size_t i = 0; i < m->n_members; i++) {
                const BundleMember *mb = &m->members[i];
                if (!bundle_member_name_is_valid(mb->name) || streq(mb->name, BUNDLE_MANIFEST_NAME))
                        return fail(ret_error, "members[%zu] has an invalid name", i);
                if (!bundle_member_name_is_valid(mb->stored_name) || streq(mb->stored_name, BUNDLE_MANIFEST_NAME))
                        return fail(ret_error, "member \"%s\" has an invalid stored name", mb->name);
                if (mb->compression == BUNDLE_COMPRESSION_NONE) {
                        if (!streq(mb->stored_name, mb->name) || mb->stored_size != mb->size)
                                return fail(ret_error,
                                            "member \"%s\" is uncompressed but its stored name or size differ",
                                            mb->name);
                } else {
                        size_t l = strlen(mb->name);
                        if (strncmp(mb->stored_name, mb->name, l) != 0 || !streq(mb->stored_name + l, ".zst"))
                                return fail(ret_error, "member \"%s\" is compressed but stored as \"%s\"",
                                            mb->name, mb->stored_name);
                }
        }
        if (m->n_members > 1) {
                /* Uniqueness of names and stored names, through a sorted copy. */
                _cleanup_free_ const char **names = calloc(m->n_members * 2, sizeof(char *));
                size_t n = 0;
                if (!names)
                        return -ENOMEM;
                for (size_t i = 0; i < m->n_members; i++) {
                        names[n++] = m->members[i].name;
                        if (!streq(m->members[i].stored_name, m->members[i].name))
                                names[n++] = m->members[i].stored_name;
                }
                qsort(names, n, sizeof(char *), cmp_str_ptr);
                for (size_t i = 1; i < n; i++)
                        if (streq(names[i - 1], names[i]))
                                return fail(ret_error, "member name \"%s\" appears twice", names[i]);
        }
        if (check_members) {
                member_v = calloc(m->n_members ?: 1, sizeof *member_v);
                if (!member_v)
                        return -ENOMEM;
                for (size_t i = 0; i < m->n_members; i++)
                        member_v[i] = &m->members[i];
                qsort(member_v, m->n_members, sizeof *member_v, cmp_member_ptr);
                index = (MemberIndex){ member_v, m->n_members };
                idx = &index;
        }

        cpu_seen = calloc(BUNDLE_MAX_CPUS / 8, 1);
        if (!cpu_seen)
                return -ENOMEM;

        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                if (c->cpu >= BUNDLE_MAX_CPUS)
                        return fail(ret_error, "cpus[%zu]: cpu %" PRIu32 " is out of range", i, c->cpu);
                if (cpu_seen[c->cpu / 8] & (1U << (c->cpu % 8)))
                        return fail(ret_error, "cpu %" PRIu32 " is listed twice", c->cpu);
                cpu_seen[c->cpu / 8] |= (uint8_t) (1U << (c->cpu % 8));
                if (c->has_time && (c->first_time > c->last_time || c->first_tsc > c->last_tsc))
                        return fail(ret_error, "cpu %" PRIu32 ": time range ends before it starts", c->cpu);
                snprintf(what, sizeof what, "cpu %" PRIu32, c->cpu);
                r = check_ref(idx, what, c->member, c->bytes, true, ret_error);
                if (r < 0)
                        return r;
                if (!c->member && c->bytes != 0)
                        return fail(ret_error, "cpu %" PRIu32 " has %" PRIu64 " bytes but no member", c->cpu,
                                    c->bytes);
        }

        r = check_ref(idx, "sideband", m->sideband.member, 0, false, ret_error);
        if (r < 0)
                return r;
        r = check_ref(idx, "kernel.kcore", m->kernel.kcore_member, 0, false, ret_error);
        if (r < 0)
                return r;
        if (!m->kernel.kcore_member && !m->kernel.kcore_absent_reason)
                return fail(ret_error, "kernel: no kcore member and no reason why it is absent");
        r = check_ref(idx, "kernel.kallsyms", m->kernel.kallsyms_member, 0, false, ret_error);
        if (r < 0)
                return r;
        r = check_ref(idx, "kernel.modules", m->kernel.modules_member, 0, false, ret_error);
        if (r < 0)
                return r;

        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *img = &m->images[i];
                _cleanup_free_ char *hex = NULL, *expected = NULL;

                if (img->build_id_size > BUNDLE_BUILD_ID_MAX || (img->build_id_size == 0 && img->member))
                        return fail(ret_error, "images[%zu]: build-id size %zu is out of range", i,
                                    img->build_id_size);
                if (img->kind < 0 || img->kind >= _BUNDLE_IMAGE_KIND_MAX)
                        return fail(ret_error, "images[%zu]: invalid kind", i);
                hex = img->build_id_size > 0 ? bundle_hex_encode(img->build_id, img->build_id_size)
                                             : strdup("(no build-id)");
                if (!hex)
                        return -ENOMEM;
                if (!img->paths || !img->paths[0])
                        return fail(ret_error, "image %s has no path", hex);
                if (!!img->member == !!img->missing_reason)
                        return fail(ret_error, "image %s needs exactly one of member and missing_reason", hex);
                if (img->member) {
                        if (asprintf(&expected, "images/%s", hex) < 0)
                                return -ENOMEM;
                        if (!streq(img->member, expected))
                                return fail(ret_error, "image %s must be stored as \"%s\", not \"%s\"", hex,
                                            expected, img->member);
                        snprintf(what, sizeof what, "image %.40s", hex);
                        r = check_ref(idx, what, img->member, img->size, true, ret_error);
                        if (r < 0)
                                return r;
                }
        }

        if (m->n_images > 1) {
                image_v = calloc(m->n_images, sizeof *image_v);
                if (!image_v)
                        return -ENOMEM;
                size_t k = 0;
                /* Images without a build-id are not keyed by one: skip them. */
                for (size_t i = 0; i < m->n_images; i++)
                        if (m->images[i].build_id_size > 0)
                                image_v[k++] = &m->images[i];
                qsort(image_v, k, sizeof *image_v, cmp_image_ptr);
                for (size_t i = 1; i < k; i++)
                        if (cmp_image_ptr(&image_v[i - 1], &image_v[i]) == 0) {
                                _cleanup_free_ char *hex =
                                        bundle_hex_encode(image_v[i]->build_id, image_v[i]->build_id_size);
                                return fail(ret_error, "image %s is listed twice", strna(hex));
                        }
        }

        for (size_t i = 0; i < m->n_jit; i++) {
                snprintf(what, sizeof what, "jit[%zu]", i);
                if (!m->jit[i].member)
                        return fail(ret_error, "%s has no member", what);
                r = check_ref(idx, what, m->jit[i].member, m->jit[i].len, true, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* Serializer */

typedef struct json_object JsonObject;

static inline void json_putp(JsonObject **j) {
        if (*j)
                json_object_put(*j);
}
#define _cleanup_json_ _cleanup_(json_putp)

/* NULL strings are left out: absent and null mean the same to the parser. */
static int add_str(JsonObject *o, const char *key, const char *v) {
        if (!v)
                return 0;
        return json_add_value(o, key, json_object_new_string(v));
}

static int add_hex_u64(JsonObject *o, const char *key, uint64_t v) {
        char buf[2 + 16 + 1];
        snprintf(buf, sizeof buf, "0x%" PRIx64, v);
        return json_add_value(o, key, json_object_new_string(buf));
}

static int append(JsonObject *a, JsonObject *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

#define TRY(expr)                                                                                           \
        do {                                                                                                \
                int _r = (expr);                                                                            \
                if (_r < 0)                                                                                 \
                        return _r;                                                                          \
        } while (0)

/* Build an object with cleanup until it is attached. */
#define NEW_OBJECT(var)                                                                                     \
        _cleanup_json_ JsonObject *var = json_object_new_object();                                         \
        if (!var)                                                                                           \
                return -ENOMEM

static int attach(JsonObject *parent, const char *key, JsonObject **child) {
        int r = json_add_value(parent, key, *child);
        *child = NULL; /* owned by parent now, or freed by add_value */
        return r;
}

static int attach_item(JsonObject *array, JsonObject **child) {
        int r = append(array, *child);
        *child = NULL;
        return r;
}

static int serialize_host(JsonObject *root, const BundleManifest *m) {
        NEW_OBJECT(host);
        NEW_OBJECT(cpu);

        TRY(add_str(host, "hostname", m->host.hostname));
        TRY(add_str(host, "kernel_release", m->host.kernel_release));
        TRY(add_str(host, "kernel_version", m->host.kernel_version));
        TRY(add_str(host, "machine", m->host.machine));
        TRY(add_str(host, "boot_id", m->host.boot_id));
        TRY(add_str(host, "machine_id", m->host.machine_id));
        TRY(attach(root, "host", &host));

        TRY(add_str(cpu, "vendor", m->cpuid.vendor));
        TRY(json_add_uint64(cpu, "family", m->cpuid.family));
        TRY(json_add_uint64(cpu, "model", m->cpuid.model));
        TRY(json_add_uint64(cpu, "stepping", m->cpuid.stepping));
        return attach(root, "cpu", &cpu);
}

static int serialize_pmu_tsc(JsonObject *root, const BundleManifest *m) {
        NEW_OBJECT(pmu);
        NEW_OBJECT(caps);
        NEW_OBJECT(tsc);
        _cleanup_json_ JsonObject *config = json_object_new_array();
        const PerfTscConversion *c = &m->tsc.conversion;

        if (!config)
                return -ENOMEM;
        TRY(add_str(pmu, "name", m->pmu.name));
        TRY(json_add_uint64(pmu, "type", m->pmu.type));
        TRY(add_str(pmu, "config_text", m->pmu.config_text));
        for (size_t i = 0; i < ELEMENTSOF(m->pmu.config); i++) {
                char buf[2 + 16 + 1];
                snprintf(buf, sizeof buf, "0x%" PRIx64, m->pmu.config[i]);
                TRY(append(config, json_object_new_string(buf)));
        }
        TRY(attach(pmu, "config", &config));
        for (size_t i = 0; i < m->pmu.n_caps; i++)
                TRY(add_str(caps, m->pmu.caps[i].name, m->pmu.caps[i].value));
        TRY(attach(pmu, "caps", &caps));
        TRY(attach(root, "pmu", &pmu));

        TRY(json_add_uint64(tsc, "time_zero", c->time_zero));
        TRY(json_add_uint64(tsc, "time_mult", c->time_mult));
        TRY(json_add_uint64(tsc, "time_shift", c->time_shift));
        TRY(json_add_bool(tsc, "cap_user_time_zero", c->cap_user_time_zero));
        TRY(json_add_bool(tsc, "cap_user_time_short", c->cap_user_time_short));
        TRY(json_add_uint64(tsc, "time_cycles", c->time_cycles));
        TRY(json_add_uint64(tsc, "time_mask", c->time_mask));
        TRY(json_add_uint64(tsc, "cpuid_15_eax", m->tsc.cpuid_15_eax));
        TRY(json_add_uint64(tsc, "cpuid_15_ebx", m->tsc.cpuid_15_ebx));
        TRY(json_add_uint64(tsc, "nominal_freq", m->tsc.nominal_freq));
        TRY(json_add_uint64(tsc, "mtc_freq", m->tsc.mtc_freq));
        TRY(json_add_uint64(tsc, "tsc_hz", m->tsc.tsc_hz));
        return attach(root, "tsc", &tsc);
}

static int serialize_trigger(JsonObject *root, const BundleManifest *m) {
        const BundleTrigger *t = &m->trigger;
        NEW_OBJECT(trigger);

        TRY(add_str(trigger, "reason", t->reason));
        TRY(add_str(trigger, "source", t->source));
        if (t->has_requester) {
                NEW_OBJECT(req);
                TRY(json_add_uint64(req, "pid", t->requester_pid));
                TRY(json_add_uint64(req, "uid", t->requester_uid));
                TRY(add_str(req, "comm", t->requester_comm));
                TRY(attach(trigger, "requester", &req));
        }
        TRY(json_add_uint64(trigger, "perf_time", t->perf_time));
        TRY(json_add_uint64(trigger, "realtime_usec", t->realtime_usec));
        if (t->details) {
                /* A deep copy keeps the caller's object untouched and ours
                 * independent of it. */
                JsonObject *copy = NULL;
                if (json_object_deep_copy(t->details, &copy, NULL) < 0)
                        return -ENOMEM;
                TRY(json_add_value(trigger, "details", copy));
        }
        return attach(root, "trigger", &trigger);
}

static int serialize_cpus(JsonObject *root, const BundleManifest *m) {
        _cleanup_json_ JsonObject *cpus = json_object_new_array();

        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                NEW_OBJECT(o);
                TRY(json_add_uint64(o, "cpu", c->cpu));
                TRY(add_str(o, "member", c->member));
                TRY(json_add_uint64(o, "bytes", c->bytes));
                TRY(json_add_uint64(o, "buffer_size", c->buffer_size));
                TRY(json_add_bool(o, "wrapped", c->wrapped));
                TRY(json_add_bool(o, "truncated", c->truncated));
                TRY(json_add_bool(o, "lost", c->lost));
                if (c->has_time) {
                        TRY(json_add_uint64(o, "first_tsc", c->first_tsc));
                        TRY(json_add_uint64(o, "last_tsc", c->last_tsc));
                        TRY(json_add_uint64(o, "first_time", c->first_time));
                        TRY(json_add_uint64(o, "last_time", c->last_time));
                }
                TRY(json_add_uint64(o, "blackout_ns", c->blackout_ns));
                TRY(add_str(o, "error", c->error));
                TRY(attach_item(cpus, &o));
        }
        TRY(attach(root, "cpus", &cpus));

        if (m->window.valid) {
                NEW_OBJECT(w);
                TRY(json_add_uint64(w, "start_time", m->window.start_time));
                TRY(json_add_uint64(w, "end_time", m->window.end_time));
                TRY(json_add_uint64(w, "start_tsc", m->window.start_tsc));
                TRY(json_add_uint64(w, "end_tsc", m->window.end_tsc));
                TRY(attach(root, "window", &w));
        }
        return json_add_uint64(root, "lookback_ns", m->lookback_ns);
}

static int serialize_sideband_kernel(JsonObject *root, const BundleManifest *m) {
        NEW_OBJECT(sb);
        NEW_OBJECT(k);

        TRY(add_str(sb, "member", m->sideband.member));
        TRY(add_hex_u64(sb, "sample_type", m->sideband.sample_type));
        TRY(json_add_bool(sb, "sample_id_all", m->sideband.sample_id_all));
        TRY(json_add_uint64(sb, "records", m->sideband.n_records));
        TRY(json_add_uint64(sb, "lost", m->sideband.n_lost));
        TRY(attach(root, "sideband", &sb));

        TRY(add_str(k, "kcore_member", m->kernel.kcore_member));
        TRY(add_str(k, "kcore_absent_reason", m->kernel.kcore_absent_reason));
        TRY(add_str(k, "kallsyms_member", m->kernel.kallsyms_member));
        TRY(add_str(k, "modules_member", m->kernel.modules_member));
        TRY(add_hex_u64(k, "text_start", m->kernel.text_start));
        TRY(add_hex_u64(k, "text_end", m->kernel.text_end));
        TRY(add_hex_u64(k, "modules_start", m->kernel.modules_start));
        TRY(add_hex_u64(k, "modules_end", m->kernel.modules_end));
        return attach(root, "kernel", &k);
}

static int serialize_images(JsonObject *root, const BundleManifest *m) {
        _cleanup_json_ JsonObject *images = json_object_new_array(), *jit = json_object_new_array();

        if (!images || !jit)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *img = &m->images[i];
                _cleanup_free_ char *hex = bundle_hex_encode(img->build_id, img->build_id_size);
                _cleanup_json_ JsonObject *paths = json_object_new_array();
                NEW_OBJECT(o);

                if (!hex || !paths)
                        return -ENOMEM;
                TRY(add_str(o, "kind", bundle_image_kind_to_string(img->kind)));
                TRY(add_str(o, "build_id", hex));
                for (char **p = img->paths; p && *p; p++)
                        TRY(append(paths, json_object_new_string(*p)));
                TRY(attach(o, "paths", &paths));
                TRY(add_str(o, "member", img->member));
                TRY(json_add_uint64(o, "size", img->size));
                TRY(add_str(o, "missing_reason", img->missing_reason));
                TRY(attach_item(images, &o));
        }
        TRY(attach(root, "images", &images));

        for (size_t i = 0; i < m->n_jit; i++) {
                NEW_OBJECT(o);
                TRY(json_add_uint64(o, "pid", m->jit[i].pid));
                TRY(add_hex_u64(o, "addr", m->jit[i].addr));
                TRY(json_add_uint64(o, "len", m->jit[i].len));
                TRY(add_str(o, "member", m->jit[i].member));
                TRY(attach_item(jit, &o));
        }
        return attach(root, "jit", &jit);
}

static int serialize_members(JsonObject *root, const BundleManifest *m) {
        _cleanup_json_ JsonObject *members = json_object_new_array();

        if (!members)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_members; i++) {
                const BundleMember *mb = &m->members[i];
                _cleanup_free_ char *hash = bundle_hex_encode(mb->sha256, sizeof mb->sha256);
                NEW_OBJECT(o);

                if (!hash)
                        return -ENOMEM;
                TRY(add_str(o, "name", mb->name));
                TRY(add_str(o, "stored_name", mb->stored_name));
                TRY(json_add_uint64(o, "size", mb->size));
                TRY(json_add_uint64(o, "stored_size", mb->stored_size));
                TRY(add_str(o, "compression", bundle_compression_to_string(mb->compression)));
                TRY(add_str(o, "sha256", hash));
                TRY(attach_item(members, &o));
        }
        return attach(root, "members", &members);
}

int bundle_manifest_to_json(const BundleManifest *m, char **ret, size_t *ret_size, char **ret_error) {
        NEW_OBJECT(root);
        const char *s;
        size_t l;
        char *copy;
        int r;

        r = bundle_manifest_validate(m, /* check_members= */ true, ret_error);
        if (r < 0)
                return r;

        TRY(add_str(root, "format", "ptraced-bundle"));
        TRY(json_add_uint64(root, "format_version", m->format_version));
        TRY(add_str(root, "id", m->id));
        TRY(add_str(root, "generator", m->generator));
        TRY(json_add_uint64(root, "created_realtime_usec", m->created_realtime_usec));
        TRY(json_add_bool(root, "simulated", m->simulated));
        TRY(serialize_host(root, m));
        TRY(serialize_pmu_tsc(root, m));
        TRY(serialize_trigger(root, m));
        TRY(serialize_cpus(root, m));
        TRY(serialize_sideband_kernel(root, m));
        TRY(serialize_images(root, m));
        TRY(serialize_members(root, m));

        s = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE,
                                              &l);
        if (!s)
                return -ENOMEM;
        if (l > BUNDLE_MANIFEST_MAX_SIZE)
                return fail_errno(-E2BIG, ret_error, "manifest would be %zu bytes, over the limit of %u", l,
                                  BUNDLE_MANIFEST_MAX_SIZE);
        copy = malloc(l + 2);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, s, l);
        copy[l++] = '\n';
        copy[l] = 0;
        *ret = copy;
        if (ret_size)
                *ret_size = l;
        return 0;
}

/* ------------------------------------------------------------------ */
/* Parser */

typedef struct Parse {
        char **ret_error;
} Parse;

/* Look a key up with a type; absent or null is "not there". */
static int get(Parse *p, JsonObject *o, const char *ctx, const char *key, json_type type, bool required,
               JsonObject **ret) {
        JsonObject *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) || !v || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                if (required)
                        return fail(p->ret_error, "manifest: %s%s%s is missing", ctx, *ctx ? "." : "", key);
                return 0;
        }
        if (!json_object_is_type(v, type))
                return fail(p->ret_error, "manifest: %s%s%s must be %s", ctx, *ctx ? "." : "", key,
                            type == json_type_object ? "an object"
                            : type == json_type_array ? "an array"
                            : type == json_type_string ? "a string"
                            : type == json_type_int ? "an unsigned integer"
                            : type == json_type_boolean ? "true or false"
                                                        : "something else");
        *ret = v;
        return 1;
}

static int get_u64(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required, uint64_t max,
                   uint64_t *ret) {
        JsonObject *v;
        uint64_t x;
        int r;

        r = get(p, o, ctx, key, json_type_int, required, &v);
        if (r <= 0)
                return r;
        /* json-c keeps values above INT64_MAX as unsigned; get_int64 clamps
         * those to INT64_MAX, so a negative result means a negative number. */
        if (json_object_get_int64(v) < 0)
                return fail(p->ret_error, "manifest: %s%s%s must not be negative", ctx, *ctx ? "." : "", key);
        x = json_object_get_uint64(v);
        if (x > max)
                return fail(p->ret_error, "manifest: %s%s%s = %" PRIu64 " is out of range (max %" PRIu64 ")",
                            ctx, *ctx ? "." : "", key, x, max);
        *ret = x;
        return 1;
}

static int get_u32(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required, uint32_t *ret) {
        uint64_t x;
        int r = get_u64(p, o, ctx, key, required, UINT32_MAX, &x);
        if (r > 0)
                *ret = (uint32_t) x;
        return r;
}

static int get_bool(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required, bool *ret) {
        JsonObject *v;
        int r = get(p, o, ctx, key, json_type_boolean, required, &v);
        if (r > 0)
                *ret = json_object_get_boolean(v);
        return r;
}

/* Strings are bounded and must not hide a NUL (json "\u0000"): what C
 * code sees must be what the JSON said. */
static int check_string(Parse *p, JsonObject *v, const char *ctx, const char *key, const char **ret) {
        const char *s = json_object_get_string(v);
        int l = json_object_get_string_len(v);

        if (l < 0 || (size_t) l > BUNDLE_MAX_STRING)
                return fail(p->ret_error, "manifest: %s%s%s is longer than %u bytes", ctx, *ctx ? "." : "", key,
                            BUNDLE_MAX_STRING);
        if (strlen(s) != (size_t) l)
                return fail(p->ret_error, "manifest: %s%s%s contains a NUL character", ctx, *ctx ? "." : "", key);
        *ret = s;
        return 0;
}

static int get_str(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required, char **ret) {
        JsonObject *v;
        const char *s = NULL;
        int r;

        r = get(p, o, ctx, key, json_type_string, required, &v);
        if (r <= 0)
                return r;
        r = check_string(p, v, ctx, key, &s);
        if (r < 0)
                return r;
        free(*ret);
        *ret = strdup(s);
        return *ret ? 1 : -ENOMEM;
}

static int parse_hex_u64(Parse *p, const char *s, const char *ctx, const char *key, uint64_t *ret) {
        const char *h = startswith(s, "0x");
        uint64_t x = 0;

        if (!h || !*h || strlen(h) > 16)
                return fail(p->ret_error, "manifest: %s.%s must be a hex string like \"0x1f\"", ctx, key);
        for (; *h; h++) {
                int d = unhex_digit(*h);
                if (d < 0)
                        return fail(p->ret_error, "manifest: %s.%s must be a hex string like \"0x1f\"", ctx, key);
                x = x << 4 | (uint64_t) d;
        }
        *ret = x;
        return 1;
}

static int get_hex_u64(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required,
                       uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = get_str(p, o, ctx, key, required, &s);
        if (r <= 0)
                return r;
        return parse_hex_u64(p, s, ctx, key, ret);
}

static int get_array(Parse *p, JsonObject *o, const char *ctx, const char *key, bool required, size_t max,
                     JsonObject **ret, size_t *ret_n) {
        int r = get(p, o, ctx, key, json_type_array, required, ret);
        if (r <= 0) {
                *ret_n = 0;
                return r;
        }
        *ret_n = json_object_array_length(*ret);
        if (*ret_n > max)
                return fail_errno(-E2BIG, p->ret_error, "manifest: %s%s%s has %zu entries, more than the limit of %zu",
                                  ctx, *ctx ? "." : "", key, *ret_n, max);
        return 1;
}

#define P(expr)                                                                                             \
        do {                                                                                                \
                int _r = (expr);                                                                            \
                if (_r < 0)                                                                                 \
                        return _r;                                                                          \
        } while (0)

static int parse_host(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o;

        P(get(p, root, "", "host", json_type_object, false, &o));
        if (o) {
                P(get_str(p, o, "host", "hostname", false, &m->host.hostname));
                P(get_str(p, o, "host", "kernel_release", false, &m->host.kernel_release));
                P(get_str(p, o, "host", "kernel_version", false, &m->host.kernel_version));
                P(get_str(p, o, "host", "machine", false, &m->host.machine));
                P(get_str(p, o, "host", "boot_id", false, &m->host.boot_id));
                P(get_str(p, o, "host", "machine_id", false, &m->host.machine_id));
        }
        P(get(p, root, "", "cpu", json_type_object, false, &o));
        if (o) {
                P(get_str(p, o, "cpu", "vendor", false, &m->cpuid.vendor));
                P(get_u32(p, o, "cpu", "family", false, &m->cpuid.family));
                P(get_u32(p, o, "cpu", "model", false, &m->cpuid.model));
                P(get_u32(p, o, "cpu", "stepping", false, &m->cpuid.stepping));
        }
        return 0;
}

static int parse_pmu_tsc(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o, *a, *caps;
        size_t n;
        uint64_t x;

        P(get(p, root, "", "pmu", json_type_object, false, &o));
        if (o) {
                P(get_str(p, o, "pmu", "name", false, &m->pmu.name));
                P(get_u32(p, o, "pmu", "type", false, &m->pmu.type));
                P(get_str(p, o, "pmu", "config_text", false, &m->pmu.config_text));
                P(get_array(p, o, "pmu", "config", false, ELEMENTSOF(m->pmu.config), &a, &n));
                for (size_t i = 0; i < n; i++) {
                        JsonObject *v = json_object_array_get_idx(a, i);
                        const char *s = NULL;
                        if (!json_object_is_type(v, json_type_string))
                                return fail(p->ret_error, "manifest: pmu.config must hold hex strings");
                        P(check_string(p, v, "pmu", "config", &s));
                        P(parse_hex_u64(p, s, "pmu", "config", &m->pmu.config[i]));
                }
                P(get(p, o, "pmu", "caps", json_type_object, false, &caps));
                if (caps) {
                        if ((size_t) json_object_object_length(caps) > BUNDLE_MAX_CAPS)
                                return fail_errno(-E2BIG, p->ret_error, "manifest: pmu.caps has more than %u entries",
                                                  BUNDLE_MAX_CAPS);
                        json_object_object_foreach(caps, key, val) {
                                const char *s = NULL;
                                if (!json_object_is_type(val, json_type_string))
                                        return fail(p->ret_error, "manifest: pmu.caps.%.64s must be a string", key);
                                P(check_string(p, val, "pmu.caps", key, &s));
                                if (!*key || strlen(key) > BUNDLE_MAX_STRING)
                                        return fail(p->ret_error, "manifest: pmu.caps has an invalid name");
                                P(bundle_manifest_add_cap(m, key, s));
                        }
                }
        }

        P(get(p, root, "", "tsc", json_type_object, false, &o));
        if (o) {
                PerfTscConversion *c = &m->tsc.conversion;
                P(get_u64(p, o, "tsc", "time_zero", false, UINT64_MAX, &c->time_zero));
                P(get_u32(p, o, "tsc", "time_mult", false, &c->time_mult));
                x = 0;
                P(get_u64(p, o, "tsc", "time_shift", false, 63, &x));
                c->time_shift = (uint16_t) x;
                P(get_bool(p, o, "tsc", "cap_user_time_zero", false, &c->cap_user_time_zero));
                P(get_bool(p, o, "tsc", "cap_user_time_short", false, &c->cap_user_time_short));
                P(get_u64(p, o, "tsc", "time_cycles", false, UINT64_MAX, &c->time_cycles));
                P(get_u64(p, o, "tsc", "time_mask", false, UINT64_MAX, &c->time_mask));
                P(get_u32(p, o, "tsc", "cpuid_15_eax", false, &m->tsc.cpuid_15_eax));
                P(get_u32(p, o, "tsc", "cpuid_15_ebx", false, &m->tsc.cpuid_15_ebx));
                P(get_u32(p, o, "tsc", "nominal_freq", false, &m->tsc.nominal_freq));
                P(get_u32(p, o, "tsc", "mtc_freq", false, &m->tsc.mtc_freq));
                P(get_u64(p, o, "tsc", "tsc_hz", false, UINT64_MAX, &m->tsc.tsc_hz));
        }
        return 0;
}

static int json_depth(JsonObject *o, int limit) {
        int d = 0;

        if (limit < 0)
                return 1;
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, key, val) {
                        (void) key;
                        d = MAX(d, json_depth(val, limit - 1));
                }
                return d + 1;
        }
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        d = MAX(d, json_depth(json_object_array_get_idx(o, i), limit - 1));
                return d + 1;
        }
        return 0;
}

static int parse_trigger(Parse *p, JsonObject *root, BundleManifest *m) {
        BundleTrigger *t = &m->trigger;
        JsonObject *o, *req, *details;

        P(get(p, root, "", "trigger", json_type_object, true, &o));
        P(get_str(p, o, "trigger", "reason", true, &t->reason));
        P(get_str(p, o, "trigger", "source", true, &t->source));
        P(get(p, o, "trigger", "requester", json_type_object, false, &req));
        if (req) {
                t->has_requester = true;
                P(get_u32(p, req, "trigger.requester", "pid", true, &t->requester_pid));
                P(get_u32(p, req, "trigger.requester", "uid", true, &t->requester_uid));
                P(get_str(p, req, "trigger.requester", "comm", false, &t->requester_comm));
        }
        P(get_u64(p, o, "trigger", "perf_time", false, UINT64_MAX, &t->perf_time));
        P(get_u64(p, o, "trigger", "realtime_usec", false, UINT64_MAX, &t->realtime_usec));
        P(get(p, o, "trigger", "details", json_type_object, false, &details));
        if (details) {
                if (json_depth(details, BUNDLE_MAX_DETAILS_DEPTH) > BUNDLE_MAX_DETAILS_DEPTH)
                        return fail(p->ret_error, "manifest: trigger.details is nested deeper than %d levels",
                                    BUNDLE_MAX_DETAILS_DEPTH);
                t->details = json_object_get(details);
        }
        return 0;
}

static int parse_cpus(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a, *w;
        size_t n;

        P(get_array(p, root, "", "cpus", true, BUNDLE_MAX_CPUS, &a, &n));
        m->cpus = calloc(n ?: 1, sizeof *m->cpus);
        if (!m->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JsonObject *o = json_object_array_get_idx(a, i);
                BundleCpu *c = &m->cpus[m->n_cpus++];
                char ctx[32];
                int has[4];

                snprintf(ctx, sizeof ctx, "cpus[%zu]", i);
                if (!json_object_is_type(o, json_type_object))
                        return fail(p->ret_error, "manifest: %s must be an object", ctx);
                P(get_u32(p, o, ctx, "cpu", true, &c->cpu));
                P(get_str(p, o, ctx, "member", false, &c->member));
                P(get_u64(p, o, ctx, "bytes", false, UINT64_MAX, &c->bytes));
                P(get_u64(p, o, ctx, "buffer_size", false, UINT64_MAX, &c->buffer_size));
                P(get_bool(p, o, ctx, "wrapped", false, &c->wrapped));
                P(get_bool(p, o, ctx, "truncated", false, &c->truncated));
                P(get_bool(p, o, ctx, "lost", false, &c->lost));
                P(has[0] = get_u64(p, o, ctx, "first_tsc", false, UINT64_MAX, &c->first_tsc));
                P(has[1] = get_u64(p, o, ctx, "last_tsc", false, UINT64_MAX, &c->last_tsc));
                P(has[2] = get_u64(p, o, ctx, "first_time", false, UINT64_MAX, &c->first_time));
                P(has[3] = get_u64(p, o, ctx, "last_time", false, UINT64_MAX, &c->last_time));
                if (has[0] != has[1] || has[0] != has[2] || has[0] != has[3])
                        return fail(p->ret_error, "manifest: %s needs all or none of first/last tsc/time", ctx);
                c->has_time = has[0] > 0;
                P(get_u64(p, o, ctx, "blackout_ns", false, UINT64_MAX, &c->blackout_ns));
                P(get_str(p, o, ctx, "error", false, &c->error));
        }

        P(get(p, root, "", "window", json_type_object, false, &w));
        if (w) {
                m->window.valid = true;
                P(get_u64(p, w, "window", "start_time", true, UINT64_MAX, &m->window.start_time));
                P(get_u64(p, w, "window", "end_time", true, UINT64_MAX, &m->window.end_time));
                P(get_u64(p, w, "window", "start_tsc", true, UINT64_MAX, &m->window.start_tsc));
                P(get_u64(p, w, "window", "end_tsc", true, UINT64_MAX, &m->window.end_tsc));
        }
        P(get_u64(p, root, "", "lookback_ns", false, UINT64_MAX, &m->lookback_ns));
        return 0;
}

static int parse_sideband_kernel(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o;

        P(get(p, root, "", "sideband", json_type_object, false, &o));
        if (o) {
                P(get_str(p, o, "sideband", "member", false, &m->sideband.member));
                P(get_hex_u64(p, o, "sideband", "sample_type", false, &m->sideband.sample_type));
                P(get_bool(p, o, "sideband", "sample_id_all", false, &m->sideband.sample_id_all));
                P(get_u64(p, o, "sideband", "records", false, UINT64_MAX, &m->sideband.n_records));
                P(get_u64(p, o, "sideband", "lost", false, UINT64_MAX, &m->sideband.n_lost));
        }
        P(get(p, root, "", "kernel", json_type_object, true, &o));
        P(get_str(p, o, "kernel", "kcore_member", false, &m->kernel.kcore_member));
        P(get_str(p, o, "kernel", "kcore_absent_reason", false, &m->kernel.kcore_absent_reason));
        P(get_str(p, o, "kernel", "kallsyms_member", false, &m->kernel.kallsyms_member));
        P(get_str(p, o, "kernel", "modules_member", false, &m->kernel.modules_member));
        P(get_hex_u64(p, o, "kernel", "text_start", false, &m->kernel.text_start));
        P(get_hex_u64(p, o, "kernel", "text_end", false, &m->kernel.text_end));
        P(get_hex_u64(p, o, "kernel", "modules_start", false, &m->kernel.modules_start));
        P(get_hex_u64(p, o, "kernel", "modules_end", false, &m->kernel.modules_end));
        return 0;
}

static int parse_images(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a;
        size_t n;

        P(get_array(p, root, "", "images", false, BUNDLE_MAX_IMAGES, &a, &n));
        m->images = calloc(n ?: 1, sizeof *m->images);
        if (!m->images)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JsonObject *o = json_object_array_get_idx(a, i), *paths;
                BundleImage *img = &m->images[m->n_images++];
                _cleanup_free_ char *kind = NULL, *hex = NULL;
                size_t n_paths;
                char ctx[32];
                int r;

                snprintf(ctx, sizeof ctx, "images[%zu]", i);
                if (!json_object_is_type(o, json_type_object))
                        return fail(p->ret_error, "manifest: %s must be an object", ctx);
                P(get_str(p, o, ctx, "kind", true, &kind));
                r = bundle_image_kind_from_string(kind);
                if (r < 0)
                        return fail(p->ret_error, "manifest: %s.kind \"%s\" is unknown", ctx, kind);
                img->kind = r;
                P(get_str(p, o, ctx, "build_id", true, &hex));
                r = bundle_hex_decode(hex, img->build_id, sizeof img->build_id, &img->build_id_size);
                if (r < 0)
                        return fail(p->ret_error, "manifest: %s.build_id must be up to 40 hex characters", ctx);
                P(get_array(p, o, ctx, "paths", true, BUNDLE_MAX_IMAGE_PATHS, &paths, &n_paths));
                for (size_t j = 0; j < n_paths; j++) {
                        JsonObject *v = json_object_array_get_idx(paths, j);
                        const char *s = NULL;
                        if (!json_object_is_type(v, json_type_string))
                                return fail(p->ret_error, "manifest: %s.paths must hold strings", ctx);
                        P(check_string(p, v, ctx, "paths", &s));
                        P(bundle_image_add_path(img, s));
                }
                P(get_str(p, o, ctx, "member", false, &img->member));
                P(get_u64(p, o, ctx, "size", false, UINT64_MAX, &img->size));
                P(get_str(p, o, ctx, "missing_reason", false, &img->missing_reason));
        }

        P(get_array(p, root, "", "jit", false, BUNDLE_MAX_JIT, &a, &n));
        m->jit = calloc(n ?: 1, sizeof *m->jit);
        if (!m->jit)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JsonObject *o = json_object_array_get_idx(a, i);
                BundleJit *j = &m->jit[m->n_jit++];
                char ctx[32];

                snprintf(ctx, sizeof ctx, "jit[%zu]", i);
                if (!json_object_is_type(o, json_type_object))
                        return fail(p->ret_error, "manifest: %s must be an object", ctx);
                P(get_u32(p, o, ctx, "pid", true, &j->pid));
                P(get_hex_u64(p, o, ctx, "addr", true, &j->addr));
                P(get_u64(p, o, ctx, "len", true, UINT64_MAX, &j->len));
                P(get_str(p, o, ctx, "member", true, &j->member));
        }
        return 0;
}

static int parse_members(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a;
        size_t n;

        P(get_array(p, root, "", "members", true, BUNDLE_MAX_MEMBERS, &a, &n));
        m->members = calloc(n ?: 1, sizeof *m->members);
        if (!m->members)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JsonObject *o = json_object_array_get_idx(a, i);
                BundleMember *mb = &m->members[m->n_members++];
                _cleanup_free_ char *compression = NULL, *hash = NULL;
                size_t hash_len;
                char ctx[32];
                int r;

                snprintf(ctx, sizeof ctx, "members[%zu]", i);
                if (!json_object_is_type(o, json_type_object))
                        return fail(p->ret_error, "manifest: %s must be an object", ctx);
                P(get_str(p, o, ctx, "name", true, &mb->name));
                P(get_str(p, o, ctx, "stored_name", true, &mb->stored_name));
                P(get_u64(p, o, ctx, "size", true, UINT64_MAX, &mb->size));
                P(get_u64(p, o, ctx, "stored_size", true, UINT64_MAX, &mb->stored_size));
                P(get_str(p, o, ctx, "compression", true, &compression));
                r = bundle_compression_from_string(compression);
                if (r < 0)
                        return fail(p->ret_error, "manifest: %s.compression \"%s\" is unknown", ctx, compression);
                mb->compression = r;
                P(get_str(p, o, ctx, "sha256", true, &hash));
                r = bundle_hex_decode(hash, mb->sha256, sizeof mb->sha256, &hash_len);
                if (r < 0 || hash_len != sizeof mb->sha256)
                        return fail(p->ret_error, "manifest: %s.sha256 must be 64 hex characters", ctx);
        }
        return 0;
}

int bundle_manifest_parse(const char *json, size_t size, BundleManifest **ret, char **ret_error) {
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_json_ JsonObject *root = NULL;
        _cleanup_free_ char *format = NULL;
        struct json_tokener *tok;
        Parse p = { .ret_error = ret_error };
        uint64_t version;
        size_t consumed;
        int r;

        if (size > BUNDLE_MANIFEST_MAX_SIZE)
                return fail_errno(-E2BIG, ret_error, "manifest is %zu bytes, over the limit of %u", size,
                                  BUNDLE_MANIFEST_MAX_SIZE);
        /* The depth covers our own nesting (4) plus the details object. */
        tok = json_tokener_new_ex(BUNDLE_MAX_DETAILS_DEPTH + 8);
        if (!tok)
                return -ENOMEM;
        /* Hostile input gets the strict grammar: no comments, no single
         * quotes, no trailing commas. */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        root = json_tokener_parse_ex(tok, json, (int) size);
        if (!root) {
                enum json_tokener_error e = json_tokener_get_error(tok);
                size_t off = json_tokener_get_parse_end(tok);
                json_tokener_free(tok);
                if (e == json_tokener_continue)
                        return fail(ret_error, "manifest: JSON ends early (%zu bytes)", size);
                return fail(ret_error, "manifest: invalid JSON at byte %zu: %s", off, json_tokener_error_desc(e));
        }
        consumed = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        for (size_t i = consumed; i < size; i++)
                if (!strchr(" \t\r\n", json[i]))
                        return fail(ret_error, "manifest: garbage after the JSON object at byte %zu", i);
        if (!json_object_is_type(root, json_type_object))
                return fail(ret_error, "manifest: the top level must be an object");

        r = get_str(&p, root, "", "format", true, &format);
        if (r < 0)
                return r;
        if (!streq(format, "ptraced-bundle"))
                return fail(ret_error, "manifest: format is \"%.64s\", not \"ptraced-bundle\"", format);
        r = get_u64(&p, root, "", "format_version", true, UINT64_MAX, &version);
        if (r < 0)
                return r;
        if (version > BUNDLE_FORMAT_VERSION) {
                return fail_errno(-EPROTONOSUPPORT, ret_error,
                                  "bundle format version %" PRIu64 " is newer than this program supports (%u); "
                                  "a newer ptctl is needed to read it",
                                  version, BUNDLE_FORMAT_VERSION);
        }
        if (version < 1)
                return fail(ret_error, "manifest: format_version 0 is invalid");

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->format_version = (uint32_t) version;
        r = get_str(&p, root, "", "id", true, &m->id);
        if (r < 0)
                return r;
        P(get_str(&p, root, "", "generator", false, &m->generator));
        P(get_u64(&p, root, "", "created_realtime_usec", false, UINT64_MAX, &m->created_realtime_usec));
        P(get_bool(&p, root, "", "simulated", true, &m->simulated));
        P(parse_host(&p, root, m));
        P(parse_pmu_tsc(&p, root, m));
        P(parse_trigger(&p, root, m));
        P(parse_cpus(&p, root, m));
        P(parse_sideband_kernel(&p, root, m));
        P(parse_images(&p, root, m));
        P(parse_members(&p, root, m));

        r = bundle_manifest_validate(m, /* check_members= */ true, ret_error);
        if (r < 0) {
                if (r == -EBADMSG && ret_error && *ret_error) {
                        _cleanup_free_ char *msg = TAKE_PTR(*ret_error);
                        return fail(ret_error, "manifest: %s", msg);
                }
                return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}
