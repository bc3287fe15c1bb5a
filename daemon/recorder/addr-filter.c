/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>

#include "common/basic/buffer.h"
#include "common/basic/parse-util.h"
#include "common/basic/string-util.h"
#include "daemon/recorder/addr-filter.h"

typedef struct Filter {
        const char *action; /* "filter", "start", "stop", "tracestop" */
        char *start;        /* address or symbol */
        char *size;         /* or NULL */
        char *file;         /* or NULL: kernel */
} Filter;

static void filter_done(Filter *f) {
        free(f->start);
        free(f->size);
        free(f->file);
}

static bool action_has_size(const char *a) {
        return streq(a, "filter") || streq(a, "tracestop");
}

/* Tokenize: words separated by spaces; '/' and '@' are their own tokens
 * (perf allows "main/0x10@/bin/x" and "main / 0x10 @ /bin/x"); ',' ends a
 * filter. Files start after '@' and run to the next space or comma. */
static int parse_filters(const char *text, Filter **ret, size_t *ret_n, char **ret_error) {
        Filter *v = NULL;
        size_t n = 0;
        const char *p = text;

        for (;;) {
                Filter f = {};
                size_t l;

                while (*p && (isspace((unsigned char) *p) || *p == ','))
                        p++;
                if (!*p)
                        break;

                static const char *const actions[] = { "filter", "start", "stop", "tracestop" };
                for (size_t i = 0; i < ELEMENTSOF(actions); i++) {
                        l = strlen(actions[i]);
                        if (strncmp(p, actions[i], l) == 0 && isspace((unsigned char) p[l])) {
                                f.action = actions[i];
                                p += l;
                                break;
                        }
                }
                if (!f.action) {
                        *ret_error = strdup_printf("'%s': each filter starts with filter, start, stop or tracestop", p);
                        goto fail;
                }
                while (isspace((unsigned char) *p))
                        p++;

                l = strcspn(p, " \t/@,");
                if (l == 0) {
                        *ret_error = strdup_printf("'%s' needs an address or a symbol", f.action);
                        goto fail;
                }
                f.start = strndup(p, l);
                p += l;
                while (isspace((unsigned char) *p))
                        p++;

                if (*p == '/') {
                        p++;
                        while (isspace((unsigned char) *p))
                                p++;
                        l = strcspn(p, " \t@,");
                        if (l == 0 || !action_has_size(f.action)) {
                                *ret_error = strdup_printf(l == 0 ? "'%s %s /': a size must follow '/'"
                                                                  : "'%s %s': start and stop take no size",
                                                           f.action, f.start);
                                goto fail;
                        }
                        f.size = strndup(p, l);
                        p += l;
                        while (isspace((unsigned char) *p))
                                p++;
                }
                if (*p == '@') {
                        p++;
                        while (isspace((unsigned char) *p))
                                p++;
                        l = strcspn(p, " \t,");
                        if (l == 0) {
                                *ret_error = strdup_printf("'%s %s @': a file must follow '@'", f.action, f.start);
                                goto fail;
                        }
                        f.file = strndup(p, l);
                        p += l;
                        if (f.file && f.file[0] != '/') {
                                *ret_error = strdup_printf("'%s': the file must be an absolute path", f.file);
                                goto fail;
                        }
                }
                /* Whatever follows must be the next filter (after a comma or a
                 * space), which the loop checks. */

                Filter *a = realloc(v, sizeof(Filter) * (n + 1));
                if (!a) {
                        filter_done(&f);
                        goto oom;
                }
                v = a;
                v[n++] = f;
                continue;
        fail:
                filter_done(&f);
                goto err;
        }

        *ret = v;
        *ret_n = n;
        return 0;
oom:
        *ret_error = NULL;
err:
        for (size_t i = 0; i < n; i++)
                filter_done(&v[i]);
        free(v);
        return *ret_error ? -EINVAL : -ENOMEM;
}

/* A symbol in an ELF file: its address and size from .symtab, else
 * .dynsym. -ENOENT when absent, -ENOTUNIQ when several differ. */
static int elf_find_symbol(Elf *elf, const char *name, uint64_t *ret_addr, uint64_t *ret_size) {
        bool found = false;
        uint64_t addr = 0, size = 0;

        for (int pass = 0; pass < 2 && !found; pass++) {
                Elf_Scn *scn = NULL;
                uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;

                while ((scn = elf_nextscn(elf, scn))) {
                        GElf_Shdr sh;
                        Elf_Data *data;

                        if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || sh.sh_entsize == 0)
                                continue;
                        data = elf_getdata(scn, NULL);
                        if (!data)
                                continue;
                        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                                GElf_Sym sym;
                                const char *n;

                                if (!gelf_getsym(data, (int) i, &sym) || sym.st_shndx == SHN_UNDEF)
                                        continue;
                                if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
                                        continue;
                                n = elf_strptr(elf, sh.sh_link, sym.st_name);
                                if (!n || !streq(n, name))
                                        continue;
                                if (found && (addr != sym.st_value || size != sym.st_size))
                                        return -ENOTUNIQ;
                                found = true;
                                addr = sym.st_value;
                                size = sym.st_size;
                        }
                }
        }
        if (!found)
                return -ENOENT;
        *ret_addr = addr;
        *ret_size = size;
        return 0;
}

/* Virtual address to file offset, through the PT_LOAD that holds it. */
static int elf_vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *ret) {
        size_t n;

        if (elf_getphdrnum(elf, &n) < 0)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
                        *ret = vaddr - ph.p_vaddr + ph.p_offset;
                        return 0;
                }
        }
        return -ERANGE;
}

/* A kernel symbol from kallsyms text: its address, and the distance to the
 * next higher symbol as its size. */
static int kallsyms_find(const char *kallsyms, const char *name, uint64_t *ret_addr, uint64_t *ret_size) {
        uint64_t addr = 0, next = UINT64_MAX;
        bool found = false;
        const char *p = kallsyms;

        while (p && *p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                char line[512], sym[256], type;
                unsigned long long a;

                if (len < sizeof line) {
                        memcpy(line, p, len);
                        line[len] = 0;
                        if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3) {
                                if (!found && streq(sym, name)) {
                                        found = true;
                                        addr = a;
                                }
                        }
                }
                p = nl ? nl + 1 : NULL;
        }
        if (!found)
                return -ENOENT;
        /* Second pass for the next higher address (kallsyms is not sorted
         * on every kernel). */
        p = kallsyms;
        while (p && *p) {
                unsigned long long a;
                if (sscanf(p, "%llx", &a) == 1 && a > addr && a < next)
                        next = a;
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        *ret_addr = addr;
        *ret_size = next == UINT64_MAX ? 0 : next - addr;
        return 0;
}

static bool is_number(const char *s, uint64_t *ret) {
        return parse_uint64(s, ret) >= 0;
}

static int translate_one(const Filter *f, const char *kallsyms, Buffer *out, char **ret_error) {
        uint64_t start, size = 0, sym_size = 0;
        char tmp[64];
        int r;

        if (f->file) {
                _cleanup_close_ int fd = open(f->file, O_RDONLY | O_CLOEXEC);
                Elf *elf;

                if (fd < 0) {
                        *ret_error = strdup_printf("'%s %s@%s': cannot open %s: %s", f->action, f->start, f->file,
                                                   f->file, strerror(errno));
                        return -EINVAL;
                }
                elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
                if (!elf || elf_kind(elf) != ELF_K_ELF) {
                        if (elf)
                                elf_end(elf);
                        *ret_error = strdup_printf("'%s': %s is not an ELF file", f->start, f->file);
                        return -EINVAL;
                }
                if (is_number(f->start, &start))
                        r = 0;
                else {
                        r = elf_find_symbol(elf, f->start, &start, &sym_size);
                        if (r == -ENOENT)
                                *ret_error = strdup_printf("symbol '%s' not found in %s (is it stripped?)", f->start,
                                                           f->file);
                        else if (r == -ENOTUNIQ)
                                *ret_error = strdup_printf("symbol '%s' is ambiguous in %s: give its address", f->start,
                                                           f->file);
                }
                if (r >= 0) {
                        uint64_t off;
                        r = elf_vaddr_to_offset(elf, start, &off);
                        if (r < 0)
                                *ret_error = strdup_printf("'%s' (0x%" PRIx64 ") is not in a loaded segment of %s",
                                                           f->start, start, f->file);
                        else
                                start = off;
                }
                elf_end(elf);
                if (r < 0)
                        return -EINVAL;
        } else if (!is_number(f->start, &start)) {
                if (!kallsyms || kallsyms_find(kallsyms, f->start, &start, &sym_size) < 0) {
                        *ret_error = strdup_printf("kernel symbol '%s' not found in /proc/kallsyms (for a user-space "
                                                   "symbol add @/path/to/file)",
                                                   f->start);
                        return -EINVAL;
                }
                if (start == 0) {
                        *ret_error = strdup_printf("kernel symbol '%s' has address 0: kallsyms hides addresses "
                                                   "(kernel.kptr_restrict); run as root",
                                                   f->start);
                        return -EINVAL;
                }
        }

        if (action_has_size(f->action)) {
                if (f->size) {
                        if (!is_number(f->size, &size) || size == 0) {
                                *ret_error = strdup_printf("'%s %s/%s': the size must be a positive number", f->action,
                                                           f->start, f->size);
                                return -EINVAL;
                        }
                } else
                        size = sym_size;
                if (size == 0) {
                        *ret_error = strdup_printf("'%s %s': give a size (/SIZE): an address range needs one", f->action,
                                                   f->start);
                        return -EINVAL;
                }
        }

        if (out->size > 0 && buffer_append(out, ",", 1) < 0)
                return -ENOMEM;
        if (size)
                snprintf(tmp, sizeof tmp, "%s 0x%" PRIx64 "/0x%" PRIx64, f->action, start, size);
        else
                snprintf(tmp, sizeof tmp, "%s 0x%" PRIx64, f->action, start);
        if (buffer_append(out, tmp, strlen(tmp)) < 0)
                return -ENOMEM;
        if (f->file && (buffer_append(out, "@", 1) < 0 || buffer_append(out, f->file, strlen(f->file)) < 0))
                return -ENOMEM;
        return 0;
}

int addr_filter_translate(char *const *filters, const char *kallsyms, char **ret, unsigned *ret_count,
                          char **ret_error) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        unsigned count = 0;
        int r = 0;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;

        for (char *const *t = filters; t && *t; t++) {
                Filter *v = NULL;
                size_t n = 0;

                r = parse_filters(*t, &v, &n, ret_error);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n && r >= 0; i++) {
                        r = translate_one(&v[i], kallsyms, &out, ret_error);
                        count++;
                }
                for (size_t i = 0; i < n; i++)
                        filter_done(&v[i]);
                free(v);
                if (r < 0)
                        return r;
        }

        if (count == 0) {
                *ret = NULL;
                *ret_count = 0;
                return 0;
        }
        if (buffer_append(&out, "", 1) < 0)
                return -ENOMEM;
        *ret = (char *) buffer_steal(&out, NULL);
        *ret_count = count;
        return 0;
}
