/* SPDX-License-Identifier: MIT */

/*
 * The manifest parser on arbitrary JSON-ish text. Whatever it accepts must
 * serialize (the writer validates the same rules) and parse again to the
 * same serialization: the reader and the writer agree on every manifest.
 */

#include "common/bundle/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BundleManifest *m = NULL, *m2 = NULL;
        char *error = NULL, *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        int r;

        r = bundle_manifest_parse((const char *) data, size, &m, &error);
        if (r < 0) {
                if (r != -ENOMEM && !error)
                        abort(); /* every refusal says why */
                free(error);
                return 0;
        }
        if (bundle_manifest_to_json(m, &a, &an, &error) < 0)
                abort();
        if (bundle_manifest_parse(a, an, &m2, &error) < 0)
                abort();
        if (bundle_manifest_to_json(m2, &b, &bn, &error) < 0)
                abort();
        if (an != bn || memcmp(a, b, an) != 0)
                abort();
        free(a);
        free(b);
        free(error);
        bundle_manifest_free(m);
        bundle_manifest_free(m2);
        return 0;
}
