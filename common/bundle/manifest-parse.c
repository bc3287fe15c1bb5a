/* SPDX-License-Identifier: MIT */

/*
 * manifest.json in: a validating parser for untrusted input. Every key is
 * type-checked, every number range-checked, every string and array bounded
 * before it is copied, and the json-c tokener runs with a depth limit;
 * the cross-field checks of manifest-validate.c run last.
 */

#include <inttypes.h>
#include <json-c/json.h>

#include "common/basic/json-util.h"
#include "common/bundle/internal.h"
#include "common/bundle/manifest.h"

typedef struct json_object JsonObject;

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
                        return bundle_invalid(p->ret_error, "manifest: %s%s%s is missing", ctx,
                                              *ctx ? "." : "", key);
                return 0;
        }
        if (!json_object_is_type(v, type))
                return bundle_invalid(p->ret_error, "manifest: %s%s%s must be %s", ctx, *ctx ? "." : "", key,
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
                return bundle_invalid(p->ret_error, "manifest: %s%s%s must not be negative", ctx,
                                      *ctx ? "." : "", key);
        x = json_object_get_uint64(v);
        if (x > max)
                return bundle_invalid(p->ret_error,
                                      "manifest: %s%s%s = %" PRIu64 " is out of range (max %" PRIu64 ")",
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
                return bundle_invalid(p->ret_error, "manifest: %s%s%s is longer than %u bytes", ctx,
                                      *ctx ? "." : "", key, BUNDLE_MAX_STRING);
        if (strlen(s) != (size_t) l)
                return bundle_invalid(p->ret_error, "manifest: %s%s%s contains a NUL character", ctx,
                                      *ctx ? "." : "", key);
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

        /* Only digits after the "0x": strtoull alone would also take
         * blanks, a sign or a second "0x". 16 digits always fit. */
        if (!h || !*h || strlen(h) > 16 || h[strspn(h, "0123456789abcdefABCDEF")] != 0)
                return bundle_invalid(p->ret_error, "manifest: %s.%s must be a hex string like \"0x1f\"",
                                      ctx, key);
        *ret = strtoull(h, NULL, 16);
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
                return set_error_message(-E2BIG, p->ret_error,
                                         "manifest: %s%s%s has %zu entries, more than the limit of %zu", ctx,
                                         *ctx ? "." : "", key, *ret_n, max);
        return 1;
}

static int parse_host(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o;

        TRY(get(p, root, "", "host", json_type_object, false, &o));
        if (o) {
                TRY(get_str(p, o, "host", "hostname", false, &m->host.hostname));
                TRY(get_str(p, o, "host", "kernel_release", false, &m->host.kernel_release));
                TRY(get_str(p, o, "host", "kernel_version", false, &m->host.kernel_version));
                TRY(get_str(p, o, "host", "machine", false, &m->host.machine));
                TRY(get_str(p, o, "host", "boot_id", false, &m->host.boot_id));
                TRY(get_str(p, o, "host", "machine_id", false, &m->host.machine_id));
        }
        TRY(get(p, root, "", "cpu", json_type_object, false, &o));
        if (o) {
                TRY(get_str(p, o, "cpu", "vendor", false, &m->cpuid.vendor));
                TRY(get_u32(p, o, "cpu", "family", false, &m->cpuid.family));
                TRY(get_u32(p, o, "cpu", "model", false, &m->cpuid.model));
                TRY(get_u32(p, o, "cpu", "stepping", false, &m->cpuid.stepping));
        }
        return 0;
}

static int parse_pmu_tsc(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o, *a, *caps;
        size_t n;
        uint64_t x;

        TRY(get(p, root, "", "pmu", json_type_object, false, &o));
        if (o) {
                TRY(get_str(p, o, "pmu", "name", false, &m->pmu.name));
                TRY(get_u32(p, o, "pmu", "type", false, &m->pmu.type));
                TRY(get_str(p, o, "pmu", "config_text", false, &m->pmu.config_text));
                TRY(get_str(p, o, "pmu", "addr_filter", false, &m->pmu.addr_filter));
                TRY(get_array(p, o, "pmu", "config", false, ELEMENTSOF(m->pmu.config), &a, &n));
                for (size_t i = 0; i < n; i++) {
                        JsonObject *v = json_object_array_get_idx(a, i);
                        const char *s = NULL;
                        if (!json_object_is_type(v, json_type_string))
                                return bundle_invalid(p->ret_error,
                                                      "manifest: pmu.config must hold hex strings");
                        TRY(check_string(p, v, "pmu", "config", &s));
                        TRY(parse_hex_u64(p, s, "pmu", "config", &m->pmu.config[i]));
                }
                TRY(get(p, o, "pmu", "caps", json_type_object, false, &caps));
                if (caps) {
                        if ((size_t) json_object_object_length(caps) > BUNDLE_MAX_CAPS)
                                return set_error_message(-E2BIG, p->ret_error,
                                                         "manifest: pmu.caps has more than %u entries",
                                                         BUNDLE_MAX_CAPS);
                        json_object_object_foreach(caps, key, val) {
                                const char *s = NULL;
                                if (!json_object_is_type(val, json_type_string))
                                        return bundle_invalid(p->ret_error,
                                                              "manifest: pmu.caps.%.64s must be a string",
                                                              key);
                                TRY(check_string(p, val, "pmu.caps", key, &s));
                                if (!*key || strlen(key) > BUNDLE_MAX_STRING)
                                        return bundle_invalid(p->ret_error,
                                                              "manifest: pmu.caps has an invalid name");
                                TRY(bundle_manifest_add_cap(m, key, s));
                        }
                }
        }

        TRY(get(p, root, "", "tsc", json_type_object, false, &o));
        if (o) {
                PerfTscConversion *c = &m->tsc.conversion;
                TRY(get_u64(p, o, "tsc", "time_zero", false, UINT64_MAX, &c->time_zero));
                TRY(get_u32(p, o, "tsc", "time_mult", false, &c->time_mult));
                x = 0;
                TRY(get_u64(p, o, "tsc", "time_shift", false, 63, &x));
                c->time_shift = (uint16_t) x;
                TRY(get_bool(p, o, "tsc", "cap_user_time_zero", false, &c->cap_user_time_zero));
                TRY(get_bool(p, o, "tsc", "cap_user_time_short", false, &c->cap_user_time_short));
                TRY(get_u64(p, o, "tsc", "time_cycles", false, UINT64_MAX, &c->time_cycles));
                TRY(get_u64(p, o, "tsc", "time_mask", false, UINT64_MAX, &c->time_mask));
                TRY(get_u32(p, o, "tsc", "cpuid_15_eax", false, &m->tsc.cpuid_15_eax));
                TRY(get_u32(p, o, "tsc", "cpuid_15_ebx", false, &m->tsc.cpuid_15_ebx));
                TRY(get_u32(p, o, "tsc", "cpuid_15_ecx", false, &m->tsc.cpuid_15_ecx));
                TRY(get_u32(p, o, "tsc", "nominal_freq", false, &m->tsc.nominal_freq));
                TRY(get_u32(p, o, "tsc", "mtc_freq", false, &m->tsc.mtc_freq));
                TRY(get_u64(p, o, "tsc", "tsc_hz", false, UINT64_MAX, &m->tsc.tsc_hz));
                {
                        _cleanup_free_ char *src = NULL;
                        TRY(get_str(p, o, "tsc", "tsc_hz_source", false, &src));
                        m->tsc.tsc_hz_source = bundle_tsc_hz_source_from_string(src);
                }
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

        TRY(get(p, root, "", "trigger", json_type_object, true, &o));
        TRY(get_str(p, o, "trigger", "reason", true, &t->reason));
        TRY(get_str(p, o, "trigger", "source", true, &t->source));
        TRY(get(p, o, "trigger", "requester", json_type_object, false, &req));
        if (req) {
                t->has_requester = true;
                TRY(get_u32(p, req, "trigger.requester", "pid", true, &t->requester_pid));
                TRY(get_u32(p, req, "trigger.requester", "uid", true, &t->requester_uid));
                TRY(get_str(p, req, "trigger.requester", "comm", false, &t->requester_comm));
        }
        TRY(get_u64(p, o, "trigger", "perf_time", false, UINT64_MAX, &t->perf_time));
        TRY(get_u64(p, o, "trigger", "realtime_usec", false, UINT64_MAX, &t->realtime_usec));
        TRY(get_u64(p, o, "trigger", "monotonic_ns", false, UINT64_MAX, &t->monotonic_ns));
        TRY(get(p, o, "trigger", "details", json_type_object, false, &details));
        if (details) {
                if (json_depth(details, BUNDLE_MAX_DETAILS_DEPTH) > BUNDLE_MAX_DETAILS_DEPTH)
                        return bundle_invalid(p->ret_error,
                                              "manifest: trigger.details is nested deeper than %d levels",
                                              BUNDLE_MAX_DETAILS_DEPTH);
                t->details = json_object_get(details);
        }
        return 0;
}

static int parse_cpus(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a, *w;
        size_t n;

        TRY(get_array(p, root, "", "cpus", true, BUNDLE_MAX_CPUS, &a, &n));
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
                        return bundle_invalid(p->ret_error, "manifest: %s must be an object", ctx);
                TRY(get_u32(p, o, ctx, "cpu", true, &c->cpu));
                TRY(get_str(p, o, ctx, "member", false, &c->member));
                TRY(get_u64(p, o, ctx, "bytes", false, UINT64_MAX, &c->bytes));
                TRY(get_u64(p, o, ctx, "buffer_size", false, UINT64_MAX, &c->buffer_size));
                TRY(get_bool(p, o, ctx, "wrapped", false, &c->wrapped));
                TRY(get_bool(p, o, ctx, "truncated", false, &c->truncated));
                TRY(get_bool(p, o, ctx, "partial", false, &c->partial));
                TRY(get_bool(p, o, ctx, "collision", false, &c->collision));
                TRY(get_bool(p, o, ctx, "lost", false, &c->lost));
                TRY(has[0] = get_u64(p, o, ctx, "first_tsc", false, UINT64_MAX, &c->first_tsc));
                TRY(has[1] = get_u64(p, o, ctx, "last_tsc", false, UINT64_MAX, &c->last_tsc));
                TRY(has[2] = get_u64(p, o, ctx, "first_time", false, UINT64_MAX, &c->first_time));
                TRY(has[3] = get_u64(p, o, ctx, "last_time", false, UINT64_MAX, &c->last_time));
                if (has[0] != has[1] || has[0] != has[2] || has[0] != has[3])
                        return bundle_invalid(p->ret_error,
                                              "manifest: %s needs all or none of first/last tsc/time", ctx);
                c->has_time = has[0] > 0;
                TRY(get_u64(p, o, ctx, "blackout_ns", false, UINT64_MAX, &c->blackout_ns));
                TRY(get_u32(p, o, ctx, "restarts", false, &c->restarts));
                TRY(get_u64(p, o, ctx, "restarted_time", false, UINT64_MAX, &c->restarted_time));
                TRY(get_str(p, o, ctx, "error", false, &c->error));
        }

        TRY(get(p, root, "", "window", json_type_object, false, &w));
        if (w) {
                m->window.valid = true;
                TRY(get_u64(p, w, "window", "start_time", true, UINT64_MAX, &m->window.start_time));
                TRY(get_u64(p, w, "window", "end_time", true, UINT64_MAX, &m->window.end_time));
                TRY(get_u64(p, w, "window", "start_tsc", true, UINT64_MAX, &m->window.start_tsc));
                TRY(get_u64(p, w, "window", "end_tsc", true, UINT64_MAX, &m->window.end_tsc));
        }
        TRY(get_u64(p, root, "", "lookback_ns", false, UINT64_MAX, &m->lookback_ns));
        return 0;
}

static int parse_sideband_kernel(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *o;

        TRY(get(p, root, "", "sideband", json_type_object, false, &o));
        if (o) {
                TRY(get_str(p, o, "sideband", "member", false, &m->sideband.member));
                TRY(get_hex_u64(p, o, "sideband", "sample_type", false, &m->sideband.sample_type));
                TRY(get_bool(p, o, "sideband", "sample_id_all", false, &m->sideband.sample_id_all));
                TRY(get_u64(p, o, "sideband", "records", false, UINT64_MAX, &m->sideband.n_records));
                TRY(get_u64(p, o, "sideband", "lost", false, UINT64_MAX, &m->sideband.n_lost));
                TRY(get_u64(p, o, "sideband", "dropped_until", false, UINT64_MAX, &m->sideband.dropped_until));
        }
        TRY(get(p, root, "", "kernel", json_type_object, true, &o));
        TRY(get_str(p, o, "kernel", "kcore_member", false, &m->kernel.kcore_member));
        TRY(get_str(p, o, "kernel", "kcore_absent_reason", false, &m->kernel.kcore_absent_reason));
        TRY(get_str(p, o, "kernel", "kallsyms_member", false, &m->kernel.kallsyms_member));
        TRY(get_str(p, o, "kernel", "modules_member", false, &m->kernel.modules_member));
        TRY(get_hex_u64(p, o, "kernel", "text_start", false, &m->kernel.text_start));
        TRY(get_hex_u64(p, o, "kernel", "text_end", false, &m->kernel.text_end));
        TRY(get_hex_u64(p, o, "kernel", "modules_start", false, &m->kernel.modules_start));
        TRY(get_hex_u64(p, o, "kernel", "modules_end", false, &m->kernel.modules_end));
        return 0;
}

static int parse_images(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a;
        size_t n;

        TRY(get_array(p, root, "", "images", false, BUNDLE_MAX_IMAGES, &a, &n));
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
                        return bundle_invalid(p->ret_error, "manifest: %s must be an object", ctx);
                TRY(get_str(p, o, ctx, "kind", true, &kind));
                r = bundle_image_kind_from_string(kind);
                if (r < 0)
                        return bundle_invalid(p->ret_error, "manifest: %s.kind \"%s\" is unknown", ctx,
                                              kind);
                img->kind = r;
                TRY(get_str(p, o, ctx, "build_id", true, &hex));
                r = bundle_hex_decode(hex, img->build_id, sizeof img->build_id, &img->build_id_size);
                if (r < 0)
                        return bundle_invalid(p->ret_error,
                                              "manifest: %s.build_id must be up to 40 hex characters", ctx);
                TRY(get_array(p, o, ctx, "paths", true, BUNDLE_MAX_IMAGE_PATHS, &paths, &n_paths));
                for (size_t j = 0; j < n_paths; j++) {
                        JsonObject *v = json_object_array_get_idx(paths, j);
                        const char *s = NULL;
                        if (!json_object_is_type(v, json_type_string))
                                return bundle_invalid(p->ret_error, "manifest: %s.paths must hold strings",
                                                      ctx);
                        TRY(check_string(p, v, ctx, "paths", &s));
                        TRY(bundle_image_add_path(img, s));
                }
                TRY(get_str(p, o, ctx, "member", false, &img->member));
                TRY(get_u64(p, o, ctx, "size", false, UINT64_MAX, &img->size));
                TRY(get_str(p, o, ctx, "missing_reason", false, &img->missing_reason));
                TRY(get_str(p, o, ctx, "debug_member", false, &img->debug_member));
                TRY(get_u64(p, o, ctx, "debug_size", false, UINT64_MAX, &img->debug_size));
        }

        TRY(get_array(p, root, "", "jit", false, BUNDLE_MAX_JIT, &a, &n));
        m->jit = calloc(n ?: 1, sizeof *m->jit);
        if (!m->jit)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JsonObject *o = json_object_array_get_idx(a, i);
                BundleJit *j = &m->jit[m->n_jit++];
                char ctx[32];

                snprintf(ctx, sizeof ctx, "jit[%zu]", i);
                if (!json_object_is_type(o, json_type_object))
                        return bundle_invalid(p->ret_error, "manifest: %s must be an object", ctx);
                _cleanup_free_ char *kind = NULL;

                TRY(get_str(p, o, ctx, "kind", false, &kind));
                if (kind) { /* absent in bundles from before JIT capture: memory */
                        int r = bundle_jit_kind_from_string(kind);
                        if (r < 0)
                                return bundle_invalid(p->ret_error,
                                                      "manifest: %s.kind \"%s\" is not one of memory, perf-map, jitdump",
                                                      ctx, kind);
                        j->kind = (BundleJitKind) r;
                }
                TRY(get_u32(p, o, ctx, "pid", true, &j->pid));
                TRY(get_hex_u64(p, o, ctx, "addr", true, &j->addr));
                TRY(get_u64(p, o, ctx, "len", true, UINT64_MAX, &j->len));
                TRY(get_str(p, o, ctx, "path", false, &j->path));
                TRY(get_str(p, o, ctx, "member", false, &j->member));
                TRY(get_u64(p, o, ctx, "read_time", false, UINT64_MAX, &j->read_time));
                TRY(get_str(p, o, ctx, "missing_reason", false, &j->missing_reason));
        }
        return 0;
}

static int parse_members(Parse *p, JsonObject *root, BundleManifest *m) {
        JsonObject *a;
        size_t n;

        TRY(get_array(p, root, "", "members", true, BUNDLE_MAX_MEMBERS, &a, &n));
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
                        return bundle_invalid(p->ret_error, "manifest: %s must be an object", ctx);
                TRY(get_str(p, o, ctx, "name", true, &mb->name));
                TRY(get_str(p, o, ctx, "stored_name", true, &mb->stored_name));
                TRY(get_u64(p, o, ctx, "size", true, UINT64_MAX, &mb->size));
                TRY(get_u64(p, o, ctx, "stored_size", true, UINT64_MAX, &mb->stored_size));
                TRY(get_str(p, o, ctx, "compression", true, &compression));
                r = bundle_compression_from_string(compression);
                if (r < 0)
                        return bundle_invalid(p->ret_error, "manifest: %s.compression \"%s\" is unknown",
                                              ctx, compression);
                mb->compression = r;
                TRY(get_str(p, o, ctx, "sha256", true, &hash));
                r = bundle_hex_decode(hash, mb->sha256, sizeof mb->sha256, &hash_len);
                if (r < 0 || hash_len != sizeof mb->sha256)
                        return bundle_invalid(p->ret_error, "manifest: %s.sha256 must be 64 hex characters",
                                              ctx);
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
                return set_error_message(-E2BIG, ret_error, "manifest is %zu bytes, over the limit of %u",
                                         size, BUNDLE_MANIFEST_MAX_SIZE);
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
                        return bundle_invalid(ret_error, "manifest: JSON ends early (%zu bytes)", size);
                return bundle_invalid(ret_error, "manifest: invalid JSON at byte %zu: %s", off,
                                      json_tokener_error_desc(e));
        }
        consumed = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        for (size_t i = consumed; i < size; i++)
                if (!strchr(" \t\r\n", json[i]))
                        return bundle_invalid(ret_error,
                                              "manifest: garbage after the JSON object at byte %zu", i);
        if (!json_object_is_type(root, json_type_object))
                return bundle_invalid(ret_error, "manifest: the top level must be an object");

        r = get_str(&p, root, "", "format", true, &format);
        if (r < 0)
                return r;
        if (!streq(format, "ptraced-bundle"))
                return bundle_invalid(ret_error, "manifest: format is \"%.64s\", not \"ptraced-bundle\"",
                                      format);
        r = get_u64(&p, root, "", "format_version", true, UINT64_MAX, &version);
        if (r < 0)
                return r;
        if (version > BUNDLE_FORMAT_VERSION) {
                return set_error_message(-EPROTONOSUPPORT, ret_error,
                                         "bundle format version %" PRIu64
                                         " is newer than this program supports (%u); "
                                         "a newer ptctl is needed to read it",
                                         version, BUNDLE_FORMAT_VERSION);
        }
        if (version < 1)
                return bundle_invalid(ret_error, "manifest: format_version 0 is invalid");

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->format_version = (uint32_t) version;
        r = get_str(&p, root, "", "id", true, &m->id);
        if (r < 0)
                return r;
        TRY(get_str(&p, root, "", "generator", false, &m->generator));
        TRY(get_u64(&p, root, "", "created_realtime_usec", false, UINT64_MAX, &m->created_realtime_usec));
        TRY(get_bool(&p, root, "", "simulated", true, &m->simulated));
        TRY(parse_host(&p, root, m));
        TRY(parse_pmu_tsc(&p, root, m));
        TRY(parse_trigger(&p, root, m));
        TRY(parse_cpus(&p, root, m));
        TRY(parse_sideband_kernel(&p, root, m));
        TRY(parse_images(&p, root, m));
        TRY(parse_members(&p, root, m));

        r = bundle_manifest_validate(m, /* check_members= */ true, ret_error);
        if (r < 0) {
                if (r == -EBADMSG && ret_error && *ret_error) {
                        _cleanup_free_ char *msg = TAKE_PTR(*ret_error);
                        return bundle_invalid(ret_error, "manifest: %s", msg);
                }
                return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

