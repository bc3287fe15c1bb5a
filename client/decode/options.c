/* SPDX-License-Identifier: MIT */

#include "client/decode/options.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"

static const char *const format_names[_DECODE_FORMAT_MAX] = {
        [DECODE_FORMAT_CALLS] = "calls",       [DECODE_FORMAT_BRANCHES] = "branches",
        [DECODE_FORMAT_INSN] = "insn",         [DECODE_FORMAT_PERFETTO] = "perfetto",
        [DECODE_FORMAT_FOLDED] = "folded",     [DECODE_FORMAT_JSON] = "json",
        [DECODE_FORMAT_SUMMARY] = "summary",   [DECODE_FORMAT_CHROME_JSON] = "chrome-json",
};

const char *decode_format_to_string(DecodeFormat f) {
        return f < _DECODE_FORMAT_MAX ? format_names[f] : NULL;
}

int decode_format_from_string(const char *s) {
        for (size_t i = 0; i < _DECODE_FORMAT_MAX; i++)
                if (streq(format_names[i], s))
                        return (int) i;
        return -EINVAL;
}

int decode_decoder_from_string(const char *s) {
        if (streq(s, "fast"))
                return DECODE_DECODER_FAST;
        if (streq(s, "libipt"))
                return DECODE_DECODER_LIBIPT;
        return -EINVAL;
}

static const char *const field_names[_DECODE_FIELD_MAX] = {
        [DECODE_FIELD_TIME] = "time", [DECODE_FIELD_CPU] = "cpu",     [DECODE_FIELD_PID] = "pid",
        [DECODE_FIELD_TID] = "tid",   [DECODE_FIELD_COMM] = "comm",   [DECODE_FIELD_FROM] = "from",
        [DECODE_FIELD_TO] = "to",     [DECODE_FIELD_KIND] = "kind",   [DECODE_FIELD_SYM] = "sym",
        [DECODE_FIELD_DSO] = "dso",   [DECODE_FIELD_SRCLINE] = "srcline", [DECODE_FIELD_IPC] = "ipc",
};

const char *decode_field_to_string(DecodeField f) {
        return f < _DECODE_FIELD_MAX ? field_names[f] : NULL;
}

int decode_field_from_string(const char *s) {
        for (size_t i = 0; i < _DECODE_FIELD_MAX; i++)
                if (streq(field_names[i], s))
                        return (int) i;
        return -EINVAL;
}

int decode_parse_time_spec(const char *s, DecodeTimeSpec *ret) {
        if (streq(s, "0")) {
                *ret = (DecodeTimeSpec){ .set = true, .relative = true, .ns = 0 };
                return 0;
        }
        if (s[0] == '-' || s[0] == '+') {
                /* Relative: a duration with a unit (parse_duration takes
                 * "5ms", "1.5s", "200us"...; a bare number means seconds). */
                usec_t us;
                uint64_t ns;
                const char *v = s + 1;
                size_t l = strlen(v);

                if (l > 2 && streq(v + l - 2, "ns")) {
                        _cleanup_free_ char *num = strndup(v, l - 2);
                        if (!num || parse_uint64(num, &ns) < 0)
                                return -EINVAL;
                } else {
                        if (parse_duration(v, &us) < 0)
                                return -EINVAL;
                        if (us > INT64_MAX / 1000)
                                return -ERANGE;
                        ns = us * 1000;
                }
                if (ns > INT64_MAX)
                        return -ERANGE;
                *ret = (DecodeTimeSpec){ .set = true, .relative = true, .ns = s[0] == '-' ? -(int64_t) ns : (int64_t) ns };
                return 0;
        }
        {
                /* Absolute perf time in seconds with up to 9 decimals, as perf script --time. */
                uint64_t sec = 0, frac = 0;
                int digits = 0;
                const char *p = s;

                if (!*p)
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (sec > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        sec = sec * 10 + (uint64_t) (*p - '0');
                }
                if (p == s)
                        return -EINVAL;
                if (*p == '.') {
                        for (p++; *p >= '0' && *p <= '9'; p++)
                                if (digits < 9) {
                                        frac = frac * 10 + (uint64_t) (*p - '0');
                                        digits++;
                                }
                }
                if (*p)
                        return -EINVAL;
                for (; digits < 9; digits++)
                        frac *= 10;
                if (sec > (uint64_t) INT64_MAX / NSEC_PER_SEC)
                        return -ERANGE;
                *ret = (DecodeTimeSpec){ .set = true, .relative = false, .ns = (int64_t) (sec * NSEC_PER_SEC + frac) };
                return 0;
        }
}

int decode_parse_time_range(const char *s, DecodeTimeSpec *ret_from, DecodeTimeSpec *ret_to) {
        _cleanup_free_ char *a = NULL;
        const char *comma = strchr(s, ',');
        DecodeTimeSpec from = {}, to = {};
        int r;

        if (!comma || strchr(comma + 1, ','))
                return -EINVAL;
        a = strndup(s, comma - s);
        if (!a)
                return -ENOMEM;
        if (*a) {
                r = decode_parse_time_spec(a, &from);
                if (r < 0)
                        return r;
        }
        if (comma[1]) {
                r = decode_parse_time_spec(comma + 1, &to);
                if (r < 0)
                        return r;
        }
        if (!from.set && !to.set)
                return -EINVAL;
        *ret_from = from;
        *ret_to = to;
        return 0;
}

void decode_options_done(DecodeOptions *o) {
        free(o->cpu_mask);
        free(o->pids);
        free(o->tids);
        strv_free(o->comms);
        *o = (DecodeOptions){};
}

bool decode_options_has_field(const DecodeOptions *o, DecodeField f) {
        for (size_t i = 0; i < o->n_fields; i++)
                if (o->fields[i] == f)
                        return true;
        return false;
}
