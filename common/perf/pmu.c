/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/perf/pmu.h"

/* A sysfs attribute is one short line; a PMU has a few dozen of them. Bound
 * both so a hostile fixture tree cannot make us allocate without limit. */
#define PMU_ATTR_MAX 4096
#define PMU_ENTRIES_MAX 256

void pmu_format_done(PmuFormat *f) {
        f->name = mfree(f->name);
}

Pmu *pmu_free(Pmu *pmu) {
        if (!pmu)
                return NULL;
        for (size_t i = 0; i < pmu->n_formats; i++)
                pmu_format_done(&pmu->formats[i]);
        free(pmu->formats);
        for (size_t i = 0; i < pmu->n_caps; i++) {
                free(pmu->caps[i].name);
                free(pmu->caps[i].value);
        }
        free(pmu->caps);
        free(pmu->name);
        free(pmu->sysfs_root);
        free(pmu->path);
        return mfree(pmu);
}

int pmu_format_parse(const char *name, const char *text, PmuFormat *ret) {
        PmuFormat f = {};
        const char *p;

        /* "config:14-17", "config1:0", "config:0-3,8-11" */
        if ((p = startswith(text, "config:")))
                f.word = 0;
        else if ((p = startswith(text, "config1:")))
                f.word = 1;
        else if ((p = startswith(text, "config2:")))
                f.word = 2;
        else if ((p = startswith(text, "config3:")))
                f.word = 3;
        else
                return -EBADMSG;

        for (;;) {
                unsigned long lo, hi;
                char *end;

                if (!isdigit((unsigned char) *p))
                        return -EBADMSG;
                lo = strtoul(p, &end, 10);
                hi = lo;
                p = end;
                if (*p == '-') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EBADMSG;
                        hi = strtoul(p, &end, 10);
                        p = end;
                }
                if (lo > 63 || hi > 63 || hi < lo)
                        return -EBADMSG;
                if (f.n_ranges >= PMU_FORMAT_MAX_RANGES)
                        return -EBADMSG;
                f.ranges[f.n_ranges++] = (PmuFormatRange){ (uint8_t) lo, (uint8_t) hi };
                if (*p == ',') {
                        p++;
                        continue;
                }
                break;
        }
        while (*p == '\n' || *p == ' ')
                p++;
        if (*p)
                return -EBADMSG;

        f.name = strdup(name);
        if (!f.name)
                return -ENOMEM;
        *ret = f;
        return 0;
}

/* A format is a set of bits, as perf keeps it (a bitmap of
 * PERF_PMU_FORMAT_BITS in tools/perf/util/pmu.c): ranges that overlap
 * ("config:0-63,0") name their common bits once, so the width never
 * exceeds 64 and no value bit is shifted by 64 or more. */
uint64_t pmu_format_mask(const PmuFormat *f) {
        uint64_t m = 0;

        for (unsigned i = 0; i < f->n_ranges; i++)
                for (unsigned b = f->ranges[i].lo; b <= f->ranges[i].hi; b++)
                        m |= 1ULL << b;
        return m;
}

unsigned pmu_format_width(const PmuFormat *f) {
        return (unsigned) __builtin_popcountll(pmu_format_mask(f));
}

/* Values are scattered into the format's bits from the lowest value bit
 * and the lowest format bit up, as perf's pmu_format_value() walks the
 * bitmap with for_each_set_bit(). */
int pmu_format_set(const PmuFormat *f, uint64_t value, uint64_t config[4]) {
        uint64_t mask = pmu_format_mask(f);
        unsigned w = (unsigned) __builtin_popcountll(mask), vb = 0;

        if (w < 64 && (value >> w) != 0)
                return -ERANGE;
        for (unsigned b = 0; b < 64; b++) {
                if (!(mask & (1ULL << b)))
                        continue;
                if (value & (1ULL << vb++))
                        config[f->word] |= 1ULL << b;
                else
                        config[f->word] &= ~(1ULL << b);
        }
        return 0;
}

uint64_t pmu_format_get(const PmuFormat *f, const uint64_t config[4]) {
        uint64_t mask = pmu_format_mask(f), v = 0;
        unsigned vb = 0;

        for (unsigned b = 0; b < 64; b++) {
                if (!(mask & (1ULL << b)))
                        continue;
                if (config[f->word] & (1ULL << b))
                        v |= 1ULL << vb;
                vb++;
        }
        return v;
}

const PmuFormat *pmu_find_format(const Pmu *pmu, const char *name) {
        for (size_t i = 0; i < pmu->n_formats; i++)
                if (streq(pmu->formats[i].name, name))
                        return &pmu->formats[i];
        return NULL;
}

const char *pmu_get_cap(const Pmu *pmu, const char *name) {
        for (size_t i = 0; i < pmu->n_caps; i++)
                if (streq(pmu->caps[i].name, name))
                        return pmu->caps[i].value;
        return NULL;
}

int pmu_get_cap_hex(const Pmu *pmu, const char *name, uint64_t *ret) {
        const char *v = pmu_get_cap(pmu, name);
        unsigned long long x;
        char *end;

        if (!v)
                return -ENOENT;
        if (!isxdigit((unsigned char) *v))
                return -EBADMSG;
        errno = 0;
        x = strtoull(v, &end, 16);
        if (errno != 0 || *end != 0)
                return -EBADMSG;
        *ret = x;
        return 0;
}

/* One sysfs attribute: a short line. Oversized content is malformed. */
static int read_attr(int fd, const char *name, char **ret) {
        char *v;
        int r;

        r = read_full_file_at(fd, name, PMU_ATTR_MAX, &v, NULL);
        if (r == -EFBIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        v[strcspn(v, "\n")] = 0;
        *ret = v;
        return 0;
}

static int cmp_format(const void *a, const void *b) {
        return strcmp(((const PmuFormat *) a)->name, ((const PmuFormat *) b)->name);
}

static int cmp_cap(const void *a, const void *b) {
        return strcmp(((const PmuCap *) a)->name, ((const PmuCap *) b)->name);
}

/* Read every regular file of a subdirectory; the callback takes ownership of
 * nothing: it copies what it keeps. A missing directory is not an error. */
static int read_attr_dir(int pmu_fd, const char *sub, int (*cb)(Pmu *pmu, const char *name, char *value), Pmu *pmu) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;
        size_t n = 0;
        int r = 0;

        fd = openat(pmu_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);

        while ((de = readdir(d))) {
                _cleanup_free_ char *value = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (++n > PMU_ENTRIES_MAX) {
                        r = -EBADMSG;
                        break;
                }
                r = read_attr(dirfd(d), de->d_name, &value);
                if (r == -EISDIR)
                        continue;
                if (r < 0)
                        break;
                r = cb(pmu, de->d_name, value);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

static int add_format(Pmu *pmu, const char *name, char *value) {
        PmuFormat f, *a;
        int r;

        r = pmu_format_parse(name, value, &f);
        if (r < 0)
                return r;
        a = realloc(pmu->formats, sizeof(PmuFormat) * (pmu->n_formats + 1));
        if (!a) {
                pmu_format_done(&f);
                return -ENOMEM;
        }
        pmu->formats = a;
        pmu->formats[pmu->n_formats++] = f;
        return 0;
}

static int add_cap(Pmu *pmu, const char *name, char *value) {
        PmuCap *a;
        char *n, *v;

        n = strdup(name);
        v = strdup(value);
        a = realloc(pmu->caps, sizeof(PmuCap) * (pmu->n_caps + 1));
        if (!n || !v || !a) {
                free(n);
                free(v);
                if (a)
                        pmu->caps = a;
                return -ENOMEM;
        }
        pmu->caps = a;
        pmu->caps[pmu->n_caps++] = (PmuCap){ n, v };
        return 0;
}

int pmu_load(const char *sysfs_root, const char *name, Pmu **ret) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        _cleanup_free_ char *type = NULL, *filters = NULL;
        uint32_t t;
        int r;

        if (strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;

        pmu = calloc(1, sizeof(*pmu));
        if (!pmu)
                return -ENOMEM;
        pmu->nr_addr_filters = -1;
        pmu->name = strdup(name);
        pmu->sysfs_root = strdup(sysfs_root);
        if (!pmu->name || !pmu->sysfs_root ||
            asprintf(&pmu->path, "%s/bus/event_source/devices/%s", sysfs_root, name) < 0)
                return -ENOMEM;

        dirfd = open(pmu->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;

        r = read_attr(dirfd, "type", &type);
        if (r < 0)
                return r == -ENOENT ? -EBADMSG : r;
        if (parse_uint32(type, &t) < 0)
                return -EBADMSG;
        pmu->type = t;

        r = read_attr_dir(dirfd, "format", add_format, pmu);
        if (r < 0)
                return r;
        r = read_attr_dir(dirfd, "caps", add_cap, pmu);
        if (r < 0)
                return r;

        r = read_attr(dirfd, "nr_addr_filters", &filters);
        if (r >= 0) {
                int n;
                if (parse_int(filters, &n) < 0 || n < 0)
                        return -EBADMSG;
                pmu->nr_addr_filters = n;
        } else if (r != -ENOENT)
                return r;

        /* Stable order for messages and tests, whatever readdir() gives. */
        if (pmu->n_formats > 1)
                qsort(pmu->formats, pmu->n_formats, sizeof(PmuFormat), cmp_format);
        if (pmu->n_caps > 1)
                qsort(pmu->caps, pmu->n_caps, sizeof(PmuCap), cmp_cap);

        *ret = TAKE_PTR(pmu);
        return 0;
}
