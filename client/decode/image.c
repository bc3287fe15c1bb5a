/* SPDX-License-Identifier: MIT */

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "client/decode/image.h"

#define MAX_SEGMENTS 256
#define ISID_CHUNK 4096U
#define ISID_CHUNKS 4096U

typedef struct ElfSegment {
        uint64_t offset, filesz, vaddr;
} ElfSegment;

struct DecodeLoadedImage {
        const DecodeImage *img;
        size_t index;
        void *map;
        size_t size;
        bool usable;
        bool is_elf;
        uint16_t e_type;
        ElfSegment *segs; /* executable PT_LOADs */
        size_t n_segs;
        uint64_t min_vaddr;
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        size_t build_id_size;
        bool matched; /* some side-band mapping resolved to it */
};

/* A range of kernel text some text poke changed (overlapping pokes merged). */
typedef struct PokeRegion {
        uint64_t start, end;
        size_t *pokes; /* indices into ctx->pokes of those touching it, in time order */
        size_t n_pokes;
} PokeRegion;

struct DecodeImages {
        const DecodeInput *in;
        const DecodeContext *ctx;
        struct pt_image_section_cache *iscache;
        DecodeLoadedImage *images;
        size_t n_images;

        /* Text pokes: epoch e starts at poke_times[e - 1] (epoch 0 before
         * the first); regions sorted by address. */
        uint64_t *poke_times;
        size_t n_epochs;
        PokeRegion *regions;
        size_t n_regions;

        pthread_mutex_t lock; /* protects everything below */
        /* isid (of the shared section cache) -> section, so that a file
         * range placed twice is one section; in chunks that never move once
         * allocated. Workers use their own isids (DecodeImageCache). */
        DecodeSection **by_isid[ISID_CHUNKS];
        DecodeSection **globals;
        size_t n_globals;
        U64Map views;       /* (pid << 32 | version) -> DecodeView*[n_epochs]; pid unknown: key UINT64_MAX */
        U64Map resolutions; /* mapping key -> (image index + 1), or SIZE_MAX for none */
        char **notes;
        size_t n_notes;
};

static int add_note(DecodeImages *im, const char *fmt, ...) _printf_(2, 3);
static int add_note(DecodeImages *im, const char *fmt, ...) {
        char **n, *s;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        n = reallocarray(im->notes, im->n_notes + 2, sizeof(char *));
        if (!n) {
                free(s);
                return -ENOMEM;
        }
        im->notes = n;
        im->notes[im->n_notes++] = s;
        im->notes[im->n_notes] = NULL;
        return 0;
}

static void view_free(DecodeView *v) {
        if (!v)
                return;
        free(v->sections);
        free(v->sorted);
        free(v->rank);
        free(v);
}

DecodeImages *decode_images_free(DecodeImages *im) {
        void *v;

        if (!im)
                return NULL;
        for (size_t i = 0; u64map_next(&im->views, &i, NULL, &v);) {
                DecodeView **set = v;
                for (size_t e = 0; e < im->n_epochs; e++)
                        view_free(set[e]);
                free(set);
        }
        u64map_done(&im->views);
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
                if (li->map)
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

struct pt_image_section_cache *decode_images_iscache(DecodeImages *im) {
        return im->iscache;
}

const char *decode_loaded_image_name(const DecodeLoadedImage *li) {
        return li->img->name ?: li->img->path;
}

const char *decode_loaded_image_path(const DecodeLoadedImage *li) {
        return li->img->path;
}

bool decode_loaded_image_is_kernel(const DecodeLoadedImage *li) {
        return li->img->kernel;
}

bool decode_loaded_image_is_elf(const DecodeLoadedImage *li) {
        return li->is_elf;
}

size_t decode_loaded_image_index(const DecodeLoadedImage *li) {
        return li->index;
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

static int register_section(DecodeImages *im, DecodeLoadedImage *li, uint64_t file_offset, uint64_t size,
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

static int append_section(DecodeSection ***l, size_t *n, DecodeSection *s) {
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
static int place_fixed(DecodeImages *im, DecodeLoadedImage *li, bool has_addr, uint64_t addr,
                       DecodeSection ***l, size_t *n) {
        DecodeSection *s;
        int r;

        if (!li->is_elf) {
                r = register_section(im, li, 0, li->size, addr, 0, &s);
                if (r < 0)
                        return r;
                return append_section(l, n, s);
        }
        DECODE_FOREACH(seg, li->segs, li->n_segs) {
                uint64_t vaddr = has_addr ? seg->vaddr - li->min_vaddr + addr : seg->vaddr;

                r = register_section(im, li, seg->offset, seg->filesz, vaddr, seg->vaddr, &s);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                r = append_section(l, n, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Sections for one mapping: the intersection of the mapped file range with
 * the executable segments (for ELF), or the mapped range (for raw bytes
 * such as a captured vDSO). */
static int place_mapping(DecodeImages *im, DecodeLoadedImage *li, const DecodeMapping *m, DecodeSection ***l,
                         size_t *n) {
        uint64_t len = m->end - m->start;
        DecodeSection *s;
        int r;

        if (!li->is_elf || li->img->vdso) {
                /* A vDSO blob is the mapping's memory: offset 0 is m->start. */
                uint64_t off = li->img->vdso ? 0 : m->pgoff;
                if (off >= li->size)
                        return 0;
                r = register_section(im, li, off, MIN(len, li->size - off), m->start, off, &s);
                if (r < 0)
                        return r == -ENOMEM ? r : 0;
                return append_section(l, n, s);
        }
        DECODE_FOREACH(seg, li->segs, li->n_segs) {
                uint64_t lo = MAX(seg->offset, m->pgoff);
                uint64_t hi = MIN(seg->offset + seg->filesz, m->pgoff + len);

                if (lo >= hi)
                        continue;
                r = register_section(im, li, lo, hi - lo, m->start + (lo - m->pgoff), seg->vaddr + (lo - seg->offset),
                                     &s);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                r = append_section(l, n, s);
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
static DecodeLoadedImage *resolve_mapping(DecodeImages *im, const DecodeMapping *m) {
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

static DecodeLoadedImage *resolve_mapping_cached(DecodeImages *im, const DecodeMapping *m) {
        uint64_t key = mapping_key(m);
        void *v = u64map_get(&im->resolutions, key);
        DecodeLoadedImage *li;

        if (v)
                return (uintptr_t) v == SIZE_MAX ? NULL : &im->images[(uintptr_t) v - 1];
        li = resolve_mapping(im, m);
        (void) u64map_put(&im->resolutions, key, li ? (void *) (uintptr_t) (li->index + 1) : (void *) (uintptr_t) SIZE_MAX);
        return li;
}

static int region_cmp(const void *a, const void *b) {
        const PokeRegion *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static const PokeRegion *poke_region(const DecodeImages *im, uint64_t addr) {
        size_t lo = 0, hi = im->n_regions;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (im->regions[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && addr < im->regions[lo - 1].end ? &im->regions[lo - 1] : NULL;
}

/* Epochs and regions of the side-band's text pokes. */
static int pokes_init(DecodeImages *im) {
        const DecodeContext *ctx = im->ctx;
        size_t n = 0;

        im->n_epochs = 1;
        if (ctx->n_pokes == 0)
                return 0;
        im->poke_times = calloc(ctx->n_pokes, sizeof(uint64_t));
        im->regions = calloc(ctx->n_pokes, sizeof(PokeRegion));
        if (!im->poke_times || !im->regions)
                return -ENOMEM;
        /* Pokes at the same time make one epoch boundary. */
        DECODE_FOREACH(p, ctx->pokes, ctx->n_pokes)
                if (n == 0 || im->poke_times[n - 1] != p->time)
                        im->poke_times[n++] = p->time;
        im->n_epochs = n + 1;

        DECODE_FOREACH(p, ctx->pokes, ctx->n_pokes)
                im->regions[im->n_regions++] = (PokeRegion){
                        .start = p->addr,
                        .end = p->addr + MAX(p->old_len, p->new_len),
                };
        qsort(im->regions, im->n_regions, sizeof(PokeRegion), region_cmp);
        n = 0;
        for (size_t i = 0; i < im->n_regions; i++) {
                if (n > 0 && im->regions[i].start <= im->regions[n - 1].end)
                        im->regions[n - 1].end = MAX(im->regions[n - 1].end, im->regions[i].end);
                else
                        im->regions[n++] = im->regions[i];
        }
        im->n_regions = n;
        for (size_t i = 0; i < ctx->n_pokes; i++) {
                const DecodePoke *p = &ctx->pokes[i];
                PokeRegion *rg = (PokeRegion *) poke_region(im, p->addr);
                size_t *l;

                if (!rg)
                        return -EINVAL; /* cannot be: the regions cover every poke */
                l = reallocarray(rg->pokes, rg->n_pokes + 1, sizeof(size_t));
                if (!l)
                        return -ENOMEM;
                rg->pokes = l;
                rg->pokes[rg->n_pokes++] = i;
        }
        return 0;
}

/* The epoch of time, and the span it covers. */
static size_t epoch_at(const DecodeImages *im, uint64_t time, uint64_t *ret_begin, uint64_t *ret_end) {
        size_t lo = 0, hi = im->n_epochs - 1;

        if (time == DECODE_TIME_UNKNOWN)
                lo = im->n_epochs - 1; /* no idea when: the text as it ended up */
        else
                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (im->poke_times[mid] <= time)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
        *ret_begin = lo == 0 ? 0 : im->poke_times[lo - 1];
        *ret_end = lo + 1 < im->n_epochs ? im->poke_times[lo] : DECODE_TIME_INFINITY;
        return lo;
}

/* Bytes of the poked text at addr in epoch e, as many as are known in a
 * row (up to n): a byte is the new one of the last poke in effect (its
 * time is one of the first e poke times) covering it, else the old one of
 * the first poke not yet in effect. 0 outside the regions (the image has
 * the bytes there) or where no poke says (code that appeared later). */
static size_t poke_read(const DecodeImages *im, size_t e, uint64_t addr, uint8_t *buf, size_t n) {
        const PokeRegion *rg = poke_region(im, addr);
        const DecodeContext *ctx = im->ctx;
        size_t done = 0;

        if (!rg)
                return 0;
        for (; done < n && addr + done < rg->end; done++) {
                uint64_t a = addr + done;
                bool known = false;
                uint8_t byte = 0;

                for (size_t k = 0; k < rg->n_pokes; k++) {
                        const DecodePoke *p = &ctx->pokes[rg->pokes[k]];
                        bool in_effect = e > 0 && p->time <= im->poke_times[e - 1];

                        if (in_effect && a - p->addr < p->new_len) {
                                byte = p->bytes[p->old_len + (a - p->addr)];
                                known = true; /* a later one in effect may still follow */
                        } else if (!in_effect && a - p->addr < p->old_len) {
                                if (!known)
                                        byte = p->bytes[a - p->addr];
                                known = true;
                                break; /* the first not in effect; later ones are later still */
                        }
                }
                if (!known)
                        break;
                buf[done] = byte;
        }
        return done;
}

/* libipt's view of the poked regions: they are holes in the image's
 * sections (split_globals()), filled by this callback from the view's
 * epoch. libipt does not cache what it reads this way, so one pt_image
 * per view and epoch is all it takes. */
static int poke_callback(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
                         void *context) {
        const DecodeView *v = context;
        size_t n;

        (void) asid;
        n = poke_read(v->images, v->epoch, ip, buffer, size);
        return n > 0 ? (int) n : -pte_nomap;
}

/* The global sections (kernel text, images at fixed addresses) without
 * the poked regions. */
static int split_globals(DecodeImages *im) {
        DecodeSection **l = NULL;
        size_t n = 0;
        int r;

        if (im->n_regions == 0)
                return 0;
        for (size_t i = 0; i < im->n_globals; i++) {
                DecodeSection *g = im->globals[i];
                uint64_t a = g->vaddr, end = g->vaddr + g->size;

                /* The pieces between the regions that overlap it. */
                while (a < end) {
                        uint64_t b = end;
                        DecodeSection *piece;

                        DECODE_FOREACH(rg, im->regions, im->n_regions) {
                                if (rg->end <= a || rg->start >= b)
                                        continue;
                                if (rg->start <= a) {
                                        a = rg->end; /* a starts in a region */
                                        b = end;
                                        continue;
                                }
                                b = MIN(b, rg->start);
                        }
                        if (a >= b)
                                break;
                        if (a == g->vaddr && b == end)
                                piece = g;
                        else {
                                r = register_section(im, g->image, g->file_offset + (a - g->vaddr), b - a, a,
                                                     g->link_vaddr + (a - g->vaddr), &piece);
                                if (r < 0)
                                        goto fail;
                        }
                        r = append_section(&l, &n, piece);
                        if (r < 0)
                                goto fail;
                        a = b;
                }
        }
        free(im->globals);
        im->globals = l;
        im->n_globals = n;
        return 0;
fail:
        free(l);
        return r;
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
                r = load_image(im, li);
                if (r < 0)
                        return r;
        }

        /* Which images does the side-band map? Those are placed per process;
         * the others at fixed addresses in every address space. */
        for (size_t i = 0; u64map_next(&ctx->processes, &i, NULL, &v);) {
                const DecodeProcess *p = v;
                DECODE_FOREACH(m, p->maps, p->n_maps) {
                        DecodeLoadedImage *li = resolve_mapping_cached(im, m);
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
                r = place_fixed(im, li, li->img->has_addr, li->img->addr, &im->globals, &im->n_globals);
                if (r < 0)
                        return r;
        }

        r = pokes_init(im);
        if (r >= 0)
                r = split_globals(im);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(im);
        return 0;
}

static int rank_cmp(const void *a, const void *b, void *userdata) {
        DecodeSection *const *l = userdata;
        const DecodeSection *x = l[*(const size_t *) a], *y = l[*(const size_t *) b];

        if (x->vaddr != y->vaddr)
                return x->vaddr < y->vaddr ? -1 : 1;
        return *(const size_t *) a < *(const size_t *) b ? -1 : 1;
}

static int sort_view(DecodeView *v) {
        v->sorted = calloc(v->n_sections ?: 1, sizeof(DecodeSection *));
        v->rank = calloc(v->n_sections ?: 1, sizeof(size_t));
        if (!v->sorted || !v->rank)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_sections; i++)
                v->rank[i] = i;
        qsort_r(v->rank, v->n_sections, sizeof(size_t), rank_cmp, v->sections);
        for (size_t i = 0; i < v->n_sections; i++)
                v->sorted[i] = v->sections[v->rank[i]];
        return 0;
}

static int build_view(DecodeImages *im, int32_t pid, size_t version, uint64_t begin, size_t epoch,
                      DecodeView **ret) {
        const DecodeProcess *p = decode_context_process(im->ctx, pid);
        DecodeView *v;
        int r;

        v = calloc(1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        v->images = im;
        v->pid = pid;
        v->version = version;
        v->epoch = epoch;
        if (p)
                DECODE_FOREACH(m, p->maps, p->n_maps) {
                        DecodeLoadedImage *li;

                        /* maps are in time order: for the union of all
                         * versions later mappings go on top (libipt lets a
                         * later section replace what it overlaps). */
                        if (!m->exec ||
                            (version != DECODE_VERSION_ALL && (begin < m->time_start || begin >= m->time_end)))
                                continue;
                        li = resolve_mapping_cached(im, m);
                        if (!li)
                                continue;
                        r = place_mapping(im, li, m, &v->sections, &v->n_sections);
                        if (r < 0)
                                goto fail;
                }
        /* JIT memory of this process. */
        DECODE_FOREACH(li, im->images, im->n_images)
                if (li->usable && li->img->has_pid && (int32_t) li->img->pid == pid) {
                        r = place_fixed(im, li, true, li->img->addr, &v->sections, &v->n_sections);
                        if (r < 0)
                                goto fail;
                }
        for (size_t i = 0; i < im->n_globals; i++) {
                r = append_section(&v->sections, &v->n_sections, im->globals[i]);
                if (r < 0)
                        goto fail;
        }
        r = sort_view(v);
        if (r < 0)
                goto fail;
        *ret = v;
        return 0;
fail:
        view_free(v);
        return r;
}

int decode_images_view(DecodeImages *im, int32_t pid, uint64_t time, const DecodeView **ret, uint64_t *ret_begin,
                       uint64_t *ret_end) {
        const DecodeProcess *p = decode_context_process(im->ctx, pid);
        uint64_t begin = 0, end = DECODE_TIME_INFINITY, ebegin, eend, key;
        size_t version = 0, epoch;
        DecodeView **set, *v = NULL;
        int r = 0;

        if (p)
                version = decode_process_version_at(p, time, &begin, &end);
        else
                pid = DECODE_PID_UNKNOWN;
        key = pid == DECODE_PID_UNKNOWN ? UINT64_MAX : ((uint64_t) (uint32_t) pid << 32 | (uint32_t) version);
        epoch = epoch_at(im, time, &ebegin, &eend);

        pthread_mutex_lock(&im->lock);
        set = u64map_get(&im->views, key);
        if (!set) {
                set = calloc(im->n_epochs, sizeof(DecodeView *));
                if (!set)
                        r = -ENOMEM;
                else if ((r = u64map_put(&im->views, key, set)) < 0)
                        set = mfree(set);
        }
        if (set && !set[epoch]) {
                r = build_view(im, pid, version, begin, epoch, &v);
                if (r >= 0)
                        set[epoch] = v;
        }
        if (set)
                v = set[epoch];
        pthread_mutex_unlock(&im->lock);
        if (r < 0)
                return r;
        *ret = v;
        if (ret_begin)
                *ret_begin = time == DECODE_TIME_UNKNOWN ? begin : MAX(begin, ebegin);
        if (ret_end)
                *ret_end = MIN(end, eend);
        return 0;
}

const DecodeSection *decode_view_find(const DecodeView *v, uint64_t addr) {
        const DecodeSection *best = NULL;
        size_t lo = 0, hi = v->n_sections, best_rank = 0;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (v->sorted[mid]->vaddr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Overlaps are rare (an address space over time, a user placing two
         * images on top of each other): look back a little, and like libipt
         * let the section added last win. */
        for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
                const DecodeSection *s = v->sorted[i - 1];
                if (addr >= s->vaddr && addr - s->vaddr < s->size && (!best || v->rank[i - 1] > best_rank)) {
                        best = s;
                        best_rank = v->rank[i - 1];
                }
        }
        return best;
}

size_t decode_view_read(const DecodeView *v, uint64_t addr, uint8_t *buf, size_t n) {
        size_t done = 0;

        while (done < n) {
                const DecodeSection *s = decode_view_find(v, addr + done);
                uint64_t off, k;

                if (!s) {
                        /* A poked region, as of the view's epoch? */
                        k = v->images->n_regions > 0
                                    ? poke_read(v->images, v->epoch, addr + done, buf + done, n - done)
                                    : 0;
                        if (k == 0)
                                break;
                        done += k;
                        continue;
                }
                off = addr + done - s->vaddr;
                k = MIN((uint64_t) (n - done), s->size - off);
                memcpy(buf + done, s->bytes + off, k);
                done += k;
        }
        return done;
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

        {
                char hex[2 * DECODE_BUILD_ID_MAX + 1];
                const DecodeMissingImage *miss = find_missing(im->in, m);
                DecodeLoadedImage *li;

                pthread_mutex_lock(&im->lock);
                li = resolve_mapping_cached(im, m);
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

/* A worker's own section cache: libipt's sections (their mappings and
 * block caches) take a lock on every instruction read outside the block
 * cache (pt_image_read maps and unmaps the section), so workers sharing
 * them contend on every such read. Each worker therefore has its own
 * section objects for the same files, and its own isid numbers. */
struct DecodeImageCache {
        DecodeImages *im;
        struct pt_image_section_cache *iscache;
        U64Map images; /* view pointer -> struct pt_image* */
        const DecodeSection **by_isid; /* this cache's isid -> section */
        size_t n_by_isid;
};

int decode_image_cache_new(DecodeImages *im, DecodeImageCache **ret) {
        DecodeImageCache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->im = im;
        c->iscache = pt_iscache_alloc("ptctl-decode-worker");
        if (!c->iscache) {
                free(c);
                return -ENOMEM;
        }
        (void) pt_iscache_set_limit(c->iscache, UINT64_C(4) << 30);
        *ret = c;
        return 0;
}

DecodeImageCache *decode_image_cache_free(DecodeImageCache *c) {
        void *v;

        if (!c)
                return NULL;
        for (size_t i = 0; u64map_next(&c->images, &i, NULL, &v);)
                pt_image_free(v);
        u64map_done(&c->images);
        pt_iscache_free(c->iscache);
        free(c->by_isid);
        return mfree(c);
}

int decode_image_cache_reset(DecodeImageCache *c) {
        struct pt_image_section_cache *n;
        void *v;

        n = pt_iscache_alloc("ptctl-decode-worker");
        if (!n)
                return -ENOMEM;
        (void) pt_iscache_set_limit(n, UINT64_C(4) << 30);
        for (size_t i = 0; u64map_next(&c->images, &i, NULL, &v);)
                pt_image_free(v);
        u64map_done(&c->images);
        pt_iscache_free(c->iscache);
        c->iscache = n;
        if (c->by_isid)
                memset(c->by_isid, 0, c->n_by_isid * sizeof(DecodeSection *));
        return 0;
}

const DecodeSection *decode_image_cache_section(const DecodeImageCache *c, int isid) {
        if (isid <= 0 || (size_t) isid >= c->n_by_isid)
                return NULL;
        return c->by_isid[isid];
}

static int cache_section(DecodeImageCache *c, const DecodeSection *sec, int *ret) {
        int isid = pt_iscache_add_file(c->iscache, sec->image->img->path, sec->file_offset, sec->size,
                                       sec->vaddr);

        if (isid <= 0)
                return -EIO;
        if ((size_t) isid >= c->n_by_isid) {
                size_t n = MAX((size_t) isid + 1, c->n_by_isid * 2);
                const DecodeSection **l = reallocarray(c->by_isid, n, sizeof(DecodeSection *));
                if (!l)
                        return -ENOMEM;
                memset(l + c->n_by_isid, 0, (n - c->n_by_isid) * sizeof(DecodeSection *));
                c->by_isid = l;
                c->n_by_isid = n;
        }
        c->by_isid[isid] = sec;
        *ret = isid;
        return 0;
}

int decode_image_cache_get(DecodeImageCache *c, const DecodeView *v, struct pt_image **ret) {
        struct pt_image *img = u64map_get(&c->images, (uint64_t) (uintptr_t) v);
        int r;

        if (img) {
                *ret = img;
                return 0;
        }
        img = pt_image_alloc(NULL);
        if (!img)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_sections; i++) {
                int isid;

                r = cache_section(c, v->sections[i], &isid);
                if (r >= 0 && pt_image_add_cached(img, c->iscache, isid, NULL) < 0)
                        r = -EIO;
                if (r < 0) {
                        pt_image_free(img);
                        return r;
                }
        }
        if (c->im->n_regions > 0 && pt_image_set_callback(img, poke_callback, (void *) v) < 0) {
                pt_image_free(img);
                return -EIO;
        }
        r = u64map_put(&c->images, (uint64_t) (uintptr_t) v, img);
        if (r < 0) {
                pt_image_free(img);
                return r;
        }
        *ret = img;
        return 0;
}
