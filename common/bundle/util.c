/* SPDX-License-Identifier: MIT */

/*
 * SHA-256 through OpenSSL's libcrypto (EVP interface, which picks the
 * SHA-NI/AVX2 implementation at run time: hashing must keep up with zstd
 * -1 when a dump writes hundreds of MiB), plus small helpers of the bundle
 * writer and reader.
 */

#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/mman.h>

#include "common/basic/parse-util.h"
#include "common/bundle/bundle.h"
#include "common/bundle/internal.h"

struct BundleSha256 {
        EVP_MD_CTX *ctx;
};

int bundle_sha256_new(BundleSha256 **ret) {
        BundleSha256 *h = calloc(1, sizeof *h);

        if (!h)
                return -ENOMEM;
        h->ctx = EVP_MD_CTX_new();
        if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
                bundle_sha256_free(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

int bundle_sha256_update(BundleSha256 *h, const void *p, size_t n) {
        return n == 0 || EVP_DigestUpdate(h->ctx, p, n) == 1 ? 0 : -EIO;
}

int bundle_sha256_final(BundleSha256 *h, uint8_t out[BUNDLE_SHA256_LEN]) {
        unsigned len = 0;

        if (EVP_DigestFinal_ex(h->ctx, out, &len) != 1 || len != BUNDLE_SHA256_LEN)
                return -EIO;
        return 0;
}

BundleSha256 *bundle_sha256_free(BundleSha256 *h) {
        if (!h)
                return NULL;
        EVP_MD_CTX_free(h->ctx);
        free(h);
        return NULL;
}

int bundle_sha256(const void *p, size_t n, uint8_t out[BUNDLE_SHA256_LEN]) {
        unsigned len = 0;

        if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1 || len != BUNDLE_SHA256_LEN)
                return -EIO;
        return 0;
}

int bundle_invalid(char **ret_error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = set_error_messagev(-EBADMSG, ret_error, fmt, ap);
        va_end(ap);
        return r;
}

int bundle_anon_tmpfile(int dir_fd, const char *name_hint) {
        int fd = -EBADF;

        if (dir_fd >= 0)
                fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                fd = memfd_create(name_hint, MFD_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

const char *bundle_format_size(char buf[static 32], uint64_t bytes) {
        return format_bytes(buf, 32, bytes);
}
