/* SPDX-License-Identifier: MIT */

/*
 * manifest.json out: the manifest as pretty JSON, every key documented in
 * ptraced-bundle(5). It validates first, so whatever the daemon writes the
 * parser (manifest-parse.c) reads back.
 */

#include <inttypes.h>
#include <json-c/json.h>

#include "common/basic/json-util.h"
#include "common/bundle/internal.h"
#include "common/bundle/manifest.h"

typedef struct json_object JsonObject;

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
        TRY(add_str(pmu, "addr_filter", m->pmu.addr_filter));
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
        TRY(json_add_uint64(tsc, "cpuid_15_ecx", m->tsc.cpuid_15_ecx));
        TRY(json_add_uint64(tsc, "nominal_freq", m->tsc.nominal_freq));
        TRY(json_add_uint64(tsc, "mtc_freq", m->tsc.mtc_freq));
        TRY(json_add_uint64(tsc, "tsc_hz", m->tsc.tsc_hz));
        TRY(add_str(tsc, "tsc_hz_source", bundle_tsc_hz_source_to_string(m->tsc.tsc_hz_source)));
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
        TRY(json_add_uint64(trigger, "monotonic_ns", t->monotonic_ns));
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
                TRY(json_add_bool(o, "partial", c->partial));
                TRY(json_add_bool(o, "collision", c->collision));
                TRY(json_add_bool(o, "lost", c->lost));
                if (c->has_time) {
                        TRY(json_add_uint64(o, "first_tsc", c->first_tsc));
                        TRY(json_add_uint64(o, "last_tsc", c->last_tsc));
                        TRY(json_add_uint64(o, "first_time", c->first_time));
                        TRY(json_add_uint64(o, "last_time", c->last_time));
                }
                TRY(json_add_uint64(o, "blackout_ns", c->blackout_ns));
                if (c->restarts > 0) {
                        TRY(json_add_uint64(o, "restarts", c->restarts));
                        if (c->restarted_time > 0)
                                TRY(json_add_uint64(o, "restarted_time", c->restarted_time));
                }
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
        if (m->sideband.dropped_until > 0) /* absent: nothing dropped (older readers) */
                TRY(json_add_uint64(sb, "dropped_until", m->sideband.dropped_until));
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
                if (img->debug_member) {
                        TRY(add_str(o, "debug_member", img->debug_member));
                        TRY(json_add_uint64(o, "debug_size", img->debug_size));
                }
                TRY(attach_item(images, &o));
        }
        TRY(attach(root, "images", &images));

        for (size_t i = 0; i < m->n_jit; i++) {
                const BundleJit *j = &m->jit[i];
                NEW_OBJECT(o);
                TRY(add_str(o, "kind", bundle_jit_kind_to_string(j->kind)));
                TRY(json_add_uint64(o, "pid", j->pid));
                TRY(add_hex_u64(o, "addr", j->addr));
                TRY(json_add_uint64(o, "len", j->len));
                TRY(add_str(o, "path", j->path));
                TRY(add_str(o, "member", j->member));
                /* Every JIT entry is read at dump time, not when the trace
                 * ran: said in so many words for whoever reads the JSON. */
                TRY(add_str(o, "captured", "dump-time"));
                TRY(json_add_uint64(o, "read_time", j->read_time));
                TRY(add_str(o, "missing_reason", j->missing_reason));
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
                return set_error_message(-E2BIG, ret_error,
                                         "manifest would be %zu bytes, over the limit of %u", l,
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
