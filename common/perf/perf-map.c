/* SPDX-License-Identifier: MIT */

/* Reading perf maps (common/perf/perf-map.h). */

#include "common/perf/perf-map.h"

void perf_map_reader_init(PerfMapReader *r, const void *data, size_t size) {
        *r = (PerfMapReader){ .p = data, .end = (const char *) data + size };
}

/* A hex number as perf's hex2u64() takes it (an optional 0x, at least one
 * digit); false on none or on overflow. */
static bool hex(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        size_t n = 0;

        if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        for (; s < end; s++, n++) {
                unsigned d;

                if (*s >= '0' && *s <= '9')
                        d = (unsigned) (*s - '0');
                else if (*s >= 'a' && *s <= 'f')
                        d = (unsigned) (*s - 'a' + 10);
                else if (*s >= 'A' && *s <= 'F')
                        d = (unsigned) (*s - 'A' + 10);
                else
                        break;
                if (v >> 60)
                        return false;
                v = v << 4 | d;
        }
        if (n == 0)
                return false;
        *p = s;
        *ret = v;
        return true;
}

int perf_map_reader_next(PerfMapReader *r, PerfMapEntry *ret) {
        while (r->p < r->end) {
                const char *line = r->p, *nl = memchr(line, '\n', (size_t) (r->end - line));
                const char *eol = nl ?: r->end, *s = line, *name;
                uint64_t start, size;

                r->p = nl ? nl + 1 : r->end;
                r->line++;
                if (!hex(&s, eol, &start) || s >= eol || *s != ' ')
                        continue;
                while (s < eol && *s == ' ')
                        s++;
                if (!hex(&s, eol, &size) || s >= eol || *s != ' ')
                        continue;
                while (s < eol && *s == ' ')
                        s++;
                name = s;
                while (eol > name && (eol[-1] == '\r' || eol[-1] == ' '))
                        eol--;
                if (eol == name || size == 0 || start + size < start)
                        continue;
                *ret = (PerfMapEntry){ .start = start, .size = size, .name = name,
                                       .name_len = (size_t) (eol - name), .line = r->line };
                return 1;
        }
        return 0;
}
