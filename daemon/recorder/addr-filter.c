/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>

#include "common/basic/buffer.h"
#include "common/basic/parse-util.h"
#include "common/basic/string-util.h"
#include "daemon/recorder/addr-filter.h"
#include "daemon/recorder/filter-symbols.h"

/* One filter as perf reads it (tools/perf/util/auxtrace.c, struct
 * addr_filter and parse_one_filter). */
typedef struct PerfFilter {
        char *text;       /* as written, for messages */
        char *action;     /* filter, start, stop, tracestop */
        char *sym_from;   /* NULL: addr is the start */
        int sym_from_idx; /* perf's #n: -1 none, 0 global */
        uint64_t addr;
        char *sym_to; /* NULL: size is the size */
        int sym_to_idx;
        uint64_t size;
        bool range;
        char *file;
} PerfFilter;

static void perf_filter_done(PerfFilter *f) {
        free(f->text);
        free(f->action);
        free(f->sym_from);
        free(f->sym_to);
        free(f->file);
}

static const char *skip_space(const char *p) {
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* A word up to one of `stop` (or a space); *ret NULL-free on success. */
static int take_word(const char **p, const char *stop, char **ret) {
        size_t l;

        *p = skip_space(*p);
        l = strcspn(*p, stop);
        if (l == 0)
                return -EINVAL;
        *ret = strndup(*p, l);
        if (!*ret)
                return -ENOMEM;
        *p += l;
        return 0;
}

/* perf's parse_num_or_str + parse_sym_idx: a number (it starts with a
 * digit), or a symbol with an optional #n, #g or #G. */
static int take_addr_or_symbol(const char **p, const char *what, uint64_t *ret_num, char **ret_sym,
                               int *ret_idx, const char *text, char **ret_error) {
        _cleanup_free_ char *w = NULL;
        int r;

        *ret_idx = -1;
        r = take_word(p, " \t/@,#", &w);
        if (r == -EINVAL)
                return set_error_message(-EINVAL, ret_error, "'%s': %s missing", text, what);
        if (r < 0)
                return r;
        if (isdigit((unsigned char) w[0])) {
                r = parse_uint64(w, ret_num);
                if (r < 0)
                        return set_error_message(
                                r == -ERANGE ? -ERANGE : -EINVAL, ret_error,
                                "'%s': '%s' is not a number (C notation: 4096, 0x1000, 010)", text, w);
                return 0;
        }
        *p = skip_space(*p);
        if (**p == '#') {
                (*p)++;
                if (**p == 'g' || **p == 'G') {
                        (*p)++;
                        *ret_idx = 0;
                } else {
                        _cleanup_free_ char *n = NULL;
                        uint32_t v;

                        if (take_word(p, " \t/@,", &n) < 0 || parse_uint32(n, &v) < 0 || v > INT32_MAX)
                                return set_error_message(
                                        -EINVAL, ret_error,
                                        "'%s': after '%s #' comes the symbol's number (#1, #2, ...) "
                                        "or g for the global one",
                                        text, w);
                        *ret_idx = (int) v;
                }
        }
        *ret_sym = TAKE_PTR(w);
        return 0;
}

static int parse_one(const char **p, PerfFilter *f, char **ret_error) {
        static const char *const actions[] = { "filter", "start", "stop", "tracestop" };
        const char *begin = *p;
        int r;

        r = take_word(p, " \t,", &f->action);
        if (r < 0)
                return r;
        f->text = strdup(begin); /* for messages until the end is known */
        if (!f->text)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(actions); i++)
                if (streq(f->action, actions[i]))
                        goto known;
        return set_error_message(-EINVAL, ret_error,
                                 "'%s': each filter starts with filter, start, stop or tracestop", f->text);
known:
        /* perf's parse_action(): filter and tracestop are ranges. */
        f->range = streq(f->action, "filter") || streq(f->action, "tracestop");

        r = take_addr_or_symbol(p, "an address or a symbol", &f->addr, &f->sym_from, &f->sym_from_idx,
                                f->text, ret_error);
        if (r < 0)
                return r;
        *p = skip_space(*p);
        if (**p == '/') {
                (*p)++;
                r = take_addr_or_symbol(p, "a size or an end symbol after '/'", &f->size, &f->sym_to,
                                        &f->sym_to_idx, f->text, ret_error);
                if (r < 0)
                        return r;
                f->range = true;
                *p = skip_space(*p);
        }
        if (**p == '@') {
                (*p)++;
                r = take_word(p, " \t,", &f->file);
                if (r == -EINVAL)
                        return set_error_message(-EINVAL, ret_error, "'%s': a file must follow '@'",
                                                 f->text);
                if (r < 0)
                        return r;
                if (f->file[0] != '/')
                        return set_error_message(-EINVAL, ret_error,
                                                 "'%s': the file must be an absolute path", f->text);
        }
        *p = skip_space(*p);
        if (**p && **p != ',' && !isalpha((unsigned char) **p))
                return set_error_message(-EINVAL, ret_error, "'%s': unexpected '%c'", f->text, **p);
        /* The filter as written, for messages. */
        f->text[*p - begin] = 0;
        for (size_t l = strlen(f->text); l > 0 && isspace((unsigned char) f->text[l - 1]); l--)
                f->text[l - 1] = 0;
        return 0;
}

/* Explain a symbol look-up's error, perf's words where it has them
 * (sym_not_found_error, find_kern_sym). */
static int symbol_error(int r, const PerfFilter *f, const char *sym, int idx, const char *where,
                        char **ret_error) {
        switch (r) {
        case -ENOENT:
                return set_error_message(-EINVAL, ret_error,
                                         "'%s': %s'%s' not found in %s (symbols must be functions%s)",
                                         f->text,
                                         idx == 0  ? "global symbol "
                                         : idx > 0 ? "that occurrence of "
                                                   : "",
                                         sym, where, f->file ? "; is the file stripped?" : "");
        case -ENOTUNIQ:
                return set_error_message(
                        -EINVAL, ret_error,
                        "'%s': several functions named '%s' in %s: pick one with '%s #n' (the n'th in "
                        "address order) or '%s #g' (the global one)",
                        f->text, sym, where, sym, sym);
        case -EPERM:
                return set_error_message(
                        -EINVAL, ret_error,
                        "'%s': kallsyms shows '%s' at address 0: kernel addresses are restricted "
                        "(kernel.kptr_restrict); run as root",
                        f->text, sym);
        case -ENODATA:
                return set_error_message(-EINVAL, ret_error, "'%s': cannot determine the size of '%s' in %s",
                                         f->text, sym, where);
        case -E2BIG:
                return set_error_message(-EINVAL, ret_error, "'%s': too many functions named '%s' in %s",
                                         f->text, sym, where);
        default:
                return set_error_message(-EINVAL, ret_error, "'%s': cannot read the symbols of %s: %s",
                                         f->text, where, strerror(-r));
        }
}

/* perf's check_end_after_start(), then the range up to the end symbol. */
static int range_to_end(PerfFilter *f, uint64_t start, uint64_t size, char **ret_error) {
        if (start + size < f->addr)
                return set_error_message(-EINVAL, ret_error,
                                         "'%s': '%s' (0x%" PRIx64 ") comes before the start (0x%" PRIx64 ")",
                                         f->text, f->sym_to, start, f->addr);
        f->size = start + size - f->addr;
        return 0;
}

/* perf's addr_filter__resolve_kernel_syms(). */
static int resolve_kernel(PerfFilter *f, const char *kallsyms, char **ret_error) {
        uint64_t start, size;
        int r;

        if ((f->sym_from || f->sym_to) && !kallsyms)
                return set_error_message(
                        -EINVAL, ret_error,
                        "'%s': kernel symbols need /proc/kallsyms, which cannot be read (for a "
                        "user-space symbol add @ /path/to/file)",
                        f->text);
        if (f->sym_from && streq(f->sym_from, "*")) {
                r = filter_kallsyms_all_functions(kallsyms, &f->addr, &f->size);
                return r < 0 ? symbol_error(r, f, "*", -1, "/proc/kallsyms", ret_error) : 0;
        }
        if (f->sym_from) {
                r = filter_kallsyms_function(kallsyms, f->sym_from, f->sym_from_idx, &start, &size);
                if (r < 0)
                        return symbol_error(r, f, f->sym_from, f->sym_from_idx,
                                            "/proc/kallsyms (for a user-space symbol add @ /path/to/file)",
                                            ret_error);
                f->addr = start;
                if (f->range && !f->size && !f->sym_to)
                        f->size = size;
        }
        if (f->sym_to) {
                r = filter_kallsyms_function(kallsyms, f->sym_to, f->sym_to_idx, &start, &size);
                if (r < 0)
                        return symbol_error(r, f, f->sym_to, f->sym_to_idx, "/proc/kallsyms", ret_error);
                return range_to_end(f, start, size, ret_error);
        }
        return 0;
}

/* A FILE on a CPU-wide event: see the decision in addr-filter.h. */
static int resolve_file(PerfFilter *f, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t start, size;
        GElf_Ehdr eh;
        Elf *elf;
        int r = 0;

        fd = open(f->file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return set_error_message(-EINVAL, ret_error, "'%s': cannot open %s: %s", f->text, f->file,
                                         strerror(errno));
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
                if (elf)
                        elf_end(elf);
                return set_error_message(-EINVAL, ret_error, "'%s': %s is not an ELF file", f->text,
                                         f->file);
        }

        if (eh.e_type == ET_DYN)
                r = set_error_message(
                        -EOPNOTSUPP, ret_error,
                        "'%s': file-based filters ('@ %s') are refused by the kernel on CPU-wide events, "
                        "which ptraced's are (perf_event_parse_addr_filter: EOPNOTSUPP), and %s is "
                        "position-independent (ELF type DYN: a shared library or PIE executable): it lies "
                        "at a different address in each process, so no address range can stand for it. "
                        "Filter a non-PIE executable, whose code has fixed addresses, or give an absolute "
                        "range (filter 0xADDR/SIZE) that holds in every process",
                        f->text, f->file, f->file);
        else if (eh.e_type != ET_EXEC)
                r = set_error_message(-EINVAL, ret_error, "'%s': %s is not an executable (ELF type %u)",
                                      f->text, f->file, (unsigned) eh.e_type);
        else if (f->sym_from && streq(f->sym_from, "*")) {
                r = filter_elf_all_functions(elf, &f->addr, &f->size);
                if (r < 0)
                        r = symbol_error(r, f, "*", -1, f->file, ret_error);
        } else if (f->sym_from) {
                r = filter_elf_function(elf, f->sym_from, f->sym_from_idx, &start, &size);
                if (r < 0)
                        r = symbol_error(r, f, f->sym_from, f->sym_from_idx, f->file, ret_error);
                else {
                        f->addr = start;
                        if (f->range && !f->size && !f->sym_to)
                                f->size = size;
                }
        } else {
                /* perf: with a file, a numeric START is an offset in it. A
                 * non-PIE executable is mapped at its link addresses. */
                r = filter_elf_offset_to_vaddr(elf, f->addr, &start);
                if (r < 0)
                        r = set_error_message(-EINVAL, ret_error,
                                              "'%s': offset 0x%" PRIx64 " is in no loaded segment of %s",
                                              f->text, f->addr, f->file);
                else
                        f->addr = start;
        }
        if (r >= 0 && f->sym_to) {
                r = filter_elf_function(elf, f->sym_to, f->sym_to_idx, &start, &size);
                if (r < 0)
                        r = symbol_error(r, f, f->sym_to, f->sym_to_idx, f->file, ret_error);
                else
                        r = range_to_end(f, start, size, ret_error);
        }
        elf_end(elf);
        return r;
}

/* A range the event's exclusions leave nothing of: the kernel's half of
 * the address space on a user-only event, or the reverse. */
static int check_exclusions(const PerfFilter *f, const AddrFilterTarget *t, char **ret_error) {
        const uint64_t kernel_start = 0xffff800000000000ULL;
        uint64_t last = f->addr + (f->size ? f->size - 1 : 0);

        if (t->event.exclude_kernel && f->addr >= kernel_start)
                return set_error_message(
                        -EINVAL, ret_error,
                        "'%s': a kernel range (0x%" PRIx64 ") on an event that excludes the kernel "
                        "(Event= with 'u') would record nothing; kernels before 5.18 refuse it "
                        "(perf_event_parse_addr_filter: EINVAL)",
                        f->text, f->addr);
        if (t->exclude_user && last < kernel_start)
                return set_error_message(-EINVAL, ret_error,
                                         "'%s': a user-space range (0x%" PRIx64 ") on an event that "
                                         "excludes user space (Event= with 'k') would record nothing",
                                         f->text, f->addr);
        return 0;
}

/* The kernel's rules, on this filter alone (so the message can say which
 * of the user's filters it is about). */
static int check_kernel_rules(const PerfFilter *f, const char *kernel, const AddrFilterTarget *t,
                              char **ret_error) {
        _cleanup_free_ char *why = NULL;
        KernelFilter *parsed = NULL;
        size_t n = 0;
        int r;

        r = kernel_filter_parse(kernel, &t->event, &parsed, &n, &why);
        kernel_filters_free(parsed, n);
        if (r == -ENOMEM || (r < 0 && !why))
                return r;
        if (r < 0 && streq(f->text, kernel))
                return set_error_message(r, ret_error, "%s", why);
        if (r < 0)
                return set_error_message(r, ret_error, "'%s', for the kernel %s", f->text, why);
        return 0;
}

static int translate_one(PerfFilter *f, const AddrFilterTarget *t, Buffer *out, char **ret_error) {
        _cleanup_free_ char *kernel = NULL;
        const char *action = streq(f->action, "tracestop") ? "stop" : f->action; /* perf's parse_action() */
        int r;

        r = f->file ? resolve_file(f, ret_error) : resolve_kernel(f, t->kallsyms, ret_error);
        if (r < 0)
                return r;
        r = check_exclusions(f, t, ret_error);
        if (r < 0)
                return r;

        /* perf's addr_filter__to_str(), without the file. */
        if (f->range)
                kernel = strdup_printf("%s 0x%" PRIx64 "/0x%" PRIx64, action, f->addr, f->size);
        else
                kernel = strdup_printf("%s 0x%" PRIx64, action, f->addr);
        if (!kernel)
                return -ENOMEM;
        r = check_kernel_rules(f, kernel, t, ret_error);
        if (r < 0)
                return r;

        if ((out->size > 0 && buffer_append(out, ",", 1) < 0) ||
            buffer_append(out, kernel, strlen(kernel)) < 0)
                return -ENOMEM;
        return 0;
}

static int translate_list(const char *text, const AddrFilterTarget *t, Buffer *out, unsigned *count,
                          char **ret_error) {
        const char *p = text;
        int r;

        for (;;) {
                PerfFilter f = {};

                while (*p == ' ' || *p == '\t' || *p == ',')
                        p++;
                if (!*p)
                        return 0;
                r = parse_one(&p, &f, ret_error);
                if (r >= 0)
                        r = translate_one(&f, t, out, ret_error);
                perf_filter_done(&f);
                if (r < 0)
                        return r;
                (*count)++;
        }
}

int addr_filter_translate(char *const *filters, const AddrFilterTarget *target, char **ret,
                          unsigned *ret_count, char **ret_error) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        _cleanup_free_ char *why = NULL;
        KernelFilter *parsed = NULL;
        unsigned count = 0;
        size_t n = 0;
        int r;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;

        for (char *const *t = filters; t && *t; t++) {
                r = translate_list(*t, target, &out, &count, ret_error);
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

        /* The whole string: the number of ranges, the length. */
        r = kernel_filter_parse((const char *) out.data, &target->event, &parsed, &n, &why);
        kernel_filters_free(parsed, n);
        if (r < 0 && why)
                return set_error_message(r, ret_error, "all lines together, %s", why);
        if (r < 0)
                return r;

        *ret = (char *) buffer_steal(&out, NULL);
        *ret_count = count;
        return 0;
}
