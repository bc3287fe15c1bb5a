/* SPDX-License-Identifier: MIT */

/* Loading the images, their sections, and which image a side-band mapping
 * stands for. */

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "client/decode/image/internal.h"
#include "common/basic/strv.h"

#define MAX_SEGMENTS 256

/* A note for the user about an image that cannot be used. */
#define add_note(im, ...) strv_extendf(&(im)->notes, __VA_ARGS__)

DecodeImages *decode_images_free(DecodeImages *im) {
        void *v;

        if (!im)
                return NULL;
        for (size_t i = 0; u64map_next(&im->views, &i, NULL, &v);)
                images_view_set_free(im, v);
        u64map_done(&im->views);
        for (size_t i = 0; u64map_next(&im->jit_times, &i, NULL, &v);) {
                JitTimes *jt = v;
                free(jt->t);
                free(jt);
        }
        u64map_done(&im->jit_times);
        free(im->poke_times);
        DECODE_FOREACH(rg, im->regions, im->n_regions)
                free(rg->pokes);
        free(im->regions);
        u64map_done(&im->resolutions);
        for (size_t c = 0; c < ISID_CHUNKS; c++) {
                if (!im->by_isid[c])
                        continue;
                for (size_t i = 0; i < ISID_CHUNK; i++)
                        free(im->by_isid[c][i]);
                free(im->by_isid[c]);
        }
        free(im->globals);
        DECODE_FOREACH(li, im->images, im->n_images) {
                if (li->map && !li->map_shared)
                        (void) munmap(li->map, li->size);
                free(li->segs);
        }
        free(im->images);
        if (im->iscache)
                pt_iscache_free(im->iscache);
        strv_free(im->notes);
        pthread_mutex_destroy(&im->lock);
        return mfree(im);
}

char *const *decode_images_notes(const DecodeImages *im) {
        return im->notes;
}

const char *decode_loaded_image_name(const DecodeLoadedImage *li) {
        return li->img->name ?: li->img->path;
}

const char *decode_loaded_image_path(const DecodeLoadedImage *li) {
        return li->img->path;
}

bool decode_loaded_image_is_elf(const DecodeLoadedImage *li) {
        return li->is_elf;
}

size_t decode_loaded_image_index(const DecodeLoadedImage *li) {
        return li->index;
}

const char *decode_loaded_image_debug_path(const DecodeLoadedImage *li) {
        return li->img->debug_path;
}

const DecodeImage *decode_loaded_image_input(const DecodeLoadedImage *li) {
        return li->img;
}

/* Read the program headers and build-id. Every offset and size is checked
 * against the file: images come from bundles and the command line alike. */
static int load_elf(DecodeImages *im, DecodeLoadedImage *li) {
        Elf *elf;
        GElf_Ehdr ehdr;
        size_t phnum;
        const void *bid;
        ssize_t bid_size;
        int r = 0;

        elf = elf_memory(li->map, li->size);
        if (!elf)
                return -EBADMSG;
        if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) < 0) {
                r = -EBADMSG;
                goto finish;
        }
        li->is_elf = true;
        li->e_type = ehdr.e_type;
        li->min_vaddr = UINT64_MAX;
        if (phnum > MAX_SEGMENTS) {
                r = -E2BIG;
                goto finish;
        }
        li->segs = calloc(phnum ?: 1, sizeof(ElfSegment));
        if (!li->segs) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (ph.p_vaddr < li->min_vaddr)
                        li->min_vaddr = ph.p_vaddr;
                if (!(ph.p_flags & PF_X) || ph.p_filesz == 0)
                        continue;
                if (ph.p_offset > li->size || ph.p_filesz > li->size - ph.p_offset) {
                        (void) add_note(im, "image %s: executable segment %zu lies beyond the end of the file, ignored",
                                        decode_loaded_image_name(li), i);
                        continue;
                }
                if (ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
                        continue;
                li->segs[li->n_segs++] = (ElfSegment){ .offset = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr };
        }
        if (li->min_vaddr == UINT64_MAX)
                li->min_vaddr = 0;
        bid_size = dwelf_elf_gnu_build_id(elf, &bid);
        if (bid_size > 0 && bid_size <= DECODE_BUILD_ID_MAX) {
                memcpy(li->build_id, bid, bid_size);
                li->build_id_size = bid_size;
        }
finish:
        elf_end(elf);
        return r;
}

static int load_image(DecodeImages *im, DecodeLoadedImage *li) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        fd = open(li->img->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return add_note(im, "image %s: cannot open %s: %m, ignored", decode_loaded_image_name(li),
                                li->img->path) ?: 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
                return add_note(im, "image %s: not a non-empty regular file, ignored",
                                decode_loaded_image_name(li)) ?: 0;
        li->map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (li->map == MAP_FAILED) {
                li->map = NULL;
                return add_note(im, "image %s: cannot map: %m, ignored", decode_loaded_image_name(li)) ?: 0;
        }
        li->size = (size_t) st.st_size;

        if (li->img->kind == DECODE_IMAGE_ELF) {
                r = load_elf(im, li);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && li->img->vdso) {
                        /* A vDSO is used as the bytes it is; ELF is a bonus (symbols). */
                        li->is_elf = false;
                        li->n_segs = 0;
                } else if (r < 0)
                        return add_note(im, "image %s: not a usable ELF file (%s), ignored",
                                        decode_loaded_image_name(li), strerror(-r)) ?: 0;
                else if (li->n_segs == 0 && !li->img->vdso)
                        return add_note(im, "image %s: no executable segment, ignored",
                                        decode_loaded_image_name(li)) ?: 0;
                if (li->img->build_id_size > 0 && li->build_id_size > 0 &&
                    (li->img->build_id_size != li->build_id_size ||
                     memcmp(li->img->build_id, li->build_id, li->build_id_size) != 0)) {
                        char a[2 * DECODE_BUILD_ID_MAX + 1], b[2 * DECODE_BUILD_ID_MAX + 1];
                        return add_note(im, "image %s: build-id %s is not the expected %s, ignored",
                                        decode_loaded_image_name(li),
                                        build_id_to_hex(li->build_id, li->build_id_size, a),
                                        build_id_to_hex(li->img->build_id, li->img->build_id_size, b)) ?: 0;
                }
        }
        if (li->build_id_size == 0 && li->img->build_id_size > 0) {
                memcpy(li->build_id, li->img->build_id, li->img->build_id_size);
                li->build_id_size = li->img->build_id_size;
        }
        li->usable = true;
        return 0;
}

int images_register_section(DecodeImages *im, DecodeLoadedImage *li, uint64_t file_offset, uint64_t size,
                            uint64_t vaddr, uint64_t link_vaddr, DecodeSection **ret) {
        DecodeSection *s, ***chunk;
        int isid;

        if (size == 0 || file_offset > li->size || size > li->size - file_offset || vaddr + size < vaddr)
                return -ERANGE;
        isid = pt_iscache_add_file(im->iscache, li->img->path, file_offset, size, vaddr);
        if (isid < 0)
                return -EIO;
        if ((size_t) isid >= (size_t) ISID_CHUNK * ISID_CHUNKS)
                return -E2BIG;
        chunk = &im->by_isid[isid / ISID_CHUNK];
        if (!*chunk) {
                *chunk = calloc(ISID_CHUNK, sizeof(DecodeSection *));
                if (!*chunk)
                        return -ENOMEM;
        }
        if ((*chunk)[isid % ISID_CHUNK]) {
                *ret = (*chunk)[isid % ISID_CHUNK];
                return 0;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (DecodeSection){
                .isid = isid,
                .image = li,
                .vaddr = vaddr,
                .size = size,
                .file_offset = file_offset,
                .bytes = (const uint8_t *) li->map + file_offset,
                .link_vaddr = link_vaddr,
        };
        (*chunk)[isid % ISID_CHUNK] = s;
        *ret = s;
        return 0;
}

int sections_append(DecodeSection ***l, size_t *n, DecodeSection *s) {
        DecodeSection **nl = reallocarray(*l, *n + 1, sizeof(DecodeSection *));
        if (!nl)
                return -ENOMEM;
        nl[(*n)++] = s;
        *l = nl;
        return 0;
}

/* Sections of an image placed at a fixed address: ELF segments shifted so
 * that the lowest PT_LOAD lands at addr (ptxed's --elf file:base), raw
 * files as they are. */
int images_place_fixed(DecodeImages *im, DecodeLoadedImage *li, bool has_addr, uint64_t addr,
                       DecodeSection ***l, size_t *n) {
        DecodeSection *s;
        int r;

        if (!li->is_elf) {
                uint64_t off = li->img->file_offset, size = li->img->file_size;

                if (off >= li->size)
                        return -ERANGE;
                if (size == 0 || size > li->size - off)
                        size = li->size - off;
                r = images_register_section(im, li, off, size, addr, 0, &s);
                if (r < 0)
                        return r;
                return sections_append(l, n, s);
        }
        DECODE_FOREACH(seg, li->segs, li->n_segs) {
                uint64_t vaddr = has_addr ? seg->vaddr - li->min_vaddr + addr : seg->vaddr;

                r = images_register_section(im, li, seg->offset, seg->filesz, vaddr, seg->vaddr, &s);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                r = sections_append(l, n, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Sections for one mapping: the intersection of the mapped file range with
 * the executable segments (for ELF), or the mapped range (for raw bytes
 * such as a captured vDSO). */
int images_place_mapping(DecodeImages *im, DecodeLoadedImage *li, const DecodeMapping *m, DecodeSection ***l,
                         size_t *n) {
        uint64_t len = m->end - m->start;
        DecodeSection *s;
        int r;

        if (!li->is_elf || li->img->vdso) {
                /* A vDSO blob is the mapping's memory: offset 0 is m->start. */
                uint64_t off = li->img->vdso ? 0 : m->pgoff;
                if (off >= li->size)
                        return 0;
                r = images_register_section(im, li, off, MIN(len, li->size - off), m->start, off, &s);
                if (r < 0)
                        return r == -ENOMEM ? r : 0;
                return sections_append(l, n, s);
        }
        DECODE_FOREACH(seg, li->segs, li->n_segs) {
                uint64_t lo = MAX(seg->offset, m->pgoff);
                uint64_t hi = MIN(seg->offset + seg->filesz, m->pgoff + len);

                if (lo >= hi)
                        continue;
                r = images_register_section(im, li, lo, hi - lo, m->start + (lo - m->pgoff), seg->vaddr + (lo - seg->offset),
                                     &s);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                r = sections_append(l, n, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *base_name(const char *p) {
        const char *s = strrchr(p, '/');
        return s ? s + 1 : p;
}

static bool image_matches_name(const DecodeLoadedImage *li, const char *filename, bool basename_only) {
        const char *names[2] = { li->img->name, li->img->path };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                if (!names[i])
                        continue;
                if (streq(names[i], filename))
                        return true;
                if (basename_only && streq(base_name(names[i]), base_name(filename)))
                        return true;
        }
        for (char **p = li->img->match_paths; p && *p; p++)
                if (streq(*p, filename) || (basename_only && streq(base_name(*p), base_name(filename))))
                        return true;
        return false;
}

/* Which image stands for a mapping: a build-id match first, then the exact
 * file name, then (raw mode's convenience) the base name, but never an
 * image whose build-id contradicts the mapping's. */
static DecodeLoadedImage *resolve_mapping_uncached(DecodeImages *im, const DecodeMapping *m) {
        bool vdso = streq(m->filename, "[vdso]");

        for (int pass = 0; pass < 3; pass++)
                DECODE_FOREACH(li, im->images, im->n_images) {
                        bool id_known = m->build_id_size > 0 && li->build_id_size > 0;
                        bool id_equal = id_known && m->build_id_size == li->build_id_size &&
                                        memcmp(m->build_id, li->build_id, li->build_id_size) == 0;

                        if (!li->usable || li->img->has_addr || li->img->kernel)
                                continue;
                        if (li->img->has_pid)
                                continue;
                        if (id_known && !id_equal)
                                continue;
                        if (vdso != li->img->vdso)
                                continue;
                        if (pass == 0 && id_equal)
                                return li;
                        if (vdso && pass == 1)
                                return li;
                        if (pass == 1 && image_matches_name(li, m->filename, false))
                                return li;
                        if (pass == 2 && image_matches_name(li, m->filename, true))
                                return li;
                }
        return NULL;
}

static uint64_t mapping_key(const DecodeMapping *m) {
        uint64_t h = hash_u64((uint64_t) (uintptr_t) m->filename);
        return h ^ hash_bytes(m->build_id, m->build_id_size);
}

DecodeLoadedImage *images_resolve_mapping(DecodeImages *im, const DecodeMapping *m) {
        uint64_t key = mapping_key(m);
        void *v = u64map_get(&im->resolutions, key);
        DecodeLoadedImage *li;

        if (v)
                return (uintptr_t) v == SIZE_MAX ? NULL : &im->images[(uintptr_t) v - 1];
        li = resolve_mapping_uncached(im, m);
        (void) u64map_put(&im->resolutions, key, li ? (void *) (uintptr_t) (li->index + 1) : (void *) (uintptr_t) SIZE_MAX);
        return li;
}

int decode_images_new(const DecodeInput *in, const DecodeContext *ctx, DecodeImages **ret) {
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        void *v;
        int r;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;

        im = calloc(1, sizeof(*im));
        if (!im)
                return -ENOMEM;
        pthread_mutex_init(&im->lock, NULL);
        im->in = in;
        im->ctx = ctx;
        im->iscache = pt_iscache_alloc("ptctl-decode");
        if (!im->iscache)
                return -ENOMEM;
        /* The default limit (0) maps every section on demand and keeps it;
         * bound the mapped bytes so huge bundles do not exhaust the address
         * space of 32-bit-ish setups. */
        (void) pt_iscache_set_limit(im->iscache, UINT64_C(4) << 30);

        im->images = calloc(in->n_images ?: 1, sizeof(DecodeLoadedImage));
        if (!im->images)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_images; i++) {
                DecodeLoadedImage *li = &im->images[im->n_images++];
                li->img = &in->images[i];
                li->index = i;
                if (i > 0 && li->img->kind == DECODE_IMAGE_RAW && li[-1].usable && li[-1].img->kind == DECODE_IMAGE_RAW &&
                    streq(li->img->path, li[-1].img->path)) {
                        /* The code loads of one jitdump: one map. */
                        li->map = li[-1].map;
                        li->size = li[-1].size;
                        li->map_shared = true;
                        li->usable = true;
                        continue;
                }
                r = load_image(im, li);
                if (r < 0)
                        return r;
        }

        /* Which images does the side-band map? Those are placed per process;
         * the others at fixed addresses in every address space. */
        for (size_t i = 0; u64map_next(&ctx->processes, &i, NULL, &v);) {
                const DecodeProcess *p = v;
                DECODE_FOREACH(m, p->maps, p->n_maps) {
                        DecodeLoadedImage *li = images_resolve_mapping(im, m);
                        if (li)
                                li->matched = true;
                }
        }
        DECODE_FOREACH(li, im->images, im->n_images) {
                bool fixed = li->img->has_addr || li->img->kernel;

                if (!li->usable || li->img->has_pid)
                        continue;
                if (!fixed && li->matched)
                        continue;
                if (!fixed && li->is_elf && li->e_type == ET_DYN && !li->img->vdso)
                        (void) add_note(im, "image %s: position-independent, not mapped by the side-band and "
                                        "given without @ADDR: placed at its link addresses",
                                        decode_loaded_image_name(li));
                if (!fixed && !li->is_elf) {
                        (void) add_note(im, "image %s: raw bytes without an address and not mapped by the "
                                        "side-band, ignored", decode_loaded_image_name(li));
                        continue;
                }
                r = images_place_fixed(im, li, li->img->has_addr, li->img->addr, &im->globals, &im->n_globals);
                if (r < 0)
                        return r;
        }

        r = images_pokes_init(im);
        if (r >= 0)
                r = images_split_globals(im);
        if (r >= 0)
                r = images_jit_times_init(im);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(im);
        return 0;
}

static const DecodeMissingImage *find_missing(const DecodeInput *in, const DecodeMapping *m) {
        DECODE_FOREACH(x, in->missing, in->n_missing) {
                if (m->build_id_size > 0 && x->build_id_size == m->build_id_size &&
                    memcmp(x->build_id, m->build_id, m->build_id_size) == 0)
                        return x;
                for (char **p = x->paths; p && *p; p++)
                        if (streq(*p, m->filename))
                                return x;
        }
        return NULL;
}

/* Code in memory no file holds: anonymous memory and memfds (what the
 * dump takes as JIT code). */
static bool is_jit_mapping(const char *name) {
        return streq(name, "//anon") || startswith(name, "[anon:") || startswith(name, "/memfd:") ||
               streq(name, "[heap]") || streq(name, "[stack]");
}

/* Missing JIT code: which process and region, and why, as far as the
 * bundle says. */
static char *explain_missing_jit(DecodeImages *im, int32_t pid, uint64_t addr, const DecodeMapping *m) {
        const char *why = NULL;
        bool any = false;
        char *s;

        DECODE_FOREACH(x, im->in->missing_jit, im->in->n_missing_jit)
                if ((int32_t) x->pid == pid && x->len > 0 && addr - x->addr < x->len)
                        why = x->reason;
        DECODE_FOREACH(li, im->images, im->n_images)
                any = any || (li->usable && li->img->has_pid && (int32_t) li->img->pid == pid);
        if (asprintf(&s,
                     "no JIT code at 0x%" PRIx64 " (process %" PRIi32 ", region 0x%" PRIx64 "-0x%" PRIx64 " %s: %s%s)",
                     addr, pid, m->start, m->end, m->filename, why ? "not in the bundle: " : "",
                     why ?: any ? "neither in the memory read at dump time nor in a jitdump code load of this time "
                                  "(freed, moved or written after the trace?)"
                                : "the bundle holds no JIT code of this process") < 0)
                return NULL;
        return s;
}

char *decode_images_explain_missing(DecodeImages *im, int32_t pid, uint64_t addr, uint64_t time) {
        const DecodeProcess *p;
        const DecodeMapping *m;
        char *s = NULL;
        bool exact;
        int r;

        if (addr >= DECODE_KERNEL_START) {
                bool have_kernel = false;
                DECODE_FOREACH(li, im->images, im->n_images)
                        if (li->usable && li->img->kernel)
                                have_kernel = true;
                if (have_kernel)
                        r = asprintf(&s, "no image at 0x%" PRIx64 " (outside the kernel image)", addr);
                else
                        r = asprintf(&s, "no image at 0x%" PRIx64 " (no kernel image%s%s)", addr,
                                     im->in->kernel_absent_reason ? ": " : "",
                                     strempty(im->in->kernel_absent_reason));
                return r < 0 ? NULL : s;
        }

        p = decode_context_process(im->ctx, pid);
        if (!p) {
                if (pid == DECODE_PID_UNKNOWN)
                        r = asprintf(&s, "no image at 0x%" PRIx64 " (the side-band does not say which process ran)",
                                     addr);
                else
                        r = asprintf(&s, "no image at 0x%" PRIx64 " (no mappings known for pid %" PRIi32 ")", addr,
                                     pid);
                return r < 0 ? NULL : s;
        }
        m = decode_process_mapping_at(p, addr, time, &exact);
        if (!m) {
                r = asprintf(&s, "no image at 0x%" PRIx64 " (pid %" PRIi32 " has no mapping there)", addr, pid);
                return r < 0 ? NULL : s;
        }
        if (is_jit_mapping(m->filename))
                return explain_missing_jit(im, pid, addr, m);

        {
                char hex[2 * DECODE_BUILD_ID_MAX + 1];
                const DecodeMissingImage *miss = find_missing(im->in, m);
                DecodeLoadedImage *li;

                pthread_mutex_lock(&im->lock);
                li = images_resolve_mapping(im, m);
                pthread_mutex_unlock(&im->lock);

                r = asprintf(&s, "no image at 0x%" PRIx64 " (wanted %s%s%s%s%s%s%s)", addr, m->filename,
                             m->build_id_size > 0 ? " build-id " : "",
                             m->build_id_size > 0 ? build_id_to_hex(m->build_id, m->build_id_size, hex) : "",
                             miss ? ": " : "", miss ? miss->reason : "",
                             !exact ? "; that mapping is not valid at this time" : "",
                             li && exact ? "; the image has no code there" : (!li && !miss ? "; not provided" : ""));
                return r < 0 ? NULL : s;
        }
}
