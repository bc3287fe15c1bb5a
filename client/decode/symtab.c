/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>

#include "client/decode/symtab.h"

typedef struct SymtabEntry {
        uint64_t value, size;
        const char *name;
        uint32_t index; /* in the module's symbol table: libdw's order */
        GElf_Word shndx;
        int binding; /* higher binds more strongly */
} SymtabEntry;

/* The symbols of one of libdw's two passes (globals, then locals). */
typedef struct SymtabPass {
        SymtabEntry *sized; /* by value */
        uint64_t *max_end;  /* max_end[i]: highest end among sized[0..i] */
        size_t n_sized;
        SymtabEntry *sizeless; /* by value, then index */
        size_t n_sizeless;
} SymtabPass;

struct DecodeSymtab {
        Dwfl_Module *mod;
        SymtabPass pass[2]; /* [0] searched first, [1] only when [0] finds nothing */
};

static void pass_done(SymtabPass *p) {
        free(p->sized);
        free(p->max_end);
        free(p->sizeless);
}

DecodeSymtab *decode_symtab_free(DecodeSymtab *t) {
        if (!t)
                return NULL;
        pass_done(&t->pass[0]);
        pass_done(&t->pass[1]);
        return mfree(t);
}

/* binding_value() in libdwfl/dwfl_module_addrsym.c. */
static int binding(const GElf_Sym *sym) {
        switch (GELF_ST_BIND(sym->st_info)) {
        case STB_GLOBAL:
                return 3;
        case STB_WEAK:
                return 2;
        case STB_LOCAL:
                return 1;
        default:
                return 0;
        }
}

static int entry_cmp(const void *a, const void *b) {
        const SymtabEntry *x = a, *y = b;

        if (x->value != y->value)
                return x->value < y->value ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

static int pass_add(SymtabEntry **l, size_t *n, size_t *allocated, const SymtabEntry *e) {
        if (*n == *allocated) {
                size_t na = *allocated ? *allocated * 2 : 256;
                SymtabEntry *p = reallocarray(*l, na, sizeof(SymtabEntry));
                if (!p)
                        return -ENOMEM;
                *l = p;
                *allocated = na;
        }
        (*l)[(*n)++] = *e;
        return 0;
}

static int pass_build(Dwfl_Module *mod, int start, int end, SymtabPass *p) {
        size_t allocated_sized = 0, allocated_sizeless = 0;

        for (int i = start; i < end; i++) {
                GElf_Sym sym;
                GElf_Addr value = 0;
                GElf_Word shndx = 0;
                const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
                int type = GELF_ST_TYPE(sym.st_info);
                SymtabEntry e;

                /* The filter of search_table(). */
                if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
                    type == STT_TLS)
                        continue;
                if (value + sym.st_size < value)
                        return -EOPNOTSUPP; /* libdw's comparisons would wrap */
                e = (SymtabEntry){ .value = value, .size = sym.st_size, .name = name, .index = (uint32_t) i,
                                   .shndx = shndx, .binding = binding(&sym) };
                if (pass_add(e.size ? &p->sized : &p->sizeless, e.size ? &p->n_sized : &p->n_sizeless,
                             e.size ? &allocated_sized : &allocated_sizeless, &e) < 0)
                        return -ENOMEM;
        }
        if (p->n_sized > 0)
                qsort(p->sized, p->n_sized, sizeof(SymtabEntry), entry_cmp);
        if (p->n_sizeless > 0)
                qsort(p->sizeless, p->n_sizeless, sizeof(SymtabEntry), entry_cmp);
        p->max_end = calloc(p->n_sized ?: 1, sizeof(uint64_t));
        if (!p->max_end)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_sized; i++) {
                uint64_t e = p->sized[i].value + p->sized[i].size;
                p->max_end[i] = i > 0 && p->max_end[i - 1] > e ? p->max_end[i - 1] : e;
        }
        return 0;
}

int decode_symtab_new(Dwfl_Module *mod, DecodeSymtab **ret) {
        _cleanup_(decode_symtab_freep) DecodeSymtab *t = NULL;
        GElf_Addr bias = 0;
        Elf *elf = dwfl_module_getelf(mod, &bias);
        GElf_Ehdr ehdr_mem, *ehdr = elf ? gelf_getehdr(elf, &ehdr_mem) : NULL;
        int n, first_global, r;

        /* ET_REL: libdw relocates symbols and sections as it goes. Other
         * machines than x86 may resolve a symbol through a function
         * descriptor and then try it twice (search_table()). */
        if (!ehdr || ehdr->e_type == ET_REL || (ehdr->e_machine != EM_X86_64 && ehdr->e_machine != EM_386))
                return -EOPNOTSUPP;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->mod = mod;
        n = dwfl_module_getsymtab(mod);
        first_global = n < 0 ? -1 : dwfl_module_getsymtab_first_global(mod);
        if (n >= 0 && first_global >= 0) { /* else libdw finds nothing: both passes stay empty */
                /* __libdwfl_addrsym(): index 0 is the null symbol; with
                 * first_global 0 (only .dynsym from phdrs) one pass. */
                r = pass_build(mod, first_global == 0 ? 1 : first_global, n, &t->pass[0]);
                if (r < 0)
                        return r;
                if (first_global > 1) {
                        r = pass_build(mod, 1, first_global, &t->pass[1]);
                        if (r < 0)
                                return r;
                }
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* How many entries of l (sorted by value) lie at or below addr. */
static size_t count_at_or_below(const SymtabEntry *l, size_t n, uint64_t addr) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (l[mid].value <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int entry_ptr_index_cmp(const void *a, const void *b) {
        const SymtabEntry *x = *(const SymtabEntry *const *) a, *y = *(const SymtabEntry *const *) b;

        return x->index < y->index ? -1 : x->index > y->index;
}

/* The sized symbol of p containing addr that try_sym_value() keeps: in
 * table order, a later one wins when it starts higher, binds more
 * strongly, or starts at the same value and is smaller (binding no
 * weaker) or as large (binding more strongly). 1 and *ret, 0 for none,
 * -EOPNOTSUPP when more symbols nest than we keep track of. */
static int pass_sized(const SymtabPass *p, uint64_t addr, const SymtabEntry **ret) {
        const SymtabEntry *inside[64], *best = NULL;
        size_t n_inside = 0, k = count_at_or_below(p->sized, p->n_sized, addr);

        /* Walk down while some symbol below may still reach past addr. */
        for (size_t j = k; j > 0 && p->max_end[j - 1] > addr; j--) {
                const SymtabEntry *e = &p->sized[j - 1];
                if (addr - e->value < e->size) {
                        if (n_inside == ELEMENTSOF(inside))
                                return -EOPNOTSUPP;
                        inside[n_inside++] = e;
                }
        }
        if (n_inside > 1)
                qsort(inside, n_inside, sizeof(inside[0]), entry_ptr_index_cmp);
        for (size_t i = 0; i < n_inside; i++) {
                const SymtabEntry *e = inside[i];
                if (!best || best->value < e->value || best->binding < e->binding ||
                    (best->value == e->value && ((best->size > e->size && best->binding <= e->binding) ||
                                                 (best->size >= e->size && best->binding < e->binding))))
                        best = e;
        }
        *ret = best;
        return !!best;
}

/* The highest end (value + size) among p's symbols at or below addr:
 * libdw's min_label after the pass, 0 for none. */
static uint64_t pass_min_label(const SymtabPass *p, uint64_t addr) {
        size_t k = count_at_or_below(p->sized, p->n_sized, addr);
        size_t m = count_at_or_below(p->sizeless, p->n_sizeless, addr);
        uint64_t label = k > 0 ? p->max_end[k - 1] : 0;

        if (m > 0 && p->sizeless[m - 1].value > label)
                label = p->sizeless[m - 1].value;
        return label;
}

/* The section libdw's same_section() sees an address in (without
 * adjusting st_value it asks __libdwfl_find_section_ndx(), the lookup
 * dwfl_module_address_section() makes too); SHN_UNDEF for none, which
 * equals the answer for any other address in none. */
static GElf_Word section_of(Dwfl_Module *mod, uint64_t addr) {
        Dwarf_Addr a = addr, bias = 0;
        Elf_Scn *scn = dwfl_module_address_section(mod, &a, &bias);

        return scn ? (GElf_Word) elf_ndxscn(scn) : SHN_UNDEF;
}

static bool same_section(const DecodeSymtab *t, const SymtabEntry *e, uint64_t addr) {
        if (e->shndx >= SHN_LORESERVE)
                return e->value == addr;
        return section_of(t->mod, addr) == section_of(t->mod, e->value);
}

/* The symbol without size libdw falls back to, among p's symbols at
 * exactly label. try_sym_value() takes a symbol without size when it
 * lies at or above the ends of the symbols before it in table order and
 * in addr's section, and __libdwfl_addrsym() keeps it only when it lies
 * at or above the ends of all of them (label). A symbol at label passes
 * the first test whatever comes before it, and none below label can pass
 * after it, so the answer is the last such symbol in table order. */
static const SymtabEntry *pass_sizeless_at(const DecodeSymtab *t, const SymtabPass *p, uint64_t label,
                                           uint64_t addr) {
        size_t m = count_at_or_below(p->sizeless, p->n_sizeless, label);

        for (; m > 0 && p->sizeless[m - 1].value == label; m--)
                if (same_section(t, &p->sizeless[m - 1], addr))
                        return &p->sizeless[m - 1];
        return NULL;
}

int decode_symtab_lookup(const DecodeSymtab *t, uint64_t addr, const char **ret_name, uint64_t *ret_offset) {
        const SymtabEntry *e = NULL;
        uint64_t label = 0;

        for (size_t pass = 0; pass < 2 && !e; pass++) {
                const SymtabPass *p = &t->pass[pass];
                int r = pass_sized(p, addr, &e);
                uint64_t l;

                if (r < 0)
                        return r;
                if (r > 0)
                        break;
                l = pass_min_label(p, addr);
                if (l > label)
                        label = l;
                /* A global symbol without size exactly at addr ends the
                 * search before the locals. */
                if (pass == 0 && label == addr && (e = pass_sizeless_at(t, p, label, addr)))
                        break;
        }
        if (!e) {
                /* Both passes ran (or the second is empty): the last in
                 * table order is in the locals if any is there. */
                e = pass_sizeless_at(t, &t->pass[1], label, addr) ?: pass_sizeless_at(t, &t->pass[0], label, addr);
        }
        if (!e)
                return 0;
        *ret_name = e->name;
        *ret_offset = addr - e->value;
        return 1;
}
