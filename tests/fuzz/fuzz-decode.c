/* SPDX-License-Identifier: MIT */

/*
 * The decoder on arbitrary bytes, two ways:
 *
 *   - input that looks like a bundle (a tar, or zstd) goes the whole
 *     bundle -> DecodeInput -> decode path, as `ptctl decode BUNDLE`;
 *   - anything else is a raw trace of two CPUs (the input split in two)
 *     over a small fixed program and, when the first byte says so, with
 *     part of the input as side-band as well.
 *
 * Every output format runs in turn (one per input, chosen by its length),
 * in parallel with small segments, so segmentation, stitching, context,
 * symbolization and rendering all see hostile data.
 */


#include "client/decode/decode.h"
#include "tests/fuzz/fuzz-code.h"
#include "client/decode/input/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A loop with a call, a conditional and an indirect jump, and a syscall. */
static const uint8_t code[] = {
        0x48, 0xff, 0xc0,                   /* 1000: inc rax */
        0xe8, 0x08, 0x00, 0x00, 0x00,       /* 1003: call 1010 */
        0x75, 0xf3,                         /* 1008: jne 1000 */
        0x0f, 0x05,                         /* 100a: syscall */
        0xff, 0xe3,                         /* 100c: jmp rbx */
        0x90, 0x90,                         /* 100e: nop nop */
        0x48, 0x85, 0xc0,                   /* 1010: test rax, rax */
        0x74, 0x01,                         /* 1013: je 1016 */
        0xc3,                               /* 1015: ret */
        0xcf,                               /* 1016: iret */
};

static char code_path[64];

static int setup(void) {
        return fuzz_code_file("fuzz-decode-code", code, sizeof(code), code_path, sizeof(code_path));
}

static void run(const DecodeInput *in, DecodeFormat format) {
        DecodeOptions opts = {
                .format = format,
                .jobs = 2,
                .segment_size = 64,
                .events = true,
                .progress = 0,
        };
        Decoder *d = NULL;
        char *error = NULL, *text = NULL;
        size_t n = 0;
        FILE *f;

        if (format == DECODE_FORMAT_BRANCHES) {
                static const DecodeField all[] = { DECODE_FIELD_TIME, DECODE_FIELD_CPU, DECODE_FIELD_PID,
                                                   DECODE_FIELD_TID, DECODE_FIELD_COMM, DECODE_FIELD_FROM,
                                                   DECODE_FIELD_TO, DECODE_FIELD_KIND, DECODE_FIELD_SYM,
                                                   DECODE_FIELD_DSO, DECODE_FIELD_IPC };
                memcpy(opts.fields, all, sizeof(all));
                opts.n_fields = ELEMENTSOF(all);
        }
        if (decoder_new(in, &opts, &d, &error) >= 0) {
                f = open_memstream(&text, &n);
                if (f) {
                        (void) decoder_run(d, f, &error);
                        (void) decoder_print_summary(d, f);
                        fclose(f);
                }
        }
        free(text);
        free(error);
        decoder_free(d);
}

static bool looks_like_bundle(const uint8_t *data, size_t size) {
        static const uint8_t zstd[4] = { 0x28, 0xb5, 0x2f, 0xfd };

        return (size >= 262 && memcmp(data + 257, "ustar", 5) == 0) ||
               (size >= 4 && memcmp(data, zstd, 4) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        DecodeFormat format = (DecodeFormat) (size % _DECODE_FORMAT_MAX);
        DecodeInput *in = NULL;
        char *error = NULL;

        if (setup() < 0)
                abort();

        if (looks_like_bundle(data, size)) {
                char path[64];
                int fd = memfd_create("fuzz-decode-bundle", MFD_CLOEXEC);

                if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t) size))
                        abort();
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                if (decode_input_from_bundle(path, &in, &error) >= 0)
                        run(in, format);
                close(fd);
        } else if (size > 0) {
                size_t half = size / 2;
                DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_RAW, .has_addr = true, .addr = 0x1000 };

                if (decode_input_new("fuzz", &in) < 0)
                        abort();
                (void) decode_input_add_cpu_data(in, 0, "cpu0", (void *) data, half, false);
                (void) decode_input_add_cpu_data(in, 1, "cpu1", (void *) (data + half), size - half, false);
                if (data[0] & 1)
                        (void) decode_input_add_sideband_data(in, "sb", (void *) (data + half), size - half, false,
                                                              0x10086, true);
                img.path = strdup(code_path);
                img.name = strdup("code");
                if (img.path && img.name)
                        (void) decode_input_add_image(in, &img);
                decode_image_done(&img);
                run(in, format);
        }
        decode_input_free(in);
        free(error);
        return 0;
}
