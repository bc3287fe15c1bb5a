/* SPDX-License-Identifier: MIT */

/*
 * The bundle reader on arbitrary bytes: open (tar index, manifest parse,
 * cross-checks), then read, memfd and verify every member the manifest
 * lists. Limits are small so that the fuzzer spends its time on parsing,
 * not on allocating what a hostile size claims. Whole-file zstd input
 * (28 b5 2f fd) goes through the bounded decompression path too.
 */

#include <sys/mman.h>

#include "common/bundle/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BundleReaderLimits limits = {
                .max_members = 256,
                .max_member_size = 1 << 20,
                .max_manifest_size = 1 << 20,
                .max_file_size = 8 << 20,
                .max_content_size = 16 << 20,
        };
        BundleReader *r = NULL;
        char *error = NULL;
        int fd;

        fd = memfd_create("fuzz-bundle", MFD_CLOEXEC);
        if (fd < 0)
                abort();
        if (size > 0 && write(fd, data, size) != (ssize_t) size)
                abort();

        if (bundle_reader_open_fd(fd, &limits, &r, &error) >= 0) {
                const BundleManifest *m = bundle_reader_manifest(r);

                for (size_t i = 0; i < m->n_members; i++) {
                        void *p = NULL;
                        size_t n = 0;
                        int mfd = -1;

                        free(error);
                        error = NULL;
                        if (bundle_reader_read_member(r, m->members[i].name, &p, &n, &error) >= 0) {
                                /* What we got is what the manifest promised. */
                                if (n != m->members[i].size || ((uint8_t *) p)[n] != 0)
                                        abort();
                                free(p);
                        }
                        free(error);
                        error = NULL;
                        if (bundle_reader_member_memfd(r, m->members[i].name, &mfd, &error) >= 0)
                                close(mfd);
                }
                free(error);
                error = NULL;
                (void) bundle_reader_verify(r, &error);
                bundle_reader_free(r);
        } else if (!error)
                abort(); /* every refusal says why */
        free(error);
        close(fd);
        return 0;
}
