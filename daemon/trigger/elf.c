/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>

#include "daemon/trigger/elf.h"

/* Symbol tables beyond this many entries are not an executable's. */
#define SYMBOLS_MAX (16U * 1024U * 1024U)

static int fail(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return *ret_error ? error : -ENOMEM;
}

static void elf_endp(Elf **e) {
        if (*e)
                (void) elf_end(*e);
}

typedef struct Found {
        unsigned n;
        bool global;
        GElf_Sym sym;
} Found;

/* Look through one symbol table. A global definition wins over local ones;
 * different local definitions of one name are ambiguous. */
static int scan_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, Found *f) {
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n;

        if (!d || sh->sh_entsize == 0)
                return 0;
        n = sh->sh_size / sh->sh_entsize;
        if (n > SYMBOLS_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                GElf_Sym sym;
                const char *s;
                int type;
                bool global;

                if (!gelf_getsym(d, (int) i, &sym))
                        break;
                type = GELF_ST_TYPE(sym.st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
                    sym.st_value == 0)
                        continue;
                s = elf_strptr(e, sh->sh_link, sym.st_name);
                if (!s || !streq(s, name))
                        continue;
                global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
                if (f->n > 0 && f->sym.st_value == sym.st_value)
                        continue; /* the same function in .symtab and .dynsym */
                if (f->n > 0 && f->global && !global)
                        continue;
                if (f->n > 0 && global && !f->global) {
                        f->n = 0; /* the global one replaces the locals */
                }
                f->n++;
                f->global = global;
                f->sym = sym;
        }
        return 0;
}

int trigger_elf_find_function(const char *path, const char *name, TriggerElfSymbol *ret, char **ret_error) {
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_close_ int fd = -EBADF;
        Elf_Scn *scn = NULL;
        GElf_Ehdr eh;
        size_t shstrndx, nph;
        bool have_symtab = false;
        Found f = {};
        int k;

        assert(path && name && ret);

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fail(ret_error, -errno, "cannot open %s: %m", path);
        if (elf_version(EV_CURRENT) == EV_NONE)
                return fail(ret_error, -EIO, "libelf is unusable");
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
                return fail(ret_error, -EBADMSG, "%s is not an ELF file", path);
        if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
                return fail(ret_error, -EBADMSG, "%s is not an x86-64 ELF file", path);
        if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
                return fail(ret_error, -EBADMSG, "%s is neither an executable nor a shared library", path);
        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return fail(ret_error, -EBADMSG, "%s has no section name table", path);

        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;

                if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
                        continue;
                if (sh.sh_type == SHT_SYMTAB)
                        have_symtab = true;
                k = scan_symtab(e, scn, &sh, name, &f);
                if (k < 0)
                        return fail(ret_error, k, "%s has a symbol table of implausible size", path);
        }
        if (f.n == 0)
                return fail(ret_error, -ESRCH, "no function '%s' in %s (looked in %s)", name, path,
                            have_symtab ? ".symtab and .dynsym"
                                        : ".dynsym only: the file is stripped, so only exported functions "
                                          "can be found");
        if (f.n > 1)
                return fail(ret_error, -ENOTUNIQ,
                            "%u different local functions are named '%s' in %s; probe a unique name", f.n,
                            name, path);

        /* The address to a file offset through the executable segment. */
        if (elf_getphdrnum(e, &nph) < 0)
                return fail(ret_error, -EBADMSG, "%s has no program headers", path);
        for (size_t i = 0; i < nph; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
                        continue;
                if (f.sym.st_value < ph.p_vaddr || f.sym.st_value - ph.p_vaddr >= ph.p_filesz)
                        continue;
                *ret = (TriggerElfSymbol){
                        .address = f.sym.st_value,
                        .offset = f.sym.st_value - ph.p_vaddr + ph.p_offset,
                        .size = f.sym.st_size,
                };
                return 0;
        }
        return fail(ret_error, -EBADMSG,
                    "function '%s' at 0x%" PRIx64 " is outside the executable segments of %s", name,
                    (uint64_t) f.sym.st_value, path);
}
