/* SPDX-License-Identifier: MIT */

/* Images, the loader, the kernel-like image, blocks and walks over them. */

#include <elf.h>
#include <unistd.h>

#include "daemon/synth/block.h"
#include "daemon/synth/kernel.h"
#include "daemon/synth/loader.h"
#include "daemon/synth/walk.h"
#include "test.h"

static const char *pick_exe(void) {
        static const char *const exes[] = {"/usr/bin/ls", "/usr/bin/bash", "/bin/ls"};

        for (size_t i = 0; i < ELEMENTSOF(exes); i++)
                if (access(exes[i], R_OK) == 0)
                        return exes[i];
        test_skip("no dynamically linked executable found");
}

static void test_load_exe(void) {
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        _cleanup_free_ char *error = NULL;
        bool exec = false;

        ASSERT_OK(synth_image_load(pick_exe(), false, &img, &error));
        ASSERT_TRUE(img->pie);
        ASSERT_NOT_NULL(img->interp);
        ASSERT_NOT_NULL(img->needed);
        ASSERT_NOT_NULL(img->needed[0]);
        ASSERT_TRUE(img->build_id_size == 20);
        /* Stripped: function entries come from .eh_frame_hdr. */
        ASSERT_TRUE(img->n_funcs > 50);
        for (size_t i = 0; i < img->n_segments; i++)
                exec = exec || (img->segments[i].flags & PF_X);
        ASSERT_TRUE(exec);
        for (size_t i = 0; i < img->n_funcs; i++)
                ASSERT_NOT_NULL(synth_image_exec_segment(img, img->funcs[i]));
        ASSERT_TRUE(img->n_relocs > 0);
        ASSERT_TRUE(img->n_icall_targets > 0);
}

static void test_load_errors(void) {
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        _cleanup_free_ char *error = NULL;

        ASSERT_ERROR(synth_image_load("/nonexistent", false, &img, &error), ENOENT);
        ASSERT_CONTAINS(error, "/nonexistent");
        error = mfree(error);
        ASSERT_ERROR(synth_image_load("/etc/passwd", false, &img, &error), EBADMSG);
        ASSERT_CONTAINS(error, "/etc/passwd");
}

static void test_loader(void) {
        SynthImageSet set = {};
        SynthAddressPlan plan = {};
        _cleanup_(synth_address_space_freep) SynthAddressSpace *a = NULL, *b = NULL;
        _cleanup_free_ char *error = NULL, *libc = NULL;
        SynthRng rng;
        bool have_libc = false, have_ld = false;

        synth_rng_seed(&rng, 3, 0);
        ASSERT_OK(synth_loader_load_process(&set, &plan, pick_exe(), &rng, 0x1000, &a, &error));
        ASSERT_OK(synth_loader_load_process(&set, &plan, pick_exe(), &rng, 0x2000, &b, &error));
        ASSERT_TRUE(a->n_maps >= 3);
        for (size_t i = 0; i < a->n_maps; i++) {
                const char *p = a->maps[i].image->path;

                have_libc = have_libc || strstr(p, "/libc.so.6");
                have_ld = have_ld || strstr(p, "/ld-linux-x86-64.so.2");
                /* Sorted, page aligned, in user space. */
                ASSERT_EQ(a->maps[i].start & 0xfff, 0);
                ASSERT_TRUE(a->maps[i].end < UINT64_C(0x800000000000));
                if (i > 0)
                        ASSERT_TRUE(a->maps[i - 1].end <= a->maps[i].start);
        }
        ASSERT_TRUE(have_libc);
        ASSERT_TRUE(have_ld);
        /* The executable is placed like a PIE, libraries near 0x7f.... */
        ASSERT_TRUE(a->maps[0].start >= UINT64_C(0x555555554000) &&
                    a->maps[0].start < UINT64_C(0x570000000000));
        ASSERT_TRUE(a->maps[a->n_maps - 1].start >= UINT64_C(0x7e0000000000));
        /* The same images in two processes share the file but not the addresses. */
        for (size_t i = 0; i < a->n_maps; i++)
                for (size_t k = 0; k < b->n_maps; k++)
                        ASSERT_TRUE(a->maps[i].end <= b->maps[k].start ||
                                    b->maps[k].end <= a->maps[i].start);
        ASSERT_TRUE(synth_address_space_lookup(a, "malloc") != 0);
        ASSERT_TRUE(synth_address_space_find(a, synth_address_space_lookup(a, "malloc")) != NULL);
        ASSERT_EQ(synth_address_space_lookup(a, "no_such_function_anywhere"), 0);
        /* ld.so.cache or the default directories find libc. */
        ASSERT_OK(synth_loader_find_library(&set, a->maps[0].image, "libc.so.6", &libc));
        ASSERT_TRUE(access(libc, R_OK) == 0);
        synth_address_plan_done(&plan);
        synth_image_set_done(&set);
}

static void load_kernel(SynthImageSet *set, SynthKernel *k) {
        _cleanup_free_ char *error = NULL;

        ASSERT_OK(synth_kernel_load(set, NULL, k, &error));
}

static void test_kernel(void) {
        SynthImageSet set = {};
        SynthKernel k;
        _cleanup_free_ char *text = NULL;
        size_t size;

        load_kernel(&set, &k);
        ASSERT_EQ_U64(k.text_start, UINT64_C(0xffffffff81000000));
        ASSERT_TRUE(k.entry_syscall > k.text_start && k.entry_syscall < k.text_end);
        ASSERT_OK(synth_kernel_kallsyms(&k, &text, &size));
        ASSERT_CONTAINS(text, "ffffffff81000000 T startup_64\n");
        ASSERT_CONTAINS(text, " T entry_SYSCALL_64\n");
        ASSERT_CONTAINS(text, " T asm_exc_page_fault\n");
        ASSERT_CONTAINS(text, " T asm_common_interrupt\n");
        ASSERT_CONTAINS(text, " T asm_sysvec_apic_timer_interrupt\n");
        ASSERT_CONTAINS(text, " t ");
        /* Address-taken functions: the system call table and operations. */
        ASSERT_TRUE(k.image->n_icall_targets >= 20);
        synth_kernel_done(&k);
        synth_image_set_done(&set);
}

/* Entry points end in real SYSRETQ/IRETQ: follow the fall-through and
 * direct-call spine from each entry (calls return) to its exit. */
static SynthBlockEnd spine_exit(SynthBlockCache *c, const SynthImage *img, uint64_t entry) {
        uint64_t a = entry;

        for (unsigned i = 0; i < 100; i++) {
                SynthBlock *b = synth_block_get(c, img, a);

                ASSERT_NOT_NULL(b);
                switch (b->kind) {
                case SYNTH_END_SYSRET:
                case SYNTH_END_IRET:
                case SYNTH_END_BAD:
                        return b->kind;
                case SYNTH_END_JCC:
                case SYNTH_END_CALL:
                case SYNTH_END_FALL:
                        a = b->end;
                        break;
                case SYNTH_END_JMP:
                        a = b->target;
                        break;
                default:
                        return b->kind;
                }
        }
        return _SYNTH_END_MAX;
}

static void test_blocks(void) {
        SynthImageSet set = {};
        SynthBlockCache cache;
        SynthKernel k;
        size_t n_jt = 0, n_bad = 0;

        load_kernel(&set, &k);
        ASSERT_OK(synth_block_cache_init(&cache));
        ASSERT_EQ(spine_exit(&cache, k.image, k.entry_syscall), SYNTH_END_SYSRET);
        ASSERT_EQ(spine_exit(&cache, k.image, k.exc_page_fault), SYNTH_END_IRET);
        ASSERT_EQ(spine_exit(&cache, k.image, k.common_interrupt), SYNTH_END_IRET);
        ASSERT_EQ(spine_exit(&cache, k.image, k.apic_timer), SYNTH_END_IRET);
        ASSERT_EQ(spine_exit(&cache, k.image, k.reschedule_ipi), SYNTH_END_IRET);
        /* Every function of the kernel decodes; none runs into a bad
         * instruction except the boot stub's HLT; switch statements have
         * jump tables. */
        for (size_t i = 0; i < k.image->n_funcs; i++) {
                uint64_t a = k.image->funcs[i], end = synth_image_function_end(k.image, a);

                while (a < end) {
                        SynthBlock *b = synth_block_get(&cache, k.image, a);

                        ASSERT_NOT_NULL(b);
                        n_jt += b->n_jt > 0;
                        if (b->kind == SYNTH_END_BAD) {
                                const SynthSymbol *s = synth_image_symbol_at(k.image, synth_block_last(b));

                                n_bad++;
                                if (!s || !streq(s->name, "startup_64"))
                                        test_fail("bad instruction at 0x%" PRIx64 " in %s", synth_block_last(b),
                                                  s ? s->name : "?");
                        }
                        a = b->end > a ? b->end : a + 1;
                }
        }
        ASSERT_TRUE(n_jt >= 2);
        ASSERT_TRUE(n_bad >= 1);
        synth_block_cache_done(&cache);
        synth_kernel_done(&k);
        synth_image_set_done(&set);
}

static void test_walk(void) {
        SynthImageSet set = {};
        SynthAddressPlan plan = {};
        _cleanup_(synth_address_space_freep) SynthAddressSpace *as = NULL;
        _cleanup_free_ char *error = NULL;
        SynthBlockCache cache;
        SynthWalker w;
        SynthRng rng;
        unsigned kinds[_SYNTH_END_MAX] = {};

        synth_rng_seed(&rng, 9, 0);
        ASSERT_OK(synth_loader_load_process(&set, &plan, pick_exe(), &rng, 0x1000, &as, &error));
        ASSERT_OK(synth_block_cache_init(&cache));
        ASSERT_OK(synth_walker_init(&w, as, &cache, 9, 1));
        ASSERT_OK(synth_walker_restart(&w));
        for (unsigned i = 0; i < 200000; i++) {
                SynthStep s;

                ASSERT_OK(synth_walker_step(&w, &s));
                kinds[s.kind]++;
                switch (s.kind) {
                case SYNTH_END_SYSCALL:
                        synth_walker_jump(&w, s.to);
                        break;
                case SYNTH_END_BAD:
                        ASSERT_OK(synth_walker_restart(&w));
                        break;
                case SYNTH_END_CALL:
                case SYNTH_END_ICALL:
                        /* The return address is the instruction after the call. */
                        ASSERT_EQ_U64(w.stack[w.depth - 1], s.ret);
                        ASSERT_TRUE(w.ip == s.to);
                        break;
                default:
                        ASSERT_TRUE(w.ip == s.to);
                        break;
                }
        }
        ASSERT_TRUE(kinds[SYNTH_END_JCC] > 1000);
        ASSERT_TRUE(kinds[SYNTH_END_CALL] > 100);
        ASSERT_TRUE(kinds[SYNTH_END_RET] > 100);
        ASSERT_TRUE(kinds[SYNTH_END_ICALL] + kinds[SYNTH_END_IJMP] > 10);
        synth_walker_done(&w);
        synth_block_cache_done(&cache);
        synth_address_plan_done(&plan);
        synth_image_set_done(&set);
}

/* AMD's own extensions end a block as a bad instruction: an Intel CPU
 * raises #UD there, so no Intel PT trace runs through one (glibc's libm
 * has FMA4 variants chosen on AMD only). The instructions before it run.
 * So does a direct call to where the file has no code. */
static void test_amd_only(void) {
        static const struct {
                const char *what;
                uint8_t bytes[8];
                size_t n;
        } amd[] = {
                {"FMA4 vfmaddsd", {0xc4, 0xe3, 0xf9, 0x6b, 0xc2, 0x10}, 6},
                {"XOP vprotd", {0x8f, 0xe9, 0x78, 0x92, 0xc1}, 5},
                {"SSE4a extrq", {0x66, 0x0f, 0x79, 0xc1}, 4},
                {"3DNow! pfadd", {0x0f, 0x0f, 0xc1, 0x9e}, 4},
        };
        /* vfmadd213sd (FMA3, which Intel has) and a ret: a good block. */
        static const uint8_t fma3[] = {0xc4, 0xe2, 0xf1, 0xa9, 0xc2, 0xc3};
        static const uint8_t nop = 0x90;
        _cleanup_(synth_image_unrefp) SynthImage *img = NULL;
        _cleanup_free_ char *error = NULL;
        SynthBlockCache cache;
        SynthBlock *b;
        uint64_t a;

        ASSERT_OK(synth_image_load(pick_exe(), false, &img, &error));
        ASSERT_TRUE(img->n_funcs > 0);
        a = img->funcs[img->n_funcs / 2];
        ASSERT_TRUE(synth_image_function_end(img, a) >= a + 16);

        ASSERT_OK(synth_image_poke(img, a, fma3, sizeof fma3));
        ASSERT_OK(synth_block_cache_init(&cache));
        b = synth_block_get(&cache, img, a);
        ASSERT_NOT_NULL(b);
        ASSERT_EQ(b->kind, SYNTH_END_RET);
        synth_block_cache_done(&cache);

        /* A direct call to where the file has no code is dead code: the
         * walk ends before it. */
        {
                static const uint8_t nowhere[] = {0x90, 0xe8, 0x00, 0x00, 0xf0, 0x7f};

                ASSERT_OK(synth_image_poke(img, a, nowhere, sizeof nowhere));
                ASSERT_OK(synth_block_cache_init(&cache));
                b = synth_block_get(&cache, img, a);
                ASSERT_NOT_NULL(b);
                ASSERT_EQ(b->kind, SYNTH_END_BAD);
                ASSERT_EQ_U64(synth_block_last(b), a + 1);
                synth_block_cache_done(&cache);
        }

        for (size_t i = 0; i < ELEMENTSOF(amd); i++) {
                ASSERT_OK(synth_image_poke(img, a, &nop, 1));
                ASSERT_OK(synth_image_poke(img, a + 1, amd[i].bytes, amd[i].n));
                ASSERT_OK(synth_block_cache_init(&cache));
                b = synth_block_get(&cache, img, a);
                ASSERT_NOT_NULL(b);
                if (b->kind != SYNTH_END_BAD || synth_block_last(b) != a + 1)
                        test_fail("%s: block kind %d, last instruction at +%" PRIu64, amd[i].what, (int) b->kind,
                                  synth_block_last(b) - a);
                synth_block_cache_done(&cache);
        }
}

RUN_TESTS(TEST(test_load_exe), TEST(test_load_errors), TEST(test_loader), TEST(test_kernel),
          TEST(test_blocks), TEST(test_walk), TEST(test_amd_only));
