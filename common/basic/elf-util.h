/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Small ELF facts read through libelf: the GNU build-id note. Input is
 * untrusted (a file a process mapped, a vDSO image read from memory);
 * libelf bounds-checks the note walk and so do we.
 */

#include "common/basic/macro.h"

#define ELF_BUILD_ID_MAX 20

/* Build-id from the NT_GNU_BUILD_ID note (program headers first, section
 * headers as a fallback). -ENODATA when the ELF has none, -EBADMSG when it
 * is not an ELF file or is malformed, -E2BIG when the id exceeds max. */
int elf_util_read_build_id_fd(int fd, uint8_t *buf, size_t max, size_t *ret_size);
int elf_util_read_build_id_path(const char *path, uint8_t *buf, size_t max, size_t *ret_size);
int elf_util_read_build_id_memory(const void *p, size_t n, uint8_t *buf, size_t max, size_t *ret_size);
