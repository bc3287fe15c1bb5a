/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <inttypes.h>
#include <math.h>

#include "common/basic/parse-util.h"

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

int parse_uint64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || !*s || isspace((unsigned char) *s) || *s == '-' || *s == '+')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || end == s || *end != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_uint32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r;

        r = parse_uint64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int parse_int(const char *s, int *ret) {
        long v;
        char *end;

        if (!s || !*s || isspace((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno == ERANGE || v > INT32_MAX || v < INT32_MIN)
                return -ERANGE;
        if (errno != 0 || end == s || *end != 0)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

/* Split "12.5ms" into a non-negative decimal number and its unit. The number
 * is kept as integer part + fraction so that "0.5G" is exact. */
static int split_number_unit(const char *s, uint64_t *ret_int, uint64_t *ret_frac, uint64_t *ret_frac_div,
                             const char **ret_unit) {
        uint64_t ip = 0, fp = 0, div = 1;
        const char *p = s;
        bool digits = false;

        while (isspace((unsigned char) *p))
                p++;
        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                if (MUL_OVERFLOW(ip, 10, &ip) || ADD_OVERFLOW(ip, (uint64_t) (*p - '0'), &ip))
                        return -ERANGE;
                digits = true;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (div >= 1000000000ULL)
                                continue; /* ignore digits beyond nano precision */
                        fp = fp * 10 + (uint64_t) (*p - '0');
                        div *= 10;
                }
        }
        if (!digits)
                return -EINVAL;
        while (isspace((unsigned char) *p))
                p++;
        *ret_int = ip;
        *ret_frac = fp;
        *ret_frac_div = div;
        *ret_unit = p;
        return 0;
}

static int scale(uint64_t ip, uint64_t fp, uint64_t div, uint64_t factor, uint64_t *ret) {
        uint64_t v, f;

        if (MUL_OVERFLOW(ip, factor, &v))
                return -ERANGE;
        /* fp < div <= 1e9 and factor may be up to 2^40: compute in long double
         * to avoid overflow, the result is < factor anyway. */
        f = (uint64_t) ((long double) fp * (long double) factor / (long double) div);
        if (ADD_OVERFLOW(v, f, &v))
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } table[] = {
                { "", 1 },
                { "B", 1 },
                { "K", 1ULL << 10 },
                { "KiB", 1ULL << 10 },
                { "M", 1ULL << 20 },
                { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 },
                { "GiB", 1ULL << 30 },
                { "T", 1ULL << 40 },
                { "TiB", 1ULL << 40 },
        };
        uint64_t ip, fp, div;
        const char *unit;
        int r;

        if (!s)
                return -EINVAL;
        r = split_number_unit(s, &ip, &fp, &div, &unit);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcasecmp(unit, table[i].suffix) == 0) {
                        if (table[i].factor == 1 && fp != 0)
                                return -EINVAL; /* fractional bytes */
                        return scale(ip, fp, div, table[i].factor, ret);
                }
        return -EINVAL;
}

int parse_duration(const char *s, usec_t *ret) {
        static const struct {
                const char *suffix;
                usec_t factor;
        } table[] = {
                { "", USEC_PER_SEC },
                { "us", 1 },
                { "usec", 1 },
                { "ms", USEC_PER_MSEC },
                { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC },
                { "sec", USEC_PER_SEC },
                { "min", USEC_PER_MINUTE },
                { "m", USEC_PER_MINUTE },
                { "h", USEC_PER_HOUR },
                { "hr", USEC_PER_HOUR },
        };
        uint64_t ip, fp, div;
        const char *unit;
        int r;

        if (!s)
                return -EINVAL;
        if (streq(s, "infinity")) {
                *ret = USEC_INFINITY;
                return 0;
        }
        r = split_number_unit(s, &ip, &fp, &div, &unit);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(unit, table[i].suffix))
                        return scale(ip, fp, div, table[i].factor, ret);
        return -EINVAL;
}

int parse_cpu_list(const char *s, bool **ret, size_t *ret_n) {
        /* The kernel caps CPUs at 8192 (NR_CPUS max); anything larger is a
         * lie from a hostile or broken file. */
        const unsigned max_cpus = 8192;
        _cleanup_free_ bool *set = NULL;
        size_t n = 0;
        const char *p = s;

        if (!s)
                return -EINVAL;
        set = calloc(max_cpus, sizeof(bool));
        if (!set)
                return -ENOMEM;

        while (isspace((unsigned char) *p))
                p++;
        while (*p && *p != '\n') {
                unsigned long a, b;
                char *end;

                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                errno = 0;
                a = strtoul(p, &end, 10);
                if (errno != 0 || a >= max_cpus)
                        return -ERANGE;
                b = a;
                p = end;
                if (*p == '-') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                        b = strtoul(p, &end, 10);
                        if (errno != 0 || b >= max_cpus)
                                return -ERANGE;
                        if (b < a)
                                return -EINVAL;
                        p = end;
                }
                for (unsigned long c = a; c <= b; c++)
                        set[c] = true;
                n = MAX(n, (size_t) b + 1);
                if (*p == ',')
                        p++;
                else if (*p && *p != '\n')
                        return -EINVAL;
        }

        bool *shrunk = realloc(set, MAX(n, (size_t) 1) * sizeof(bool));
        if (shrunk)
                set = shrunk;
        *ret = TAKE_PTR(set);
        *ret_n = n;
        return 0;
}

char *format_bytes(char *buf, size_t l, uint64_t bytes) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double v = (double) bytes;
        size_t i = 0;

        while (v >= 1024.0 && i + 1 < ELEMENTSOF(units)) {
                v /= 1024.0;
                i++;
        }
        if (i == 0)
                snprintf(buf, l, "%" PRIu64 " B", bytes);
        else
                snprintf(buf, l, "%.1f %s", v, units[i]);
        return buf;
}
