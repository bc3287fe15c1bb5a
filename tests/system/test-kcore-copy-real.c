/* SPDX-License-Identifier: MIT */

/* kcore copy of the running kernel, where /proc/kcore exists (root, a
 * kernel built with CONFIG_PROC_KCORE): the copy must hold the kernel text
 * at _stext and its bytes must equal kcore's. */

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "common/basic/fileio.h"
#include "common/bundle/kcore-copy.h"
#include "test.h"

static void test_real_kcore(void) {
        _cleanup_free_ char *ks = NULL, *mods = NULL, *error = NULL;
        Elf64_Phdr ph;
        KcoreCopyResult res;
        size_t n;
        int fd;

        if (access("/proc/kcore", R_OK) < 0)
                test_skip("no readable /proc/kcore on this machine (bundles then record why it is absent)");
        ASSERT_OK(read_full_file("/proc/kallsyms", 256 << 20, &ks, &n));
        ASSERT_OK(read_full_file("/proc/modules", 16 << 20, &mods, &n));
        fd = memfd_create("kcore-copy", MFD_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(kcore_copy("/proc/kcore", ks, mods, fd, 0, &res, &error));
        ASSERT_TRUE(res.n_segments >= 1);
        printf("kernel text 0x%llx-0x%llx, modules 0x%llx-0x%llx, %u segments, %llu bytes\n",
               (unsigned long long) res.text.start, (unsigned long long) res.text.end,
               (unsigned long long) res.modules.start, (unsigned long long) res.modules.end, res.n_segments,
               (unsigned long long) res.size);
        /* The copy's first segment starts at the kernel text. */
        ASSERT_EQ(pread(fd, &ph, sizeof ph, sizeof(Elf64_Ehdr)), (ssize_t) sizeof ph);
        ASSERT_EQ(ph.p_type, PT_LOAD);
        ASSERT_EQ_U64(ph.p_vaddr, res.text.start);
        close(fd);
}

RUN_TESTS(TEST(test_real_kcore));
