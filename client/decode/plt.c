/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <string.h>

#include "client/decode/plt.h"

/* Everything here comes from an image a bundle or the command line gave:
 * libelf bounds the section data, we bound the walks over it. */
#define PLT_MAX_RELOCS (UINT64_C(1) << 22)

typedef struct Slot {
        uint64_t got;      /* the GOT slot's link-time address (r_offset) */
        const char *name;  /* NULL for an ifunc */
        uint64_t addend;
} Slot;

static int slot_cmp(const void *a, const void *b) {
        const Slot *x = a, *y = b;

        return x->got < y->got ? -1 : x->got > y->got;
}

static int entry_cmp(const void *a, const void *b) {
        const DecodePltEntry *x = a, *y = b;

        return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const char *section_name(Elf *elf, size_t shstrndx, const GElf_Shdr *shdr) {
        return elf_strptr(elf, shstrndx, shdr->sh_name);
}

/* The dynamic relocations that may name a stub's GOT slot, sorted by slot. */
static int read_slots(Elf *elf, Slot **ret, size_t *ret_n) {
        _cleanup_free_ Slot *l = NULL;
        size_t n = 0, allocated = 0;
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr_mem, *shdr = gelf_getshdr(scn, &shdr_mem), sym_shdr;
                Elf_Scn *symscn;
                Elf_Data *data, *syms;

                if (!shdr || shdr->sh_type != SHT_RELA)
                        continue;
                data = elf_getdata(scn, NULL);
                symscn = elf_getscn(elf, shdr->sh_link);
                if (!data || !symscn || !gelf_getshdr(symscn, &sym_shdr))
                        continue;
                syms = elf_getdata(symscn, NULL);
                for (size_t i = 0; i < MIN(data->d_size / sizeof(Elf64_Rela), PLT_MAX_RELOCS); i++) {
                        GElf_Rela rela;
                        GElf_Sym sym;
                        uint32_t type;
                        const char *name = NULL;

                        if (!gelf_getrela(data, (int) i, &rela))
                                break;
                        type = GELF_R_TYPE(rela.r_info);
                        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT && type != R_X86_64_IRELATIVE)
                                continue;
                        if (type != R_X86_64_IRELATIVE) {
                                if (!syms || !gelf_getsym(syms, (int) GELF_R_SYM(rela.r_info), &sym))
                                        continue;
                                name = elf_strptr(elf, sym_shdr.sh_link, sym.st_name);
                                if (!name || !*name)
                                        continue;
                        }
                        if (n == allocated) {
                                size_t na = allocated ? allocated * 2 : 256;
                                Slot *p = reallocarray(l, na, sizeof(Slot));
                                if (!p)
                                        return -ENOMEM;
                                l = p;
                                allocated = na;
                        }
                        l[n++] = (Slot){ .got = rela.r_offset, .name = name, .addend = (uint64_t) rela.r_addend };
                }
        }
        if (n > 1)
                qsort(l, n, sizeof(Slot), slot_cmp);
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

static const Slot *slot_find(const Slot *l, size_t n, uint64_t got) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (l[mid].got == got)
                        return &l[mid];
                if (l[mid].got < got)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The GOT slot a stub jumps through: "jmp *disp32(%rip)" (ff 25), after
 * an endbr64 (f3 0f 1e fa) and a bnd prefix (f2) where the stub has them,
 * as the x86-64 psABI's PLT layouts (lazy, IBT .plt.sec, .plt.got) put
 * it. PLT0 jumps through GOT[2], which no relocation names. */
static bool stub_target(const uint8_t *p, size_t size, uint64_t addr, uint64_t *ret) {
        static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
        size_t i = 0;
        int32_t disp;

        if (size >= 4 && memcmp(p, endbr64, 4) == 0)
                i = 4;
        if (i < size && p[i] == 0xf2)
                i++;
        if (i + 6 > size || p[i] != 0xff || p[i + 1] != 0x25)
                return false;
        memcpy(&disp, p + i + 2, sizeof(disp));
        *ret = addr + i + 6 + (uint64_t) (int64_t) disp;
        return true;
}

int decode_plt_read(Elf *elf, DecodePltEntry **ret, size_t *ret_n) {
        _cleanup_free_ DecodePltEntry *l = NULL;
        _cleanup_free_ Slot *slots = NULL;
        size_t n = 0, allocated = 0, n_slots = 0, shstrndx;
        GElf_Ehdr ehdr;
        Elf_Scn *scn = NULL;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64 ||
            elf_getshdrstrndx(elf, &shstrndx) < 0)
                return 0;
        r = read_slots(elf, &slots, &n_slots);
        if (r < 0 || n_slots == 0)
                return r;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr_mem, *shdr = gelf_getshdr(scn, &shdr_mem);
                const char *name;
                Elf_Data *data;
                uint64_t entsize;

                if (!shdr || shdr->sh_type != SHT_PROGBITS || !(shdr->sh_flags & SHF_EXECINSTR))
                        continue;
                name = section_name(elf, shstrndx, shdr);
                if (!name || (!streq(name, ".plt") && !streq(name, ".plt.sec") && !streq(name, ".plt.got")))
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf)
                        continue;
                /* 16 bytes a stub, 8 for .plt.got without IBT: the
                 * section's entry size says which. */
                entsize = shdr->sh_entsize == 8 || shdr->sh_entsize == 16 ? shdr->sh_entsize : 16;
                for (uint64_t off = 0; off + entsize <= data->d_size; off += entsize) {
                        uint64_t got;
                        const Slot *s;

                        if (!stub_target((const uint8_t *) data->d_buf + off, entsize, shdr->sh_addr + off, &got))
                                continue;
                        s = slot_find(slots, n_slots, got);
                        if (!s)
                                continue;
                        if (n == allocated) {
                                size_t na = allocated ? allocated * 2 : 64;
                                DecodePltEntry *p = reallocarray(l, na, sizeof(DecodePltEntry));
                                if (!p)
                                        return -ENOMEM;
                                l = p;
                                allocated = na;
                        }
                        l[n++] = (DecodePltEntry){
                                .addr = shdr->sh_addr + off,
                                .size = entsize,
                                .name = s->name,
                                .ifunc_addend = s->name ? 0 : s->addend,
                        };
                }
        }
        if (n > 1)
                qsort(l, n, sizeof(DecodePltEntry), entry_cmp);
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

const DecodePltEntry *decode_plt_find(const DecodePltEntry *l, size_t n, uint64_t addr) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (l[mid].addr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || addr - l[lo - 1].addr >= l[lo - 1].size)
                return NULL;
        return &l[lo - 1];
}
