/* SPDX-License-Identifier: MIT */

/*
 * Build-ids through libelf: walk PT_NOTE segments (what the kernel and
 * perf use, and all a stripped or memory-only image such as the vDSO is
 * sure to have), fall back to SHT_NOTE sections. gelf_getnote() checks
 * every note's sizes against its data block, so a hostile ELF cannot make
 * us read outside it.
 */

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include "common/basic/elf-util.h"

static int note_build_id(Elf_Data *data, uint8_t *buf, size_t max, size_t *ret_size) {
        size_t off = 0, next;
        GElf_Nhdr nh;
        size_t name_off, desc_off;

        while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                    memcmp((const char *) data->d_buf + name_off, "GNU", 4) == 0) {
                        if (nh.n_descsz == 0)
                                return -EBADMSG;
                        if (nh.n_descsz > max)
                                return -E2BIG;
                        memcpy(buf, (const uint8_t *) data->d_buf + desc_off, nh.n_descsz);
                        *ret_size = nh.n_descsz;
                        return 0;
                }
                off = next;
        }
        return -ENODATA;
}

static int elf_build_id(Elf *elf, uint8_t *buf, size_t max, size_t *ret_size) {
        size_t phnum = 0;
        Elf_Scn *scn = NULL;
        int r;

        if (elf_kind(elf) != ELF_K_ELF)
                return -EBADMSG;
        if (elf_getphdrnum(elf, &phnum) == 0)
                for (size_t i = 0; i < phnum; i++) {
                        GElf_Phdr ph;
                        Elf_Data *data;

                        if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0)
                                continue;
                        data = elf_getdata_rawchunk(elf, (int64_t) ph.p_offset, ph.p_filesz,
                                                    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
                        if (!data)
                                continue;
                        r = note_build_id(data, buf, max, ret_size);
                        if (r != -ENODATA)
                                return r;
                }

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data)
                        continue;
                r = note_build_id(data, buf, max, ret_size);
                if (r != -ENODATA)
                        return r;
        }
        return -ENODATA;
}

int elf_util_read_build_id_fd(int fd, uint8_t *buf, size_t max, size_t *ret_size) {
        Elf *elf;
        int r;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;
        /* ELF_C_READ_MMAP would fault on files truncated under us; reading
         * is slower but safe against a file changing as we look at it. */
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf)
                return -EBADMSG;
        r = elf_build_id(elf, buf, max, ret_size);
        elf_end(elf);
        return r;
}

int elf_util_read_build_id_path(const char *path, uint8_t *buf, size_t max, size_t *ret_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return elf_util_read_build_id_fd(fd, buf, max, ret_size);
}

int elf_util_read_build_id_memory(const void *p, size_t n, uint8_t *buf, size_t max, size_t *ret_size) {
        Elf *elf;
        int r;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;
        /* elf_memory() takes a non-const pointer for its read-write modes;
         * reading, as here, leaves the image untouched. */
        elf = elf_memory((char *) p, n);
        if (!elf)
                return -EBADMSG;
        r = elf_build_id(elf, buf, max, ret_size);
        elf_end(elf);
        return r;
}
