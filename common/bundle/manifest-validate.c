/* SPDX-License-Identifier: MIT */

/*
 * The cross-field checks of a manifest, shared by both directions: the
 * writer runs them before it serializes (a manifest we write is one we
 * read) and the parser after it has read one. Untrusted manifests reach
 * here, so every lookup is bounded: references resolve through a sorted
 * index, duplicates are found by sorting.
 */

#include <inttypes.h>
#include <json-c/json.h>

#include "common/bundle/internal.h"
#include "common/bundle/manifest.h"

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
                return bundle_invalid(ret_error, "%s names an invalid member \"%s\"", what, name);
        if (!idx)
                return 0;
        mb = member_index_find(idx, name);
        if (!mb)
                return bundle_invalid(ret_error, "%s names member \"%s\", which the bundle does not contain",
                                      what, name);
        if (check_size && mb->size != expected_size)
                return bundle_invalid(ret_error,
                                      "%s says %" PRIu64 " bytes but member \"%s\" holds %" PRIu64, what,
                                      expected_size, name, mb->size);
        return 0;
}

typedef struct MemberRef {
        const char *member;
        char by[32]; /* "cpu 3", "sideband", "an image"... */
} MemberRef;

static void add_ref(MemberRef *r, const char *member, const char *by) {
        r->member = member;
        snprintf(r->by, sizeof r->by, "%s", by);
}

static int cmp_ref(const void *a, const void *b) {
        return strcmp(((const MemberRef *) a)->member, ((const MemberRef *) b)->member);
}

/* Each member has one reference: a trace, the side-band, a kernel file,
 * an image or a JIT region. Two references to one member make no sense
 * and multiply what readers decompress and hold (issue 17: four CPUs
 * sharing one honest 1 GiB member took ptctl decode to 4.2 GB). */
static int check_refs_unique(const BundleManifest *m, char **ret_error) {
        size_t n = 0, cap = m->n_cpus + 2 * m->n_images + m->n_jit + 4;
        _cleanup_free_ MemberRef *v = calloc(cap, sizeof *v);

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].member) {
                        char by[32];
                        snprintf(by, sizeof by, "cpu %" PRIu32, m->cpus[i].cpu);
                        add_ref(&v[n++], m->cpus[i].member, by);
                }
        if (m->sideband.member)
                add_ref(&v[n++], m->sideband.member, "sideband");
        if (m->kernel.kcore_member)
                add_ref(&v[n++], m->kernel.kcore_member, "kernel.kcore");
        if (m->kernel.kallsyms_member)
                add_ref(&v[n++], m->kernel.kallsyms_member, "kernel.kallsyms");
        if (m->kernel.modules_member)
                add_ref(&v[n++], m->kernel.modules_member, "kernel.modules");
        for (size_t i = 0; i < m->n_images; i++)
                if (m->images[i].member)
                        add_ref(&v[n++], m->images[i].member, "an image");
        for (size_t i = 0; i < m->n_images; i++)
                if (m->images[i].debug_member)
                        add_ref(&v[n++], m->images[i].debug_member, "an image's debug file");
        for (size_t i = 0; i < m->n_jit; i++)
                if (m->jit[i].member)
                        add_ref(&v[n++], m->jit[i].member, "a JIT region");
        qsort(v, n, sizeof *v, cmp_ref);
        for (size_t i = 1; i < n; i++)
                if (streq(v[i - 1].member, v[i].member))
                        return bundle_invalid(ret_error,
                                              "member \"%s\" is named twice in the manifest (by %s and by %s): "
                                              "every trace, file and image has a member of its own",
                                              v[i].member, v[i - 1].by, v[i].by);
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
                return bundle_invalid(ret_error, "format_version %" PRIu32 " is not supported",
                                      m->format_version);
        if (!m->id || !is_lower_hex(m->id, BUNDLE_ID_LEN))
                return bundle_invalid(ret_error, "id must be %d lowercase hex characters", BUNDLE_ID_LEN);
        if (!m->trigger.reason || !m->trigger.source)
                return bundle_invalid(ret_error, "trigger needs a reason and a source");
        if (m->tsc.conversion.time_shift >= 64)
                return bundle_invalid(ret_error, "tsc.time_shift %u is out of range (0..63)",
                                      (unsigned) m->tsc.conversion.time_shift);
        if (m->window.valid && (m->window.start_time > m->window.end_time || m->window.start_tsc > m->window.end_tsc))
                return bundle_invalid(ret_error, "window ends before it starts");
        if (m->trigger.details && !json_object_is_type(m->trigger.details, json_type_object))
                return bundle_invalid(ret_error, "trigger.details must be an object");
        if (m->n_cpus > BUNDLE_MAX_CPUS || m->n_images > BUNDLE_MAX_IMAGES || m->n_jit > BUNDLE_MAX_JIT ||
            m->n_members > BUNDLE_MAX_MEMBERS || m->pmu.n_caps > BUNDLE_MAX_CAPS)
                return bundle_invalid(ret_error, "too many entries");

        for (size_t i = 0; i < m->pmu.n_caps; i++)
                if (!m->pmu.caps[i].name || !*m->pmu.caps[i].name || !m->pmu.caps[i].value)
                        return bundle_invalid(ret_error, "pmu.caps[%zu] needs a name and a value", i);

        /* Members: names valid and unique, stored form consistent. Quadratic
         * in the worst case is fine at this size only with a cheap check:
         * members are few hundred in practice; BUNDLE_MAX_MEMBERS bounds it. */
        for (size_t i = 0; i < m->n_members; i++) {
                const BundleMember *mb = &m->members[i];
                if (!bundle_member_name_is_valid(mb->name) || streq(mb->name, BUNDLE_MANIFEST_NAME))
                        return bundle_invalid(ret_error, "members[%zu] has an invalid name", i);
                if (!bundle_member_name_is_valid(mb->stored_name) || streq(mb->stored_name, BUNDLE_MANIFEST_NAME))
                        return bundle_invalid(ret_error, "member \"%s\" has an invalid stored name",
                                              mb->name);
                if (mb->compression == BUNDLE_COMPRESSION_NONE) {
                        if (!streq(mb->stored_name, mb->name) || mb->stored_size != mb->size)
                                return bundle_invalid(ret_error,
                                                      "member \"%s\" is uncompressed but its stored name or size differ",
                                                      mb->name);
                } else {
                        size_t l = strlen(mb->name);
                        if (strncmp(mb->stored_name, mb->name, l) != 0 || !streq(mb->stored_name + l, ".zst"))
                                return bundle_invalid(ret_error,
                                                      "member \"%s\" is compressed but stored as \"%s\"",
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
                                return bundle_invalid(ret_error, "member name \"%s\" appears twice",
                                                      names[i]);
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
                        return bundle_invalid(ret_error, "cpus[%zu]: cpu %" PRIu32 " is out of range", i,
                                              c->cpu);
                if (cpu_seen[c->cpu / 8] & (1U << (c->cpu % 8)))
                        return bundle_invalid(ret_error, "cpu %" PRIu32 " is listed twice", c->cpu);
                cpu_seen[c->cpu / 8] |= (uint8_t) (1U << (c->cpu % 8));
                if (c->has_time && (c->first_time > c->last_time || c->first_tsc > c->last_tsc))
                        return bundle_invalid(ret_error, "cpu %" PRIu32 ": time range ends before it starts",
                                              c->cpu);
                snprintf(what, sizeof what, "cpu %" PRIu32, c->cpu);
                r = check_ref(idx, what, c->member, c->bytes, true, ret_error);
                if (r < 0)
                        return r;
                if (!c->member && c->bytes != 0)
                        return bundle_invalid(ret_error,
                                              "cpu %" PRIu32 " has %" PRIu64 " bytes but no member", c->cpu,
                                              c->bytes);
        }

        r = check_refs_unique(m, ret_error);
        if (r < 0)
                return r;
        r = check_ref(idx, "sideband", m->sideband.member, 0, false, ret_error);
        if (r < 0)
                return r;
        r = check_ref(idx, "kernel.kcore", m->kernel.kcore_member, 0, false, ret_error);
        if (r < 0)
                return r;
        if (!m->kernel.kcore_member && !m->kernel.kcore_absent_reason)
                return bundle_invalid(ret_error, "kernel: no kcore member and no reason why it is absent");
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
                        return bundle_invalid(ret_error, "images[%zu]: build-id size %zu is out of range", i,
                                              img->build_id_size);
                if (img->kind < 0 || img->kind >= _BUNDLE_IMAGE_KIND_MAX)
                        return bundle_invalid(ret_error, "images[%zu]: invalid kind", i);
                hex = img->build_id_size > 0 ? bundle_hex_encode(img->build_id, img->build_id_size)
                                             : strdup("(no build-id)");
                if (!hex)
                        return -ENOMEM;
                if (!img->paths || !img->paths[0])
                        return bundle_invalid(ret_error, "image %s has no path", hex);
                if (!!img->member == !!img->missing_reason)
                        return bundle_invalid(ret_error,
                                              "image %s needs exactly one of member and missing_reason",
                                              hex);
                if (img->member) {
                        if (asprintf(&expected, "images/%s", hex) < 0)
                                return -ENOMEM;
                        if (!streq(img->member, expected))
                                return bundle_invalid(ret_error,
                                                      "image %s must be stored as \"%s\", not \"%s\"", hex,
                                                      expected, img->member);
                        snprintf(what, sizeof what, "image %.40s", hex);
                        r = check_ref(idx, what, img->member, img->size, true, ret_error);
                        if (r < 0)
                                return r;
                }
                if (img->debug_member) {
                        expected = mfree(expected);
                        if (!img->member)
                                return bundle_invalid(ret_error, "image %s has a debug file but no image", hex);
                        if (asprintf(&expected, "debug/%s", hex) < 0)
                                return -ENOMEM;
                        if (!streq(img->debug_member, expected))
                                return bundle_invalid(ret_error,
                                                      "the debug file of image %s must be stored as \"%s\", not \"%s\"",
                                                      hex, expected, img->debug_member);
                        snprintf(what, sizeof what, "debug file %.40s", hex);
                        r = check_ref(idx, what, img->debug_member, img->debug_size, true, ret_error);
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
                                return bundle_invalid(ret_error, "image %s is listed twice", strna(hex));
                        }
        }

        for (size_t i = 0; i < m->n_jit; i++) {
                snprintf(what, sizeof what, "jit[%zu]", i);
                if (!m->jit[i].member != !!m->jit[i].missing_reason)
                        return bundle_invalid(ret_error, "%s needs a member or a missing_reason (exactly one)",
                                              what);
                if (!m->jit[i].member)
                        continue;
                r = check_ref(idx, what, m->jit[i].member, m->jit[i].len, true, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
