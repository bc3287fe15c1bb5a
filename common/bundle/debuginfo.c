/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>

#include "common/basic/elf-util.h"
#include "common/bundle/debuginfo.h"
#include "common/bundle/manifest.h"

/* The file name in .gnu_debuglink: a NUL-terminated string (then padding
 * and a CRC32 we do not need: the build-id check is stronger). */
static char *read_debuglink(int fd) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        Elf_Scn *scn = NULL;
        size_t shstrndx;
        char *link = NULL;

        if (!elf)
                return NULL;
        if (elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &shstrndx) == 0)
                while ((scn = elf_nextscn(elf, scn))) {
                        GElf_Shdr shdr;
                        const char *name;
                        Elf_Data *data;

                        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
                                continue;
                        name = elf_strptr(elf, shstrndx, shdr.sh_name);
                        if (!name || !streq(name, ".gnu_debuglink"))
                                continue;
                        data = elf_getdata(scn, NULL);
                        if (data && data->d_buf && data->d_size > 0) {
                                size_t len = strnlen(data->d_buf, data->d_size);
                                /* A bare file name; anything else is not one. */
                                if (len > 0 && len < data->d_size && !memchr(data->d_buf, '/', len))
                                        link = strndup(data->d_buf, len);
                        }
                        break;
                }
        elf_end(elf);
        return link;
}

static bool has_build_id(const char *path, const uint8_t *id, size_t id_size) {
        uint8_t got[ELF_BUILD_ID_MAX];
        size_t n = 0;

        return elf_util_read_build_id_path(path, got, sizeof got, &n) >= 0 && n == id_size &&
               memcmp(got, id, n) == 0;
}

int bundle_debuginfo_find(const char *root, const char *image_path, int image_fd, const uint8_t *id,
                          size_t id_size, char **ret) {
        _cleanup_free_ char *hex = NULL, *link = NULL, *dir = NULL;
        const char *slash;

        if (id_size < 2)
                return -ENOENT;
        hex = bundle_hex_encode(id, id_size);
        if (!hex)
                return -ENOMEM;
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex, hex + 2) < 0)
                        return -ENOMEM;
                if (has_build_id(p, id, id_size)) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }

        slash = image_path ? strrchr(image_path, '/') : NULL;
        if (!slash || image_fd < 0)
                return -ENOENT;
        link = read_debuglink(image_fd);
        if (!link)
                return -ENOENT;
        dir = strndup(image_path, slash - image_path);
        if (!dir)
                return -ENOMEM;
        /* Beside the image, in .debug/ there, under /usr/lib/debug. */
        const char *prefixes[][2] = { { "", "/" }, { "", "/.debug/" }, { "/usr/lib/debug", "/" } };
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s%s%s%s%s", root, prefixes[i][0], dir, prefixes[i][1], link) < 0)
                        return -ENOMEM;
                /* Not the image itself: a debuglink naming its own file
                 * (or a file equal to it) adds nothing. */
                if (i == 0 && streq(link, slash + 1))
                        continue;
                if (has_build_id(p, id, id_size)) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}
