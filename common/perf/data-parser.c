/* SPDX-License-Identifier: MIT */

/*
 * What every part of the perf.data reader shares: its diagnostics (an
 * error for the caller, bounded warnings for the user) and the events
 * with the index from a record's id to the event it belongs to.
 */

#include <inttypes.h>
#include <stdarg.h>

#include "common/basic/string-util.h"
#include "common/basic/strv.h"
#include "common/perf/data-parser.h"

#define MAX_WARNINGS 32U

int perf_data_fail(PerfDataParser *ps, int r, const char *fmt, ...) {
        va_list ap;

        if (ps->error && !*ps->error) {
                va_start(ap, fmt);
                if (vasprintf(ps->error, fmt, ap) < 0)
                        *ps->error = NULL;
                va_end(ap);
        }
        return r;
}

/* Take s into d->warnings unless the same line is there: 1 when added. */
static int add_warning(PerfData *d, char *s) {
        int r;

        if (strv_contains(d->warnings, s)) {
                free(s);
                return 0;
        }
        r = strv_consume(&d->warnings, s);
        return r < 0 ? r : 1;
}

int perf_data_warn(PerfDataParser *ps, const char *fmt, ...) {
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
        s = strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        r = add_warning(ps->d, s);
        if (r < 0)
                return r;
        ps->n_warnings += r;
        return 0;
}

static int id_cmp(const void *a, const void *b) {
        const PerfDataIdEntry *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

int perf_data_add_event(PerfDataParser *ps, const void *attr, size_t attr_bytes, const uint64_t *ids,
                        size_t n_ids) {
        PerfData *d = ps->d;
        PerfDataEvent *l, *e;
        PerfDataIdEntry *il;

        if (d->n_events >= ps->lim->max_events)
                return perf_data_fail(ps, -E2BIG, "more than %" PRIu64 " events (attrs)",
                                      ps->lim->max_events);
        if (n_ids > ps->lim->max_ids || ps->id_total + n_ids > ps->lim->max_ids)
                return perf_data_fail(ps, -E2BIG, "more than %" PRIu64 " event ids", ps->lim->max_ids);
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
                il = reallocarray(ps->ids, ps->n_ids + n_ids, sizeof(PerfDataIdEntry));
                if (!il) {
                        free(e->ids);
                        return -ENOMEM;
                }
                ps->ids = il;
                for (size_t i = 0; i < n_ids; i++)
                        ps->ids[ps->n_ids++] = (PerfDataIdEntry){ .id = e->ids[i], .event = d->n_events };
                ps->ids_dirty = true;
        }
        e->n_ids = n_ids;
        ps->id_total += n_ids;
        d->n_events++;
        return 0;
}

static const PerfDataEvent *lookup_event(PerfDataParser *ps, uint64_t id) {
        PerfDataIdEntry key = { .id = id }, *hit;

        if (ps->ids_dirty) {
                qsort(ps->ids, ps->n_ids, sizeof(PerfDataIdEntry), id_cmp);
                ps->ids_dirty = false;
        }
        if (ps->n_ids == 0)
                return NULL;
        hit = bsearch(&key, ps->ids, ps->n_ids, sizeof(PerfDataIdEntry), id_cmp);
        return hit ? &ps->d->events[hit->event] : NULL;
}

const PerfDataEvent *perf_data_record_event(PerfDataParser *ps, const uint8_t *rec, size_t size) {
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
