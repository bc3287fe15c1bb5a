/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>

#include "common/basic/buffer.h"
#include "common/basic/conf-parser.h"
#include "common/basic/parse-util.h"
#include "common/basic/string-util.h"
#include "common/perf/attr.h"
#include "common/pt/event-config.h"

void pt_event_config_done(PtEventConfig *c) {
        c->text = mfree(c->text);
}

char *pt_valid_values_string(uint64_t bitmap) {
        /* Runs of three or more values are shown as a range, shorter runs
         * value by value: the form perf prints. */
        Buffer b = BUFFER_NULL;
        char tmp[32];
        unsigned v = 0;

        while (v < 64) {
                unsigned end;

                if (!(bitmap & (1ULL << v))) {
                        v++;
                        continue;
                }
                end = v;
                while (end + 1 < 64 && (bitmap & (1ULL << (end + 1))))
                        end++;
                if (end - v >= 2)
                        snprintf(tmp, sizeof tmp, "%s%u-%u", b.size ? "," : "", v, end);
                else if (end > v)
                        snprintf(tmp, sizeof tmp, "%s%u,%u", b.size ? "," : "", v, end);
                else
                        snprintf(tmp, sizeof tmp, "%s%u", b.size ? "," : "", v);
                if (buffer_append(&b, tmp, strlen(tmp)) < 0) {
                        buffer_done(&b);
                        return NULL;
                }
                v = end + 1;
        }
        if (buffer_append(&b, "", 1) < 0) {
                buffer_done(&b);
                return NULL;
        }
        return (char *) buffer_steal(&b, NULL);
}

/* The highest set bit at or below target, else the lowest one above it:
 * how perf picks default periods from a caps bitmap. */
static int pick_bit(uint64_t bits, unsigned target) {
        int pick = -1;

        for (unsigned pos = 0; pos < 64; pos++) {
                if (!(bits & (1ULL << pos)))
                        continue;
                if (pos <= target || pick < 0)
                        pick = (int) pos;
                if (pos >= target)
                        break;
        }
        return pick;
}

static bool cap_is_zero(const Pmu *pmu, const char *cap) {
        uint64_t v;
        return pmu_get_cap_hex(pmu, cap, &v) >= 0 && v == 0;
}

static int set_term(const Pmu *pmu, uint64_t config[4], const char *name, uint64_t value) {
        const PmuFormat *f = pmu_find_format(pmu, name);

        if (!f)
                return -ENOENT;
        return pmu_format_set(f, value, config);
}

int pt_event_config_get(const Pmu *pmu, const PtEventConfig *c, const char *term, uint64_t *ret) {
        const PmuFormat *f = pmu_find_format(pmu, term);

        if (!f)
                return -ENOENT;
        *ret = pmu_format_get(f, c->config);
        return 0;
}

static int config_to_text(const Pmu *pmu, PtEventConfig *c) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        uint64_t covered[4] = {};
        bool first = true;
        char tmp[128];
        int r;

        snprintf(tmp, sizeof tmp, "%s/", pmu->name);
        r = buffer_append(&b, tmp, strlen(tmp));
        if (r < 0)
                return r;

        for (size_t i = 0; i < pmu->n_formats; i++)
                covered[pmu->formats[i].word] |= pmu_format_mask(&pmu->formats[i]);

        if ((c->config[0] & ~covered[0]) || (c->config[1] & ~covered[1]) || (c->config[2] & ~covered[2]) ||
            (c->config[3] & ~covered[3])) {
                /* Bits no format names: only the raw words describe it. */
                for (unsigned w = 0; w < 4; w++) {
                        if (w > 0 && c->config[w] == 0)
                                continue;
                        /* "%.0u" prints nothing for 0: config, config1, config2... */
                        snprintf(tmp, sizeof tmp, "%sconfig%.0u=0x%" PRIx64, first ? "" : ",", w, c->config[w]);
                        first = false;
                        r = buffer_append(&b, tmp, strlen(tmp));
                        if (r < 0)
                                return r;
                }
        } else
                for (size_t i = 0; i < pmu->n_formats; i++) {
                        const PmuFormat *f = &pmu->formats[i];
                        uint64_t v = pmu_format_get(f, c->config);

                        if (v == 0)
                                continue;
                        if (pmu_format_width(f) == 1)
                                snprintf(tmp, sizeof tmp, "%s%s", first ? "" : ",", f->name);
                        else
                                snprintf(tmp, sizeof tmp, "%s%s=%" PRIu64, first ? "" : ",", f->name, v);
                        first = false;
                        r = buffer_append(&b, tmp, strlen(tmp));
                        if (r < 0)
                                return r;
                }

        snprintf(tmp, sizeof tmp, "/%s%s", c->exclude_kernel ? "u" : "", c->exclude_user ? "k" : "");
        r = buffer_append(&b, tmp, strlen(tmp) + 1);
        if (r < 0)
                return r;

        free(c->text);
        c->text = (char *) buffer_steal(&b, NULL);
        return 0;
}

int pt_event_config_default(const Pmu *pmu, PtEventConfig *ret) {
        PtEventConfig c = {};
        uint64_t mtc = 1, mtc_periods = 0, psb_cyc = 1, psb_periods = 0;
        int r;

        r = set_term(pmu, c.config, "tsc", 1);
        if (r < 0 && r != -ENOENT)
                return r;

        /* A missing caps file means "supported", as perf reads it. */
        (void) pmu_get_cap_hex(pmu, "mtc", &mtc);
        if (mtc) {
                (void) pmu_get_cap_hex(pmu, "mtc_periods", &mtc_periods);
                if (mtc_periods) {
                        (void) set_term(pmu, c.config, "mtc", 1);
                        (void) set_term(pmu, c.config, "mtc_period", (uint64_t) pick_bit(mtc_periods, 3));
                }
        }

        (void) pmu_get_cap_hex(pmu, "psb_cyc", &psb_cyc);
        if (psb_cyc && mtc_periods) {
                (void) pmu_get_cap_hex(pmu, "psb_periods", &psb_periods);
                if (psb_periods)
                        (void) set_term(pmu, c.config, "psb_period", (uint64_t) pick_bit(psb_periods, 3));
        }

        if (pmu_find_format(pmu, "pt") && pmu_find_format(pmu, "branch")) {
                (void) set_term(pmu, c.config, "pt", 1);
                (void) set_term(pmu, c.config, "branch", 1);
        }

        r = config_to_text(pmu, &c);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

static char *valid_terms(const Pmu *pmu) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        static const char raw[] = "config, config1, config2";

        for (size_t i = 0; i < pmu->n_formats; i++)
                if (buffer_append(&b, pmu->formats[i].name, strlen(pmu->formats[i].name)) < 0 ||
                    buffer_append(&b, ", ", 2) < 0)
                        return NULL;
        if (buffer_append(&b, raw, sizeof raw) < 0)
                return NULL;
        return (char *) buffer_steal(&b, NULL);
}

/* perf's intel_pt_val_config_term(): the value of `term` must be a bit set
 * in the caps bitmap `caps` (0 always allowed); when the `supported` cap
 * reads 0 only 0 is allowed. */
static int validate_period(const Pmu *pmu, const PtEventConfig *c, const char *term, const char *caps,
                           const char *supported, char **ret_error) {
        const PmuFormat *f = pmu_find_format(pmu, term);
        uint64_t valid = 0, v, ok;

        if (!f)
                return 0;
        if (pmu_get_cap_hex(pmu, caps, &valid) < 0)
                valid = 0;
        if (supported && pmu_get_cap_hex(pmu, supported, &ok) >= 0 && ok == 0)
                valid = 0;
        valid |= 1;

        v = pmu_format_get(f, c->config);
        if (v < 64 && (valid & (1ULL << v)))
                return 0;

        _cleanup_free_ char *s = pt_valid_values_string(valid);
        *ret_error = strdup_printf("Invalid %s for %s. Valid values are: %s", term, pmu->name, strempty(s));
        return -EINVAL;
}

/* Features the kernel refuses with a bare EINVAL when the CPU lacks them;
 * say which cap says so instead. */
static const struct {
        const char *term, *cap;
} feature_caps[] = {
        { "cyc", "psb_cyc" },          { "mtc", "mtc" },       { "ptw", "ptwrite" },
        { "fup_on_ptw", "ptwrite" },   { "pwr_evt", "power_event_trace" },
        { "event", "event_trace" },    { "notnt", "tnt_disable" },
};

int pt_event_config_parse(const Pmu *pmu, const char *text, PtEventConfig *ret, char **ret_error) {
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        _cleanup_free_ char *copy = NULL;
        const char *rest;
        char *terms, *mods, *tok;
        int r;

        rest = startswith(text, pmu->name);
        if (!rest || rest[0] != '/') {
                *ret_error = strdup_printf("Invalid event '%s': expected %s/TERMS/MODIFIERS, e.g. %s/tsc,mtc/u", text,
                                           pmu->name, pmu->name);
                return -EINVAL;
        }
        copy = strdup(rest + 1);
        if (!copy)
                return -ENOMEM;
        terms = copy;
        mods = strrchr(copy, '/');
        if (!mods) {
                *ret_error = strdup_printf("Invalid event '%s': missing closing '/' after the terms (e.g. %s//u)", text,
                                           pmu->name);
                return -EINVAL;
        }
        *mods++ = 0;

        r = pt_event_config_default(pmu, &c);
        if (r < 0)
                return r;

        /* strsep, not strtok: "tsc,,mtc" has an empty term we must see. */
        if (!*terms)
                terms = NULL; /* intel_pt// */
        while ((tok = strsep(&terms, ","))) {
                char *eq = strchr(tok, '=');
                const PmuFormat *f;
                uint64_t value = 1;

                if (eq) {
                        *eq = 0;
                        if (parse_uint64(eq + 1, &value) < 0) {
                                *ret_error = strdup_printf("Invalid value '%s' for term '%s' of %s: expected a "
                                                           "non-negative decimal or 0x hex number",
                                                           eq + 1, tok, pmu->name);
                                return -EINVAL;
                        }
                }
                if (!*tok) {
                        *ret_error = strdup_printf("Invalid event '%s': empty term", text);
                        return -EINVAL;
                }

                if (streq(tok, "config") || streq(tok, "config1") || streq(tok, "config2")) {
                        if (!eq) {
                                *ret_error = strdup_printf("Term '%s' of %s needs a value, e.g. %s=0x2001", tok,
                                                           pmu->name, tok);
                                return -EINVAL;
                        }
                        c.config[tok[6] ? tok[6] - '0' : 0] = value;
                        continue;
                }

                f = pmu_find_format(pmu, tok);
                if (!f) {
                        _cleanup_free_ char *v = valid_terms(pmu);
                        *ret_error = strdup_printf("Unknown term '%s' for %s. Valid terms are: %s", tok, pmu->name,
                                                   strempty(v));
                        return -EINVAL;
                }
                if (pmu_format_set(f, value, c.config) < 0) {
                        unsigned w = pmu_format_width(f);
                        *ret_error = strdup_printf("Value %" PRIu64 " for %s does not fit in its %u bit%s (maximum %" PRIu64
                                                   ")",
                                                   value, tok, w, w == 1 ? "" : "s",
                                                   w >= 64 ? (uint64_t) UINT64_MAX : (uint64_t) ((1ULL << w) - 1));
                        return -EINVAL;
                }
        }

        bool u = false, k = false;
        for (const char *m = mods; *m; m++) {
                if (*m == 'u')
                        u = true;
                else if (*m == 'k')
                        k = true;
                else {
                        *ret_error = strdup_printf("Invalid modifier '%c' in '%s'. Valid modifiers are: u (user space "
                                                   "only), k (kernel only), uk (both, the default)",
                                                   *m, text);
                        return -EINVAL;
                }
        }
        c.exclude_kernel = u && !k;
        c.exclude_user = k && !u;

        /* As perf: pt=0 would turn off packet generation; force it on. */
        const PmuFormat *pt = pmu_find_format(pmu, "pt");
        if (pt && pmu_format_get(pt, c.config) == 0) {
                (void) pmu_format_set(pt, 1, c.config);
                c.forced_pt = true;
        }

        r = validate_period(pmu, &c, "cyc_thresh", "cycle_thresholds", "psb_cyc", ret_error);
        if (r < 0)
                return r;
        r = validate_period(pmu, &c, "mtc_period", "mtc_periods", "mtc", ret_error);
        if (r < 0)
                return r;
        r = validate_period(pmu, &c, "psb_period", "psb_periods", "psb_cyc", ret_error);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(feature_caps); i++) {
                const PmuFormat *f = pmu_find_format(pmu, feature_caps[i].term);
                if (f && pmu_format_get(f, c.config) != 0 && cap_is_zero(pmu, feature_caps[i].cap)) {
                        *ret_error = strdup_printf("%s=1 is not supported by this CPU (%s/caps/%s is 0): remove it "
                                                   "from the event",
                                                   feature_caps[i].term, pmu->name, feature_caps[i].cap);
                        return -EINVAL;
                }
        }

        r = config_to_text(pmu, &c);
        if (r < 0)
                return r;

        *ret = c;
        c = (PtEventConfig){};
        return 0;
}

void pt_event_config_to_attr(const PtEventConfig *c, uint32_t pmu_type, struct perf_event_attr *ret) {
        memset(ret, 0, sizeof(*ret));
        ret->size = sizeof(*ret);
        ret->type = pmu_type;
        ret->config = c->config[0];
        ret->config1 = c->config[1];
        ret->config2 = c->config[2];
        /* As perf record does for intel_pt: a period of 1, no frequency. */
        ret->sample_period = 1;
        ret->sample_type = PTRACED_SAMPLE_TYPE;
        ret->sample_id_all = 1;
        ret->disabled = 1;
        ret->exclude_user = c->exclude_user;
        ret->exclude_kernel = c->exclude_kernel;
}

uint64_t pt_aux_size_max(const Pmu *pmu) {
        const char *v = pmu_get_cap(pmu, "topa_multiple_entries");

        /* A PMU without the cap (older kernels print no caps/) is taken at
         * its word elsewhere: the mmap says ENOMEM if it must. */
        return v && streq(v, "0") ? PT_AUX_CHUNK_MAX : 0;
}
