/* SPDX-License-Identifier: MIT */

/*
 * A whole-file zstd bundle (bundle.tar.zst) read as a stream of tar bytes,
 * never more than a bound. The reader walks the tar headers straight off
 * this stream, so a file that is no bundle (263 KB of zstd that inflate to
 * 8 GiB of zeros, issue 17) is refused after its first block, with nothing
 * written anywhere; only a bundle whose manifest accounts for every byte is
 * ever staged to disk, and then exactly that many bytes.
 */

#include <inttypes.h>
#include <unistd.h>
#include <zstd.h>

#include "common/bundle/internal.h"

struct BundleZstdSource {
        int fd;          /* the compressed file; not owned */
        uint64_t pos;    /* read offset in it */
        uint64_t produced, max;
        ZSTD_DCtx *d;
        uint8_t *in, *out;
        size_t in_cap, out_cap;
        ZSTD_inBuffer ib;
        size_t last; /* ZSTD_decompressStream()'s hint: 0 at the end of a frame */
        bool eof;
        const char *limit; /* names max in the message */
        int code;
        char *error;
};

int bundle_zstd_source_new(int fd, uint64_t max, const char *limit, BundleZstdSource **ret) {
        BundleZstdSource *z = calloc(1, sizeof *z);

        if (!z)
                return -ENOMEM;
        *z = (BundleZstdSource){ .fd = fd, .max = max, .limit = limit, .in_cap = ZSTD_DStreamInSize(),
                                 .out_cap = ZSTD_DStreamOutSize() };
        z->d = ZSTD_createDCtx();
        z->in = malloc(z->in_cap);
        z->out = malloc(z->out_cap);
        if (!z->d || !z->in || !z->out) {
                bundle_zstd_source_free(z);
                return -ENOMEM;
        }
        /* Window up to 128 MiB (zstd's default cap), as for members. */
        (void) ZSTD_DCtx_setParameter(z->d, ZSTD_d_windowLogMax, 27);
        *ret = z;
        return 0;
}

BundleZstdSource *bundle_zstd_source_free(BundleZstdSource *z) {
        if (!z)
                return NULL;
        ZSTD_freeDCtx(z->d);
        free(z->in);
        free(z->out);
        free(z->error);
        return mfree(z);
}

static ssize_t fail(BundleZstdSource *z, int r, const char *fmt, ...) {
        va_list ap;

        if (!z->error) {
                z->code = r;
                va_start(ap, fmt);
                if (vasprintf(&z->error, fmt, ap) < 0)
                        z->error = NULL;
                va_end(ap);
        }
        return r;
}

ssize_t bundle_zstd_source_next(BundleZstdSource *z, const void **ret) {
        char a[32];

        for (;;) {
                ZSTD_outBuffer ob = { z->out, z->out_cap, 0 };

                if (z->ib.pos >= z->ib.size && !z->eof) {
                        ssize_t k = pread(z->fd, z->in, z->in_cap, (off_t) z->pos);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return fail(z, -errno, "compressed bundle: read failed: %s", strerror(errno));
                        if (k == 0)
                                z->eof = true;
                        z->pos += (uint64_t) k;
                        z->ib = (ZSTD_inBuffer){ z->in, (size_t) k, 0 };
                }
                if (z->eof && z->ib.pos >= z->ib.size) {
                        /* All input given: what the decoder still holds comes out
                         * with empty input; a frame it cannot finish is cut short. */
                        if (z->last == 0)
                                return 0;
                        z->last = ZSTD_decompressStream(z->d, &ob, &z->ib);
                        if (ZSTD_isError(z->last) || ob.pos == 0)
                                return fail(z, -EBADMSG, "compressed bundle ends in the middle of a zstd frame");
                } else {
                        z->last = ZSTD_decompressStream(z->d, &ob, &z->ib);
                        if (ZSTD_isError(z->last))
                                return fail(z, -EBADMSG, "compressed bundle: zstd: %s", ZSTD_getErrorName(z->last));
                }
                if (ob.pos == 0)
                        continue;
                if (z->produced + ob.pos > z->max)
                        return fail(z, -E2BIG, "compressed bundle decompresses to more than %s (%s); refusing it",
                                    bundle_format_size(a, z->max), z->limit);
                z->produced += ob.pos;
                *ret = z->out;
                return (ssize_t) ob.pos;
        }
}

uint64_t bundle_zstd_source_produced(const BundleZstdSource *z) {
        return z->produced;
}

const char *bundle_zstd_source_error(const BundleZstdSource *z) {
        return z->error;
}

int bundle_zstd_source_errno(const BundleZstdSource *z) {
        return z->code;
}
