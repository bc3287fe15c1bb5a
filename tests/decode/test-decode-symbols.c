/* SPDX-License-Identifier: MIT */

/* Symbolization: ELF symbols, source lines and inlined frames through libdw
 * (on a fixture built with -g -O2), kernel symbols from kallsyms. */

#include "client/decode/symbols.h"
#include "common/basic/fileio.h"
#include "common/perf/record.h"
#include "decode-test-util.h"

static const char *fixture;
static const char *fixture_source;

static int marker_line(const char *marker) {
        _cleanup_free_ char *text = NULL;
        int line = 1;

        ASSERT_OK(read_full_file(fixture_source, 1 << 20, &text, NULL));
        for (const char *p = text; *p; p++) {
                if (strncmp(p, marker, strlen(marker)) == 0)
                        return line;
                if (*p == '\n')
                        line++;
        }
        test_fail("marker %s not found", marker);
}

static void test_elf(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        _cleanup_(decode_symbolizer_freep) DecodeSymbolizer *sym = NULL;
        DecodeSymbolizerOptions opts = { .want_srcline = true, .want_inline = true };
        DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_ELF };
        const DecodeView *v;
        const DecodeSymbol *s;
        uint64_t outer = 0, start, end;
        int inner_line = marker_line("/* LINE_INNER */"), call_line = marker_line("/* LINE_CALL */");
        bool found_inline = false, found_call_line = false;

        if (access(fixture, R_OK) < 0)
                test_skip("fixture %s missing", fixture);
        ASSERT_OK(decode_input_new("t", &in));
        img.path = strdup(fixture);
        img.name = strdup("/usr/bin/fixture");
        ASSERT_OK(decode_input_add_image(in, &img));
        ASSERT_OK(decode_context_new(in, &ctx));
        ASSERT_OK(decode_images_new(in, ctx, &im));
        ASSERT_OK(decode_symbolizer_new(im, ctx, in, &opts, &sym));
        ASSERT_OK(decode_images_view(im, DECODE_PID_UNKNOWN, 0, &v, NULL, NULL));
        ASSERT_TRUE(v->n_sections >= 1);
        /* A PIE without side-band and without @ADDR: placed at its link
         * addresses, and we say so. */
        ASSERT_NOT_NULL(decode_images_notes(im));
        ASSERT_CONTAINS(decode_images_notes(im)[0], "position-independent");

        start = v->sections[0]->vaddr;
        end = start + v->sections[0]->size;
        for (uint64_t a = start; a < end; a++) {
                s = decode_symbolizer_lookup(sym, v, a);
                if (s && s->name && streq(s->name, "fixture_outer") && s->offset == 0) {
                        outer = a;
                        break;
                }
        }
        if (!outer)
                test_fail("fixture_outer not found in %s", fixture);
        s = decode_symbolizer_lookup(sym, v, outer);
        ASSERT_STREQ(s->dso, "/usr/bin/fixture");
        ASSERT_NOT_NULL(s->file);
        ASSERT_TRUE(strstr(s->file, "decode-symbols-fixture.c") != NULL);

        for (uint64_t a = outer; a < end; a++) {
                s = decode_symbolizer_lookup(sym, v, a);
                if (!s->name || !streq(s->name, "fixture_outer"))
                        break;
                ASSERT_EQ_U64(s->offset, a - outer);
                if (s->line == call_line)
                        found_call_line = true;
                if (s->inlined && strstr(s->inlined, "fixture_inner") && s->line == inner_line)
                        found_inline = true;
        }
        ASSERT_TRUE(found_call_line || found_inline);
        ASSERT_TRUE(found_inline);
        /* Cached: the same object for the same address. */
        ASSERT_TRUE(decode_symbolizer_lookup(sym, v, outer) == decode_symbolizer_lookup(sym, v, outer));
        /* No image there: nothing but never NULL. */
        s = decode_symbolizer_lookup(sym, v, 0x10);
        ASSERT_NOT_NULL(s);
        ASSERT_NULL(s->name);
}

static void test_kallsyms(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        _cleanup_(decode_symbolizer_freep) DecodeSymbolizer *sym = NULL;
        const DecodeSymbol *s;
        uint64_t off;
        const char text[] = "ffffffff81000000 T _text\n"
                            "ffffffff81001000 T asm_exc_page_fault\n"
                            "ffffffff81001000 T a_alias\n"
                            "garbage line\n"
                            "ffffffff81002000 d some_data\n"
                            "ffffffffc0000000 t mod_func\t[mymod]\n"
                            "zzzz T nope\n";

        ASSERT_OK(decode_input_new("t", &in));
        decode_input_set_kallsyms(in, strdup(text), strlen(text));
        ASSERT_OK(decode_context_new(in, &ctx));
        ASSERT_OK(decode_images_new(in, ctx, &im));
        ASSERT_OK(decode_symbolizer_new(im, ctx, in, NULL, &sym));
        ASSERT_TRUE(decode_symbolizer_has_kallsyms(sym));

        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffff81000010));
        ASSERT_STREQ(s->name, "_text");
        ASSERT_EQ_U64(s->offset, 0x10);
        ASSERT_STREQ(s->dso, "[kernel.kallsyms]");
        /* Two names at one address: the first in sort order, deterministically. */
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffff81001004));
        ASSERT_STREQ(s->name, "a_alias");
        /* Data symbols are not code: the text symbol before covers it. */
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffff81002000));
        ASSERT_STREQ(s->name, "a_alias");
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffc0000005));
        ASSERT_STREQ(s->name, "mod_func");
        ASSERT_STREQ(s->dso, "[mymod]");
        /* Far beyond the last symbol: unknown. */
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffc8000000));
        ASSERT_NULL(s->name);
        ASSERT_STREQ(decode_symbolizer_kernel_name(sym, UINT64_C(0xffffffff81000000), &off), "_text");
        ASSERT_EQ_U64(off, 0);
        ASSERT_NULL(decode_symbolizer_kernel_name(sym, 0x1000, NULL));
}

/* BPF programs come and go: their names from the side-band's KSYMBOL
 * records, with or without kallsyms (issue 18). */
static void test_ksymbol(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        _cleanup_(decode_symbolizer_freep) DecodeSymbolizer *sym = NULL;
        PerfSampleId sid = { .sample_type = PERF_SAMPLE_TIME, .time = 1000 };
        const char text[] = "ffffffff81000000 T _text\n";
        Buffer b = BUFFER_NULL;
        const DecodeSymbol *s;

        ASSERT_OK(perf_record_append_ksymbol(&b, UINT64_C(0xffffffffc0100000), 0x200, PERF_RECORD_KSYMBOL_TYPE_BPF, 0,
                                             "bpf_prog_0123456789abcdef_old", &sid));
        sid.time = 2000;
        ASSERT_OK(perf_record_append_ksymbol(&b, UINT64_C(0xffffffffc0100000), 0x200, PERF_RECORD_KSYMBOL_TYPE_BPF,
                                             PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_0123456789abcdef_old",
                                             &sid));
        sid.time = 3000;
        ASSERT_OK(perf_record_append_ksymbol(&b, UINT64_C(0xffffffffc0100000), 0x100, PERF_RECORD_KSYMBOL_TYPE_BPF, 0,
                                             "bpf_prog_fedcba9876543210_new", &sid));
        ASSERT_OK(perf_record_append_ksymbol(&b, UINT64_C(0xffffffffc0200000), 0x80, PERF_RECORD_KSYMBOL_TYPE_BPF, 0,
                                             "bpf_prog_1111111111111111_gone", &sid));
        sid.time = 4000;
        ASSERT_OK(perf_record_append_ksymbol(&b, UINT64_C(0xffffffffc0200000), 0x80, PERF_RECORD_KSYMBOL_TYPE_BPF,
                                             PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_1111111111111111_gone",
                                             &sid));

        for (int with_kallsyms = 0; with_kallsyms < 2; with_kallsyms++) {
                ASSERT_OK(decode_input_new("t", &in));
                ASSERT_OK(decode_input_add_sideband_data(in, "sb", b.data, b.size, false, PERF_SAMPLE_TIME, true));
                if (with_kallsyms)
                        decode_input_set_kallsyms(in, strdup(text), strlen(text));
                ASSERT_OK(decode_context_new(in, &ctx));
                ASSERT_OK(decode_images_new(in, ctx, &im));
                ASSERT_OK(decode_symbolizer_new(im, ctx, in, NULL, &sym));

                /* The latest program at an address names it. */
                s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffc0100010));
                ASSERT_STREQ(s->name, "bpf_prog_fedcba9876543210_new");
                ASSERT_EQ_U64(s->offset, 0x10);
                ASSERT_STREQ(s->dso, "[bpf]");
                /* Past its end, the older, longer one. */
                s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffc0100180));
                ASSERT_STREQ(s->name, "bpf_prog_0123456789abcdef_old");
                /* Unloaded by the trigger: still named, the trace may have run it. */
                s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffc0200004));
                ASSERT_STREQ(s->name, "bpf_prog_1111111111111111_gone");
                /* Elsewhere kallsyms, when there are any. */
                s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffff81000004));
                if (with_kallsyms)
                        ASSERT_STREQ(s->name, "_text");
                else
                        ASSERT_NULL(s->name);

                sym = decode_symbolizer_free(sym);
                im = decode_images_free(im);
                ctx = decode_context_free(ctx);
                in = decode_input_free(in);
        }
        buffer_done(&b);
}

int main(int argc, char **argv) {
        if (argc < 2)
                test_skip("usage: test-decode-symbols FIXTURE");
        fixture = argv[1];
        fixture_source = SOURCE_DIR "/decode-symbols-fixture.c";
        printf("== test_elf\n");
        test_elf();
        printf("== test_kallsyms\n");
        test_kallsyms();
        printf("== test_ksymbol\n");
        test_ksymbol();
        return 0;
}
