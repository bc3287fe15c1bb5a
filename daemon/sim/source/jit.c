/* SPDX-License-Identifier: MIT */

/*
 * JIT code of real processes for the walker: what an executable anonymous
 * or memfd mapping holds, read from /proc/PID/mem, with the functions the
 * process's perf map names in it as the entries (a walk enters JIT code
 * only at a function the JIT announced, as real code is entered through
 * the JIT's own pointers). Without a perf map there is nothing to enter:
 * the mapping is left out of the walk.
 *
 * JIT code changes without any mapping changing (new functions in pages
 * already mapped), so an address space with JIT code holds for
 * SIM_JIT_REFRESH at most and is read again after (addrspace.c).
 */

#include "common/bundle/images.h"
#include "common/perf/perf-map.h"
#include "daemon/sim/source/internal.h"

/* One region read at most: V8's code space pages and a JVM's code cache
 * segments are far smaller. */
#define JIT_REGION_MAX (UINT64_C(64) << 20)
#define JIT_MAP_MAX (UINT64_C(64) << 20)

void sim_jit_functions_free(SimJitFunctions *f) {
        for (size_t i = 0; i < f->n; i++)
                free((char *) f->v[i].name);
        free(f->v);
        *f = (SimJitFunctions){};
}

int sim_jit_functions_read(uint32_t pid, SimJitFunctions *ret) {
        _cleanup_free_ char *path = NULL, *data = NULL;
        PerfMapReader rd;
        PerfMapEntry e;
        size_t size = 0, allocated = 0;
        int r;

        *ret = (SimJitFunctions){};
        if (asprintf(&path, "/proc/%" PRIu32 "/root/tmp/perf-%d.map", pid, (int) procmap_ns_pid((pid_t) pid)) < 0)
                return -ENOMEM;
        r = read_regular_file(path, JIT_MAP_MAX, &data, &size);
        if (r < 0)
                return r;
        perf_map_reader_init(&rd, data, size);
        while (perf_map_reader_next(&rd, &e) > 0) {
                if (ret->n == allocated) {
                        size_t na = MAX(allocated * 2, (size_t) 256);
                        SynthSymbol *a = reallocarray(ret->v, na, sizeof *a);

                        if (!a) {
                                sim_jit_functions_free(ret);
                                return -ENOMEM;
                        }
                        ret->v = a;
                        allocated = na;
                }
                ret->v[ret->n] = (SynthSymbol){ .addr = e.start, .size = e.size, .name = strndup(e.name, e.name_len) };
                if (!ret->v[ret->n].name) {
                        sim_jit_functions_free(ret);
                        return -ENOMEM;
                }
                ret->n++;
        }
        return 0;
}

static bool same_code(const SimImage *i, uint32_t pid, const SimMap *m, const void *code, size_t size,
                      const SimJitFunctions *f) {
        const SynthImage *img = i->img;
        size_t k = 0;

        if (i->pid != pid || img->segments[0].vaddr != m->start || img->size != size ||
            memcmp(img->map, code, size) != 0)
                return false;
        /* The same entries, by address and name (symbols are sorted by
         * address; the perf map need not be). */
        for (size_t j = 0; j < f->n; j++) {
                const SynthSymbol *sym;

                if (f->v[j].addr < m->start || f->v[j].addr - m->start >= size)
                        continue;
                sym = synth_image_symbol_at(img, f->v[j].addr);
                if (!sym || sym->addr != f->v[j].addr || !streq(sym->name, f->v[j].name))
                        return false;
                k++;
        }
        return k == img->n_symbols;
}

void sim_jit_image_forget(SimSource *s, SimImage *i) {
        for (size_t k = 0; k < s->n_jit_images; k++)
                if (s->jit_images[k] == i) {
                        s->jit_images[k] = s->jit_images[--s->n_jit_images];
                        return;
                }
}

SimImage *sim_jit_image(SimSource *s, uint32_t pid, const SimMap *m, const SimJitFunctions *f) {
        _cleanup_free_ void *code = NULL;
        _cleanup_free_ SimImage *i = NULL;
        size_t size = 0;
        SimImage **a;
        char name[96];

        if (f->n == 0 || proc_mem_read((pid_t) pid, m->start, m->end - m->start, JIT_REGION_MAX, &code, &size) < 0)
                return NULL;
        for (size_t k = 0; k < s->n_jit_images; k++)
                if (same_code(s->jit_images[k], pid, m, code, size, f))
                        return s->jit_images[k];
        a = reallocarray(s->jit_images, s->n_jit_images + 1, sizeof *a);
        if (!a)
                return NULL;
        s->jit_images = a;
        i = calloc(1, sizeof *i);
        if (!i)
                return NULL;
        snprintf(name, sizeof name, "[jit %" PRIu32 " 0x%" PRIx64 "]", pid, m->start);
        i->path = strdup(name);
        if (!i->path || synth_image_new_code(name, code, size, m->start, f->v, f->n, &i->img) < 0) {
                free(i->path);
                return NULL;
        }
        i->jit = true;
        i->pid = pid;
        s->jit_images[s->n_jit_images++] = i;
        return TAKE_PTR(i);
}
