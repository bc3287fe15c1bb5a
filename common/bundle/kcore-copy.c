/* SPDX-License-Identifier: MIT */

/*
 * Kernel text copy from a kcore-format file (see kcore-copy.h). Learned
 * from perf's kcore_copy() in tools/perf/util/symbol-elf.c: take the text
 * range from kallsyms, and the module area from /proc/modules and every
 * "[...]"-tagged kallsyms symbol (modules, BPF programs and trampolines,
 * ftrace trampolines, kprobe slots), page-align them, intersect them with
 * kcore's PT_LOAD segments and write just those bytes into a small ELF
 * core file with one PT_LOAD per piece.
 *
 * Unlike perf, the module area is intersected with every PT_LOAD, not just
 * the one holding its start. Like perf, it is one span: on x86-64
 * everything tagged comes from the module area (module_alloc()/execmem:
 * bpf_jit_alloc_exec(), ftrace's alloc_tramp(), kprobes' alloc_insn_page()).
 * perf also copies a page per __entry_SYSCALL_64_trampoline symbol; those
 * trampolines left the kernel in 4.20 (PTI entry rework) and are not
 * copied here.
 *
 * The ELF headers are read and written by hand (<elf.h> structs, 64-bit
 * little endian only, which is all x86-64 kcore is): /proc/kcore claims a
 * size of 128 TiB, and a reader that only ever preads the header, the
 * program headers and the wanted ranges is the simplest thing that is
 * safe on it.
 */

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ctype.h>
#include <stdio.h>

#include "common/basic/fileio.h"
#include "common/bundle/internal.h"
#include "common/bundle/kcore-copy.h"

#define KCORE_PAGE 4096ULL
#define KCORE_MAX_PHDRS 4096U
#define KCORE_MAX_SEGMENTS 64U

static uint64_t page_down(uint64_t x) {
        return x & ~(KCORE_PAGE - 1);
}

static uint64_t page_up(uint64_t x) {
        return x > UINT64_MAX - (KCORE_PAGE - 1) ? UINT64_MAX & ~(KCORE_PAGE - 1) : page_down(x + KCORE_PAGE - 1);
}

int kcore_kernel_text_range(const char *kallsyms, KcoreRange *ret) {
        uint64_t stext = 0, text = 0, etext = 0;
        bool any_nonzero = false, have_stext = false, have_text = false, have_etext = false;

        for (const char *line = kallsyms; line && *line;) {
                const char *nl = strchr(line, '\n');
                char name[128], type;
                unsigned long long addr;

                if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3) {
                        if (addr != 0)
                                any_nonzero = true;
                        if (streq(name, "_stext")) {
                                stext = addr;
                                have_stext = true;
                        } else if (streq(name, "_text")) {
                                text = addr;
                                have_text = true;
                        } else if (streq(name, "_etext")) {
                                etext = addr;
                                have_etext = true;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        if (!any_nonzero && (have_stext || have_text))
                return -EPERM;
        if (!(have_stext || have_text) || !have_etext)
                return -ENODATA;
        /* _stext where present (perf prefers it), else _text. */
        ret->start = page_down(have_stext ? stext : text);
        ret->end = page_up(etext);
        if (ret->end <= ret->start)
                return -ENODATA;
        return 0;
}

/* Lowest start and highest end of the modules in /proc/modules
 * (perf's kcore_copy__process_modules() takes the lowest start). */
static int modules_span(const char *modules, uint64_t *ret_lo, uint64_t *ret_hi) {
        uint64_t lo = UINT64_MAX, hi = 0;
        bool any = false, hidden = false;

        for (const char *line = modules; line && *line;) {
                const char *nl = strchr(line, '\n');
                char name[64], state[16];
                unsigned long long size, addr;

                /* name size refcount deps state address [taint] */
                if (sscanf(line, "%63s %llu %*s %*s %15s %llx", name, &size, state, &addr) == 4) {
                        if (addr == 0)
                                hidden = true;
                        else if (size > 0 && addr <= UINT64_MAX - size) {
                                lo = MIN(lo, (uint64_t) addr);
                                hi = MAX(hi, (uint64_t) (addr + size));
                                any = true;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        if (!any)
                return hidden ? -EPERM : -ENODATA;
        *ret_lo = lo;
        *ret_hi = hi;
        return 0;
}

/* perf's kallsyms__is_function(): text symbols, weak ones included. */
static bool kallsyms_is_function(char type) {
        type = (char) toupper((unsigned char) type);
        return type == 'T' || type == 'W';
}

/* Lowest and highest function symbol tagged "[...]": module code, and the
 * code the kernel generates outside any module, which kallsyms tags too:
 * "[bpf]" (JITed programs, BPF trampolines and dispatchers),
 * "[__builtin__ftrace]" (ftrace trampolines), "[__builtin__kprobes]"
 * (kprobe instruction slots). perf's kcore_copy__process_kallsyms() takes
 * every symbol whose name holds '[' the same way. */
static int tagged_symbols_span(const char *kallsyms, uint64_t *ret_lo, uint64_t *ret_hi) {
        uint64_t lo = UINT64_MAX, hi = 0;
        bool any = false, hidden = false;

        for (const char *line = kallsyms; line && *line;) {
                const char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t) (nl - line) : strlen(line);
                unsigned long long addr;
                char type;

                if (sscanf(line, "%llx %c", &addr, &type) == 2 && kallsyms_is_function(type) &&
                    memchr(line, '[', len)) {
                        if (addr == 0)
                                hidden = true;
                        else {
                                lo = MIN(lo, (uint64_t) addr);
                                hi = MAX(hi, (uint64_t) addr);
                                any = true;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        if (!any)
                return hidden ? -EPERM : -ENODATA;
        *ret_lo = lo;
        *ret_hi = hi;
        return 0;
}

int kcore_module_area_range(const char *kallsyms, const char *modules, KcoreRange *ret) {
        uint64_t mlo = 0, mhi = 0, slo = 0, shi = 0, lo, hi;
        int rm, rs;

        rm = modules_span(modules ?: "", &mlo, &mhi);
        rs = tagged_symbols_span(kallsyms ?: "", &slo, &shi);
        if (rm < 0 && rs < 0)
                return rm == -EPERM || rs == -EPERM ? -EPERM : -ENODATA;

        /* As perf's kcore_copy__calc_maps(): from the lowest module or
         * tagged symbol, page aligned down, to the highest tagged symbol
         * rounded up plus one page "to, hopefully, encompass that symbol"
         * (kallsyms gives no sizes). The end of the last module (its size
         * is known) may reach further; that is kept too. */
        lo = rm >= 0 ? mlo : UINT64_MAX;
        hi = rm >= 0 ? mhi : 0;
        if (rs >= 0) {
                lo = MIN(lo, slo);
                hi = MAX(hi, page_up(shi) > UINT64_MAX - KCORE_PAGE ? UINT64_MAX : page_up(shi) + KCORE_PAGE);
        }
        ret->start = page_down(lo);
        ret->end = page_up(hi);
        return ret->end > ret->start ? 0 : -ENODATA;
}

typedef struct Piece {
        uint64_t vaddr, len, src_offset, dst_offset;
} Piece;

static int pread_exact(int fd, void *buf, size_t n, off_t off) {
        uint8_t *p = buf;

        while (n > 0) {
                ssize_t k = pread(fd, p, n, off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
                off += k;
        }
        return 0;
}

static int read_phdrs(int fd, const char *path, Elf64_Ehdr *eh, Elf64_Phdr **ret, char **ret_error) {
        _cleanup_free_ Elf64_Phdr *ph = NULL;
        int r;

        r = pread_exact(fd, eh, sizeof *eh, 0);
        if (r < 0)
                return set_error_message(-EBADMSG, ret_error, "%s: too short for an ELF header", path);
        if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
            eh->e_ident[EI_DATA] != ELFDATA2LSB)
                return set_error_message(-EBADMSG, ret_error, "%s: not a 64-bit little-endian ELF file",
                                         path);
        if (eh->e_type != ET_CORE)
                return set_error_message(-EBADMSG, ret_error, "%s: not an ELF core file (kcore format)",
                                         path);
        if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > KCORE_MAX_PHDRS)
                return set_error_message(-EBADMSG, ret_error,
                                         "%s: implausible program header table (%u entries of %u bytes)",
                                         path, eh->e_phnum, eh->e_phentsize);
        ph = calloc(eh->e_phnum, sizeof *ph);
        if (!ph)
                return -ENOMEM;
        r = pread_exact(fd, ph, (size_t) eh->e_phnum * sizeof *ph, (off_t) eh->e_phoff);
        if (r < 0)
                return set_error_message(-EBADMSG, ret_error, "%s: program headers cut short", path);
        *ret = TAKE_PTR(ph);
        return 0;
}

/* Intersect [want) with every PT_LOAD; append the pieces. */
static int add_pieces(const Elf64_Ehdr *eh, const Elf64_Phdr *ph, KcoreRange want, Piece *pieces, size_t *n,
                      uint64_t *covered) {
        *covered = 0;
        for (size_t i = 0; i < eh->e_phnum; i++) {
                uint64_t s, e;

                if (ph[i].p_type != PT_LOAD || ph[i].p_filesz == 0 || ph[i].p_vaddr > UINT64_MAX - ph[i].p_filesz)
                        continue;
                s = MAX(want.start, ph[i].p_vaddr);
                e = MIN(want.end, ph[i].p_vaddr + ph[i].p_filesz);
                if (s >= e)
                        continue;
                if (*n >= KCORE_MAX_SEGMENTS)
                        return -E2BIG;
                pieces[(*n)++] = (Piece){ .vaddr = s, .len = e - s, .src_offset = ph[i].p_offset + (s - ph[i].p_vaddr) };
                *covered += e - s;
        }
        return 0;
}

static int copy_range(int src, uint64_t src_off, int dst, uint64_t dst_off, uint64_t len, uint8_t *buf) {
        while (len > 0) {
                size_t n = (size_t) MIN(len, (uint64_t) BUNDLE_IO_CHUNK);
                ssize_t k = pread(src, buf, n, (off_t) src_off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                for (ssize_t w = 0; w < k;) {
                        ssize_t m = pwrite(dst, buf + w, (size_t) (k - w), (off_t) (dst_off + (uint64_t) w));
                        if (m < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        w += m;
                }
                src_off += (uint64_t) k;
                dst_off += (uint64_t) k;
                len -= (uint64_t) k;
        }
        return 0;
}

int kcore_copy(const char *kcore_path, const char *kallsyms, const char *modules, int out_fd, uint64_t max_size,
               KcoreCopyResult *ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ Elf64_Phdr *ph = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        Piece pieces[KCORE_MAX_SEGMENTS];
        KcoreCopyResult res = {};
        Elf64_Ehdr eh, out;
        size_t n = 0, n_text;
        uint64_t covered, offset;
        char a[32];
        int r;

        r = kcore_kernel_text_range(kallsyms, &res.text);
        if (r == -EPERM)
                return set_error_message(r, ret_error,
                                         "kallsyms addresses are hidden (kernel.kptr_restrict); cannot "
                                         "locate the kernel text");
        if (r < 0)
                return set_error_message(r, ret_error,
                                         "kallsyms has no _stext/_etext; cannot locate the kernel text");
        r = kcore_module_area_range(kallsyms, modules, &res.modules);
        if (r < 0)
                res.modules = (KcoreRange){}; /* none, or hidden: the kernel text alone still decodes */

        fd = open(kcore_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return set_error_message(-errno, ret_error, "cannot open %s: %m", kcore_path);
        r = read_phdrs(fd, kcore_path, &eh, &ph, ret_error);
        if (r < 0)
                return r;

        r = add_pieces(&eh, ph, res.text, pieces, &n, &covered);
        if (r < 0)
                return set_error_message(r, ret_error, "%s: too many segments", kcore_path);
        if (covered != res.text.end - res.text.start)
                return set_error_message(-ENODATA, ret_error,
                                         "%s does not map all of the kernel text 0x%" PRIx64 "-0x%" PRIx64,
                                         kcore_path, res.text.start, res.text.end);
        n_text = n;
        if (res.modules.end > res.modules.start) {
                r = add_pieces(&eh, ph, res.modules, pieces, &n, &covered);
                if (r < 0)
                        return set_error_message(r, ret_error, "%s: too many segments", kcore_path);
                if (n == n_text)
                        res.modules = (KcoreRange){}; /* module area not in kcore: leave it out */
        }

        /* Layout: ELF header, program headers, then each piece page aligned
         * (so the output could even be mmapped piecewise). */
        offset = page_up(sizeof(Elf64_Ehdr) + n * sizeof(Elf64_Phdr));
        for (size_t i = 0; i < n; i++) {
                pieces[i].dst_offset = offset;
                offset = page_up(offset + pieces[i].len);
        }
        if (max_size > 0 && offset > max_size)
                return set_error_message(-EFBIG, ret_error, "kernel text copy would be %s, over its limit",
                                         bundle_format_size(a, offset));

        if (ftruncate(out_fd, 0) < 0)
                return set_error_message(-errno, ret_error, "cannot truncate the output: %m");
        out = (Elf64_Ehdr){
                .e_type = ET_CORE,
                .e_machine = eh.e_machine,
                .e_version = EV_CURRENT,
                .e_phoff = sizeof(Elf64_Ehdr),
                .e_ehsize = sizeof(Elf64_Ehdr),
                .e_phentsize = sizeof(Elf64_Phdr),
                .e_phnum = (uint16_t) n,
        };
        memcpy(out.e_ident, eh.e_ident, EI_NIDENT);
        if (pwrite(out_fd, &out, sizeof out, 0) != (ssize_t) sizeof out)
                return set_error_message(-EIO, ret_error, "cannot write the ELF header: %m");
        for (size_t i = 0; i < n; i++) {
                Elf64_Phdr p = {
                        .p_type = PT_LOAD,
                        .p_flags = PF_R | PF_X,
                        .p_offset = pieces[i].dst_offset,
                        .p_vaddr = pieces[i].vaddr,
                        .p_filesz = pieces[i].len,
                        .p_memsz = pieces[i].len,
                        .p_align = KCORE_PAGE,
                };
                if (pwrite(out_fd, &p, sizeof p, (off_t) (sizeof out + i * sizeof p)) != (ssize_t) sizeof p)
                        return set_error_message(-EIO, ret_error, "cannot write a program header: %m");
        }

        buf = malloc(BUNDLE_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = copy_range(fd, pieces[i].src_offset, out_fd, pieces[i].dst_offset, pieces[i].len, buf);
                if (r < 0)
                        return set_error_message(r, ret_error,
                                                 "copying 0x%" PRIx64 "+0x%" PRIx64 " from %s failed: %s",
                                                 pieces[i].vaddr, pieces[i].len, kcore_path, strerror(-r));
        }
        /* The last piece ends page aligned too: identical layout whatever
         * its length. */
        if (ftruncate(out_fd, (off_t) offset) < 0)
                return set_error_message(-errno, ret_error, "cannot size the output: %m");

        res.n_segments = (unsigned) n;
        res.size = offset;
        if (ret)
                *ret = res;
        return 0;
}
