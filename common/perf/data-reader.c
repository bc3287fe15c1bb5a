/* SPDX-License-Identifier: MIT */

/*
 * perf.data reader. The input is hostile: every offset and size is checked
 * against the input and the limits before it is used, counts are bounded
 * before anything is allocated for them, strings must end inside their
 * field. Parsing works on memory (a mapped file, or a pipe read into
 * memory up to a limit), so the fuzz target drives the very same code.
 *
 * Side-band records are kept re-encoded with one sample_id layout
 * (PERF_SAMPLE_IDENTIFIER|TID|TIME|CPU, what ptraced writes and the
 * decoder reads): perf.data mixes events whose sample_types differ (an
 * intel_pt event, a cycles event, a dummy event), and only the event a
 * record belongs to says how its trailer is laid out. As perf does, the
 * event is found by the record's id, at the position the first event's
 * sample_type gives (perf requires every event to agree on it).
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/perf/data.h"
#include "common/perf/record.h"

#define SIDEBAND_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
#define MAX_WARNINGS 32U
/* perf writes one per DSO with samples or mmaps; a million is far beyond. */
#define MAX_BUILD_IDS (1U << 20)

typedef struct IdEntry {
        uint64_t id;
        size_t event;
} IdEntry;

typedef struct Parser {
        PerfData *d;
        const uint8_t *in;
        size_t n;
        const PerfDataLimits *lim;
        char **error;

        IdEntry *ids; /* sorted by id, for record -> event */
        size_t n_ids;
        bool ids_dirty;
        uint64_t id_total;

        ZSTD_DCtx *zstd;
        Buffer pending;        /* decompressed bytes not yet a whole record */
        uint64_t decompressed; /* bytes in total */
        unsigned n_warnings;
} Parser;

typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

static bool take(Cursor *c, void *dst, size_t n) {
        if (c->left < n)
                return false;
        if (dst)
                memcpy(dst, c->p, n);
        c->p += n;
        c->left -= n;
        return true;
}

_printf_(3, 4) static int fail(Parser *ps, int r, const char *fmt, ...) {
        va_list ap;

        if (ps->error && !*ps->error) {
                va_start(ap, fmt);
                if (vasprintf(ps->error, fmt, ap) < 0)
                        *ps->error = NULL;
                va_end(ap);
        }
        return r;
}

/* Something skipped that the user should hear about; at most MAX_WARNINGS
 * distinct lines, so a hostile file cannot make us collect millions. */
static int add_warning(PerfData *d, char *s) {
        size_t n = 0;
        char **l;

        while (d->warnings && d->warnings[n]) {
                if (streq(d->warnings[n], s)) {
                        free(s);
                        return 0;
                }
                n++;
        }
        l = reallocarray(d->warnings, n + 2, sizeof(char *));
        if (!l) {
                free(s);
                return -ENOMEM;
        }
        l[n] = s;
        l[n + 1] = NULL;
        d->warnings = l;
        return 1;
}

/* Something skipped that the user should hear about; at most MAX_WARNINGS
 * distinct lines, so a hostile file cannot make us collect millions. */
_printf_(2, 3) static int warn(Parser *ps, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        int r;

        if (ps->n_warnings > MAX_WARNINGS)
                return 0;
        if (ps->n_warnings == MAX_WARNINGS) {
                ps->n_warnings++;
                s = strdup("further warnings suppressed");
                return s ? add_warning(ps->d, s) < 0 ? -ENOMEM : 0 : -ENOMEM;
        }
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        r = add_warning(ps->d, s);
        if (r < 0)
                return r;
        ps->n_warnings += r;
        return 0;
}

PerfData *perf_data_free(PerfData *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_events; i++) {
                free(d->events[i].name);
                free(d->events[i].ids);
        }
        free(d->events);
        free(d->hostname);
        free(d->os_release);
        free(d->version);
        free(d->arch);
        free(d->cpudesc);
        free(d->cpuid);
        strv_free(d->cmdline);
        for (size_t i = 0; i < d->n_build_ids; i++)
                free(d->build_ids[i].filename);
        free(d->build_ids);
        perf_intel_pt_info_done(&d->intel_pt);
        free(d->aux);
        buffer_done(&d->sideband);
        strv_free(d->warnings);
        if (d->map)
                (void) munmap(d->map, d->map_size);
        free(d->heap);
        free(d);
        return NULL;
}

bool perf_data_is_header(const void *p, size_t n) {
        uint64_t magic;

        if (n < 8)
                return false;
        memcpy(&magic, p, sizeof(magic));
        return magic == PERF_DATA_MAGIC || magic == PERF_DATA_MAGIC_SWAPPED;
}

/* [offset, offset+size) inside the input? */
static bool in_input(const Parser *ps, uint64_t offset, uint64_t size) {
        return offset <= ps->n && size <= ps->n - offset;
}

/* ---- events and ids ---- */

static int id_cmp(const void *a, const void *b) {
        const IdEntry *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

static int add_event(Parser *ps, const void *attr, size_t attr_bytes, const uint64_t *ids, size_t n_ids) {
        PerfData *d = ps->d;
        PerfDataEvent *l, *e;
        IdEntry *il;

        if (d->n_events >= ps->lim->max_events)
                return fail(ps, -E2BIG, "more than %" PRIu64 " events (attrs)", ps->lim->max_events);
        if (n_ids > ps->lim->max_ids || ps->id_total + n_ids > ps->lim->max_ids)
                return fail(ps, -E2BIG, "more than %" PRIu64 " event ids", ps->lim->max_ids);
        l = reallocarray(d->events, d->n_events + 1, sizeof(PerfDataEvent));
        if (!l)
                return -ENOMEM;
        d->events = l;
        e = &d->events[d->n_events];
        *e = (PerfDataEvent){};
        memcpy(&e->attr, attr, MIN(attr_bytes, sizeof(e->attr)));
        e->attr_size = e->attr.size;
        if (n_ids > 0) {
                e->ids = malloc(n_ids * sizeof(uint64_t));
                if (!e->ids)
                        return -ENOMEM;
                memcpy(e->ids, ids, n_ids * sizeof(uint64_t));
                il = reallocarray(ps->ids, ps->n_ids + n_ids, sizeof(IdEntry));
                if (!il) {
                        free(e->ids);
                        return -ENOMEM;
                }
                ps->ids = il;
                for (size_t i = 0; i < n_ids; i++)
                        ps->ids[ps->n_ids++] = (IdEntry){ .id = e->ids[i], .event = d->n_events };
                ps->ids_dirty = true;
        }
        e->n_ids = n_ids;
        ps->id_total += n_ids;
        d->n_events++;
        return 0;
}

static const PerfDataEvent *lookup_event(Parser *ps, uint64_t id) {
        IdEntry key = { .id = id }, *hit;

        if (ps->ids_dirty) {
                qsort(ps->ids, ps->n_ids, sizeof(IdEntry), id_cmp);
                ps->ids_dirty = false;
        }
        if (ps->n_ids == 0)
                return NULL;
        hit = bsearch(&key, ps->ids, ps->n_ids, sizeof(IdEntry), id_cmp);
        return hit ? &ps->d->events[hit->event] : NULL;
}

const PerfDataEvent *perf_data_find_event(const PerfData *d, uint64_t id) {
        if (d->n_events == 0)
                return NULL;
        if (d->n_events == 1 || id == 0)
                return &d->events[0];
        for (size_t i = 0; i < d->n_events; i++)
                for (size_t k = 0; k < d->events[i].n_ids; k++)
                        if (d->events[i].ids[k] == id)
                                return &d->events[i];
        return NULL;
}

/* The event a non-sample record belongs to: by the id at the position the
 * first event's sample_type gives, counted from the record's end. */
static const PerfDataEvent *record_event(Parser *ps, const uint8_t *rec, size_t size) {
        const PerfDataEvent *first;
        uint64_t st, id;
        size_t from_end;

        if (ps->d->n_events == 0)
                return NULL;
        first = &ps->d->events[0];
        if (ps->d->n_events == 1 || !first->attr.sample_id_all)
                return first;
        st = first->attr.sample_type;
        if (st & PERF_SAMPLE_IDENTIFIER)
                from_end = 1;
        else if (st & PERF_SAMPLE_ID)
                from_end = 1 + !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU);
        else
                return first;
        if (size < sizeof(struct perf_event_header) + 8 * from_end)
                return NULL;
        memcpy(&id, rec + size - 8 * from_end, sizeof(id));
        if (id == 0)
                return first; /* perf: synthesized records have id 0 */
        return lookup_event(ps, id);
}

/* ---- features ---- */

/* A feature string: u32 length, then that many bytes holding a NUL. */
static int read_string(Parser *ps, Cursor *c, const char *what, char **ret) {
        uint32_t len;
        const char *s;

        if (!take(c, &len, sizeof(len)) || len > c->left)
                return fail(ps, -EBADMSG, "feature %s: string cut short", what);
        s = (const char *) c->p;
        if (len == 0 || !memchr(s, 0, len))
                return fail(ps, -EBADMSG, "feature %s: string not NUL-terminated", what);
        *ret = strdup(s);
        if (!*ret)
                return -ENOMEM;
        c->p += len;
        c->left -= len;
        return 0;
}

static int set_string_feature(Parser *ps, Cursor *c, const char *what, char **field) {
        char *s = NULL;
        int r = read_string(ps, c, what, &s);

        if (r < 0)
                return r;
        free(*field);
        *field = s;
        return 0;
}

static int add_build_id(Parser *ps, const uint8_t *p, size_t size) {
        PerfData *d = ps->d;
        struct perf_event_header h;
        PerfDataBuildId *l, b = {};
        const char *name;
        uint8_t id[24];

        /* header, pid, build_id[24], filename */
        if (size < sizeof(h) + 4 + sizeof(id) + 1)
                return fail(ps, -EBADMSG, "build-id entry of %zu bytes is too short", size);
        memcpy(&h, p, sizeof(h));
        memcpy(&b.pid, p + sizeof(h), 4);
        memcpy(id, p + sizeof(h) + 4, sizeof(id));
        name = (const char *) p + sizeof(h) + 4 + sizeof(id);
        if (!memchr(name, 0, size - (sizeof(h) + 4 + sizeof(id))))
                return fail(ps, -EBADMSG, "build-id entry's file name is not NUL-terminated");
        b.misc = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
        /* Without the size flag (perf before 5.12) the id is 20 bytes. */
        b.size = (h.misc & PERF_DATA_MISC_BUILD_ID_SIZE)
                         ? MIN((size_t) id[20], (size_t) PERF_DATA_BUILD_ID_MAX)
                         : PERF_DATA_BUILD_ID_MAX;
        memcpy(b.build_id, id, b.size);
        if (d->n_build_ids >= MAX_BUILD_IDS)
                return fail(ps, -E2BIG, "more than %u build-id entries", MAX_BUILD_IDS);
        b.filename = strdup(name);
        if (!b.filename)
                return -ENOMEM;
        l = reallocarray(d->build_ids, d->n_build_ids + 1, sizeof(PerfDataBuildId));
        if (!l) {
                free(b.filename);
                return -ENOMEM;
        }
        d->build_ids = l;
        d->build_ids[d->n_build_ids++] = b;
        return 0;
}

static int parse_event_desc(Parser *ps, Cursor *c) {
        PerfData *d = ps->d;
        uint32_t nr, sz;

        if (!take(c, &nr, sizeof(nr)) || !take(c, &sz, sizeof(sz)))
                return fail(ps, -EBADMSG, "feature EVENT_DESC cut short");
        if (sz < PERF_ATTR_SIZE_VER0 || sz > 4096 || nr > ps->lim->max_events)
                return fail(ps, -EBADMSG, "feature EVENT_DESC: %u events of attr size %u", nr, sz);
        for (uint32_t i = 0; i < nr; i++) {
                _cleanup_free_ char *name = NULL;
                uint32_t n_ids;
                uint64_t first_id = 0;
                PerfDataEvent *e = NULL;
                int r;

                if (!take(c, NULL, sz) || !take(c, &n_ids, sizeof(n_ids)))
                        return fail(ps, -EBADMSG, "feature EVENT_DESC cut short in event %u", i);
                r = read_string(ps, c, "EVENT_DESC", &name);
                if (r < 0)
                        return r;
                if ((uint64_t) n_ids * 8 > c->left)
                        return fail(ps, -EBADMSG, "feature EVENT_DESC: %u ids cut short", n_ids);
                if (n_ids > 0)
                        memcpy(&first_id, c->p, sizeof(first_id));
                c->p += (size_t) n_ids * 8;
                c->left -= (size_t) n_ids * 8;

                /* perf names the event holding the first id; events without
                 * ids are matched by position. */
                if (n_ids > 0) {
                        for (size_t k = 0; k < d->n_events && !e; k++)
                                for (size_t j = 0; j < d->events[k].n_ids; j++)
                                        if (d->events[k].ids[j] == first_id) {
                                                e = &d->events[k];
                                                break;
                                        }
                } else if (nr == d->n_events)
                        e = &d->events[i];
                if (e && !e->name)
                        e->name = TAKE_PTR(name);
        }
        return 0;
}

static int parse_feature(Parser *ps, unsigned feat, const uint8_t *p, size_t size) {
        PerfData *d = ps->d;
        Cursor c = { p, size };
        int r;

        if (feat < _PERF_DATA_FEAT_MAX)
                d->features[feat / 64] |= UINT64_C(1) << (feat % 64);

        switch (feat) {
        case PERF_DATA_FEAT_HOSTNAME:
                return set_string_feature(ps, &c, "HOSTNAME", &d->hostname);
        case PERF_DATA_FEAT_OSRELEASE:
                return set_string_feature(ps, &c, "OSRELEASE", &d->os_release);
        case PERF_DATA_FEAT_VERSION:
                return set_string_feature(ps, &c, "VERSION", &d->version);
        case PERF_DATA_FEAT_ARCH:
                return set_string_feature(ps, &c, "ARCH", &d->arch);
        case PERF_DATA_FEAT_CPUDESC:
                return set_string_feature(ps, &c, "CPUDESC", &d->cpudesc);
        case PERF_DATA_FEAT_CPUID:
                return set_string_feature(ps, &c, "CPUID", &d->cpuid);
        case PERF_DATA_FEAT_NRCPUS:
                if (!take(&c, &d->nr_cpus_avail, 4) || !take(&c, &d->nr_cpus_online, 4))
                        return fail(ps, -EBADMSG, "feature NRCPUS cut short");
                d->has_nr_cpus = true;
                return 0;
        case PERF_DATA_FEAT_TOTAL_MEM:
                if (!take(&c, &d->total_mem, 8))
                        return fail(ps, -EBADMSG, "feature TOTAL_MEM cut short");
                return 0;
        case PERF_DATA_FEAT_CMDLINE: {
                uint32_t nr;
                char **l;

                if (!take(&c, &nr, sizeof(nr)) || nr > c.left / 4)
                        return fail(ps, -EBADMSG, "feature CMDLINE cut short");
                l = calloc((size_t) nr + 1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
                for (uint32_t i = 0; i < nr; i++) {
                        r = read_string(ps, &c, "CMDLINE", &l[i]);
                        if (r < 0) {
                                strv_free(l);
                                return r;
                        }
                }
                strv_free(d->cmdline);
                d->cmdline = l;
                return 0;
        }
        case PERF_DATA_FEAT_EVENT_DESC:
                return parse_event_desc(ps, &c);
        case PERF_DATA_FEAT_BUILD_ID:
                while (c.left > 0) {
                        struct perf_event_header h;

                        if (c.left < sizeof(h))
                                return fail(ps, -EBADMSG, "feature BUILD_ID cut short");
                        memcpy(&h, c.p, sizeof(h));
                        if (h.size < sizeof(h) || h.size > c.left)
                                return fail(ps, -EBADMSG, "feature BUILD_ID: entry of size %u", h.size);
                        r = add_build_id(ps, c.p, h.size);
                        if (r < 0)
                                return r;
                        c.p += h.size;
                        c.left -= h.size;
                }
                return 0;
        case PERF_DATA_FEAT_AUXTRACE: {
                uint64_t nr;

                if (!take(&c, &nr, sizeof(nr)) || nr > c.left / 16)
                        return fail(ps, -EBADMSG, "feature AUXTRACE: index cut short");
                d->n_auxtrace_index = (uint32_t) MIN(nr, (uint64_t) UINT32_MAX);
                return 0;
        }
        case PERF_DATA_FEAT_SAMPLE_TIME:
                if (!take(&c, &d->first_sample_time, 8) || !take(&c, &d->last_sample_time, 8))
                        return fail(ps, -EBADMSG, "feature SAMPLE_TIME cut short");
                d->has_sample_time = true;
                return 0;
        case PERF_DATA_FEAT_CLOCK_DATA: {
                uint32_t version;

                if (!take(&c, &version, 4) || !take(&c, &d->clockid, 4) || !take(&c, &d->clock_tod_ns, 8) ||
                    !take(&c, &d->clock_clockid_ns, 8))
                        return fail(ps, -EBADMSG, "feature CLOCK_DATA cut short");
                d->has_clock_data = version == 1;
                return 0;
        }
        default:
                /* Features we have no use for (topology, caches, PMU
                 * mappings, BPF...) are skipped, as perf skips unknown ones. */
                return 0;
        }
}

/* ---- records ---- */

static int keep_sideband(Parser *ps, const uint8_t *rec, size_t size) {
        PerfData *d = ps->d;
        const PerfDataEvent *ev = record_event(ps, rec, size);
        struct perf_event_header h;
        PerfSampleId sid = {};
        size_t trailer = 0, start = d->sideband.size, new_size;
        int r;

        memcpy(&h, rec, sizeof(h));
        if (!ev && ps->d->n_events > 0) {
                /* perf stops here ("Can't parse sample"); one record with an
                 * id no event claims costs that record. */
                return warn(ps, "%s record with an id no event has: skipped",
                            strna(perf_data_record_type_to_string(h.type)));
        }
        if (ev && ev->attr.sample_id_all) {
                trailer = perf_sample_id_size(ev->attr.sample_type);
                if (trailer > size - sizeof(h))
                        return warn(ps, "%s record too short for its sample_id: skipped",
                                    strna(perf_data_record_type_to_string(h.type)));
                perf_sample_id_parse(rec + size - trailer, ev->attr.sample_type, &sid);
        }
        if (!ev || !(ev->attr.sample_id_all && (ev->attr.sample_type & PERF_SAMPLE_CPU)))
                sid.cpu = UINT32_MAX;
        if (!ev || !(ev->attr.sample_id_all && (ev->attr.sample_type & PERF_SAMPLE_TID)))
                sid.pid = sid.tid = UINT32_MAX;
        sid.sample_type = SIDEBAND_SAMPLE_TYPE;

        new_size = size - trailer + perf_sample_id_size(SIDEBAND_SAMPLE_TYPE);
        if (new_size > PERF_RECORD_MAX_SIZE)
                return warn(ps, "%s record too large to re-encode: skipped",
                            strna(perf_data_record_type_to_string(h.type)));
        if (d->sideband.size + new_size > ps->lim->max_sideband_size)
                return fail(ps, -E2BIG, "side-band records exceed %" PRIu64 " bytes",
                            ps->lim->max_sideband_size);
        h.size = (uint16_t) new_size;
        r = buffer_append(&d->sideband, &h, sizeof(h));
        if (r >= 0)
                r = buffer_append(&d->sideband, rec + sizeof(h), size - trailer - sizeof(h));
        if (r >= 0)
                r = perf_sample_id_append(&d->sideband, &sid);
        if (r < 0) {
                d->sideband.size = start;
                return r;
        }
        d->n_sideband++;
        return 0;
}

static int parse_records(Parser *ps, const uint8_t *p, size_t n, uint64_t base, bool nested);

static int parse_compressed(Parser *ps, const uint8_t *p, size_t n, uint64_t at) {
        ZSTD_inBuffer in = { p, n, 0 };
        size_t used;
        int r;

        if (!ps->zstd) {
                ps->zstd = ZSTD_createDCtx();
                if (!ps->zstd)
                        return -ENOMEM;
        }
        while (in.pos < in.size) {
                size_t k, in_before = in.pos, cap = ZSTD_DStreamOutSize();
                ZSTD_outBuffer ob;

                if (cap > ps->lim->max_decompressed - ps->decompressed)
                        cap = (size_t) (ps->lim->max_decompressed - ps->decompressed);
                if (cap == 0)
                        return fail(ps, -E2BIG, "compressed records expand beyond %" PRIu64 " bytes",
                                    ps->lim->max_decompressed);
                r = buffer_reserve(&ps->pending, cap);
                if (r < 0)
                        return r;
                ob = (ZSTD_outBuffer){ ps->pending.data + ps->pending.size, cap, 0 };
                k = ZSTD_decompressStream(ps->zstd, &ob, &in);
                if (ZSTD_isError(k))
                        return fail(ps, -EBADMSG, "COMPRESSED record at 0x%" PRIx64 ": %s", at,
                                    ZSTD_getErrorName(k));
                ps->pending.size += ob.pos;
                ps->decompressed += ob.pos;
                if (ob.pos == 0 && in.pos == in_before)
                        return fail(ps, -EBADMSG,
                                    "COMPRESSED record at 0x%" PRIx64 ": decompression stalled", at);
        }

        /* Whole records now; a record cut at the end of this chunk stays
         * pending for the next COMPRESSED record, as perf keeps it. Nothing
         * parsed from them points into the buffer (AUXTRACE is refused
         * there), so it is reused. */
        used = 0;
        while (ps->pending.size - used >= sizeof(struct perf_event_header)) {
                struct perf_event_header h;

                memcpy(&h, ps->pending.data + used, sizeof(h));
                if (h.size < sizeof(h))
                        return fail(ps, -EBADMSG, "record of size %u inside COMPRESSED at 0x%" PRIx64,
                                    h.size, at);
                if (h.size > ps->pending.size - used)
                        break;
                used += h.size;
        }
        if (used == 0)
                return 0;
        r = parse_records(ps, ps->pending.data, used, at, true);
        if (r < 0)
                return r;
        memmove(ps->pending.data, ps->pending.data + used, ps->pending.size - used);
        ps->pending.size -= used;
        return 0;
}

static int add_aux(Parser *ps, const PerfAuxtraceRecord *a, const uint8_t *data, uint64_t file_offset) {
        PerfData *d = ps->d;
        PerfDataAux *l;

        if (d->n_aux >= ps->lim->max_aux_buffers)
                return fail(ps, -E2BIG, "more than %" PRIu64 " AUXTRACE buffers", ps->lim->max_aux_buffers);
        l = reallocarray(d->aux, d->n_aux + 1, sizeof(PerfDataAux));
        if (!l)
                return -ENOMEM;
        d->aux = l;
        d->aux[d->n_aux++] = (PerfDataAux){
                .idx = a->idx,
                .tid = a->tid,
                .cpu = a->cpu,
                .offset = a->offset,
                .reference = a->reference,
                .data = data,
                .size = a->size,
                .file_offset = file_offset,
        };
        d->aux_bytes += a->size;
        return 0;
}

/* One record (not AUXTRACE: its payload is handled by the caller). */
static int parse_record(Parser *ps, const uint8_t *rec, size_t size, uint64_t at, bool nested) {
        PerfData *d = ps->d;
        struct perf_event_header h;
        int r;

        memcpy(&h, rec, sizeof(h));
        switch (h.type) {
        case PERF_DATA_RECORD_HEADER_ATTR: {
                struct perf_event_attr attr = {};
                uint32_t asz;

                if (size < sizeof(h) + PERF_ATTR_SIZE_VER0)
                        return fail(ps, -EBADMSG, "ATTR record at 0x%" PRIx64 " too short", at);
                memcpy(&asz, rec + sizeof(h) + offsetof(struct perf_event_attr, size), sizeof(asz));
                if (asz == 0)
                        asz = PERF_ATTR_SIZE_VER0;
                if (asz < PERF_ATTR_SIZE_VER0 || asz > size - sizeof(h) || (size - sizeof(h) - asz) % 8 != 0)
                        return fail(ps, -EBADMSG, "ATTR record at 0x%" PRIx64 ": attr size %u", at, asz);
                memcpy(&attr, rec + sizeof(h), MIN((size_t) asz, sizeof(attr)));
                attr.size = asz;
                {
                        size_t n_ids = (size - sizeof(h) - asz) / 8;
                        _cleanup_free_ uint64_t *ids = n_ids > 0 ? malloc(n_ids * 8) : NULL;
                        if (n_ids > 0 && !ids)
                                return -ENOMEM;
                        if (n_ids > 0)
                                memcpy(ids, rec + sizeof(h) + asz, n_ids * 8);
                        return add_event(ps, &attr, sizeof(attr), ids, n_ids);
                }
        }
        case PERF_DATA_RECORD_HEADER_FEATURE: {
                uint64_t feat;

                if (size < sizeof(h) + 8)
                        return fail(ps, -EBADMSG, "FEATURE record at 0x%" PRIx64 " too short", at);
                memcpy(&feat, rec + sizeof(h), sizeof(feat));
                if (feat == 0 || feat >= _PERF_DATA_FEAT_MAX)
                        return warn(ps, "FEATURE record for unknown feature %" PRIu64 ": skipped", feat);
                return parse_feature(ps, (unsigned) feat, rec + sizeof(h) + 8, size - sizeof(h) - 8);
        }
        case PERF_DATA_RECORD_HEADER_BUILD_ID:
                return add_build_id(ps, rec, size);
        case PERF_DATA_RECORD_AUXTRACE_INFO: {
                uint32_t type;

                if (size < sizeof(h) + 8)
                        return fail(ps, -EBADMSG, "AUXTRACE_INFO record at 0x%" PRIx64 " too short", at);
                if (d->has_auxtrace_info)
                        return warn(ps, "second AUXTRACE_INFO record at 0x%" PRIx64 ": ignored", at);
                memcpy(&type, rec + sizeof(h), sizeof(type));
                d->has_auxtrace_info = true;
                d->auxtrace_type = type;
                if (type != PERF_AUXTRACE_INTEL_PT)
                        return 0;
                {
                        _cleanup_free_ char *e = NULL;

                        r = perf_intel_pt_info_parse(rec, size, &d->intel_pt, &e);
                        if (r == -EBADMSG)
                                /* Records still count; decoding will say
                                 * what is missing. */
                                return warn(ps, "AUXTRACE_INFO at 0x%" PRIx64 " unusable: %s", at, strna(e));
                        if (r < 0)
                                return r;
                }
                d->has_intel_pt = true;
                return 0;
        }
        case PERF_DATA_RECORD_TIME_CONV: {
                PerfTimeConvRecord tc = {};

                if (size < sizeof(h) + 24)
                        return fail(ps, -EBADMSG, "TIME_CONV record at 0x%" PRIx64 " too short", at);
                memcpy(&tc, rec, MIN(size, sizeof(tc)));
                d->has_time_conv = true;
                d->time_conv = (PerfTscConversion){
                        .time_shift = (uint16_t) MIN(tc.time_shift, (uint64_t) 63),
                        .time_mult = (uint32_t) tc.time_mult,
                        .time_zero = tc.time_zero,
                        /* Before perf 5.13 TIME_CONV had no flags and
                         * implied cap_user_time_zero. */
                        .cap_user_time_zero = size < sizeof(tc) || tc.cap_user_time_zero,
                };
                if (size >= sizeof(tc) && tc.cap_user_time_short) {
                        d->time_conv.cap_user_time_short = true;
                        d->time_conv.time_cycles = tc.time_cycles;
                        d->time_conv.time_mask = tc.time_mask;
                }
                return 0;
        }
        case PERF_DATA_RECORD_COMPRESSED:
                if (nested)
                        return fail(ps, -EBADMSG,
                                    "COMPRESSED record inside a COMPRESSED record at 0x%" PRIx64, at);
                return parse_compressed(ps, rec + sizeof(h), size - sizeof(h), at);
        case PERF_RECORD_LOST:
                if (size >= sizeof(h) + 16) {
                        uint64_t lost;
                        memcpy(&lost, rec + sizeof(h) + 8, sizeof(lost));
                        d->n_lost += lost;
                }
                return keep_sideband(ps, rec, size);
        case PERF_RECORD_AUX:
                if (size >= sizeof(h) + 24) {
                        uint64_t flags;
                        memcpy(&flags, rec + sizeof(h) + 16, sizeof(flags));
                        d->n_aux_truncated += !!(flags & PERF_AUX_FLAG_TRUNCATED);
                        d->n_aux_collision += !!(flags & PERF_AUX_FLAG_COLLISION);
                }
                return keep_sideband(ps, rec, size);
        case PERF_RECORD_SAMPLE:
        case PERF_RECORD_READ:
                /* Their layout depends on the whole sample_type and
                 * read_format; the decoder needs neither. Counted only. */
                return 0;
        default:
                if (h.type < PERF_DATA_RECORD_HEADER_ATTR)
                        return keep_sideband(ps, rec, size);
                return 0;
        }
}

static int parse_records(Parser *ps, const uint8_t *p, size_t n, uint64_t base, bool nested) {
        PerfData *d = ps->d;
        size_t off = 0;
        int r;

        while (off < n) {
                struct perf_event_header h;
                uint64_t at = base + off;

                if (n - off < sizeof(h))
                        return fail(ps, -EBADMSG, "record header cut short at 0x%" PRIx64, at);
                memcpy(&h, p + off, sizeof(h));
                if (h.size < sizeof(h) || h.size > n - off)
                        return fail(ps, -EBADMSG, "record at 0x%" PRIx64 " has size %u (%zu bytes left)", at,
                                    h.size, n - off);
                if (d->n_records >= ps->lim->max_records)
                        return fail(ps, -E2BIG, "more than %" PRIu64 " records", ps->lim->max_records);
                d->n_records++;
                if (h.type < PERF_DATA_RECORD_TYPES)
                        d->counts[h.type]++;
                else
                        d->n_unknown_records++;
                if (nested)
                        d->n_compressed_records++;

                if (h.type == PERF_DATA_RECORD_AUXTRACE) {
                        PerfAuxtraceRecord a;
                        size_t data_at = off + h.size;

                        if (h.size < sizeof(a))
                                return fail(ps, -EBADMSG, "AUXTRACE record at 0x%" PRIx64 " too short", at);
                        memcpy(&a, p + off, sizeof(a));
                        if (a.size > n - data_at)
                                return fail(ps, -EBADMSG,
                                            "AUXTRACE record at 0x%" PRIx64 ": %" PRIu64
                                            " trace bytes, %zu left",
                                            at, a.size, n - data_at);
                        if (nested)
                                r = warn(ps, "AUXTRACE inside a COMPRESSED record at 0x%" PRIx64 ": skipped",
                                         at);
                        else
                                r = add_aux(ps, &a, p + data_at, base + data_at);
                        if (r < 0)
                                return r;
                        off = data_at + (size_t) a.size;
                        continue;
                }
                r = parse_record(ps, p + off, h.size, at, nested);
                if (r < 0)
                        return r;
                off += h.size;
        }
        return 0;
}

/* ---- file and pipe mode ---- */

static int parse_file(Parser *ps) {
        PerfData *d = ps->d;
        PerfFileHeader hdr = {};
        uint64_t n_events, feat_offset, n_feat = 0;
        int r;

        if (ps->n < offsetof(PerfFileHeader, adds_features))
                return fail(ps, -EBADMSG, "file of %zu bytes is shorter than a perf.data header", ps->n);
        memcpy(&hdr, ps->in, MIN(ps->n, sizeof(hdr)));
        /* perf also reads the header of perf before 2.6.38, without the
         * feature bitmap. */
        if (hdr.size == offsetof(PerfFileHeader, adds_features))
                memset(hdr.adds_features, 0, sizeof(hdr.adds_features));
        else if (hdr.size != sizeof(hdr) || ps->n < sizeof(hdr))
                return fail(ps, -EBADMSG, "header size %" PRIu64 " is neither 104 nor 16 (pipe)", hdr.size);

        if (hdr.attr_size < PERF_ATTR_SIZE_VER0 + sizeof(PerfFileSection) || hdr.attr_size > 4096)
                return fail(ps, -EBADMSG, "attr size %" PRIu64 " is out of range", hdr.attr_size);
        d->attr_size = (uint32_t) hdr.attr_size;
        if (!in_input(ps, hdr.attrs.offset, hdr.attrs.size) || hdr.attrs.size % hdr.attr_size != 0)
                return fail(ps, -EBADMSG,
                            "attrs section [0x%" PRIx64 ", +0x%" PRIx64 ") is outside the file",
                            hdr.attrs.offset, hdr.attrs.size);
        n_events = hdr.attrs.size / hdr.attr_size;
        if (n_events > ps->lim->max_events)
                return fail(ps, -E2BIG, "%" PRIu64 " events (attrs), more than %" PRIu64, n_events,
                            ps->lim->max_events);
        for (uint64_t i = 0; i < n_events; i++) {
                const uint8_t *e = ps->in + hdr.attrs.offset + i * hdr.attr_size;
                size_t asz = (size_t) hdr.attr_size - sizeof(PerfFileSection);
                struct perf_event_attr attr = {};
                PerfFileSection ids;
                uint32_t declared;

                memcpy(&declared, e + offsetof(struct perf_event_attr, size), sizeof(declared));
                /* perf reads attr.size bytes and then the ids section: both
                 * must agree with the header's attr_size. */
                if ((declared == 0 ? PERF_ATTR_SIZE_VER0 : declared) != asz)
                        return fail(ps, -EBADMSG, "attr %" PRIu64 " has size %u, the header says %zu", i,
                                    declared, asz);
                memcpy(&attr, e, MIN(asz, sizeof(attr)));
                attr.size = (uint32_t) asz;
                memcpy(&ids, e + asz, sizeof(ids));
                if (!in_input(ps, ids.offset, ids.size) || ids.size % 8 != 0)
                        return fail(ps, -EBADMSG, "ids of attr %" PRIu64 " are outside the file", i);
                if (ids.size / 8 > ps->lim->max_ids)
                        return fail(ps, -E2BIG, "more than %" PRIu64 " event ids", ps->lim->max_ids);
                {
                        size_t n_ids = (size_t) (ids.size / 8);
                        _cleanup_free_ uint64_t *v = n_ids > 0 ? malloc(n_ids * 8) : NULL;
                        if (n_ids > 0 && !v)
                                return -ENOMEM;
                        if (n_ids > 0)
                                memcpy(v, ps->in + ids.offset, n_ids * 8);
                        r = add_event(ps, &attr, sizeof(attr), v, n_ids);
                        if (r < 0)
                                return r;
                }
        }

        if (!in_input(ps, hdr.data.offset, hdr.data.size))
                return fail(ps, -EBADMSG, "data section [0x%" PRIx64 ", +0x%" PRIx64 ") is outside the file",
                            hdr.data.offset, hdr.data.size);

        /* Features first: EVENT_DESC names the events, and pipe mode has
         * them before the records too. The index follows the data. */
        for (unsigned f = 0; f < _PERF_DATA_FEAT_MAX; f++)
                n_feat += !!(hdr.adds_features[f / 64] & (UINT64_C(1) << (f % 64)));
        feat_offset = hdr.data.offset + hdr.data.size;
        if (n_feat > 0 && !in_input(ps, feat_offset, n_feat * sizeof(PerfFileSection)))
                return fail(ps, -EBADMSG, "feature index of %" PRIu64 " entries is outside the file",
                            n_feat);
        for (unsigned f = 0, i = 0; f < _PERF_DATA_FEAT_MAX; f++) {
                PerfFileSection s;

                if (!(hdr.adds_features[f / 64] & (UINT64_C(1) << (f % 64))))
                        continue;
                memcpy(&s, ps->in + feat_offset + (uint64_t) i++ * sizeof(s), sizeof(s));
                if (f == 0)
                        continue; /* reserved; perf ignores it too */
                if (!in_input(ps, s.offset, s.size)) {
                        r = warn(ps, "feature %s is outside the file: ignored",
                                 perf_data_feature_to_string(f) ?: "(unknown)");
                        if (r < 0)
                                return r;
                        continue;
                }
                r = parse_feature(ps, f, ps->in + s.offset, (size_t) s.size);
                if (r == -EBADMSG) {
                        /* A broken feature costs that feature, as in perf. */
                        r = warn(ps, "%s", *ps->error ?: "malformed feature");
                        *ps->error = mfree(*ps->error);
                }
                if (r < 0)
                        return r;
        }

        return parse_records(ps, ps->in + hdr.data.offset, (size_t) hdr.data.size, hdr.data.offset, false);
}

int perf_data_parse(const void *data, size_t size, const PerfDataLimits *limits, PerfData **ret,
                    char **ret_error) {
        PerfDataLimits lim = limits ? *limits : PERF_DATA_LIMITS_DEFAULT;
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        Parser ps = { .in = data, .n = size, .lim = &lim, .error = &error };
        uint64_t magic, hsize;
        int r;

        if (size > lim.max_file_size) {
                if (ret_error)
                        (void) asprintf(ret_error, "perf.data of %zu bytes is larger than %" PRIu64, size,
                                        lim.max_file_size);
                return -E2BIG;
        }
        if (size < PERF_PIPE_HEADER_SIZE || !perf_data_is_header(data, size)) {
                if (ret_error)
                        *ret_error = strdup("not a perf.data file (no PERFILE2 magic)");
                return -EBADMSG;
        }
        memcpy(&magic, data, 8);
        if (magic == PERF_DATA_MAGIC_SWAPPED) {
                if (ret_error)
                        *ret_error = strdup(
                                "perf.data written on a machine of the other endianness is not supported");
                return -EPROTONOSUPPORT;
        }
        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->input_size = size;
        d->sideband_sample_type = SIDEBAND_SAMPLE_TYPE;
        ps.d = d;

        memcpy(&hsize, (const uint8_t *) data + 8, 8);
        if (hsize == PERF_PIPE_HEADER_SIZE) {
                d->pipe = true;
                r = parse_records(&ps, (const uint8_t *) data + PERF_PIPE_HEADER_SIZE,
                                  size - PERF_PIPE_HEADER_SIZE, PERF_PIPE_HEADER_SIZE, false);
        } else
                r = parse_file(&ps);
        if (r >= 0 && ps.pending.size > 0)
                r = warn(&ps, "%zu bytes of compressed records end in the middle of a record",
                         ps.pending.size);

        ZSTD_freeDCtx(ps.zstd);
        buffer_done(&ps.pending);
        free(ps.ids);
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }
        *ret = TAKE_PTR(d);
        return 0;
}

int perf_data_read_fd(int fd, const PerfDataLimits *limits, PerfData **ret, char **ret_error) {
        PerfDataLimits lim = limits ? *limits : PERF_DATA_LIMITS_DEFAULT;
        PerfData *d = NULL;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                void *map;

                if (st.st_size <= 0) {
                        if (ret_error)
                                *ret_error = strdup("empty file");
                        return -EBADMSG;
                }
                if ((uint64_t) st.st_size > lim.max_file_size) {
                        if (ret_error)
                                (void) asprintf(ret_error,
                                                "perf.data of %" PRIu64 " bytes is larger than %" PRIu64,
                                                (uint64_t) st.st_size, lim.max_file_size);
                        return -E2BIG;
                }
                map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
                if (map == MAP_FAILED)
                        return -errno;
                r = perf_data_parse(map, (size_t) st.st_size, &lim, &d, ret_error);
                if (r < 0) {
                        (void) munmap(map, (size_t) st.st_size);
                        return r;
                }
                d->map = map;
                d->map_size = (size_t) st.st_size;
                *ret = d;
                return 0;
        }

        /* A pipe: read it all, bounded. */
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        for (;;) {
                ssize_t k;

                if (b.size >= lim.max_file_size) {
                        if (ret_error)
                                (void) asprintf(ret_error, "perf.data stream is larger than %" PRIu64,
                                                lim.max_file_size);
                        return -E2BIG;
                }
                r = buffer_reserve(&b, 1U << 20);
                if (r < 0)
                        return r;
                k = read(fd, b.data + b.size,
                         MIN(b.allocated - b.size, (size_t) (lim.max_file_size - b.size)));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                b.size += (size_t) k;
        }
        r = perf_data_parse(b.data, b.size, &lim, &d, ret_error);
        if (r < 0)
                return r;
        d->heap = buffer_steal(&b, NULL);
        *ret = d;
        return 0;
}
