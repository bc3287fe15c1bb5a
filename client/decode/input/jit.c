/* SPDX-License-Identifier: MIT */

/*
 * JIT code in a DecodeInput: a jitdump's code loads as timed raw images of
 * one process, a perf map's names, and the JIT code a bundle could not
 * take. Decisions (ptraced-bundle(5), "JIT code", says them for users):
 *
 *  - A code load is used from its timestamp on, until a later load or
 *    move overlapping it (or a move of its own code) takes over at that
 *    one's timestamp. A load no earlier one overlaps is used from the
 *    start: before it the address held nothing the trace could run, and
 *    the JIT's clock and perf's may differ by a little.
 *  - Without a clock relating jitdump times to perf time, loads keep
 *    their order only: the last one at an address is used throughout.
 *  - The newest loads are kept when there are more than the decoder
 *    takes (DECODE_MAX_IMAGES): a snapshot's trace is the newest too.
 */

#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "client/decode/input/input.h"
#include "client/decode/util.h"
#include "common/basic/string-util.h"
#include "common/perf/jitdump.h"
#include "common/perf/perf-map.h"

typedef struct Placement {
        uint64_t addr, size;
        uint64_t start, end; /* perf time; start 0: from the beginning */
        size_t code_offset;  /* in the file */
        uint64_t code_index;
        size_t name;         /* offset of the name in the file */
} Placement;

static int placement_add(Placement **v, size_t *n, size_t *allocated, const Placement *p) {
        /* What p overlaps ends where p begins. */
        bool overlaps = false;

        for (size_t i = 0; i < *n; i++) {
                Placement *o = &(*v)[i];

                if (o->end <= p->start || o->addr >= p->addr + p->size || p->addr >= o->addr + o->size)
                        continue;
                o->end = p->start;
                overlaps = true;
        }
        if (*n == *allocated) {
                size_t na = MAX(*allocated * 2, (size_t) 64);
                Placement *a = reallocarray(*v, na, sizeof *a);
                if (!a)
                        return -ENOMEM;
                *v = a;
                *allocated = na;
        }
        (*v)[*n] = *p;
        if (!overlaps)
                (*v)[*n].start = 0;
        (*n)++;
        return 0;
}

static uint64_t jit_time(const JitdumpReader *r, const DecodeInput *in, const DecodeJitClock *clk, uint64_t ts,
                         bool *ret_ok) {
        if (r->header.flags & JITDUMP_FLAGS_ARCH_TIMESTAMP) {
                *ret_ok = in->has_tsc_conversion;
                return in->has_tsc_conversion ? perf_tsc_to_time(&in->tsc_conversion, ts) : 0;
        }
        *ret_ok = clk->has_monotonic;
        if (!clk->has_monotonic)
                return 0;
        if (clk->perf_minus_monotonic < 0 && ts < (uint64_t) -clk->perf_minus_monotonic)
                return 1; /* before perf time began: "from the start", but still after a load at 0 */
        return ts + (uint64_t) clk->perf_minus_monotonic;
}

int decode_input_add_jitdump(DecodeInput *in, uint32_t pid, int fd, const char *name, const DecodeJitClock *clk,
                             char **ret_error) {
        _cleanup_close_ int owned = fd; /* until the first image takes it */
        _cleanup_free_ Placement *v = NULL;
        _cleanup_free_ char *error = NULL;
        size_t n = 0, allocated = 0, first = 0, room;
        uint64_t seq = 0;
        JitdumpReader rd;
        JitdumpRecord rec;
        bool timed = true, given = false;
        struct stat st;
        void *map;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_size <= 0)
                return set_error_message(-EBADMSG, ret_error, "%s is empty", name);
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        r = jitdump_reader_init(&rd, map, (size_t) st.st_size, ret_error);
        while (r >= 0 && (r = jitdump_reader_next(&rd, &rec, &error)) > 0) {
                Placement p = {};
                bool ok;

                if (rec.type != JITDUMP_CODE_LOAD && rec.type != JITDUMP_CODE_MOVE)
                        continue;
                if (rec.code_size == 0)
                        continue;
                p.start = jit_time(&rd, in, clk, rec.timestamp, &ok);
                if (!ok) {
                        /* Record order stands in for time. */
                        timed = false;
                        p.start = ++seq;
                }
                p.end = UINT64_MAX;
                p.addr = rec.code_addr;
                p.size = rec.code_size;
                p.code_index = rec.code_index;
                if (rec.type == JITDUMP_CODE_LOAD) {
                        p.code_offset = rec.code_offset;
                        p.name = (size_t) ((const uint8_t *) rec.name - (const uint8_t *) map);
                } else {
                        /* The code that moves: the newest placement of its
                         * index at its old address. */
                        size_t k = n;
                        while (k > 0 && !(v[k - 1].code_index == rec.code_index && v[k - 1].addr == rec.old_code_addr))
                                k--;
                        if (k == 0)
                                continue;
                        p.code_offset = v[k - 1].code_offset;
                        p.name = v[k - 1].name;
                        p.size = MIN(p.size, v[k - 1].size);
                        v[k - 1].end = MIN(v[k - 1].end, p.start);
                }
                r = placement_add(&v, &n, &allocated, &p);
        }
        if (r == -ENOMEM) {
                (void) munmap(map, (size_t) st.st_size);
                return r;
        }
        if (r < 0 && n == 0) {
                (void) munmap(map, (size_t) st.st_size);
                if (error && ret_error)
                        *ret_error = TAKE_PTR(error);
                return -EBADMSG;
        }
        if (r < 0)
                (void) decode_input_add_note(in, "%s: %s; the code loads after it are left out", name, strna(error));
        if (!timed)
                (void) decode_input_add_note(in, "%s: no clock relates its times to the trace's: each address "
                                                 "is decoded with its last code load", name);
        if (rd.truncated)
                (void) decode_input_add_note(in, "%s: its last record was cut short at dump time, ignored", name);

        room = DECODE_MAX_IMAGES - MIN(in->n_images + 1024, (size_t) DECODE_MAX_IMAGES);
        if (n > room) {
                first = n - room;
                (void) decode_input_add_note(in, "%s: %zu code loads, only the newest %zu are used", name, n, room);
        }
        for (size_t i = first; i < n; i++) {
                const char *fname = (const char *) map + v[i].name;
                DecodeImage img = {
                        .fd = -EBADF,
                        .kind = DECODE_IMAGE_RAW,
                        .has_addr = true,
                        .addr = v[i].addr,
                        .has_pid = true,
                        .pid = pid,
                        .file_offset = v[i].code_offset,
                        .file_size = v[i].size,
                        .has_time = true,
                        .time_start = timed ? v[i].start : 0,
                        .time_end = timed ? v[i].end : (v[i].end == UINT64_MAX ? v[i].end : 0),
                };

                if (!timed && img.time_end == 0)
                        continue; /* replaced by a later load */
                if (img.time_end <= img.time_start)
                        continue; /* replaced at once */
                /* The first image owns the file; the others name it. perf
                 * inject names the ELF file of a load jitted-<pid>-<index>.so
                 * and perf script shows that as its DSO. */
                if (asprintf(&img.path, "/proc/self/fd/%d", fd) < 0 ||
                    asprintf(&img.name, "jitted-%" PRIu32 "-%" PRIu64 ".so", pid, v[i].code_index) < 0 ||
                    !(img.symbol = strdup(fname))) {
                        decode_image_done(&img);
                        (void) munmap(map, (size_t) st.st_size);
                        return -ENOMEM;
                }
                if (!given) {
                        img.fd = TAKE_FD(owned);
                        given = true;
                }
                r = decode_input_add_image(in, &img);
                decode_image_done(&img);
                if (r < 0) {
                        (void) munmap(map, (size_t) st.st_size);
                        return r;
                }
        }
        (void) munmap(map, (size_t) st.st_size);
        return 0;
}

static int jit_symbol_cmp(const void *a, const void *b) {
        const DecodeJitSymbol *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->line < y->line ? -1 : x->line > y->line;
}

int decode_input_add_perf_map(DecodeInput *in, uint32_t pid, const void *data, size_t size) {
        PerfMapReader rd;
        PerfMapEntry e;
        size_t n0 = in->n_jit_symbols;

        perf_map_reader_init(&rd, data, size);
        while (perf_map_reader_next(&rd, &e) > 0) {
                DecodeJitSymbol *v;

                if (in->n_jit_symbols >= DECODE_MAX_JIT_SYMBOLS) {
                        (void) decode_input_add_note(in, "perf map of pid %" PRIu32 ": more than %u names, "
                                                         "the rest left out", pid, DECODE_MAX_JIT_SYMBOLS);
                        break;
                }
                v = reallocarray(in->jit_symbols, in->n_jit_symbols + 1, sizeof *v);
                if (!v)
                        return -ENOMEM;
                in->jit_symbols = v;
                v[in->n_jit_symbols] = (DecodeJitSymbol){ .pid = pid, .start = e.start, .size = e.size,
                                                          .line = e.line, .name = strndup(e.name, e.name_len) };
                if (!v[in->n_jit_symbols].name)
                        return -ENOMEM;
                in->n_jit_symbols++;
        }
        if (in->n_jit_symbols == n0)
                /* A map without a line still says there is one. */
                return decode_input_add_note(in, "the perf map of pid %" PRIu32 " names no function", pid);
        qsort(in->jit_symbols, in->n_jit_symbols, sizeof *in->jit_symbols, jit_symbol_cmp);
        return 0;
}

bool decode_input_has_perf_map(const DecodeInput *in, uint32_t pid) {
        DECODE_FOREACH(s, in->jit_symbols, in->n_jit_symbols)
                if (s->pid == pid)
                        return true;
        return false;
}

const DecodeJitSymbol *decode_input_jit_symbol(const DecodeInput *in, uint32_t pid, uint64_t addr) {
        const DecodeJitSymbol *best = NULL;
        size_t lo = 0, hi = in->n_jit_symbols;

        /* The first entry of pid starting above addr... */
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const DecodeJitSymbol *s = &in->jit_symbols[mid];

                if (s->pid < pid || (s->pid == pid && s->start <= addr))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* ...and before it those that may cover addr: the last line wins
         * (perf's symbols__insert() keeps the later of two at one start). */
        for (size_t i = lo, k = 0; i > 0 && k < 64; i--, k++) {
                const DecodeJitSymbol *s = &in->jit_symbols[i - 1];

                if (s->pid != pid)
                        break;
                if (addr - s->start < s->size && (!best || s->line > best->line))
                        best = s;
        }
        return best;
}

int decode_input_add_missing_jit(DecodeInput *in, uint32_t pid, uint64_t addr, uint64_t len, const char *what,
                                 const char *reason) {
        DecodeMissingJit *v;

        if (in->n_missing_jit >= DECODE_MAX_IMAGES)
                return 0;
        v = reallocarray(in->missing_jit, in->n_missing_jit + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        in->missing_jit = v;
        v = &v[in->n_missing_jit];
        *v = (DecodeMissingJit){ .pid = pid, .addr = addr, .len = len, .what = strdup(what),
                                 .reason = strdup(reason ?: "unknown") };
        in->n_missing_jit++;
        return v->what && v->reason ? 0 : -ENOMEM;
}
