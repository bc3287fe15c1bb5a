/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Helpers for the decode tests: hand-built Intel PT streams through
 * libipt's encoder (the reference encoding), raw images in temporary
 * files, and running the whole decoder into memory.
 */

#include <intel-pt.h>
#include <stdio.h>
#include <sys/stat.h>

#include "client/decode/decode.h"
#include "test.h"

typedef struct TraceBuilder {
        uint8_t *buf;
        size_t size;
        struct pt_encoder *enc;
} TraceBuilder;

static inline void tb_init(TraceBuilder *t, size_t size) {
        struct pt_config cfg;

        t->buf = calloc(1, size);
        t->size = size;
        ASSERT_NOT_NULL(t->buf);
        pt_config_init(&cfg);
        cfg.begin = t->buf;
        cfg.end = t->buf + size;
        t->enc = pt_alloc_encoder(&cfg);
        ASSERT_NOT_NULL(t->enc);
}

static inline void tb_done(TraceBuilder *t) {
        pt_free_encoder(t->enc);
        free(t->buf);
        *t = (TraceBuilder){};
}

static inline uint64_t tb_offset(const TraceBuilder *t) {
        uint64_t off = 0;
        ASSERT_OK(pt_enc_get_offset(t->enc, &off));
        return off;
}

static inline void tb_packet(TraceBuilder *t, const struct pt_packet *p) {
        int r = pt_enc_next(t->enc, p);
        if (r < 0)
                test_fail("pt_enc_next(type %d): %s", p->type, pt_errstr(pt_errcode(r)));
}

static inline void tb_simple(TraceBuilder *t, enum pt_packet_type type) {
        tb_packet(t, &(struct pt_packet){ .type = type });
}

static inline void tb_ip(TraceBuilder *t, enum pt_packet_type type, uint64_t ip) {
        struct pt_packet p = { .type = type };
        p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
        p.payload.ip.ip = ip;
        tb_packet(t, &p);
}

static inline void tb_tsc(TraceBuilder *t, uint64_t tsc) {
        struct pt_packet p = { .type = ppt_tsc };
        p.payload.tsc.tsc = tsc;
        tb_packet(t, &p);
}

static inline void tb_mode_exec64(TraceBuilder *t) {
        struct pt_packet p = { .type = ppt_mode };
        p.payload.mode.leaf = pt_mol_exec;
        p.payload.mode.bits.exec.csl = 1;
        tb_packet(t, &p);
}

/* PSB+: TSC, optionally MODE.Exec and FUP (tracing on at ip), PSBEND. */
static inline uint64_t tb_psb(TraceBuilder *t, uint64_t tsc, bool mode, uint64_t fup_ip) {
        uint64_t off = tb_offset(t);

        tb_simple(t, ppt_psb);
        tb_tsc(t, tsc);
        if (mode)
                tb_mode_exec64(t);
        if (fup_ip)
                tb_ip(t, ppt_fup, fup_ip);
        tb_simple(t, ppt_psbend);
        return off;
}

/* n conditional branch outcomes (1 = taken), oldest first, in TNT-8s. */
static inline void tb_tnt(TraceBuilder *t, const bool *bits, size_t n) {
        for (size_t i = 0; i < n;) {
                struct pt_packet p = { .type = ppt_tnt_8 };
                size_t k = n - i < 6 ? n - i : 6;
                uint64_t v = 0;

                for (size_t j = 0; j < k; j++)
                        v = v << 1 | (bits[i + j] ? 1 : 0);
                p.payload.tnt.bit_size = (uint8_t) k;
                p.payload.tnt.payload = v;
                tb_packet(t, &p);
                i += k;
        }
}

static inline void tb_taken(TraceBuilder *t, size_t n) {
        bool *bits = calloc(n ?: 1, sizeof(bool));
        ASSERT_NOT_NULL(bits);
        for (size_t i = 0; i < n; i++)
                bits[i] = true;
        tb_tnt(t, bits, n);
        free(bits);
}

/* A small seeded generator for the shapes of hand-built streams. */
static inline uint64_t tb_rng(uint64_t *s) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        return *s >> 33;
}

static inline int loop_write_all(int fd, const void *p, size_t n) {
        const uint8_t *b = p;
        while (n > 0) {
                ssize_t k = write(fd, b, n);
                if (k < 0)
                        return -errno;
                b += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Write bytes to a temporary file; returns its path (caller frees and unlinks). */
static inline char *write_temp(const void *data, size_t size) {
        char *path = strdup("/tmp/ptdecode-test-XXXXXX");
        int fd;

        ASSERT_NOT_NULL(path);
        fd = mkstemp(path);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(loop_write_all(fd, data, size));
        close(fd);
        return path;
}

/* A raw image at addr, from a temporary file. */
static inline void add_raw_image(DecodeInput *in, const char *path, uint64_t addr) {
        DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_RAW, .has_addr = true, .addr = addr };

        img.path = strdup(path);
        img.name = strdup("code");
        ASSERT_TRUE(img.path && img.name);
        ASSERT_OK(decode_input_add_image(in, &img));
}

/* Run the whole decoder on in; returns the output (caller frees). */
/* The output, NUL-terminated, and its size (binary formats hold NULs). */
static inline char *decode_to_bytes(const DecodeInput *in, const DecodeOptions *opts, uint64_t *ret_errors,
                                    size_t *ret_size) {
        _cleanup_(decoder_freep) Decoder *d = NULL;
        _cleanup_free_ char *error = NULL;
        char *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        r = decoder_new(in, opts, &d, &error);
        if (r < 0)
                test_fail("decoder_new: %s (%s)", strerror(-r), strna(error));
        f = open_memstream(&text, &size);
        ASSERT_NOT_NULL(f);
        r = decoder_run(d, f, &error);
        if (r < 0)
                test_fail("decoder_run: %s (%s)", strerror(-r), strna(error));
        fclose(f);
        if (ret_errors)
                *ret_errors = decoder_error_count(d);
        if (ret_size)
                *ret_size = size;
        return text;
}

static inline char *decode_to_string(const DecodeInput *in, const DecodeOptions *opts, uint64_t *ret_errors) {
        return decode_to_bytes(in, opts, ret_errors, NULL);
}

/* A raw-mode input: one CPU's trace and one raw image at addr. */
static inline DecodeInput *raw_input(const uint8_t *trace, size_t size, const char *image, uint64_t addr) {
        DecodeInput *in;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", (void *) trace, size, false));
        add_raw_image(in, image, addr);
        return in;
}

/* --format=branches --fields=cpu,tid,from,to,kind (and time when asked). */
static inline DecodeOptions branch_options(unsigned jobs, uint64_t segment_size, bool events, bool time) {
        return (DecodeOptions){
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_FROM, DECODE_FIELD_TO, DECODE_FIELD_KIND,
                            DECODE_FIELD_TIME },
                .n_fields = time ? 6 : 5,
                .events = events,
                .jobs = jobs,
                .segment_size = segment_size,
                .progress = 0,
        };
}

/* The instructions the first CPU decoded to (what the summary counts). */
static inline uint64_t decode_insn_count(const DecodeInput *in, DecodeOptions opts) {
        _cleanup_(decoder_freep) Decoder *d = NULL;
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t n;
        FILE *f = open_memstream(&text, &n);

        ASSERT_NOT_NULL(f);
        opts.format = DECODE_FORMAT_SUMMARY;
        opts.n_fields = 0;
        ASSERT_OK(decoder_new(in, &opts, &d, &error));
        ASSERT_OK(decoder_run(d, f, &error));
        fclose(f);
        return d->cpu_stats[0].insns;
}
