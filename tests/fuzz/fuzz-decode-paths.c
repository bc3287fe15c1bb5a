/* SPDX-License-Identifier: MIT */

/*
 * The fast flow against libipt's block decoder (issue 20): arbitrary
 * bytes as the trace of one CPU over a small fixed program, decoded with
 * --decoder=libipt and --decoder=fast, must give the same bytes (branches
 * with every field and the events, errors included, and the summary).
 * Any difference aborts, with both outputs' first differing line on
 * standard error. Segments are small and two workers run, so that the
 * fast flow's fallback (a segment decoded again by libipt) and its caches
 * across segments are exercised too. The same bytes also check the PSB
 * index's packet reader (client/decode/pktsize.h) against libipt's packet
 * decoder at every offset.
 */


#include "client/decode/decode.h"
#include "tests/fuzz/fuzz-code.h"
#include "tests/unit/pktsize-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Calls and returns (return compression), conditionals, an indirect jump
 * and call, a far transfer, a MOV CR3 (paging events bind to it) and a
 * PTWRITE. */
static const uint8_t code[] = {
        0x48, 0xff, 0xc0,             /* 1000: inc rax */
        0xe8, 0x0d, 0x00, 0x00, 0x00, /* 1003: call 1015 */
        0x75, 0xf6,                   /* 1008: jne 1000 */
        0x0f, 0x05,                   /* 100a: syscall */
        0xff, 0xe3,                   /* 100c: jmp rbx */
        0x0f, 0x22, 0xd8,             /* 100e: mov cr3, rax */
        0xf3, 0x0f, 0xae, 0xe0,       /* 1011: ptwrite eax */
        0x48, 0x85, 0xc0,             /* 1015: test rax, rax */
        0x74, 0x03,                   /* 1018: je 101d */
        0xff, 0xd3,                   /* 101a: call rbx */
        0xc3,                         /* 101c: ret */
        0xcf,                         /* 101d: iret */
};

static char code_path[64];

static int setup(void) {
        return fuzz_code_file("fuzz-decode-paths-code", code, sizeof(code), code_path, sizeof(code_path));
}

/* The output of one decode, NULL-free ("" when the decoder refused). */
static char *decode(const DecodeInput *in, DecodeDecoder decoder, DecodeFormat format) {
        static const DecodeField all[] = { DECODE_FIELD_TIME, DECODE_FIELD_CPU, DECODE_FIELD_PID, DECODE_FIELD_TID,
                                           DECODE_FIELD_FROM, DECODE_FIELD_TO,  DECODE_FIELD_KIND, DECODE_FIELD_SYM,
                                           DECODE_FIELD_IPC };
        DecodeOptions opts = {
                .format = format,
                .jobs = 2,
                .segment_size = 64,
                .events = true,
                .progress = 0,
                .decoder = decoder,
        };
        Decoder *d = NULL;
        char *error = NULL, *text = NULL;
        size_t n = 0;
        FILE *f;

        if (format == DECODE_FORMAT_BRANCHES) {
                memcpy(opts.fields, all, sizeof(all));
                opts.n_fields = ELEMENTSOF(all);
        }
        f = open_memstream(&text, &n);
        if (!f)
                abort();
        if (decoder_new(in, &opts, &d, &error) >= 0) {
                if (decoder_run(d, f, &error) < 0)
                        fprintf(f, "run failed: %s\n", error ?: "?");
                (void) decoder_print_summary(d, f);
        } else
                fprintf(f, "refused: %s\n", error ?: "?");
        fclose(f);
        free(error);
        decoder_free(d);
        return text;
}

static void compare(const DecodeInput *in, DecodeFormat format) {
        char *ref = decode(in, DECODE_DECODER_LIBIPT, format);
        char *fast = decode(in, DECODE_DECODER_FAST, format);
        size_t i = 0, line = 1;

        if (!ref || !fast)
                abort();
        while (ref[i] && ref[i] == fast[i]) {
                if (ref[i] == '\n')
                        line++;
                i++;
        }
        if (ref[i] != fast[i]) {
                size_t start = i;
                while (start > 0 && ref[start - 1] != '\n')
                        start--;
                fprintf(stderr, "the fast flow differs from libipt at line %zu:\nlibipt: %.200s\nfast:   %.200s\n",
                        line, ref + start, fast + start);
                abort();
        }
        free(ref);
        free(fast);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_RAW, .has_addr = true, .addr = 0x1000 };
        DecodeInput *in = NULL;

        if (setup() < 0)
                abort();
        if (size == 0)
                return 0;
        {
                size_t ours, at;
                int theirs;

                at = pktsize_check(data, size, &ours, &theirs);
                if (at != SIZE_MAX) {
                        fprintf(stderr, "the index's packet reader differs from libipt at offset %zu: %zu, libipt %d\n",
                                at, ours, theirs);
                        abort();
                }
        }
        if (decode_input_new("fuzz", &in) < 0)
                abort();
        (void) decode_input_add_cpu_data(in, 0, "cpu0", (void *) data, size, false);
        img.path = strdup(code_path);
        img.name = strdup("code");
        if (img.path && img.name)
                (void) decode_input_add_image(in, &img);
        decode_image_done(&img);
        compare(in, DECODE_FORMAT_BRANCHES);
        compare(in, DECODE_FORMAT_SUMMARY);
        decode_input_free(in);
        return 0;
}
