/* SPDX-License-Identifier: MIT */

/* The symbolizer's sorted symbol table against libdw itself: for every
 * symbol of real modules (libc, bash, ld.so, the fixture, the ptsynth
 * kernel image, the separate debug files here) its start, start + 1,
 * end - 1 and end, every section's bounds, and thousands of random
 * addresses in each executable section must get the same answer from
 * decode_symtab_lookup() as from dwfl_module_addrinfo(): the same name,
 * the same offset, or no symbol from both. */

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>

#include "client/decode/symtab.h"
#include "test.h"

static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
};

static uint64_t n_checked, n_found;

static void check_addr(Dwfl_Module *mod, const DecodeSymtab *t, const char *path, uint64_t addr) {
        const char *name = NULL;
        uint64_t off = 0;
        GElf_Off want_off = 0;
        GElf_Sym sym;
        const char *want = dwfl_module_addrinfo(mod, addr, &want_off, &sym, NULL, NULL, NULL);
        int r = decode_symtab_lookup(t, addr, &name, &off);

        n_checked++;
        if (r < 0)
                test_fail("%s: %#" PRIx64 ": the table gave up (%s), libdw says %s", path, addr, strerror(-r),
                          want ?: "(none)");
        if ((r > 0) != (want != NULL))
                test_fail("%s: %#" PRIx64 ": table %s, libdw %s", path, addr, r > 0 ? name : "(none)",
                          want ?: "(none)");
        if (!want)
                return;
        n_found++;
        if (!streq(name, want) || off != want_off)
                test_fail("%s: %#" PRIx64 ": table %s+%#" PRIx64 ", libdw %s+%#" PRIx64, path, addr, name, off,
                          want, (uint64_t) want_off);
}

/* Returns false when path is not here. */
static bool check_module(const char *path, unsigned n_random) {
        Dwfl *dwfl;
        Dwfl_Module *mod;
        _cleanup_(decode_symtab_freep) DecodeSymtab *t = NULL;
        GElf_Addr bias = 0;
        Elf *elf;
        Elf_Scn *scn = NULL;
        uint64_t n0 = n_checked, f0 = n_found;
        int nsyms, fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        close(fd);
        dwfl = dwfl_begin(&callbacks);
        ASSERT_TRUE(dwfl);
        dwfl_report_begin(dwfl);
        /* As the symbolizer reports an image: base 0, link-time addresses. */
        mod = dwfl_report_elf(dwfl, path, path, -1, 0, false);
        dwfl_report_end(dwfl, NULL, NULL);
        ASSERT_TRUE(mod);
        ASSERT_OK(decode_symtab_new(mod, &t));

        nsyms = dwfl_module_getsymtab(mod);
        for (int i = 0; i < nsyms; i++) {
                GElf_Sym sym;
                GElf_Addr value = 0;
                if (!dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL))
                        continue;
                uint64_t a[] = { value - 1, value, value + 1, value + sym.st_size - 1, value + sym.st_size };
                for (size_t k = 0; k < ELEMENTSOF(a); k++)
                        check_addr(mod, t, path, a[k]);
        }
        elf = dwfl_module_getelf(mod, &bias);
        ASSERT_TRUE(elf);
        srandom(42);
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr_mem, *shdr = gelf_getshdr(scn, &shdr_mem);
                if (!shdr || !(shdr->sh_flags & SHF_ALLOC))
                        continue;
                uint64_t start = shdr->sh_addr + bias, end = start + shdr->sh_size;
                uint64_t a[] = { start - 1, start, start + 1, end - 1, end, end + 1 };
                for (size_t k = 0; k < ELEMENTSOF(a); k++)
                        check_addr(mod, t, path, a[k]);
                if (!(shdr->sh_flags & SHF_EXECINSTR) || shdr->sh_size == 0)
                        continue;
                for (unsigned k = 0; k < n_random; k++)
                        check_addr(mod, t, path, start + (uint64_t) random() % shdr->sh_size);
        }
        printf("%s: %d symbols, %" PRIu64 " addresses, %" PRIu64 " named, all as libdw\n", path, nsyms,
               n_checked - n0, n_found - f0);
        /* A module where nothing is named compares nothing. */
        ASSERT_TRUE(n_found > f0);
        dwfl_end(dwfl);
        return true;
}

int main(int argc, char **argv) {
        static const char *const system_modules[] = {
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/usr/bin/bash",
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        };
        unsigned checked = 0;

        /* The fixture and the ptsynth kernel image, from the build. */
        for (int i = 1; i < argc; i++) {
                if (!check_module(argv[i], 2000))
                        test_fail("%s: missing", argv[i]);
                checked++;
        }
        for (size_t i = 0; i < ELEMENTSOF(system_modules); i++)
                checked += check_module(system_modules[i], 4000);
        /* Separate debug files: their own .symtab, with the sections of
         * the stripped file as NOBITS. The largest few, for time. */
        {
                FILE *f = popen("find /usr/lib/debug/.build-id -name '*.debug' -printf '%s %p\\n' 2>/dev/null | "
                           "sort -rn | head -n 6 | cut -d' ' -f2-",
                           "r");
                char line[4096];

                while (f && fgets(line, sizeof line, f)) {
                        line[strcspn(line, "\n")] = 0;
                        checked += check_module(line, 1000);
                }
                if (f)
                        pclose(f);
        }
        if (checked < 2)
                test_skip("fewer than two modules to compare here");
        printf("%u modules, %" PRIu64 " addresses, %" PRIu64 " named: the table answers as libdw\n", checked,
               n_checked, n_found);
        return 0;
}
