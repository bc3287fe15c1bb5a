/* SPDX-License-Identifier: MIT */

/*
 * kcore copy on a kcore-shaped fixture generated here (these machines have
 * no /proc/kcore): an ELF core file with PT_LOAD segments at kernel
 * addresses — direct map, vmalloc, kernel text, modules — sparse on disk,
 * with a recognizable byte pattern per address. Only the text and module
 * ranges must come out, at the right addresses, byte for byte.
 */

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include "common/bundle/kcore-copy.h"
#include "bundle-test-util.h"

#define TEXT_VADDR 0xffffffff81000000ULL
#define TEXT_SIZE (6ULL << 20)
#define MOD_VADDR 0xffffffffc0000000ULL
#define MOD_SIZE (2ULL << 20)
#define DIRECT_VADDR 0xffff888000000000ULL
#define DIRECT_SIZE (64ULL << 20)
#define VMALLOC_VADDR 0xffffc90000000000ULL
#define VMALLOC_SIZE (8ULL << 20)

/* The byte at a kernel virtual address in the fixture. */
static uint8_t byte_at(uint64_t vaddr) {
        uint64_t x = vaddr * 0x9E3779B97F4A7C15ULL;
        return (uint8_t) (x >> 56);
}

typedef struct Seg {
        uint64_t vaddr, size;
        bool fill; /* write the pattern (the direct map stays a hole) */
} Seg;

static void make_kcore(const char *path, const Seg *segs, size_t n) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        Elf64_Ehdr eh = {
                .e_type = ET_CORE,
                .e_machine = EM_X86_64,
                .e_version = EV_CURRENT,
                .e_phoff = sizeof(Elf64_Ehdr),
                .e_ehsize = sizeof(Elf64_Ehdr),
                .e_phentsize = sizeof(Elf64_Phdr),
                .e_phnum = (uint16_t) (n + 1),
        };
        uint64_t off = 0x10000;
        uint8_t *buf = malloc(1 << 20);

        ASSERT_TRUE(fd >= 0);
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        ASSERT_EQ(pwrite(fd, &eh, sizeof eh, 0), (ssize_t) sizeof eh);
        /* A PT_NOTE first, as real kcore has. */
        {
                Elf64_Phdr note = { .p_type = PT_NOTE, .p_offset = 0x1000, .p_filesz = 0 };
                ASSERT_EQ(pwrite(fd, &note, sizeof note, sizeof eh), (ssize_t) sizeof note);
        }
        for (size_t i = 0; i < n; i++) {
                Elf64_Phdr ph = {
                        .p_type = PT_LOAD,
                        .p_flags = PF_R | PF_W | PF_X,
                        .p_offset = off,
                        .p_vaddr = segs[i].vaddr,
                        .p_paddr = 0,
                        .p_filesz = segs[i].size,
                        .p_memsz = segs[i].size,
                        .p_align = 4096,
                };
                ASSERT_EQ(pwrite(fd, &ph, sizeof ph, (off_t) (sizeof eh + (i + 1) * sizeof ph)), (ssize_t) sizeof ph);
                if (segs[i].fill)
                        for (uint64_t o = 0; o < segs[i].size; o += 1 << 20) {
                                size_t len = (size_t) MIN((uint64_t) 1 << 20, segs[i].size - o);
                                for (size_t k = 0; k < len; k++)
                                        buf[k] = byte_at(segs[i].vaddr + o + k);
                                ASSERT_EQ(pwrite(fd, buf, len, (off_t) (off + o)), (ssize_t) len);
                        }
                off += segs[i].size;
        }
        ASSERT_OK(ftruncate(fd, (off_t) off));
        free(buf);
        close(fd);
}

static const char kallsyms[] = "0000000000000000 A fixed_percpu_data\n"
                               "ffffffff81000000 T _text\n"
                               "ffffffff81000000 T startup_64\n"
                               "ffffffff81001000 T _stext\n"
                               "ffffffff81234560 T do_syscall_64\n"
                               "ffffffff81400123 T _etext\n"
                               "ffffffff82000000 D _sdata\n"
                               "ffffffffc0002010 t foo_init\t[foo]\n";

/* What a kernel generates outside modules, as /proc/kallsyms lists it:
 * a BPF program (ptraced's own tracepoint triggers are such), a BPF
 * trampoline, an ftrace trampoline and a kprobe slot, all in the module
 * area on x86-64. */
static const char kallsyms_generated[] = "ffffffff81001000 T _stext\n"
                                         "ffffffff81400123 T _etext\n"
                                         "ffffffffc0001040 t bpf_prog_6deef7357e7b4530_trigger\t[bpf]\n"
                                         "ffffffffc0020000 t bpf_trampoline_6442491857\t[bpf]\n"
                                         "ffffffffc0030000 t ftrace_trampoline\t[__builtin__ftrace]\n"
                                         "ffffffffc0040100 t kprobe_insn_page\t[__builtin__kprobes]\n";

static const char kallsyms_text_only[] = "ffffffff81001000 T _stext\n"
                                         "ffffffff81400123 T _etext\n";

static const char modules[] = "foo 16384 0 - Live 0xffffffffc0002000\n"
                              "bar 40960 1 foo, Live 0xffffffffc0010000 (OE)\n";

static void setup(char **dir, char **kcore) {
        const Seg segs[] = {
                { DIRECT_VADDR, DIRECT_SIZE, false },
                { VMALLOC_VADDR, VMALLOC_SIZE, true },
                { TEXT_VADDR, TEXT_SIZE, true },
                { MOD_VADDR, MOD_SIZE, true },
        };

        *dir = make_scratch_dir("kcore");
        ASSERT_TRUE(asprintf(kcore, "%s/kcore", *dir) > 0);
        make_kcore(*kcore, segs, ELEMENTSOF(segs));
}

/* The copy's output file in the scratch directory. */
static int open_output(const char *dir, char **ret_path) {
        int fd;

        ASSERT_TRUE(asprintf(ret_path, "%s/kcore.elf", dir) > 0);
        fd = open(*ret_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        return fd;
}

static void test_ranges(void) {
        KcoreRange r;

        ASSERT_OK(kcore_kernel_text_range(kallsyms, &r));
        ASSERT_EQ_U64(r.start, 0xffffffff81001000ULL); /* _stext wins over _text */
        ASSERT_EQ_U64(r.end, 0xffffffff81401000ULL);   /* _etext rounded up */
        ASSERT_OK(kcore_module_area_range(kallsyms, modules, &r));
        ASSERT_EQ_U64(r.start, 0xffffffffc0002000ULL);
        ASSERT_EQ_U64(r.end, 0xffffffffc001a000ULL);
        /* Tagged code beyond the modules widens the area both ways: perf's
         * rule, up to the last tagged symbol plus a page. */
        ASSERT_OK(kcore_module_area_range(kallsyms_generated, modules, &r));
        ASSERT_EQ_U64(r.start, 0xffffffffc0001000ULL);
        ASSERT_EQ_U64(r.end, 0xffffffffc0042000ULL);
        /* No modules at all: the generated code alone. */
        ASSERT_OK(kcore_module_area_range(kallsyms_generated, "", &r));
        ASSERT_EQ_U64(r.start, 0xffffffffc0001000ULL);
        ASSERT_EQ_U64(r.end, 0xffffffffc0042000ULL);
        /* Data symbols do not count, tagged or not (kallsyms__is_function). */
        ASSERT_ERROR(kcore_module_area_range("ffffffffc0005000 d some_data\t[foo]\n", "", &r), ENODATA);

        /* Hidden addresses (kptr_restrict) and missing symbols. */
        ASSERT_ERROR(kcore_kernel_text_range("0000000000000000 T _stext\n0000000000000000 T _etext\n", &r), EPERM);
        ASSERT_ERROR(kcore_kernel_text_range("ffffffff81000000 T _stext\n", &r), ENODATA);
        ASSERT_ERROR(kcore_module_area_range("", "foo 16384 0 - Live 0x0000000000000000\n", &r), EPERM);
        ASSERT_ERROR(kcore_module_area_range("0000000000000000 t bpf_prog_x\t[bpf]\n", "", &r), EPERM);
        ASSERT_ERROR(kcore_module_area_range(kallsyms_text_only, "", &r), ENODATA);
}

static void check_segment(int fd, const GElf_Phdr *ph) {
        uint8_t *buf = malloc(ph->p_filesz);

        ASSERT_EQ(pread(fd, buf, ph->p_filesz, (off_t) ph->p_offset), (ssize_t) ph->p_filesz);
        for (uint64_t k = 0; k < ph->p_filesz; k++)
                if (buf[k] != byte_at(ph->p_vaddr + k))
                        test_fail("byte at 0x%llx differs", (unsigned long long) (ph->p_vaddr + k));
        free(buf);
}

static void test_copy(void) {
        _cleanup_free_ char *dir = NULL, *kcore = NULL, *out = NULL, *error = NULL;
        KcoreCopyResult res;
        struct stat st, st_in;
        GElf_Ehdr eh;
        GElf_Phdr ph;
        Elf *elf;
        size_t phnum;
        int fd;

        setup(&dir, &kcore);
        fd = open_output(dir, &out);
        ASSERT_OK(kcore_copy(kcore, kallsyms, modules, fd, 0, &res, &error));
        ASSERT_EQ(res.n_segments, 2);
        ASSERT_EQ_U64(res.text.start, 0xffffffff81001000ULL);
        ASSERT_EQ_U64(res.modules.end, 0xffffffffc001a000ULL);
        ASSERT_OK(fstat(fd, &st));
        ASSERT_OK(stat(kcore, &st_in));
        ASSERT_EQ((uint64_t) st.st_size, res.size);
        /* Small: text + modules + headers, not the 80 MiB of the fixture. */
        ASSERT_TRUE(st.st_size < (off_t) (5ULL << 20));
        printf("  fixture %lld bytes -> copy %lld bytes\n", (long long) st_in.st_size, (long long) st.st_size);

        /* A plain ELF core that libelf reads; PT_LOADs at the right addresses. */
        ASSERT_TRUE(elf_version(EV_CURRENT) != EV_NONE);
        elf = elf_begin(fd, ELF_C_READ, NULL);
        ASSERT_NOT_NULL(elf);
        ASSERT_NOT_NULL(gelf_getehdr(elf, &eh));
        ASSERT_EQ(eh.e_type, ET_CORE);
        ASSERT_EQ(eh.e_machine, EM_X86_64);
        ASSERT_OK(elf_getphdrnum(elf, &phnum));
        ASSERT_EQ(phnum, 2);
        ASSERT_NOT_NULL(gelf_getphdr(elf, 0, &ph));
        ASSERT_EQ(ph.p_type, PT_LOAD);
        ASSERT_EQ_U64(ph.p_vaddr, 0xffffffff81001000ULL);
        ASSERT_EQ(ph.p_filesz, 0x400000);
        ASSERT_EQ(ph.p_offset % 4096, 0);
        check_segment(fd, &ph);
        ASSERT_NOT_NULL(gelf_getphdr(elf, 1, &ph));
        ASSERT_EQ_U64(ph.p_vaddr, 0xffffffffc0002000ULL);
        ASSERT_EQ(ph.p_filesz, 0x18000);
        check_segment(fd, &ph);
        elf_end(elf);

        /* Over the size limit: refused before writing. */
        ASSERT_ERROR(kcore_copy(kcore, kallsyms, modules, fd, 1 << 20, &res, &error), EFBIG);
        ASSERT_CONTAINS(error, "over its limit");
        close(fd);
        rm_rf(dir);
}

/* No module loaded, but BPF programs, trampolines and kprobe slots: their
 * code is copied, byte for byte. Before, the copy took /proc/modules alone
 * and left them out, so kernel decode lost sync in them. */
static void test_copy_generated_code(void) {
        _cleanup_free_ char *dir = NULL, *kcore = NULL, *out = NULL, *error = NULL;
        KcoreCopyResult res;
        Elf64_Phdr ph;
        int fd;

        setup(&dir, &kcore);
        fd = open_output(dir, &out);
        ASSERT_OK(kcore_copy(kcore, kallsyms_generated, "", fd, 0, &res, &error));
        ASSERT_EQ(res.n_segments, 2);
        ASSERT_EQ_U64(res.modules.start, 0xffffffffc0001000ULL);
        ASSERT_EQ_U64(res.modules.end, 0xffffffffc0042000ULL);
        ASSERT_EQ(pread(fd, &ph, sizeof ph, (off_t) (sizeof(Elf64_Ehdr) + sizeof ph)), (ssize_t) sizeof ph);
        ASSERT_EQ(ph.p_type, PT_LOAD);
        ASSERT_EQ_U64(ph.p_vaddr, 0xffffffffc0001000ULL);
        ASSERT_EQ_U64(ph.p_filesz, 0x41000);
        {
                GElf_Phdr g = { .p_vaddr = ph.p_vaddr, .p_offset = ph.p_offset, .p_filesz = ph.p_filesz };
                check_segment(fd, &g);
        }
        close(fd);
        rm_rf(dir);
}

static void test_failures(void) {
        _cleanup_free_ char *dir = NULL, *kcore = NULL, *out = NULL, *error = NULL, *bad = NULL;
        KcoreCopyResult res;
        int fd;

        setup(&dir, &kcore);
        fd = open_output(dir, &out);

        /* Kernel text not mapped by kcore. */
        ASSERT_ERROR(kcore_copy(kcore, "ffffffff90000000 T _stext\nffffffff90100000 T _etext\n", modules, fd, 0, &res,
                                &error),
                     ENODATA);
        ASSERT_CONTAINS(error, "does not map all of the kernel text");
        /* Hidden kallsyms. */
        ASSERT_ERROR(kcore_copy(kcore, "0000000000000000 T _stext\n0000000000000000 T _etext\n", modules, fd, 0, &res,
                                &error),
                     EPERM);
        ASSERT_CONTAINS(error, "kptr_restrict");
        /* No kcore: what these machines have. */
        ASSERT_ERROR(kcore_copy("/nonexistent/kcore", kallsyms, modules, fd, 0, &res, &error), ENOENT);
        ASSERT_CONTAINS(error, "/nonexistent/kcore");
        /* Not an ELF core. */
        ASSERT_TRUE(asprintf(&bad, "%s/bad", dir) > 0);
        {
                static const char garbage[] = "\177ELF garbage garbage garbage garbage garbage garbage garbage garbage";
                write_file(bad, garbage, sizeof garbage);
        }
        ASSERT_ERROR(kcore_copy(bad, kallsyms, modules, fd, 0, &res, &error), EBADMSG);
        /* Hidden modules: the kernel text alone is copied. */
        ASSERT_OK(kcore_copy(kcore, kallsyms_text_only, "foo 16384 0 - Live 0x0000000000000000\n", fd, 0, &res,
                             &error));
        ASSERT_EQ(res.n_segments, 1);
        ASSERT_EQ(res.modules.start, 0);
        close(fd);
        rm_rf(dir);
}

RUN_TESTS(TEST(test_ranges), TEST(test_copy), TEST(test_copy_generated_code), TEST(test_failures));
