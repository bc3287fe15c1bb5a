/* SPDX-License-Identifier: MIT */

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <pthread.h>
#include <libelf.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "common/basic/string-util.h"
#include "daemon/synth/image.h"

/* Bounds for what we accept from files on the machine. */
#define SYNTH_IMAGE_MAX_SIZE (UINT64_C(1) << 31)
#define SYNTH_IMAGE_MAX_SEGMENTS 64
#define SYNTH_IMAGE_MAX_NEEDED 256

/* Image ids key the block caches (12 bits above a 48-bit address), so
 * they are recycled when images go away: a long-running user (ptraced
 * --source=sim, test programs running many machines) loads many more. */
#define SYNTH_IMAGE_MAX_UID 4095
static pthread_mutex_t uid_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t uid_used[(SYNTH_IMAGE_MAX_UID + 1) / 64];

static unsigned uid_alloc(void) {
        unsigned uid = 0;

        pthread_mutex_lock(&uid_lock);
        for (unsigned i = 1; i <= SYNTH_IMAGE_MAX_UID; i++)
                if (!(uid_used[i / 64] & (UINT64_C(1) << (i % 64)))) {
                        uid_used[i / 64] |= UINT64_C(1) << (i % 64);
                        uid = i;
                        break;
                }
        pthread_mutex_unlock(&uid_lock);
        return uid;
}

static void uid_free(unsigned uid) {
        if (uid == 0)
                return;
        pthread_mutex_lock(&uid_lock);
        uid_used[uid / 64] &= ~(UINT64_C(1) << (uid % 64));
        pthread_mutex_unlock(&uid_lock);
}

typedef struct ImageLoader {
        SynthImage *img;
        Elf *elf;
        /* growable arrays while loading */
        uint64_t *funcs;
        size_t n_funcs, a_funcs;
} ImageLoader;

static int push_u64(uint64_t **a, size_t *n, size_t *alloc, uint64_t v) {
        if (*n == *alloc) {
                size_t na = MAX(*alloc * 2, (size_t)256);
                uint64_t *p = realloc(*a, na * sizeof **a);
                if (!p)
                        return -ENOMEM;
                *a = p;
                *alloc = na;
        }
        (*a)[(*n)++] = v;
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static int cmp_symbol_addr(const void *a, const void *b) {
        const SynthSymbol *x = a, *y = b;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        /* Among aliases, the one that covers most (a function, not a
         * label), then global ones. */
        if (x->size != y->size)
                return x->size > y->size ? -1 : 1;
        if (x->global != y->global)
                return x->global ? -1 : 1;
        return strcmp(x->name, y->name);
}

static int cmp_symbol_name(const void *a, const void *b) {
        const SynthSymbol *x = a, *y = b;
        return strcmp(x->name, y->name);
}

static int cmp_reloc(const void *a, const void *b) {
        const SynthReloc *x = a, *y = b;
        return x->where < y->where ? -1 : x->where > y->where;
}

static size_t uniq_u64(uint64_t *a, size_t n) {
        size_t j = 0;

        for (size_t i = 0; i < n; i++)
                if (j == 0 || a[j - 1] != a[i])
                        a[j++] = a[i];
        return j;
}

const SynthSegment *synth_image_exec_segment(const SynthImage *img, uint64_t a) {
        for (size_t i = 0; i < img->n_segments; i++) {
                const SynthSegment *s = &img->segments[i];

                if ((s->flags & PF_X) && a >= s->vaddr && a - s->vaddr < s->filesz)
                        return s;
        }
        return NULL;
}

const uint8_t *synth_image_code(const SynthImage *img, uint64_t a, size_t *n) {
        const SynthSegment *s = synth_image_exec_segment(img, a);
        uint64_t off;

        if (!s)
                return NULL;
        off = a - s->vaddr;
        *n = (size_t)MIN((uint64_t)*n, s->filesz - off);
        return img->map + s->offset + off;
}

int synth_image_poke(SynthImage *img, uint64_t a, const void *bytes, size_t n) {
        const SynthSegment *s = synth_image_exec_segment(img, a);

        if (!s || a + n < a || a + n > s->vaddr + s->filesz)
                return -ENXIO;
        if (!img->patched) {
                img->patched = malloc(img->size);
                if (!img->patched)
                        return -ENOMEM;
                memcpy(img->patched, img->map, img->size);
                img->map = img->patched;
        }
        memcpy(img->patched + s->offset + (a - s->vaddr), bytes, n);
        return 0;
}

int synth_image_read(const SynthImage *img, uint64_t a, void *buf, size_t n) {
        for (size_t i = 0; i < img->n_segments; i++) {
                const SynthSegment *s = &img->segments[i];

                if (a >= s->vaddr && a - s->vaddr < s->filesz && s->filesz - (a - s->vaddr) >= n) {
                        memcpy(buf, img->map + s->offset + (a - s->vaddr), n);
                        return 0;
                }
        }
        return -ENXIO;
}

const SynthSymbol *synth_image_symbol_at(const SynthImage *img, uint64_t a) {
        size_t lo = 0, hi = img->n_symbols;

        /* Last symbol with addr <= a. */
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (img->symbols[mid].addr <= a)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        /* Among aliases at the same address the sort put the preferred first. */
        for (size_t i = lo - 1;; i--) {
                const SynthSymbol *s = &img->symbols[i];

                if (i == 0 || img->symbols[i - 1].addr != s->addr) {
                        if (a == s->addr || a - s->addr < s->size)
                                return s;
                        return NULL;
                }
        }
}

const SynthSymbol *synth_image_symbol_by_name(const SynthImage *img, const char *name) {
        for (size_t i = 0; i < img->n_symbols; i++)
                if (streq(img->symbols[i].name, name))
                        return &img->symbols[i];
        return NULL;
}

const SynthSymbol *synth_image_export(const SynthImage *img, const char *name) {
        SynthSymbol key = {.name = name};

        if (img->n_exports == 0)
                return NULL;
        /* bsearch() wants a valid array even for 0 elements (UBSan). */
        if (img->n_exports == 0)
                return NULL;
        return bsearch(&key, img->exports, img->n_exports, sizeof key, cmp_symbol_name);
}

uint64_t synth_image_function_end(const SynthImage *img, uint64_t a) {
        const SynthSegment *s = synth_image_exec_segment(img, a);
        uint64_t end = s ? s->vaddr + s->filesz : a;
        size_t lo = 0, hi = img->n_funcs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (img->funcs[mid] <= a)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo < img->n_funcs)
                end = MIN(end, img->funcs[lo]);
        return end;
}

const SynthReloc *synth_image_reloc_at(const SynthImage *img, uint64_t where) {
        SynthReloc key = {.where = where};

        if (img->n_relocs == 0)
                return NULL;
        if (img->n_relocs == 0)
                return NULL;
        return bsearch(&key, img->relocs, img->n_relocs, sizeof key, cmp_reloc);
}

static int load_segments(ImageLoader *l, char **ret_error) {
        SynthImage *img = l->img;
        size_t n;

        if (elf_getphdrnum(l->elf, &n) < 0 || n > 1024)
                return set_error_message(-EBADMSG, ret_error, "%s: bad program headers", img->path);
        img->segments = calloc(MAX(n, (size_t)1), sizeof *img->segments);
        if (!img->segments)
                return -ENOMEM;
        img->min_vaddr = UINT64_MAX;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(l->elf, (int)i, &ph))
                        return set_error_message(-EBADMSG, ret_error, "%s: bad program header %zu",
                                                 img->path, i);
                if (ph.p_type == PT_INTERP) {
                        if (ph.p_offset >= img->size || ph.p_filesz == 0 || ph.p_filesz > 4096 ||
                            img->size - ph.p_offset < ph.p_filesz)
                                return set_error_message(-EBADMSG, ret_error, "%s: bad PT_INTERP",
                                                         img->path);
                        img->interp = strndup((const char *)img->map + ph.p_offset, ph.p_filesz);
                        if (!img->interp)
                                return -ENOMEM;
                        continue;
                }
                if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
                        continue;
                if (img->n_segments >= SYNTH_IMAGE_MAX_SEGMENTS || ph.p_offset > img->size ||
                    ph.p_filesz > img->size - ph.p_offset || ph.p_filesz > ph.p_memsz)
                        return set_error_message(-EBADMSG, ret_error, "%s: bad PT_LOAD %zu", img->path, i);
                img->segments[img->n_segments++] = (SynthSegment){
                        .vaddr = ph.p_vaddr,
                        .memsz = ph.p_memsz,
                        .offset = ph.p_offset,
                        .filesz = ph.p_filesz,
                        .flags = ph.p_flags,
                };
                img->min_vaddr = MIN(img->min_vaddr, ph.p_vaddr & ~UINT64_C(0xfff));
                img->max_vaddr = MAX(img->max_vaddr, ALIGN_TO(ph.p_vaddr + ph.p_memsz, UINT64_C(0x1000)));
        }
        if (img->n_segments == 0)
                return set_error_message(-EBADMSG, ret_error, "%s: no loadable segments", img->path);
        return 0;
}

static void load_build_id(ImageLoader *l) {
        SynthImage *img = l->img;
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(l->elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;
                size_t off = 0, name_off, desc_off;
                GElf_Nhdr nh;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
                        continue;
                d = elf_getdata(scn, NULL);
                if (!d)
                        continue;
                while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
                        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                            memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
                            nh.n_descsz <= sizeof img->build_id) {
                                memcpy(img->build_id, (const uint8_t *)d->d_buf + desc_off, nh.n_descsz);
                                img->build_id_size = nh.n_descsz;
                                return;
                        }
                }
        }
}

static int load_dynamic(ImageLoader *l, char **ret_error) {
        SynthImage *img = l->img;
        Elf_Scn *scn = NULL;
        size_t n_needed = 0;

        while ((scn = elf_nextscn(l->elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
                        continue;
                d = elf_getdata(scn, NULL);
                if (!d || sh.sh_entsize == 0)
                        continue;
                img->needed = calloc(SYNTH_IMAGE_MAX_NEEDED + 1, sizeof(char *));
                if (!img->needed)
                        return -ENOMEM;
                for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Dyn dyn;
                        const char *s;

                        if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
                                break;
                        if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH &&
                            dyn.d_tag != DT_SONAME)
                                continue;
                        s = elf_strptr(l->elf, sh.sh_link, dyn.d_un.d_val);
                        if (!s)
                                return set_error_message(-EBADMSG, ret_error, "%s: bad dynamic string",
                                                         img->path);
                        switch (dyn.d_tag) {
                        case DT_NEEDED:
                                if (n_needed >= SYNTH_IMAGE_MAX_NEEDED)
                                        return set_error_message(-E2BIG, ret_error, "%s: too many DT_NEEDED",
                                                                 img->path);
                                img->needed[n_needed] = strdup(s);
                                if (!img->needed[n_needed++])
                                        return -ENOMEM;
                                break;
                        case DT_RUNPATH:
                                free(img->runpath);
                                img->runpath = strdup(s);
                                if (!img->runpath)
                                        return -ENOMEM;
                                break;
                        case DT_RPATH:
                                free(img->rpath);
                                img->rpath = strdup(s);
                                if (!img->rpath)
                                        return -ENOMEM;
                                break;
                        case DT_SONAME:
                                free(img->soname);
                                img->soname = strdup(s);
                                if (!img->soname)
                                        return -ENOMEM;
                                break;
                        }
                }
                break;
        }
        return 0;
}

static bool symbol_is_code(const SynthImage *img, uint64_t a) {
        return a != 0 && synth_image_exec_segment(img, a);
}

/* Function symbols from .symtab when present (unstripped, the kernel-like
 * image), else .dynsym; exports always from .dynsym. */
static int load_symbols(ImageLoader *l, char **ret_error) {
        SynthImage *img = l->img;
        Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
        size_t a_sym = 0, a_exp = 0;

        while ((scn = elf_nextscn(l->elf, scn))) {
                GElf_Shdr sh;

                if (!gelf_getshdr(scn, &sh))
                        continue;
                if (sh.sh_type == SHT_SYMTAB)
                        symtab = scn;
                else if (sh.sh_type == SHT_DYNSYM)
                        dynsym = scn;
        }

        for (int pass = 0; pass < 2; pass++) {
                Elf_Scn *s = pass == 0 ? (symtab ?: dynsym) : dynsym;
                GElf_Shdr sh;
                Elf_Data *d;

                if (!s || (pass == 1 && !dynsym))
                        continue;
                if (!gelf_getshdr(s, &sh) || sh.sh_entsize == 0 || !(d = elf_getdata(s, NULL)))
                        return set_error_message(-EBADMSG, ret_error, "%s: bad symbol table", img->path);
                for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Sym sym;
                        const char *name;
                        int type, bind;
                        SynthSymbol **arr = pass == 0 ? &img->symbols : &img->exports;
                        size_t *n = pass == 0 ? &img->n_symbols : &img->n_exports;
                        size_t *alloc = pass == 0 ? &a_sym : &a_exp;

                        if (!gelf_getsym(d, (int)i, &sym))
                                break;
                        type = GELF_ST_TYPE(sym.st_info);
                        bind = GELF_ST_BIND(sym.st_info);
                        if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
                                continue;
                        if (type != STT_FUNC && type != STT_GNU_IFUNC &&
                            !(type == STT_NOTYPE && img->kernel))
                                continue;
                        if (pass == 1 && bind != STB_GLOBAL && bind != STB_WEAK)
                                continue;
                        if (!symbol_is_code(img, sym.st_value))
                                continue;
                        name = elf_strptr(l->elf, sh.sh_link, sym.st_name);
                        if (!name || !*name || name[0] == '$' || startswith(name, ".L"))
                                continue;
                        if (*n == *alloc) {
                                size_t na = MAX(*alloc * 2, (size_t)256);
                                SynthSymbol *p = realloc(*arr, na * sizeof **arr);
                                if (!p)
                                        return -ENOMEM;
                                *arr = p;
                                *alloc = na;
                        }
                        (*arr)[(*n)++] = (SynthSymbol){
                                .addr = sym.st_value,
                                .size = sym.st_size,
                                .name = name,
                                .global = bind != STB_LOCAL,
                        };
                        if (pass == 0 && type != STT_NOTYPE) {
                                int r = push_u64(&l->funcs, &l->n_funcs, &l->a_funcs, sym.st_value);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        if (img->n_symbols > 0)
                qsort(img->symbols, img->n_symbols, sizeof *img->symbols, cmp_symbol_addr);
        if (img->n_exports > 0)
                qsort(img->exports, img->n_exports, sizeof *img->exports, cmp_symbol_name);
        return 0;
}

/* .eh_frame_hdr's binary search table lists the start of every function
 * that has unwind information, which is every compiled function of a
 * stripped binary: the function entries a real walk can start from. */
static int load_eh_frame_hdr(ImageLoader *l) {
        SynthImage *img = l->img;
        size_t n;

        if (elf_getphdrnum(l->elf, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                const uint8_t *p;
                uint32_t count;

                if (!gelf_getphdr(l->elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
                        continue;
                if (ph.p_offset > img->size || ph.p_filesz > img->size - ph.p_offset || ph.p_filesz < 12)
                        return 0;
                p = img->map + ph.p_offset;
                /* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4,
                 * table datarel|sdata4: what every x86-64 toolchain writes.
                 * Anything else we simply do not use. */
                if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
                        return 0;
                memcpy(&count, p + 8, 4);
                if (count > (ph.p_filesz - 12) / 8)
                        return 0;
                for (uint32_t k = 0; k < count; k++) {
                        int32_t rel;
                        uint64_t a;
                        int r;

                        memcpy(&rel, p + 12 + (size_t)k * 8, 4);
                        a = ph.p_vaddr + (uint64_t)(int64_t)rel;
                        if (!symbol_is_code(img, a))
                                continue;
                        r = push_u64(&l->funcs, &l->n_funcs, &l->a_funcs, a);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        return 0;
}

static int load_relocs(ImageLoader *l) {
        SynthImage *img = l->img;
        Elf_Scn *scn = NULL;
        size_t alloc = 0;

        while ((scn = elf_nextscn(l->elf, scn))) {
                GElf_Shdr sh, symsh;
                Elf_Data *d, *symd = NULL;
                Elf_Scn *symscn;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC) ||
                    sh.sh_entsize == 0)
                        continue;
                d = elf_getdata(scn, NULL);
                if (!d)
                        continue;
                symscn = elf_getscn(l->elf, sh.sh_link);
                if (symscn && gelf_getshdr(symscn, &symsh) && symsh.sh_entsize > 0)
                        symd = elf_getdata(symscn, NULL);
                for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Rela rela;
                        SynthReloc rel = {};
                        unsigned type;

                        if (!gelf_getrela(d, (int)i, &rela))
                                break;
                        type = (unsigned)GELF_R_TYPE(rela.r_info);
                        rel.where = rela.r_offset;
                        rel.addend = (uint64_t)rela.r_addend;
                        switch (type) {
                        case R_X86_64_RELATIVE:
                                rel.kind = SYNTH_RELOC_RELATIVE;
                                break;
                        case R_X86_64_IRELATIVE:
                                rel.kind = SYNTH_RELOC_IFUNC;
                                break;
                        case R_X86_64_GLOB_DAT:
                        case R_X86_64_JUMP_SLOT:
                        case R_X86_64_64: {
                                GElf_Sym sym;

                                if (!symd || !gelf_getsym(symd, (int)GELF_R_SYM(rela.r_info), &sym))
                                        continue;
                                rel.symbol = elf_strptr(l->elf, symsh.sh_link, sym.st_name);
                                if (!rel.symbol || !*rel.symbol)
                                        continue;
                                rel.kind = SYNTH_RELOC_SYMBOL;
                                break;
                        }
                        default:
                                continue;
                        }
                        if (img->n_relocs == alloc) {
                                size_t na = MAX(alloc * 2, (size_t)256);
                                SynthReloc *p = realloc(img->relocs, na * sizeof *p);
                                if (!p)
                                        return -ENOMEM;
                                img->relocs = p;
                                alloc = na;
                        }
                        img->relocs[img->n_relocs++] = rel;
                }
        }
        if (img->n_relocs > 0)
                qsort(img->relocs, img->n_relocs, sizeof *img->relocs, cmp_reloc);
        return 0;
}

static bool is_func(const SynthImage *img, uint64_t a) {
        return img->n_funcs > 0 && bsearch(&a, img->funcs, img->n_funcs, sizeof a, cmp_u64) != NULL;
}

/* Functions whose address is taken: RELATIVE relocations and pointers
 * stored in data (function pointer tables, operation structs), plus
 * exported functions (callable through any other object's GOT). Those
 * are the targets an indirect call really reaches. */
static int load_icall_targets(ImageLoader *l) {
        SynthImage *img = l->img;
        uint64_t *t = NULL;
        size_t n = 0, alloc = 0;
        int r;

        for (size_t i = 0; i < img->n_relocs; i++)
                if (img->relocs[i].kind == SYNTH_RELOC_RELATIVE && is_func(img, img->relocs[i].addend)) {
                        r = push_u64(&t, &n, &alloc, img->relocs[i].addend);
                        if (r < 0)
                                goto fail;
                }
        for (size_t i = 0; i < img->n_segments; i++) {
                const SynthSegment *s = &img->segments[i];

                if (s->flags & PF_X)
                        continue;
                for (uint64_t off = (8 - (s->vaddr & 7)) & 7; off + 8 <= s->filesz; off += 8) {
                        uint64_t v;

                        memcpy(&v, img->map + s->offset + off, 8);
                        if (is_func(img, v)) {
                                r = push_u64(&t, &n, &alloc, v);
                                if (r < 0)
                                        goto fail;
                        }
                }
        }
        for (size_t i = 0; i < img->n_exports; i++)
                if (is_func(img, img->exports[i].addr)) {
                        r = push_u64(&t, &n, &alloc, img->exports[i].addr);
                        if (r < 0)
                                goto fail;
                }
        if (n > 0) {
                qsort(t, n, sizeof *t, cmp_u64);
                n = uniq_u64(t, n);
        }
        img->icall_targets = t;
        img->n_icall_targets = n;
        return 0;
fail:
        free(t);
        return r;
}

static int image_new(const char *name, bool kernel, SynthImage **ret) {
        SynthImage *img;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOTSUP;
        img = calloc(1, sizeof *img);
        if (!img)
                return -ENOMEM;
        img->n_ref = 1;
        img->fd = -EBADF;
        img->kernel = kernel;
        img->path = strdup(name);
        if (!img->path) {
                free(img);
                return -ENOMEM;
        }
        *ret = img;
        return 0;
}

/* Everything a walk needs from the ELF behind elf (consumed: kept in the
 * image on success, ended on failure). */
static int image_parse(SynthImage *img, Elf *elf, char **ret_error) {
        const char *path = img->path;
        ImageLoader l = { .img = img, .elf = elf };
        GElf_Ehdr eh;
        size_t raw_size;
        int r;

        if (!l.elf)
                return set_error_message(-EBADMSG, ret_error, "%s: %s", path, elf_errmsg(-1));
        img->map = (const uint8_t *)elf_rawfile(l.elf, &raw_size);
        img->size = raw_size;
        if (!img->map || elf_kind(l.elf) != ELF_K_ELF || !gelf_getehdr(l.elf, &eh) ||
            gelf_getclass(l.elf) != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
            (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
                r = set_error_message(-EBADMSG, ret_error,
                                      "%s: not an x86-64 ELF executable or shared object", path);
                goto finish;
        }
        img->pie = eh.e_type == ET_DYN;
        img->entry = eh.e_entry;

        r = load_segments(&l, ret_error);
        if (r < 0)
                goto finish;
        load_build_id(&l);
        r = load_dynamic(&l, ret_error);
        if (r < 0)
                goto finish;
        r = load_symbols(&l, ret_error);
        if (r < 0)
                goto finish;
        r = load_eh_frame_hdr(&l);
        if (r < 0)
                goto finish;
        if (img->entry && symbol_is_code(img, img->entry)) {
                r = push_u64(&l.funcs, &l.n_funcs, &l.a_funcs, img->entry);
                if (r < 0)
                        goto finish;
        }
        if (l.n_funcs > 0) {
                qsort(l.funcs, l.n_funcs, sizeof *l.funcs, cmp_u64);
                l.n_funcs = uniq_u64(l.funcs, l.n_funcs);
        }
        img->funcs = TAKE_PTR(l.funcs);
        img->n_funcs = l.n_funcs;
        r = load_relocs(&l);
        if (r < 0)
                goto finish;
        r = load_icall_targets(&l);
        if (r < 0)
                goto finish;
        if (img->n_funcs == 0) {
                r = set_error_message(-ENOENT, ret_error, "%s: no function entries found", path);
                goto finish;
        }
        img->uid = uid_alloc();
        if (img->uid == 0) {
                r = set_error_message(-E2BIG, ret_error, "too many images loaded at once");
                goto finish;
        }
        /* Keep the ELF handle: symbol names and the code point into its mapping. */
        img->elf_handle = TAKE_PTR(l.elf);
        r = 0;
finish:
        free(l.funcs);
        if (l.elf)
                elf_end(l.elf);
        return r;
}


int synth_image_load(const char *path, bool kernel, SynthImage **ret, char **ret_error) {
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        struct stat st;
        int r;

        r = image_new(path, kernel, &img);
        if (r < 0)
                return set_error_message(r, ret_error, "libelf: %s", elf_errmsg(-1));
        img->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (img->fd < 0)
                return set_error_message(-errno, ret_error, "%s: %m", path);
        if (fstat(img->fd, &st) < 0)
                return set_error_message(-errno, ret_error, "%s: %m", path);
        if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
            (uint64_t)st.st_size > SYNTH_IMAGE_MAX_SIZE)
                return set_error_message(-EBADMSG, ret_error, "%s: not a regular file of plausible size",
                                         path);
        r = image_parse(img, elf_begin(img->fd, ELF_C_READ_MMAP, NULL), ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(img);
        return 0;
}

int synth_image_load_memory(const char *name, const void *data, size_t size, bool kernel, SynthImage **ret,
                            char **ret_error) {
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        int r;

        r = image_new(name, kernel, &img);
        if (r < 0)
                return set_error_message(r, ret_error, "libelf: %s", elf_errmsg(-1));
        if (size < sizeof(Elf64_Ehdr) || (uint64_t)size > SYNTH_IMAGE_MAX_SIZE)
                return set_error_message(-EBADMSG, ret_error, "%s: not an ELF image of plausible size",
                                         name);
        /* Our own copy: libelf may convert in place what it reads, and
         * the caller's bytes may be read-only. */
        img->memory = malloc(size);
        if (!img->memory)
                return -ENOMEM;
        memcpy(img->memory, data, size);
        r = image_parse(img, elf_memory((char *)img->memory, size), ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(img);
        return 0;
}

static int symbol_addr_cmp(const void *a, const void *b) {
        const SynthSymbol *x = a, *y = b;
        return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int synth_image_new_code(const char *name, const void *code, size_t size, uint64_t vaddr,
                         const SynthSymbol *funcs, size_t n_funcs, SynthImage **ret) {
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        size_t names = 0, n = 0;
        char *p;
        int r;

        if (size == 0 || (uint64_t) size > SYNTH_IMAGE_MAX_SIZE || vaddr + size < vaddr)
                return -EINVAL;
        r = image_new(name, false, &img);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_funcs; i++)
                names += strlen(funcs[i].name) + 1;
        /* The code, then the names the symbols point to. */
        img->memory = malloc(size + names);
        img->segments = calloc(1, sizeof *img->segments);
        img->symbols = calloc(MAX(n_funcs, (size_t) 1), sizeof *img->symbols);
        img->funcs = calloc(MAX(n_funcs, (size_t) 1), sizeof *img->funcs);
        if (!img->memory || !img->segments || !img->symbols || !img->funcs)
                return -ENOMEM;
        memcpy(img->memory, code, size);
        img->map = img->memory;
        img->size = size;
        img->min_vaddr = vaddr & ~UINT64_C(0xfff);
        img->max_vaddr = (vaddr + size + 0xfff) & ~UINT64_C(0xfff);
        img->segments[0] = (SynthSegment){ .vaddr = vaddr, .memsz = size, .offset = 0, .filesz = size,
                                           .flags = 1 | 4 /* PF_X | PF_R */ };
        img->n_segments = 1;
        p = (char *) img->memory + size;
        for (size_t i = 0; i < n_funcs; i++) {
                size_t l = strlen(funcs[i].name) + 1;

                if (funcs[i].addr < vaddr || funcs[i].addr - vaddr >= size)
                        continue;
                memcpy(p, funcs[i].name, l);
                img->symbols[n] = (SynthSymbol){ .addr = funcs[i].addr, .size = funcs[i].size, .name = p,
                                                 .global = true };
                p += l;
                n++;
        }
        if (n == 0)
                return -ENOENT;
        qsort(img->symbols, n, sizeof *img->symbols, symbol_addr_cmp);
        img->n_symbols = n;
        for (size_t i = 0; i < n; i++)
                if (img->n_funcs == 0 || img->funcs[img->n_funcs - 1] != img->symbols[i].addr)
                        img->funcs[img->n_funcs++] = img->symbols[i].addr;
        /* JIT code is entered through pointers (the interpreter, stubs,
         * other JIT code): every function may be an indirect target. */
        img->icall_targets = malloc(img->n_funcs * sizeof *img->icall_targets);
        if (!img->icall_targets)
                return -ENOMEM;
        memcpy(img->icall_targets, img->funcs, img->n_funcs * sizeof *img->funcs);
        img->n_icall_targets = img->n_funcs;
        img->jit = true;
        img->uid = uid_alloc();
        if (img->uid == 0)
                return -E2BIG;
        *ret = TAKE_PTR(img);
        return 0;
}

SynthImage *synth_image_ref(SynthImage *img) {
        if (img)
                img->n_ref++;
        return img;
}

SynthImage *synth_image_unref(SynthImage *img) {
        if (!img || --img->n_ref > 0)
                return NULL;
        free(img->segments);
        free(img->interp);
        strv_free(img->needed);
        free(img->runpath);
        free(img->rpath);
        free(img->soname);
        free(img->symbols);
        free(img->exports);
        free(img->funcs);
        free(img->icall_targets);
        free(img->relocs);
        if (img->elf_handle)
                elf_end(img->elf_handle);
        free(img->patched);
        free(img->memory);
        uid_free(img->uid);
        safe_close(img->fd);
        free(img->path);
        free(img);
        return NULL;
}

int synth_image_kallsyms(const SynthImage *img, int64_t bias, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < img->n_symbols; i++) {
                const SynthSymbol *s = &img->symbols[i];
                fprintf(f, "%016" PRIx64 " %c %s\n", s->addr + (uint64_t)bias, s->global ? 'T' : 't',
                        s->name);
        }
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
