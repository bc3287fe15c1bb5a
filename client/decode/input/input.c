/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "client/decode/input/input.h"
#include "client/decode/util.h"
#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/basic/strv.h"

int decode_input_new(const char *description, DecodeInput **ret) {
        DecodeInput *in;

        in = calloc(1, sizeof(*in));
        if (!in)
                return -ENOMEM;
        in->description = strdup(description ?: "input");
        if (!in->description) {
                free(in);
                return -ENOMEM;
        }
        *ret = in;
        return 0;
}

DecodeTraced decode_traced_from_config(const char *config_text) {
        const char *slash = config_text ? strrchr(config_text, '/') : NULL;
        bool u, k;

        if (!slash)
                return DECODE_TRACED_UNKNOWN;
        u = strchr(slash + 1, 'u');
        k = strchr(slash + 1, 'k');
        if (u && !k)
                return DECODE_TRACED_USER;
        if (k && !u)
                return DECODE_TRACED_KERNEL;
        return DECODE_TRACED_BOTH;
}

void decode_image_done(DecodeImage *img) {
        if (!img)
                return;
        free(img->path);
        free(img->name);
        free(img->symbol);
        strv_free(img->match_paths);
        free(img->debug_path);
        safe_close(img->fd);
        *img = (DecodeImage){ .fd = -EBADF };
}

DecodeInput *decode_input_free(DecodeInput *in) {
        if (!in)
                return NULL;

        DECODE_FOREACH(c, in->cpus, in->n_cpus) {
                if (c->map)
                        (void) munmap(c->map, c->map_size);
                free(c->heap);
                free(c->name);
        }
        free(in->cpus);
        DECODE_FOREACH(s, in->sidebands, in->n_sidebands) {
                if (s->map)
                        (void) munmap(s->map, s->map_size);
                free(s->heap);
                free(s->name);
        }
        free(in->sidebands);
        DECODE_FOREACH(i, in->images, in->n_images)
                decode_image_done(i);
        free(in->images);
        DECODE_FOREACH(m, in->missing, in->n_missing) {
                strv_free(m->paths);
                free(m->reason);
        }
        free(in->missing);
        DECODE_FOREACH(j, in->jit_symbols, in->n_jit_symbols)
                free(j->name);
        free(in->jit_symbols);
        DECODE_FOREACH(j, in->missing_jit, in->n_missing_jit) {
                free(j->what);
                free(j->reason);
        }
        free(in->missing_jit);
        for (size_t i = 0; i < in->n_addr_filters; i++)
                free(in->addr_filters[i].file);
        free(in->kallsyms);
        free(in->kernel_absent_reason);
        strv_free(in->notes);
        for (size_t i = 0; i < in->n_held_fds; i++)
                safe_close(in->held_fds[i]);
        free(in->held_fds);
        strv_free(in->errors);
        free(in->description);
        return mfree(in);
}

/* Map size bytes of fd read-only; an empty file gives a NULL map of size 0. */
static int map_fd(int fd, off_t size, void **ret_map, size_t *ret_size) {
        void *p;

        if (size == 0) {
                *ret_map = NULL;
                *ret_size = 0;
                return 0;
        }
        p = mmap(NULL, (size_t) size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
                return negative_errno();
        *ret_map = p;
        *ret_size = (size_t) size;
        return 0;
}

/* Map a whole file read-only; an empty file gives a NULL map of size 0. */
static int map_file(const char *path, uint64_t max, void **ret_map, size_t *ret_size, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                int r = negative_errno();
                if (asprintf(ret_error, "cannot open %s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode)) {
                if (asprintf(ret_error, "%s is not a regular file", path) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if ((uint64_t) st.st_size > max) {
                if (asprintf(ret_error, "%s is too large (%llu bytes, limit %llu)", path,
                             (unsigned long long) st.st_size, (unsigned long long) max) < 0)
                        *ret_error = NULL;
                return -EFBIG;
        }
        return map_fd(fd, st.st_size, ret_map, ret_size);
}

static int cpu_cmp(const void *a, const void *b) {
        const DecodeCpuTrace *x = a, *y = b;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static DecodeCpuTrace *add_cpu_slot(DecodeInput *in, uint32_t cpu, const char *name, int *ret_r) {
        DecodeCpuTrace *n, *c;

        if (decode_input_find_cpu(in, cpu)) {
                *ret_r = -EEXIST;
                return NULL;
        }
        if (in->n_cpus >= DECODE_MAX_CPUS || cpu >= DECODE_MAX_CPUS) {
                *ret_r = -E2BIG;
                return NULL;
        }
        n = reallocarray(in->cpus, in->n_cpus + 1, sizeof(*n));
        if (!n) {
                *ret_r = -ENOMEM;
                return NULL;
        }
        in->cpus = n;
        c = &in->cpus[in->n_cpus];
        *c = (DecodeCpuTrace){ .cpu = cpu };
        c->name = strdup(name);
        if (!c->name) {
                *ret_r = -ENOMEM;
                return NULL;
        }
        in->n_cpus++;
        *ret_r = 0;
        return c;
}

static void sort_cpus(DecodeInput *in) {
        qsort(in->cpus, in->n_cpus, sizeof(*in->cpus), cpu_cmp);
}

static int add_cpu_map(DecodeInput *in, uint32_t cpu, const char *name, void *map, size_t size,
                       char **ret_error) {
        DecodeCpuTrace *c;
        int r;

        c = add_cpu_slot(in, cpu, name, &r);
        if (!c) {
                if (map)
                        (void) munmap(map, size);
                if (r == -EEXIST && asprintf(ret_error, "CPU %u has two traces", cpu) < 0)
                        *ret_error = NULL;
                return r;
        }
        c->data = map;
        c->size = size;
        c->map = map;
        c->map_size = size;
        c->reclaimable = true;
        sort_cpus(in);
        return 0;
}

int decode_input_add_cpu_file(DecodeInput *in, uint32_t cpu, const char *path, char **ret_error) {
        void *map = NULL;
        size_t size = 0;
        int r;

        r = map_file(path, DECODE_MAX_TRACE_SIZE, &map, &size, ret_error);
        if (r < 0)
                return r;
        return add_cpu_map(in, cpu, path, map, size, ret_error);
}

int decode_input_add_cpu_fd(DecodeInput *in, uint32_t cpu, const char *name, int fd, char **ret_error) {
        void *map = NULL;
        size_t size = 0;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if ((uint64_t) st.st_size > DECODE_MAX_TRACE_SIZE)
                return -EFBIG;
        r = map_fd(fd, st.st_size, &map, &size);
        if (r < 0)
                return r;
        return add_cpu_map(in, cpu, name, map, size, ret_error);
}

void decode_trace_release(const uint8_t *data, bool reclaimable, uint64_t begin, uint64_t end) {
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE), from, to;

        if (!reclaimable || !data || end <= begin)
                return;
        /* The pages at the ends too, else they would pile up segment
         * after segment: a neighbouring segment still reading one faults
         * it back in, nothing more. The mapping ends on a page bound. */
        from = ((uintptr_t) data + begin) & ~(page - 1);
        to = ((uintptr_t) data + end + page - 1) & ~(page - 1);
        if (from < to)
                (void) madvise((void *) from, to - from, MADV_DONTNEED);
}

int decode_input_add_cpu_data(DecodeInput *in, uint32_t cpu, const char *name, void *data, size_t size,
                              bool heap) {
        DecodeCpuTrace *c;
        int r;

        if (size > DECODE_MAX_TRACE_SIZE)
                return -EFBIG;
        c = add_cpu_slot(in, cpu, name, &r);
        if (!c)
                return r;
        c->data = data;
        c->size = size;
        if (heap)
                c->heap = data;
        sort_cpus(in);
        return 0;
}

static DecodeSideband *add_sideband_slot(DecodeInput *in, const char *name) {
        DecodeSideband *n;

        n = reallocarray(in->sidebands, in->n_sidebands + 1, sizeof(*n));
        if (!n)
                return NULL;
        in->sidebands = n;
        n = &in->sidebands[in->n_sidebands];
        *n = (DecodeSideband){};
        n->name = strdup(name);
        if (!n->name)
                return NULL;
        in->n_sidebands++;
        return n;
}

int decode_input_add_sideband_file(DecodeInput *in, const char *path, uint64_t sample_type, bool sample_id_all,
                                   char **ret_error) {
        DecodeSideband *s;
        void *map = NULL;
        size_t size = 0;
        int r;

        r = map_file(path, DECODE_MAX_SIDEBAND_SIZE, &map, &size, ret_error);
        if (r < 0)
                return r;
        s = add_sideband_slot(in, path);
        if (!s) {
                if (map)
                        (void) munmap(map, size);
                return -ENOMEM;
        }
        s->data = map;
        s->size = size;
        s->map = map;
        s->map_size = size;
        s->sample_type = sample_type;
        s->sample_id_all = sample_id_all;
        return 0;
}

int decode_input_add_sideband_data(DecodeInput *in, const char *name, void *data, size_t size, bool heap,
                                   uint64_t sample_type, bool sample_id_all) {
        DecodeSideband *s;

        if (size > DECODE_MAX_SIDEBAND_SIZE)
                return -EFBIG;
        s = add_sideband_slot(in, name);
        if (!s)
                return -ENOMEM;
        s->data = data;
        s->size = size;
        if (heap)
                s->heap = data;
        s->sample_type = sample_type;
        s->sample_id_all = sample_id_all;
        return 0;
}

int decode_input_add_image(DecodeInput *in, DecodeImage *img) {
        DecodeImage *n;

        if (in->n_images >= DECODE_MAX_IMAGES)
                return -E2BIG;
        n = reallocarray(in->images, in->n_images + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        in->images = n;
        in->images[in->n_images++] = *img;
        *img = (DecodeImage){ .fd = -EBADF };
        return 0;
}

int decode_input_hold_fd(DecodeInput *in, int fd, char **ret_path) {
        int *n = reallocarray(in->held_fds, in->n_held_fds + 1, sizeof(int));

        if (!n) {
                safe_close(fd);
                return -ENOMEM;
        }
        in->held_fds = n;
        in->held_fds[in->n_held_fds++] = fd;
        return asprintf(ret_path, "/proc/self/fd/%d", fd) < 0 ? -ENOMEM : 0;
}

int decode_input_add_missing(DecodeInput *in, const uint8_t *build_id, size_t build_id_size,
                             const char *const *paths, const char *reason) {
        DecodeMissingImage *n, *m;
        size_t k = 0;

        if (in->n_missing >= DECODE_MAX_IMAGES)
                return -E2BIG;
        n = reallocarray(in->missing, in->n_missing + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        in->missing = n;
        m = &in->missing[in->n_missing];
        *m = (DecodeMissingImage){};
        m->build_id_size = MIN(build_id_size, (size_t) DECODE_BUILD_ID_MAX);
        if (build_id)
                memcpy(m->build_id, build_id, m->build_id_size);
        while (paths && paths[k])
                k++;
        m->paths = calloc(k + 1, sizeof(char *));
        m->reason = strdup(reason ?: "unknown reason");
        if (!m->paths || !m->reason) {
                free(m->paths);
                free(m->reason);
                return -ENOMEM;
        }
        for (size_t i = 0; i < k; i++) {
                m->paths[i] = strdup(paths[i]);
                if (!m->paths[i]) {
                        strv_free(m->paths);
                        free(m->reason);
                        return -ENOMEM;
                }
        }
        in->n_missing++;
        return 0;
}

int decode_input_set_kallsyms_file(DecodeInput *in, const char *path, char **ret_error) {
        char *text = NULL;
        size_t size = 0;
        int r;

        r = read_full_file(path, DECODE_MAX_KALLSYMS_SIZE, &text, &size);
        if (r < 0) {
                if (asprintf(ret_error, "cannot read kallsyms %s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        decode_input_set_kallsyms(in, text, size);
        return 0;
}

void decode_input_set_kallsyms(DecodeInput *in, char *text, size_t size) {
        free(in->kallsyms);
        in->kallsyms = text;
        in->kallsyms_size = size;
}

int decode_input_add_note(DecodeInput *in, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = strv_extendfv(&in->notes, fmt, ap);
        va_end(ap);
        return r;
}

int decode_input_add_error(DecodeInput *in, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = strv_extendfv(&in->errors, fmt, ap);
        va_end(ap);
        return r;
}

const DecodeCpuTrace *decode_input_find_cpu(const DecodeInput *in, uint32_t cpu) {
        DECODE_FOREACH(c, in->cpus, in->n_cpus)
                if (c->cpu == cpu)
                        return c;
        return NULL;
}

/* Split s at sep into exactly n unsigned fields. */
static int split_u64(const char *s, char sep, uint64_t *v, size_t n) {
        _cleanup_free_ char *copy = strdup(s);
        char *p, *next;

        if (!copy)
                return -ENOMEM;
        p = copy;
        for (size_t i = 0; i < n; i++) {
                next = strchr(p, sep);
                if (i + 1 < n) {
                        if (!next)
                                return -EINVAL;
                        *next = 0;
                } else if (next)
                        return -EINVAL;
                if (parse_uint64(p, &v[i]) < 0)
                        return -EINVAL;
                if (next)
                        p = next + 1;
        }
        return 0;
}

int decode_parse_cpu_model(const char *s, DecodeCpuModel *ret) {
        uint64_t v[3];
        int r;

        r = split_u64(s, '/', v, 3);
        if (r < 0)
                return r;
        if (v[0] > UINT16_MAX || v[1] > UINT8_MAX || v[2] > UINT8_MAX)
                return -ERANGE;
        *ret = (DecodeCpuModel){ .known = true, .family = v[0], .model = v[1], .stepping = v[2] };
        return 0;
}

int decode_parse_tsc_conversion(const char *s, PerfTscConversion *ret) {
        uint64_t v[3];
        int r;

        r = split_u64(s, ',', v, 3);
        if (r < 0)
                return r;
        /* A shift of 64 or more would make the conversion undefined. */
        if (v[0] >= 64 || v[1] > UINT32_MAX || v[1] == 0)
                return -ERANGE;
        *ret = (PerfTscConversion){
                .time_shift = v[0],
                .time_mult = v[1],
                .time_zero = v[2],
                .cap_user_time_zero = true,
        };
        return 0;
}

int decode_parse_cpuid_15(const char *s, uint32_t *ret_eax, uint32_t *ret_ebx) {
        uint64_t v[2];
        int r;

        r = split_u64(s, ',', v, 2);
        if (r < 0)
                return r;
        if (v[0] > UINT32_MAX || v[1] > UINT32_MAX)
                return -ERANGE;
        *ret_eax = v[0];
        *ret_ebx = v[1];
        return 0;
}
