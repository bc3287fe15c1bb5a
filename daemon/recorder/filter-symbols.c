/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <gelf.h>
#include <stdio.h>

#include "daemon/recorder/filter-symbols.h"

/* ---- ELF ---- */

static bool elf_is_function(const GElf_Sym *sym) {
        unsigned t = GELF_ST_TYPE(sym->st_info);
        return (t == STT_FUNC || t == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF;
}

/* perf reads .symtab, and .dynsym only from a file without one. */
static Elf_Scn *elf_symbol_table(Elf *elf, GElf_Shdr *ret_sh) {
        Elf_Scn *dynsym = NULL, *scn = NULL;
        GElf_Shdr dsh = {};

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;

                if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0)
                        continue;
                if (sh.sh_type == SHT_SYMTAB) {
                        *ret_sh = sh;
                        return scn;
                }
                if (sh.sh_type == SHT_DYNSYM && !dynsym) {
                        dynsym = scn;
                        dsh = sh;
                }
        }
        *ret_sh = dsh;
        return dynsym;
}

typedef struct ElfFunctions {
        Elf *elf;
        GElf_Shdr sh;
        Elf_Data *data;
        size_t n;
} ElfFunctions;

static int elf_functions_open(Elf *elf, ElfFunctions *ret) {
        Elf_Scn *scn = elf_symbol_table(elf, &ret->sh);

        if (!scn)
                return -ENODATA;
        ret->data = elf_getdata(scn, NULL);
        if (!ret->data)
                return -EBADMSG;
        ret->elf = elf;
        ret->n = ret->sh.sh_size / ret->sh.sh_entsize;
        return 0;
}

static bool elf_functions_get(const ElfFunctions *f, size_t i, GElf_Sym *ret, const char **ret_name) {
        if (!gelf_getsym(f->data, (int) i, ret) || !elf_is_function(ret))
                return false;
        if (ret_name) {
                *ret_name = elf_strptr(f->elf, f->sh.sh_link, ret->st_name);
                if (!*ret_name)
                        return false;
        }
        return true;
}

/* The lowest function start above `addr` (perf's symbols__fixup_end for
 * symbols without a size). */
static uint64_t elf_next_function(const ElfFunctions *f, uint64_t addr) {
        uint64_t next = UINT64_MAX;
        GElf_Sym sym;

        for (size_t i = 0; i < f->n; i++)
                if (elf_functions_get(f, i, &sym, NULL) && sym.st_value > addr && sym.st_value < next)
                        next = sym.st_value;
        return next;
}

int filter_elf_function(Elf *elf, const char *name, int idx, uint64_t *ret_start, uint64_t *ret_size) {
        ElfFunctions f;
        uint64_t starts[64], sizes[64];
        size_t n = 0;
        GElf_Sym sym;
        const char *s;
        int r;

        r = elf_functions_open(elf, &f);
        if (r == -ENODATA)
                return -ENOENT;
        if (r < 0)
                return r;

        /* The matches, one per address, in address order (perf walks its
         * symbol tree, which is sorted by address and holds one symbol per
         * address). */
        for (size_t i = 0; i < f.n; i++) {
                size_t k;

                if (!elf_functions_get(&f, i, &sym, &s) || !streq(s, name))
                        continue;
                if (idx == 0 && GELF_ST_BIND(sym.st_info) != STB_GLOBAL)
                        continue;
                for (k = 0; k < n && starts[k] != sym.st_value; k++)
                        ;
                if (k < n)
                        continue;
                if (n == ELEMENTSOF(starts))
                        return -E2BIG;
                for (k = n; k > 0 && starts[k - 1] > sym.st_value; k--) {
                        starts[k] = starts[k - 1];
                        sizes[k] = sizes[k - 1];
                }
                starts[k] = sym.st_value;
                sizes[k] = sym.st_size;
                n++;
        }

        if (idx > 0) {
                if ((size_t) idx > n)
                        return -ENOENT;
                n = (size_t) idx;
        } else if (n > 1)
                return -ENOTUNIQ;
        if (n == 0)
                return -ENOENT;

        *ret_start = starts[n - 1];
        *ret_size = sizes[n - 1];
        if (*ret_size == 0) {
                uint64_t next = elf_next_function(&f, *ret_start);
                *ret_size = next == UINT64_MAX ? 0 : next - *ret_start;
        }
        return 0;
}

int filter_elf_all_functions(Elf *elf, uint64_t *ret_start, uint64_t *ret_size) {
        ElfFunctions f;
        uint64_t lo = UINT64_MAX, hi = 0;
        GElf_Sym sym;
        int r;

        r = elf_functions_open(elf, &f);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f.n; i++)
                if (elf_functions_get(&f, i, &sym, NULL)) {
                        lo = MIN(lo, (uint64_t) sym.st_value);
                        hi = MAX(hi, (uint64_t) (sym.st_value + sym.st_size));
                }
        if (lo >= hi)
                return -ENODATA;
        *ret_start = lo;
        *ret_size = hi - lo;
        return 0;
}

int filter_elf_offset_to_vaddr(Elf *elf, uint64_t offset, uint64_t *ret) {
        size_t n;

        if (elf_getphdrnum(elf, &n) < 0)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) {
                        *ret = offset - ph.p_offset + ph.p_vaddr;
                        return 0;
                }
        }
        return -ERANGE;
}

/* ---- kallsyms ---- */

typedef struct KallsymsLine {
        uint64_t addr;
        char type;
        char name[256];
} KallsymsLine;

/* The next line of kallsyms text, advancing *p; false at the end. Lines
 * that do not parse are skipped. */
static bool kallsyms_next(const char **p, KallsymsLine *ret) {
        while (*p && **p) {
                const char *nl = strchr(*p, '\n');
                size_t len = nl ? (size_t) (nl - *p) : strlen(*p);
                char line[512];
                unsigned long long a;
                bool ok = false;

                if (len < sizeof line) {
                        memcpy(line, *p, len);
                        line[len] = 0;
                        ok = sscanf(line, "%llx %c %255s", &a, &ret->type, ret->name) == 3;
                }
                *p = nl ? nl + 1 : NULL;
                if (ok) {
                        ret->addr = a;
                        return true;
                }
        }
        return false;
}

/* perf's kallsyms__is_function(): text and weak symbols. */
static bool kallsyms_is_function(char type) {
        char t = (char)toupper((unsigned char) type);
        return t == 'T' || t == 'W';
}

int filter_kallsyms_function(const char *kallsyms, const char *name, int idx, uint64_t *ret_start,
                             uint64_t *ret_size) {
        const char *p = kallsyms;
        KallsymsLine l;
        uint64_t start = 0, next = UINT64_MAX;
        int count = 0;
        bool found = false;

        /* find_kern_sym(): the n'th match in file order, or the global
         * one, or the only one. */
        while (kallsyms_next(&p, &l)) {
                if (!kallsyms_is_function(l.type) || !streq(l.name, name))
                        continue;
                if (idx == 0 && !isupper((unsigned char) l.type))
                        continue;
                count++;
                if (idx > 0 && count != idx)
                        continue;
                if (found && l.addr != start)
                        return -ENOTUNIQ;
                found = true;
                start = l.addr;
                if (idx > 0)
                        break;
        }
        if (!found)
                return -ENOENT;
        if (start == 0)
                return -EPERM;

        for (p = kallsyms; kallsyms_next(&p, &l);)
                if (l.addr > start && l.addr < next)
                        next = l.addr;
        if (next == UINT64_MAX)
                return -ENODATA;
        *ret_start = start;
        *ret_size = next - start;
        return 0;
}

int filter_kallsyms_all_functions(const char *kallsyms, uint64_t *ret_start, uint64_t *ret_size) {
        const uint64_t page = 4096;
        const char *p = kallsyms;
        uint64_t first = 0, last = 0;
        bool started = false;
        KallsymsLine l;

        /* addr_filter__entire_kernel(): "Don't know exactly where the
         * kernel ends, so we add a page". */
        while (kallsyms_next(&p, &l)) {
                if (!kallsyms_is_function(l.type))
                        continue;
                if (!started)
                        first = l.addr;
                started = true;
                last = l.addr;
        }
        if (!started)
                return -ENODATA;
        if (first == 0)
                return -EPERM;
        *ret_start = first;
        *ret_size = ALIGN_TO(last, page) + page - first;
        return 0;
}
