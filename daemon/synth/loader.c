/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/basic/string-util.h"
#include "daemon/synth/loader.h"

#define LD_CACHE_PATH "/etc/ld.so.cache"
#define LD_CACHE_MAGIC "glibc-ld.so.cache1.1"
#define LD_CACHE_MAX_SIZE (16U * 1024 * 1024)
#define LOADER_MAX_IMAGES 128

static const char *const default_lib_dirs[] = {
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

void synth_image_set_done(SynthImageSet *s) {
        for (size_t i = 0; i < s->n_images; i++)
                synth_image_unref(s->images[i]);
        free(s->images);
        free(s->ld_cache);
        *s = (SynthImageSet){};
}

/* Takes img's reference. */
static int image_set_add(SynthImageSet *s, SynthImage *img, SynthImage **ret) {
        SynthImage **a;

        a = realloc(s->images, (s->n_images + 1) * sizeof *a);
        if (!a) {
                synth_image_unref(img);
                return -ENOMEM;
        }
        s->images = a;
        s->images[s->n_images++] = img;
        *ret = img;
        return 0;
}

static SynthImage *image_set_find(const SynthImageSet *s, const char *path) {
        for (size_t i = 0; i < s->n_images; i++)
                if (streq(s->images[i]->path, path))
                        return s->images[i];
        return NULL;
}

int synth_image_set_get(SynthImageSet *s, const char *path, bool kernel, SynthImage **ret,
                        char **ret_error) {
        _cleanup_free_ char *real = NULL;
        SynthImage *img;
        int r;

        real = realpath(path, NULL);
        if (!real)
                return set_error_message(-errno, ret_error, "%s: %m", path);
        img = image_set_find(s, real);
        if (img) {
                *ret = img;
                return 0;
        }
        r = synth_image_load(real, kernel, &img, ret_error);
        if (r < 0)
                return r;
        return image_set_add(s, img, ret);
}

int synth_image_set_get_memory(SynthImageSet *s, const char *name, const void *data, size_t size, bool kernel,
                               SynthImage **ret, char **ret_error) {
        SynthImage *img;
        int r;

        img = image_set_find(s, name);
        if (img) {
                *ret = img;
                return 0;
        }
        r = synth_image_load_memory(name, data, size, kernel, &img, ret_error);
        if (r < 0)
                return r;
        return image_set_add(s, img, ret);
}

void synth_address_plan_done(SynthAddressPlan *p) {
        free(p->ranges);
        *p = (SynthAddressPlan){};
}

static bool plan_overlaps(const SynthAddressPlan *p, uint64_t start, uint64_t end) {
        for (size_t i = 0; i < p->n; i++)
                if (p->ranges[i].start < end && start < p->ranges[i].end)
                        return true;
        return false;
}

static int plan_add(SynthAddressPlan *p, uint64_t start, uint64_t end, const SynthImage *img) {
        void *a = realloc(p->ranges, (p->n + 1) * sizeof *p->ranges);

        if (!a)
                return -ENOMEM;
        p->ranges = a;
        p->ranges[p->n].start = start;
        p->ranges[p->n].end = end;
        p->ranges[p->n].image = img;
        p->n++;
        return 0;
}

/* A non-PIE executable sits at its link address in every process that
 * runs it: the same file there is no conflict. */
static bool plan_overlaps_other(const SynthAddressPlan *p, uint64_t start, uint64_t end,
                                const SynthImage *img) {
        for (size_t i = 0; i < p->n; i++)
                if (p->ranges[i].start < end && start < p->ranges[i].end &&
                    !(p->ranges[i].image == img && p->ranges[i].start == start && p->ranges[i].end == end))
                        return true;
        return false;
}

static void ld_cache_load(SynthImageSet *s) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        char *buf;

        if (s->ld_cache_loaded)
                return;
        s->ld_cache_loaded = true;
        fd = open(LD_CACHE_PATH, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 48 || st.st_size > LD_CACHE_MAX_SIZE)
                return;
        buf = malloc((size_t)st.st_size);
        if (!buf)
                return;
        if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size || memcmp(buf, LD_CACHE_MAGIC, 20) != 0) {
                free(buf);
                return;
        }
        s->ld_cache = buf;
        s->ld_cache_size = (size_t)st.st_size;
}

/* glibc's "new" cache format: a 48-byte header (magic and version, nlibs,
 * len_strings, flags, extension offset), then nlibs entries of {int32
 * flags, uint32 key, uint32 value, uint32 osversion, uint64 hwcap} with
 * string offsets from the start of the file. We want x86-64 libc6
 * entries (flags 0x0303) whose key is the soname. */
static const char *ld_cache_lookup(SynthImageSet *s, const char *name) {
        uint32_t nlibs;

        ld_cache_load(s);
        if (!s->ld_cache)
                return NULL;
        memcpy(&nlibs, s->ld_cache + 20, 4);
        if (nlibs > (s->ld_cache_size - 48) / 24)
                return NULL;
        for (uint32_t i = 0; i < nlibs; i++) {
                const char *e = s->ld_cache + 48 + (size_t)i * 24;
                int32_t flags;
                uint32_t key, value;

                memcpy(&flags, e, 4);
                memcpy(&key, e + 4, 4);
                memcpy(&value, e + 8, 4);
                if ((flags & 0xffff) != 0x0303 || key >= s->ld_cache_size || value >= s->ld_cache_size)
                        continue;
                if (!memchr(s->ld_cache + key, 0, s->ld_cache_size - key) ||
                    !memchr(s->ld_cache + value, 0, s->ld_cache_size - value))
                        continue;
                if (streq(s->ld_cache + key, name))
                        return s->ld_cache + value;
        }
        return NULL;
}

/* The canonical path of p, or fallback when it cannot be resolved; the
 * result lives in a static buffer until the next call. */
static const char *realpath_or_self(const char *p, const char *fallback) {
        static char buf[PATH_MAX];

        return realpath(p, buf) ? buf : fallback;
}

static bool is_x86_64_elf(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t h[20];

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
                return false;
        return memcmp(h, "\177ELF", 4) == 0 && h[4] == 2 /* ELFCLASS64 */ && h[18] == 62 /* EM_X86_64 */;
}

/* Try each directory of a colon-separated search path, $ORIGIN being the
 * directory of the object that needs the library. */
static int search_path(const char *list, const char *origin, const char *name, char **ret) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *p = NULL;
                const char *rest = startswith(dir, "$ORIGIN") ?: startswith(dir, "${ORIGIN}");

                if (rest) {
                        if (asprintf(&p, "%s%s/%s", origin, rest, name) < 0)
                                return -ENOMEM;
                } else if (asprintf(&p, "%s/%s", dir, name) < 0)
                        return -ENOMEM;
                if (is_x86_64_elf(p)) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

int synth_loader_find_library(SynthImageSet *s, const SynthImage *loader, const char *name,
                              char **ret_path) {
        _cleanup_free_ char *origin = NULL;
        const char *cached;
        int r;

        if (strchr(name, '/')) {
                if (!is_x86_64_elf(name))
                        return -ENOENT;
                *ret_path = strdup(name);
                return *ret_path ? 0 : -ENOMEM;
        }
        r = path_split(loader->path, &origin, NULL);
        if (r < 0)
                return r;

        if (loader->rpath && !loader->runpath) {
                r = search_path(loader->rpath, origin, name, ret_path);
                if (r != -ENOENT)
                        return r;
        }
        if (loader->runpath) {
                r = search_path(loader->runpath, origin, name, ret_path);
                if (r != -ENOENT)
                        return r;
        }
        cached = ld_cache_lookup(s, name);
        if (cached && is_x86_64_elf(cached)) {
                *ret_path = strdup(cached);
                return *ret_path ? 0 : -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(default_lib_dirs); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/%s", default_lib_dirs[i], name) < 0)
                        return -ENOMEM;
                if (is_x86_64_elf(p)) {
                        *ret_path = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

/* Pick a base in [lo, hi) for size bytes that overlaps nothing placed so
 * far on this machine. */
static int place(SynthAddressPlan *plan, SynthRng *rng, uint64_t lo, uint64_t hi, uint64_t size,
                 bool top_down, uint64_t *cursor, uint64_t *ret) {
        size = ALIGN_TO(size, UINT64_C(0x1000));
        for (unsigned attempt = 0; attempt < 1024; attempt++) {
                uint64_t base;

                if (top_down && *cursor) {
                        /* Like mmap(): right below the previous mapping. */
                        base = *cursor - size - (attempt ? synth_rng_below(rng, 1u << 20) << 12 : 0);
                } else
                        base = lo + (synth_rng_below(rng, (hi - lo - size) >> 12) << 12);
                if (base < lo || base + size > hi || plan_overlaps(plan, base, base + size))
                        continue;
                if (top_down)
                        *cursor = base;
                *ret = base;
                return plan_add(plan, base, base + size, NULL);
        }
        return -EADDRNOTAVAIL;
}

int synth_loader_load_process(SynthImageSet *s, SynthAddressPlan *plan, const char *exe, SynthRng *rng,
                              uint64_t cr3, SynthAddressSpace **ret, char **ret_error) {
        _cleanup_(synth_address_space_freep) SynthAddressSpace *as = NULL;
        SynthImage *order[LOADER_MAX_IMAGES];
        size_t n = 0;
        SynthImage *img;
        uint64_t cursor = 0, base;
        int r;

        r = synth_address_space_new(false, cr3, &as);
        if (r < 0)
                return r;
        r = synth_image_set_get(s, exe, false, &img, ret_error);
        if (r < 0)
                return r;
        order[n++] = img;

        /* Breadth-first over DT_NEEDED, as ld.so builds its search list. */
        for (size_t i = 0; i < n; i++) {
                for (char **needed = order[i]->needed; needed && *needed; needed++) {
                        _cleanup_free_ char *path = NULL;
                        SynthImage *lib;
                        bool dup = false;

                        r = synth_loader_find_library(s, order[i], *needed, &path);
                        if (r < 0)
                                return set_error_message(r, ret_error, "%s: cannot find %s needed by %s",
                                                         exe, *needed, order[i]->path);
                        r = synth_image_set_get(s, path, false, &lib, ret_error);
                        if (r < 0)
                                return r;
                        for (size_t k = 0; k < n; k++)
                                dup = dup || order[k] == lib;
                        if (dup)
                                continue;
                        if (n >= LOADER_MAX_IMAGES)
                                return set_error_message(-E2BIG, ret_error, "%s: too many libraries", exe);
                        order[n++] = lib;
                }
        }
        /* The interpreter is mapped even when no library names it. */
        if (img->interp) {
                SynthImage *ld;
                bool dup = false;

                r = synth_image_set_get(s, img->interp, false, &ld, ret_error);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < n; k++)
                        dup = dup || order[k] == ld;
                if (!dup) {
                        if (n >= LOADER_MAX_IMAGES)
                                return set_error_message(-E2BIG, ret_error, "%s: too many libraries", exe);
                        order[n++] = ld;
                }
        }

        /* The kernel maps the executable and the interpreter; ld.so maps the
         * libraries top-down below the interpreter. Symbol lookup still
         * follows the breadth-first order, so bases are picked first and
         * the mappings added in load order afterwards. */
        uint64_t bases[LOADER_MAX_IMAGES] = {};
        size_t interp_idx = n;

        if (img->interp)
                for (size_t k = 0; k < n; k++)
                        if (streq_ptr(order[k]->path, realpath_or_self(img->interp, order[k]->path)))
                                interp_idx = k;
        size_t place_order[LOADER_MAX_IMAGES], n_place = 0;

        place_order[n_place++] = 0;
        if (interp_idx < n && interp_idx != 0)
                place_order[n_place++] = interp_idx;
        for (size_t k = 1; k < n; k++)
                if (k != interp_idx)
                        place_order[n_place++] = k;
        for (size_t step = 0; step < n_place; step++) {
                size_t i = place_order[step];
                SynthImage *m;
                uint64_t size;

                m = order[i];
                size = m->max_vaddr - m->min_vaddr;
                if (i == 0 && !m->pie) {
                        base = m->min_vaddr;
                        if (plan_overlaps_other(plan, base, base + size, m))
                                return set_error_message(
                                        -EADDRINUSE, ret_error,
                                        "%s: non-PIE executable overlaps another process's code", exe);
                        r = plan_add(plan, base, base + size, m);
                } else if (i == 0)
                        r = place(plan, rng, UINT64_C(0x555555554000), UINT64_C(0x565555554000), size, false,
                                  &cursor, &base);
                else {
                        if (cursor == 0)
                                cursor = UINT64_C(0x7ff000000000) - (synth_rng_below(rng, 1u << 24) << 12);
                        r = place(plan, rng, UINT64_C(0x7e0000000000), UINT64_C(0x7ff000000000), size, true,
                                  &cursor, &base);
                }
                if (r < 0)
                        return set_error_message(r, ret_error, "%s: cannot place %s", exe, m->path);
                bases[i] = base;
        }
        for (size_t i = 0; i < n; i++) {
                r = synth_address_space_map(as, order[i], bases[i]);
                if (r < 0)
                        return set_error_message(r, ret_error, "%s: cannot map %s", exe, order[i]->path);
        }
        r = synth_address_space_resolve(as);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(as);
        return 0;
}
