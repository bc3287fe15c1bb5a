/* SPDX-License-Identifier: MIT */

/*
 * perf.data's header features (HOSTNAME, CPUID, CMDLINE, EVENT_DESC,
 * BUILD_ID, AUXTRACE index...): the sections after the data in file mode,
 * HEADER_FEATURE and HEADER_BUILD_ID records in pipe mode. Each is read
 * through a cursor that never passes the end of its section.
 */

#include <inttypes.h>

#include "common/basic/cursor.h"
#include "common/perf/data-parser.h"

/* perf writes one per DSO with samples or mmaps; a million is far beyond. */
#define MAX_BUILD_IDS (1U << 20)

/* A feature string: u32 length, then that many bytes holding a NUL. */
static int read_string(PerfDataParser *ps, Cursor *c, const char *what, char **ret) {
        uint32_t len;
        const char *s;

        if (!cursor_take(c, &len, sizeof(len)) || len > c->left)
                return perf_data_fail(ps, -EBADMSG, "feature %s: string cut short", what);
        s = (const char *) c->p;
        if (len == 0 || !memchr(s, 0, len))
                return perf_data_fail(ps, -EBADMSG, "feature %s: string not NUL-terminated", what);
        *ret = strdup(s);
        if (!*ret)
                return -ENOMEM;
        c->p += len;
        c->left -= len;
        return 0;
}

static int set_string_feature(PerfDataParser *ps, Cursor *c, const char *what, char **field) {
        char *s = NULL;
        int r = read_string(ps, c, what, &s);

        if (r < 0)
                return r;
        free(*field);
        *field = s;
        return 0;
}

int perf_data_parse_build_id(PerfDataParser *ps, const uint8_t *p, size_t size) {
        PerfData *d = ps->d;
        struct perf_event_header h;
        PerfDataBuildId *l, b = {};
        const char *name;
        uint8_t id[24];

        /* header, pid, build_id[24], filename */
        if (size < sizeof(h) + 4 + sizeof(id) + 1)
                return perf_data_fail(ps, -EBADMSG, "build-id entry of %zu bytes is too short", size);
        memcpy(&h, p, sizeof(h));
        memcpy(&b.pid, p + sizeof(h), 4);
        memcpy(id, p + sizeof(h) + 4, sizeof(id));
        name = (const char *) p + sizeof(h) + 4 + sizeof(id);
        if (!memchr(name, 0, size - (sizeof(h) + 4 + sizeof(id))))
                return perf_data_fail(ps, -EBADMSG, "build-id entry's file name is not NUL-terminated");
        b.misc = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
        /* Without the size flag (perf before 5.12) the id is 20 bytes. */
        b.size = (h.misc & PERF_DATA_MISC_BUILD_ID_SIZE)
                         ? MIN((size_t) id[20], (size_t) PERF_DATA_BUILD_ID_MAX)
                         : PERF_DATA_BUILD_ID_MAX;
        memcpy(b.build_id, id, b.size);
        if (d->n_build_ids >= MAX_BUILD_IDS)
                return perf_data_fail(ps, -E2BIG, "more than %u build-id entries", MAX_BUILD_IDS);
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

static int parse_event_desc(PerfDataParser *ps, Cursor *c) {
        PerfData *d = ps->d;
        uint32_t nr, sz;

        if (!cursor_take(c, &nr, sizeof(nr)) || !cursor_take(c, &sz, sizeof(sz)))
                return perf_data_fail(ps, -EBADMSG, "feature EVENT_DESC cut short");
        if (sz < PERF_ATTR_SIZE_VER0 || sz > 4096 || nr > ps->lim->max_events)
                return perf_data_fail(ps, -EBADMSG, "feature EVENT_DESC: %u events of attr size %u", nr, sz);
        for (uint32_t i = 0; i < nr; i++) {
                _cleanup_free_ char *name = NULL;
                uint32_t n_ids;
                uint64_t first_id = 0;
                PerfDataEvent *e = NULL;
                int r;

                if (!cursor_take(c, NULL, sz) || !cursor_take(c, &n_ids, sizeof(n_ids)))
                        return perf_data_fail(ps, -EBADMSG, "feature EVENT_DESC cut short in event %u", i);
                r = read_string(ps, c, "EVENT_DESC", &name);
                if (r < 0)
                        return r;
                if ((uint64_t) n_ids * 8 > c->left)
                        return perf_data_fail(ps, -EBADMSG, "feature EVENT_DESC: %u ids cut short", n_ids);
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

int perf_data_parse_feature(PerfDataParser *ps, unsigned feat, const uint8_t *p, size_t size) {
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
                if (!cursor_take(&c, &d->nr_cpus_avail, 4) || !cursor_take(&c, &d->nr_cpus_online, 4))
                        return perf_data_fail(ps, -EBADMSG, "feature NRCPUS cut short");
                d->has_nr_cpus = true;
                return 0;
        case PERF_DATA_FEAT_TOTAL_MEM:
                if (!cursor_take(&c, &d->total_mem, 8))
                        return perf_data_fail(ps, -EBADMSG, "feature TOTAL_MEM cut short");
                return 0;
        case PERF_DATA_FEAT_CMDLINE: {
                uint32_t nr;
                char **l;

                if (!cursor_take(&c, &nr, sizeof(nr)) || nr > c.left / 4)
                        return perf_data_fail(ps, -EBADMSG, "feature CMDLINE cut short");
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
                                return perf_data_fail(ps, -EBADMSG, "feature BUILD_ID cut short");
                        memcpy(&h, c.p, sizeof(h));
                        if (h.size < sizeof(h) || h.size > c.left)
                                return perf_data_fail(ps, -EBADMSG, "feature BUILD_ID: entry of size %u",
                                                      h.size);
                        r = perf_data_parse_build_id(ps, c.p, h.size);
                        if (r < 0)
                                return r;
                        c.p += h.size;
                        c.left -= h.size;
                }
                return 0;
        case PERF_DATA_FEAT_AUXTRACE: {
                uint64_t nr;

                if (!cursor_take(&c, &nr, sizeof(nr)) || nr > c.left / 16)
                        return perf_data_fail(ps, -EBADMSG, "feature AUXTRACE: index cut short");
                d->n_auxtrace_index = (uint32_t) MIN(nr, (uint64_t) UINT32_MAX);
                return 0;
        }
        case PERF_DATA_FEAT_SAMPLE_TIME:
                if (!cursor_take(&c, &d->first_sample_time, 8) || !cursor_take(&c, &d->last_sample_time, 8))
                        return perf_data_fail(ps, -EBADMSG, "feature SAMPLE_TIME cut short");
                d->has_sample_time = true;
                return 0;
        case PERF_DATA_FEAT_CLOCK_DATA: {
                uint32_t version;

                if (!cursor_take(&c, &version, 4) || !cursor_take(&c, &d->clockid, 4) ||
                    !cursor_take(&c, &d->clock_tod_ns, 8) || !cursor_take(&c, &d->clock_clockid_ns, 8))
                        return perf_data_fail(ps, -EBADMSG, "feature CLOCK_DATA cut short");
                d->has_clock_data = version == 1;
                return 0;
        }
        default:
                /* Features we have no use for (topology, caches, PMU
                 * mappings, BPF...) are skipped, as perf skips unknown ones. */
                return 0;
        }
}
