/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A small copy of the kernel's executable text from a kcore-format file
 * (/proc/kcore: an ELF core whose PT_LOAD segments map kernel virtual
 * addresses), like perf's kcore copy: only the kernel text range (from
 * kallsyms' _stext/_etext) and the module area (modules from /proc/modules
 * and every "[...]"-tagged kallsyms function: [bpf], [__builtin__ftrace],
 * [__builtin__kprobes], module symbols) are copied, into an ELF with one PT_LOAD per contiguous range, so the
 * decoder can read the kernel code exactly as it was (alternatives and
 * static keys applied) without a multi-terabyte file.
 *
 * kallsyms and modules are the texts of /proc/kallsyms and /proc/modules
 * captured at the same time (they go into the bundle as they are).
 */

#include "common/basic/macro.h"

typedef struct KcoreRange {
        uint64_t start, end; /* [start, end), page aligned */
} KcoreRange;

/* Kernel text: [_stext (or _text), _etext) from kallsyms, page aligned.
 * -ENODATA when the symbols are absent, -EPERM when kallsyms addresses are
 * all zero (kptr_restrict hides them). */
int kcore_kernel_text_range(const char *kallsyms, KcoreRange *ret);
/* The module area, as perf's kcore_copy__calc_maps(): from the lowest
 * module start (/proc/modules) or "[...]"-tagged function symbol
 * (kallsyms), to the highest module end or tagged symbol plus a page.
 * -ENODATA when there is neither, -EPERM when addresses are hidden (zero). */
int kcore_module_area_range(const char *kallsyms, const char *modules, KcoreRange *ret);

typedef struct KcoreCopyResult {
        KcoreRange text;
        KcoreRange modules; /* the module area, 0/0 when none */
        unsigned n_segments;
        uint64_t size; /* bytes of the ELF written */
} KcoreCopyResult;

/* Copy into out_fd (written from offset 0, truncated first). -EFBIG when
 * the result would exceed max_size (0 = no limit); -ENODATA when the text
 * ranges are not mapped by kcore; -EBADMSG for a malformed kcore. Either
 * way *ret_error says why, suitable for the manifest's kcore_absent_reason. */
int kcore_copy(const char *kcore_path, const char *kallsyms, const char *modules, int out_fd, uint64_t max_size,
               KcoreCopyResult *ret, char **ret_error);
