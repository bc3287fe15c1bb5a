/* SPDX-License-Identifier: MIT */

/*
 * JIT code by time (ptraced-bundle(5), "JIT code"): process 77 has an
 * anonymous executable mapping at J, and its jitdump loads code at J three
 * times, at CLOCK_MONOTONIC 500, 2000 and 4000 (the trigger's monotonic
 * and perf times differ by OFFSET). The trace passes through J at perf
 * times 1000+OFFSET, 3000+OFFSET and 5000+OFFSET (TSC conversion: the
 * identity):
 *
 *   load "jsA" at 500:   J+0x00: 5-byte NOP; J+0x05: jmp J+0x10;
 *                        J+0x10: call J+0x28; J+0x15: ret; J+0x28: ret
 *   load "jsB" at 2000:  J+0x00: jmp J+0x20; ...  J+0x20: ret
 *   load "jsC" at 4000:  as jsA
 *
 * Each pass must take the code (and the name) of the load before it.
 * Also: a code move, a perf map naming memory read at dump time, and JIT
 * code that is missing altogether (an error naming process and region).
 */

#include <sys/mman.h>

#include "common/perf/jitdump.h"
#include "common/perf/perf-map.h"
#include "client/decode/symbols.h"
#include "common/perf/record.h"
#include "decode-test-util.h"

#define J UINT64_C(0x7f0000000000)
#define OFFSET UINT64_C(1000000)
#define PID 77U
#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const uint8_t jmp5[5] = { 0xe9, 0x1b, 0x00, 0x00, 0x00 }; /* to J+0x20 */

static void make_code(uint8_t code[0x30], const uint8_t site[5]) {
        static const uint8_t call[5] = { 0xe8, 0x13, 0x00, 0x00, 0x00 }; /* J+0x10: call J+0x28 */

        memset(code, 0xcc, 0x30);
        memcpy(code, site, 5);
        code[0x05] = 0xeb; /* jmp J+0x10 */
        code[0x06] = 0x09;
        memcpy(code + 0x10, call, 5);
        code[0x15] = 0xc3;
        code[0x20] = 0xc3;
        code[0x28] = 0xc3;
}

/* Three passes through J; pass i takes the NOP path (a call and a
 * compressed return, one taken TNT bit) when nop[i], else the jump. */
static size_t build_trace(TraceBuilder *t, const bool nop[3]) {
        tb_init(t, 4096);
        tb_psb(t, 1000 + OFFSET, true, 0);
        for (unsigned i = 0; i < 3; i++) {
                if (i > 0)
                        tb_tsc(t, 1000 + 2000 * i + OFFSET);
                tb_mode_exec64(t);
                tb_ip(t, ppt_tip_pge, J);
                if (nop[i])
                        tb_tnt(t, (const bool[]){ true }, 1);
                tb_ip(t, ppt_tip_pgd, 0);
        }
        return tb_offset(t);
}

/* perf's struct jitheader and jr_code_load / jr_code_move, little-endian. */
static void jd_header(Buffer *b) {
        uint32_t h[6] = { JITDUMP_MAGIC, 1, 40, 62 /* EM_X86_64 */, 0, PID };
        uint64_t ts = 1, flags = 0;

        ASSERT_OK(buffer_append(b, h, sizeof h));
        ASSERT_OK(buffer_append(b, &ts, 8));
        ASSERT_OK(buffer_append(b, &flags, 8));
}

static void jd_load(Buffer *b, uint64_t ts, uint64_t addr, uint64_t index, const char *name, const uint8_t *code,
                    size_t size) {
        uint32_t id = JITDUMP_CODE_LOAD, total = (uint32_t) (JITDUMP_LOAD_FIXED + strlen(name) + 1 + size);
        uint32_t ids[2] = { PID, PID };
        uint64_t f[4] = { addr, addr, size, index };

        ASSERT_OK(buffer_append(b, &id, 4));
        ASSERT_OK(buffer_append(b, &total, 4));
        ASSERT_OK(buffer_append(b, &ts, 8));
        ASSERT_OK(buffer_append(b, ids, 8));
        ASSERT_OK(buffer_append(b, f, sizeof f));
        ASSERT_OK(buffer_append(b, name, strlen(name) + 1));
        ASSERT_OK(buffer_append(b, code, size));
}

static void jd_move(Buffer *b, uint64_t ts, uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
        uint32_t id = JITDUMP_CODE_MOVE, total = JITDUMP_MOVE_SIZE;
        uint32_t ids[2] = { PID, PID };
        uint64_t f[5] = { to, from, to, size, index };

        ASSERT_OK(buffer_append(b, &id, 4));
        ASSERT_OK(buffer_append(b, &total, 4));
        ASSERT_OK(buffer_append(b, &ts, 8));
        ASSERT_OK(buffer_append(b, ids, 8));
        ASSERT_OK(buffer_append(b, f, sizeof f));
}

static int memfd_of(const void *data, size_t size) {
        int fd = memfd_create("jit", MFD_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(loop_write_all(fd, data, size));
        return fd;
}

static void sideband(Buffer *sb) {
        PerfSampleId s = { .pid = PID, .tid = PID, .time = 10, .cpu = 0, .sample_type = ST };

        ASSERT_OK(perf_record_append_comm(sb, false, PID, PID, "node", &s));
        ASSERT_OK(perf_record_append_mmap2(sb, 0, PID, PID, J, 0x1000, 0, NULL, 0, 0, 0, 0, PROT_READ | PROT_EXEC,
                                           MAP_PRIVATE, "//anon", &s));
        ASSERT_OK(perf_record_append_itrace_start(sb, PID, PID, &s));
}

/* The output, and its size in *ret_out_size when asked (Perfetto's
 * protobuf is binary). */
static char *decode_as_bytes(DecodeFormat format, const uint8_t *trace, size_t size, const Buffer *jitdump,
                             const char *perf_map, const void *memory, size_t memory_size, uint64_t *ret_errors,
                             size_t *ret_out_size) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_buffer_ Buffer sb = BUFFER_NULL;
        DecodeJitClock clk = { .has_monotonic = true, .perf_minus_monotonic = (int64_t) OFFSET };
        DecodeOptions opts = {
                .format = format,
                .fields = { DECODE_FIELD_PID, DECODE_FIELD_FROM, DECODE_FIELD_TO, DECODE_FIELD_KIND,
                            DECODE_FIELD_SYM, DECODE_FIELD_DSO },
                .n_fields = 6,
                .jobs = 1,
                .events = true,
        };
        _cleanup_free_ char *error = NULL;

        sideband(&sb);
        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", (void *) trace, size, false));
        ASSERT_OK(decode_input_add_sideband_data(in, "sb", sb.data, sb.size, false, ST, true));
        in->has_tsc_conversion = true;
        in->tsc_conversion = (PerfTscConversion){ .time_shift = 0, .time_mult = 1, .time_zero = 0 };
        if (memory) {
                DecodeImage img = { .fd = memfd_of(memory, memory_size), .kind = DECODE_IMAGE_RAW,
                                    .has_addr = true, .addr = J, .has_pid = true, .pid = PID };
                ASSERT_TRUE(asprintf(&img.path, "/proc/self/fd/%d", img.fd) > 0);
                img.name = strdup("//anon");
                ASSERT_OK(decode_input_add_image(in, &img));
        }
        if (jitdump) {
                int r = decode_input_add_jitdump(in, PID, memfd_of(jitdump->data, jitdump->size), "jit-77.dump", &clk,
                                                 &error);
                if (r < 0)
                        test_fail("jitdump refused: %s", strna(error));
        }
        if (perf_map)
                ASSERT_OK(decode_input_add_perf_map(in, PID, perf_map, strlen(perf_map)));
        return decode_to_bytes(in, &opts, ret_errors, ret_out_size);
}

static char *decode_as(DecodeFormat format, const uint8_t *trace, size_t size, const Buffer *jitdump,
                       const char *perf_map, const void *memory, size_t memory_size, uint64_t *ret_errors) {
        return decode_as_bytes(format, trace, size, jitdump, perf_map, memory, memory_size, ret_errors, NULL);
}

static char *decode(const uint8_t *trace, size_t size, const Buffer *jitdump, const char *perf_map,
                    const void *memory, size_t memory_size, uint64_t *ret_errors) {
        return decode_as(DECODE_FORMAT_BRANCHES, trace, size, jitdump, perf_map, memory, memory_size, ret_errors);
}

static void expect(const char *out, const char *want) {
        if (!strstr(out, want))
                test_fail("expected \"%s\" in:\n%s", want, out);
}

/* In binary output: the name as its bytes (Perfetto interns it once). */
static void expect_bytes(const char *out, size_t size, const char *want) {
        if (!memmem(out, size, want, strlen(want)))
                test_fail("expected \"%s\" in %zu bytes of output", want, size);
}

static void test_loads_by_time(void) {
        _cleanup_buffer_ Buffer jd = BUFFER_NULL;
        uint8_t a[0x30], b[0x30];
        uint64_t errors = 0;
        TraceBuilder t;
        size_t size = build_trace(&t, (const bool[]){ true, false, true });
        _cleanup_free_ char *out = NULL;

        make_code(a, nop5);
        make_code(b, jmp5);
        jd_header(&jd);
        jd_load(&jd, 500, J, 1, "JS:*hotA", a, sizeof a);
        jd_load(&jd, 2000, J, 2, "JS:*hotB", b, sizeof b);
        jd_load(&jd, 4000, J, 3, "JS:*hotC", a, sizeof a);

        out = decode(t.buf, size, &jd, NULL, NULL, 0, &errors);
        if (errors != 0)
                test_fail("%" PRIu64 " errors:\n%s", errors, out);
        /* In order: hotA's code (the NOP), hotB's (the jump), hotC's. */
        {
                const char *p1 = strstr(out, "77 0x7f0000000005 0x7f0000000010 jmp JS:*hotA+0x5 => JS:*hotA+0x10 (jitted-77-1.so)");
                const char *p2 = p1 ? strstr(p1, "77 0x7f0000000000 0x7f0000000020 jmp JS:*hotB+0x0 => JS:*hotB+0x20 (jitted-77-2.so)") : NULL;
                const char *p3 = p2 ? strstr(p2, "77 0x7f0000000005 0x7f0000000010 jmp JS:*hotC+0x5 => JS:*hotC+0x10 (jitted-77-3.so)")
                                    : NULL;
                if (!p1 || !p2 || !p3)
                        test_fail("loads not used by time:\n%s", out);
        }
        /* The names in every format. */
        {
                static const DecodeFormat formats[] = { DECODE_FORMAT_CALLS, DECODE_FORMAT_PERFETTO,
                                                        DECODE_FORMAT_CHROME_JSON, DECODE_FORMAT_JSON,
                                                        DECODE_FORMAT_FOLDED };
                for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                        size_t n = 0;
                        _cleanup_free_ char *o = decode_as_bytes(formats[i], t.buf, size, &jd, NULL, NULL, 0, &errors,
                                                                 &n);

                        ASSERT_EQ(errors, 0);
                        /* Calls into each load's code (hotB has none). */
                        expect_bytes(o, n, "JS:*hotA");
                        expect_bytes(o, n, "JS:*hotC");
                        if (formats[i] == DECODE_FORMAT_CALLS || formats[i] == DECODE_FORMAT_JSON)
                                expect(o, "JS:*hotB");
                }
        }
        tb_done(&t);
}

/* The first load is used before its own time too (nothing else was there),
 * a move takes the code elsewhere at its time, and the memory read at dump
 * time (here: the jump) is what a jitdump load lies on top of. */
static void test_move_and_memory(void) {
        _cleanup_buffer_ Buffer jd = BUFFER_NULL;
        uint8_t a[0x30], b[0x30];
        uint64_t errors = 0;
        TraceBuilder t;
        size_t size = build_trace(&t, (const bool[]){ true, true, false });
        _cleanup_free_ char *out = NULL;

        make_code(a, nop5);
        make_code(b, jmp5);
        jd_header(&jd);
        jd_load(&jd, 2500, J, 1, "JS:*late", a, sizeof a);   /* first load: from the start */
        jd_move(&jd, 4000, J, J + 0x800, sizeof a, 1);       /* gone from J at 4000 */

        out = decode(t.buf, size, &jd, "7f0000000000 30 JS:~fromMap\n", b, sizeof b, &errors);
        if (errors != 0)
                test_fail("%" PRIu64 " errors:\n%s", errors, out);
        {
                const char *p1 = strstr(out, "0x7f0000000005 0x7f0000000010 jmp JS:*late+0x5 => JS:*late+0x10 (jitted-77-1.so)");
                const char *p2 = p1 ? strstr(p1 + 1, "0x7f0000000005 0x7f0000000010 jmp JS:*late+0x5") : NULL;
                /* After the move J holds what memory held at dump time, named by the perf map. */
                const char *p3 = p2 ? strstr(p2 + 1, "0x7f0000000000 0x7f0000000020 jmp JS:~fromMap+0x0 => JS:~fromMap+0x20 (/tmp/perf-77.map)")
                                    : NULL;
                if (!p1 || !p2 || !p3)
                        test_fail("move or memory not honoured:\n%s", out);
        }
        tb_done(&t);
}

/* No JIT code at all: an error event naming the process and the region,
 * never a silent gap. */
static void test_missing(void) {
        uint64_t errors = 0;
        TraceBuilder t;
        size_t size = build_trace(&t, (const bool[]){ false, false, false });
        _cleanup_free_ char *out = decode(t.buf, size, NULL, NULL, NULL, 0, &errors);

        ASSERT_TRUE(errors > 0);
        expect(out, "no JIT code at 0x7f0000000000 (process 77, region 0x7f0000000000-0x7f0000001000 //anon");
        expect(out, "the bundle holds no JIT code of this process");
        tb_done(&t);
}

/* Many small sections over one big one (a jitdump's code loads over the
 * JIT memory read at dump time): an address only the big one covers is
 * still found behind them. Before, lookups looked back 8 sections and
 * named such code [unknown]. */
static void test_many_overlaps(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        _cleanup_free_ char *big_path = NULL;
        char *small_paths[20];
        uint8_t big[0x1000], small = 0xc3, got = 0;
        const DecodeView *v;

        memset(big, 0x90, sizeof big);
        big_path = write_temp(big, sizeof big);
        ASSERT_OK(decode_input_new("t", &in));
        add_raw_image(in, big_path, 0x10000);
        for (size_t i = 0; i < ELEMENTSOF(small_paths); i++) {
                small_paths[i] = write_temp(&small, 1);
                add_raw_image(in, small_paths[i], 0x10010 + i);
        }
        ASSERT_OK(decode_context_new(in, &ctx));
        ASSERT_OK(decode_images_new(in, ctx, &im));
        ASSERT_OK(decode_images_view(im, DECODE_PID_UNKNOWN, 0, &v, NULL, NULL));
        ASSERT_NOT_NULL(decode_view_find(v, 0x10800));
        ASSERT_EQ(decode_view_read(v, 0x10800, &got, 1), 1);
        ASSERT_EQ(got, 0x90);
        ASSERT_EQ(decode_view_read(v, 0x10015, &got, 1), 1);
        ASSERT_EQ(got, 0xc3);
        for (size_t i = 0; i < ELEMENTSOF(small_paths); i++) {
                (void) unlink(small_paths[i]);
                free(small_paths[i]);
        }
        (void) unlink(big_path);
}

/* The kernel's BPF JIT: programs named from the side-band's KSYMBOL
 * records as perf names them, their code in the kernel text copy. */
static void test_bpf_ksymbol(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        _cleanup_(decode_symbolizer_freep) DecodeSymbolizer *sym = NULL;
        _cleanup_buffer_ Buffer sb = BUFFER_NULL;
        PerfSampleId sid = { .time = 100, .sample_type = ST };
        const char text[] = "ffffffff81000000 T _text\nffffffff81001000 T other\n";
        const DecodeSymbol *s;

        ASSERT_OK(perf_record_append_ksymbol(&sb, UINT64_C(0xffffffffa0001000), 0x80, PERF_RECORD_KSYMBOL_TYPE_BPF, 0,
                                             "bpf_prog_0123456789abcdef_handler", &sid));
        sid.time = 200;
        ASSERT_OK(perf_record_append_ksymbol(&sb, UINT64_C(0xffffffffa0002000), 0x80, PERF_RECORD_KSYMBOL_TYPE_BPF,
                                             PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, "bpf_prog_ffff_gone", &sid));
        ASSERT_OK(decode_input_new("t", &in));
        decode_input_set_kallsyms(in, strdup(text), strlen(text));
        ASSERT_OK(decode_input_add_sideband_data(in, "sb", sb.data, sb.size, false, ST, true));
        ASSERT_OK(decode_context_new(in, &ctx));
        ASSERT_OK(decode_images_new(in, ctx, &im));
        ASSERT_OK(decode_symbolizer_new(im, ctx, in, NULL, &sym));
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffa0001010));
        ASSERT_STREQ(s->name, "bpf_prog_0123456789abcdef_handler");
        ASSERT_EQ_U64(s->offset, 0x10);
        ASSERT_STREQ(s->dso, "[bpf]");
        /* An unregistration names nothing. */
        s = decode_symbolizer_lookup(sym, NULL, UINT64_C(0xffffffffa0002010));
        ASSERT_TRUE(!s->name || !streq(s->name, "bpf_prog_ffff_gone"));
}

/* The parsers refuse what is not there to read (fuzz-jit has the rest). */
static void test_parsers(void) {
        _cleanup_buffer_ Buffer jd = BUFFER_NULL;
        _cleanup_free_ char *error = NULL;
        uint8_t code[4] = { 0x90, 0x90, 0x90, 0xc3 };
        JitdumpReader r;
        JitdumpRecord rec;
        PerfMapReader pm;
        PerfMapEntry e;
        const char map[] = "1000 10 one\nnot a line\n0x2000 0x20 two words  \n3000 0 zero\nffffffffffffffff 2 wraps\n4000 8";

        jd_header(&jd);
        jd_load(&jd, 7, 0x1000, 9, "f", code, sizeof code);
        ASSERT_OK(jitdump_reader_init(&r, jd.data, jd.size, &error));
        ASSERT_EQ(jitdump_reader_next(&r, &rec, &error), 1);
        ASSERT_EQ(rec.type, JITDUMP_CODE_LOAD);
        ASSERT_EQ_U64(rec.timestamp, 7);
        ASSERT_EQ_U64(rec.code_addr, 0x1000);
        ASSERT_STREQ(rec.name, "f");
        ASSERT_TRUE(memcmp((const uint8_t *) jd.data + rec.code_offset, code, 4) == 0);
        ASSERT_EQ(jitdump_reader_next(&r, &rec, &error), 0);
        ASSERT_FALSE(r.truncated);
        /* Cut inside the record: the end, marked truncated. */
        ASSERT_OK(jitdump_reader_init(&r, jd.data, jd.size - 1, &error));
        ASSERT_EQ(jitdump_reader_next(&r, &rec, &error), 0);
        ASSERT_TRUE(r.truncated);
        /* A code size beyond the record. */
        ((uint8_t *) jd.data)[40 + 40] = 0xff;
        ASSERT_OK(jitdump_reader_init(&r, jd.data, jd.size, &error));
        ASSERT_EQ(jitdump_reader_next(&r, &rec, &error), -EBADMSG);
        ASSERT_CONTAINS(error, "do not fit");
        error = mfree(error);
        ASSERT_EQ(jitdump_reader_init(&r, "nope", 4, &error), -EBADMSG);
        ASSERT_CONTAINS(error, "no jitdump magic");
        error = mfree(error);
        ASSERT_EQ(jitdump_reader_init(&r, jd.data, 20, &error), -EBADMSG);
        ASSERT_CONTAINS(error, "too short");

        ASSERT_TRUE(jitdump_is_dump_name("/tmp/jit-77.dump", 77));
        ASSERT_TRUE(jitdump_is_dump_name("jit-77.dump", 0));
        ASSERT_FALSE(jitdump_is_dump_name("/tmp/jit-77.dump", 78));
        ASSERT_FALSE(jitdump_is_dump_name("/tmp/jit-.dump", 0));
        ASSERT_FALSE(jitdump_is_dump_name("/tmp/jit-77.dumpx", 77));

        perf_map_reader_init(&pm, map, strlen(map));
        ASSERT_EQ(perf_map_reader_next(&pm, &e), 1);
        ASSERT_EQ_U64(e.start, 0x1000);
        ASSERT_EQ_U64(e.size, 0x10);
        ASSERT_TRUE(e.name_len == 3 && memcmp(e.name, "one", 3) == 0);
        ASSERT_EQ(perf_map_reader_next(&pm, &e), 1);
        ASSERT_EQ_U64(e.start, 0x2000);
        ASSERT_TRUE(e.name_len == 9 && memcmp(e.name, "two words", 9) == 0);
        ASSERT_EQ(e.line, 3);
        ASSERT_EQ(perf_map_reader_next(&pm, &e), 0); /* size 0, wrapping, no name: skipped */
}

RUN_TESTS(TEST(test_loads_by_time), TEST(test_move_and_memory), TEST(test_many_overlaps), TEST(test_missing),
          TEST(test_bpf_ksymbol), TEST(test_parsers));
