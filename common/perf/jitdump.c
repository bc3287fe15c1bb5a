/* SPDX-License-Identifier: MIT */

/* Reading jitdump files (common/perf/jitdump.h). */

#include <byteswap.h>
#include <ctype.h>
#include <inttypes.h>

#include "common/basic/cursor.h"
#include "common/basic/string-util.h"
#include "common/perf/jitdump.h"

static uint32_t u32(const JitdumpReader *r, uint32_t v) {
        return r->header.swapped ? bswap_32(v) : v;
}

static uint64_t u64(const JitdumpReader *r, uint64_t v) {
        return r->header.swapped ? bswap_64(v) : v;
}

int jitdump_reader_init(JitdumpReader *r, const void *data, size_t size, char **ret_error) {
        Cursor c = { .p = data, .left = size };
        uint32_t magic, pad;
        JitdumpHeader *h = &r->header;

        *r = (JitdumpReader){ .data = data, .size = size };
        if (!cursor_take(&c, &magic, 4))
                return set_error_message(-EBADMSG, ret_error, "%zu bytes are too short for a jitdump header (%u bytes)", size,
                           JITDUMP_HEADER_MIN);
        if (magic != JITDUMP_MAGIC && magic != JITDUMP_MAGIC_SWAPPED)
                return set_error_message(-EBADMSG, ret_error, "no jitdump magic (0x%08x, expected 0x%08x)", magic, JITDUMP_MAGIC);
        h->swapped = magic == JITDUMP_MAGIC_SWAPPED;
        if (!cursor_take(&c, &h->version, 4) || !cursor_take(&c, &h->total_size, 4) ||
            !cursor_take(&c, &h->elf_mach, 4) || !cursor_take(&c, &pad, 4) || !cursor_take(&c, &h->pid, 4) ||
            !cursor_take(&c, &h->timestamp, 8) || !cursor_take(&c, &h->flags, 8))
                return set_error_message(-EBADMSG, ret_error, "%zu bytes are too short for a jitdump header (%u bytes)", size,
                           JITDUMP_HEADER_MIN);
        h->version = u32(r, h->version);
        h->total_size = u32(r, h->total_size);
        h->elf_mach = u32(r, h->elf_mach);
        h->pid = u32(r, h->pid);
        h->timestamp = u64(r, h->timestamp);
        h->flags = u64(r, h->flags);
        /* perf's jit_open() takes version 1 and a header at least as large
         * as its struct; a larger one has fields it skips. */
        if (h->version != 1)
                return set_error_message(-EBADMSG, ret_error, "jitdump version %u (only version 1 is known)", h->version);
        if (h->total_size < JITDUMP_HEADER_MIN || h->total_size > size)
                return set_error_message(-EBADMSG, ret_error, "jitdump header size %u (valid: %u up to the file's %zu bytes)",
                           h->total_size, JITDUMP_HEADER_MIN, size);
        r->pos = h->total_size;
        return 0;
}

int jitdump_reader_next(JitdumpReader *r, JitdumpRecord *ret, char **ret_error) {
        uint32_t id, total;
        uint64_t ts;
        Cursor c;

        if (r->size - r->pos < JITDUMP_PREFIX_SIZE) {
                r->truncated = r->pos < r->size;
                return 0;
        }
        c = (Cursor){ .p = r->data + r->pos, .left = r->size - r->pos };
        (void) cursor_take(&c, &id, 4);
        (void) cursor_take(&c, &total, 4);
        (void) cursor_take(&c, &ts, 8);
        id = u32(r, id);
        total = u32(r, total);
        if (total < JITDUMP_PREFIX_SIZE)
                return set_error_message(-EBADMSG, ret_error, "jitdump record at offset %zu: size %u is below the %u bytes of its prefix",
                           r->pos, total, JITDUMP_PREFIX_SIZE);
        if (total > r->size - r->pos) {
                r->truncated = true;
                return 0;
        }
        *ret = (JitdumpRecord){ .type = id, .timestamp = u64(r, ts), .offset = r->pos };
        c.left = total - JITDUMP_PREFIX_SIZE;

        if (id == JITDUMP_CODE_LOAD || id == JITDUMP_CODE_MOVE) {
                uint64_t a, b = 0, size, index;

                if (!cursor_take(&c, &ret->pid, 4) || !cursor_take(&c, &ret->tid, 4) ||
                    !cursor_take(&c, &ret->vma, 8) || !cursor_take(&c, &a, 8) ||
                    (id == JITDUMP_CODE_MOVE && !cursor_take(&c, &b, 8)) || !cursor_take(&c, &size, 8) ||
                    !cursor_take(&c, &index, 8))
                        return set_error_message(-EBADMSG, ret_error, "jitdump %s record at offset %zu: size %u is too small",
                                   id == JITDUMP_CODE_LOAD ? "code-load" : "code-move", r->pos, total);
                ret->pid = u32(r, ret->pid);
                ret->tid = u32(r, ret->tid);
                ret->vma = u64(r, ret->vma);
                ret->code_size = u64(r, size);
                ret->code_index = u64(r, index);
                if (id == JITDUMP_CODE_MOVE) {
                        ret->old_code_addr = u64(r, a);
                        ret->code_addr = u64(r, b);
                } else
                        ret->code_addr = u64(r, a);
                if (ret->code_addr + ret->code_size < ret->code_addr)
                        return set_error_message(-EBADMSG, ret_error, "jitdump record at offset %zu: code at 0x%" PRIx64 " of %" PRIu64
                                   " bytes wraps around", r->pos, ret->code_addr, ret->code_size);
        }
        if (id == JITDUMP_CODE_LOAD) {
                /* The name, NUL-terminated, then the code: perf's
                 * jit_repipe_code_load() takes the code as the record's last
                 * code_size bytes. */
                const char *name = (const char *) c.p;
                const char *nul = memchr(name, 0, c.left);

                if (!nul || ret->code_size > c.left - (size_t) (nul - name + 1))
                        return set_error_message(-EBADMSG, ret_error,
                                   "jitdump code-load record at offset %zu: %" PRIu64 " bytes of code and a "
                                   "NUL-terminated name do not fit its %u bytes", r->pos, ret->code_size, total);
                ret->name = name;
                ret->code_offset = r->pos + total - (size_t) ret->code_size;
        }
        r->pos += total;
        return 1;
}

bool jitdump_is_dump_name(const char *path, uint32_t pid) {
        const char *base = strrchr(path, '/'), *p;
        unsigned long v;
        char *end;

        base = base ? base + 1 : path;
        p = startswith(base, "jit-");
        if (!p || !isdigit((unsigned char) *p))
                return false;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno != 0 || !streq(end, ".dump") || v > UINT32_MAX)
                return false;
        return pid == 0 || v == pid;
}
