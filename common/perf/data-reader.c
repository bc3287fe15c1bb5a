/* SPDX-License-Identifier: MIT */

/*
 * perf.data reader. The input is hostile: every offset and size is checked
 * against the input and the limits before it is used, counts are bounded
 * before anything is allocated for them, strings must end inside their
 * field. Parsing works on memory (a mapped file, or a pipe read into
 * memory up to a limit), so the fuzz target drives the very same code.
 *
 * This part frames the input: file mode (header, attrs and their ids,
 * the feature index after the data) or pipe mode (records only), and owns
 * the parse. The features are read in data-features.c, the records in
 * data-records.c.
 */

#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/perf/data-parser.h"

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

/* [offset, offset+size) inside the input? */
static bool in_input(const PerfDataParser *ps, uint64_t offset, uint64_t size) {
        return offset <= ps->n && size <= ps->n - offset;
}

static int parse_file(PerfDataParser *ps) {
        PerfData *d = ps->d;
        PerfFileHeader hdr = {};
        uint64_t n_events, feat_offset, n_feat = 0;
        int r;

        if (ps->n < offsetof(PerfFileHeader, adds_features))
                return perf_data_fail(ps, -EBADMSG, "file of %zu bytes is shorter than a perf.data header",
                                      ps->n);
        memcpy(&hdr, ps->in, MIN(ps->n, sizeof(hdr)));
        /* perf also reads the header of perf before 2.6.38, without the
         * feature bitmap. */
        if (hdr.size == offsetof(PerfFileHeader, adds_features))
                memset(hdr.adds_features, 0, sizeof(hdr.adds_features));
        else if (hdr.size != sizeof(hdr) || ps->n < sizeof(hdr))
                return perf_data_fail(ps, -EBADMSG, "header size %" PRIu64 " is neither 104 nor 16 (pipe)",
                                      hdr.size);

        if (hdr.attr_size < PERF_ATTR_SIZE_VER0 + sizeof(PerfFileSection) || hdr.attr_size > 4096)
                return perf_data_fail(ps, -EBADMSG, "attr size %" PRIu64 " is out of range", hdr.attr_size);
        d->attr_size = (uint32_t) hdr.attr_size;
        if (!in_input(ps, hdr.attrs.offset, hdr.attrs.size) || hdr.attrs.size % hdr.attr_size != 0)
                return perf_data_fail(ps, -EBADMSG,
                                      "attrs section [0x%" PRIx64 ", +0x%" PRIx64 ") is outside the file",
                                      hdr.attrs.offset, hdr.attrs.size);
        n_events = hdr.attrs.size / hdr.attr_size;
        if (n_events > ps->lim->max_events)
                return perf_data_fail(ps, -E2BIG, "%" PRIu64 " events (attrs), more than %" PRIu64, n_events,
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
                        return perf_data_fail(ps, -EBADMSG,
                                              "attr %" PRIu64 " has size %u, the header says %zu", i,
                                              declared, asz);
                memcpy(&attr, e, MIN(asz, sizeof(attr)));
                attr.size = (uint32_t) asz;
                memcpy(&ids, e + asz, sizeof(ids));
                if (!in_input(ps, ids.offset, ids.size) || ids.size % 8 != 0)
                        return perf_data_fail(ps, -EBADMSG, "ids of attr %" PRIu64 " are outside the file",
                                              i);
                if (ids.size / 8 > ps->lim->max_ids)
                        return perf_data_fail(ps, -E2BIG, "more than %" PRIu64 " event ids",
                                              ps->lim->max_ids);
                {
                        size_t n_ids = (size_t) (ids.size / 8);
                        _cleanup_free_ uint64_t *v = n_ids > 0 ? malloc(n_ids * 8) : NULL;
                        if (n_ids > 0 && !v)
                                return -ENOMEM;
                        if (n_ids > 0)
                                memcpy(v, ps->in + ids.offset, n_ids * 8);
                        r = perf_data_add_event(ps, &attr, sizeof(attr), v, n_ids);
                        if (r < 0)
                                return r;
                }
        }

        if (!in_input(ps, hdr.data.offset, hdr.data.size))
                return perf_data_fail(ps, -EBADMSG,
                                      "data section [0x%" PRIx64 ", +0x%" PRIx64 ") is outside the file",
                                      hdr.data.offset, hdr.data.size);

        /* Features first: EVENT_DESC names the events, and pipe mode has
         * them before the records too. The index follows the data. */
        for (unsigned f = 0; f < _PERF_DATA_FEAT_MAX; f++)
                n_feat += !!(hdr.adds_features[f / 64] & (UINT64_C(1) << (f % 64)));
        feat_offset = hdr.data.offset + hdr.data.size;
        if (n_feat > 0 && !in_input(ps, feat_offset, n_feat * sizeof(PerfFileSection)))
                return perf_data_fail(ps, -EBADMSG,
                                      "feature index of %" PRIu64 " entries is outside the file", n_feat);
        for (unsigned f = 0, i = 0; f < _PERF_DATA_FEAT_MAX; f++) {
                PerfFileSection s;

                if (!(hdr.adds_features[f / 64] & (UINT64_C(1) << (f % 64))))
                        continue;
                memcpy(&s, ps->in + feat_offset + (uint64_t) i++ * sizeof(s), sizeof(s));
                if (f == 0)
                        continue; /* reserved; perf ignores it too */
                if (!in_input(ps, s.offset, s.size)) {
                        r = perf_data_warn(ps, "feature %s is outside the file: ignored",
                                           perf_data_feature_to_string(f) ?: "(unknown)");
                        if (r < 0)
                                return r;
                        continue;
                }
                r = perf_data_parse_feature(ps, f, ps->in + s.offset, (size_t) s.size);
                if (r == -EBADMSG) {
                        /* A broken feature costs that feature, as in perf. */
                        r = perf_data_warn(ps, "%s", *ps->error ?: "malformed feature");
                        *ps->error = mfree(*ps->error);
                }
                if (r < 0)
                        return r;
        }

        return perf_data_parse_records(ps, ps->in + hdr.data.offset, (size_t) hdr.data.size, hdr.data.offset,
                                       false);
}

int perf_data_parse(const void *data, size_t size, const PerfDataLimits *limits, PerfData **ret,
                    char **ret_error) {
        PerfDataLimits lim = limits ? *limits : PERF_DATA_LIMITS_DEFAULT;
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        PerfDataParser ps = { .in = data, .n = size, .lim = &lim, .error = &error };
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
        d->sideband_sample_type = PERF_DATA_SIDEBAND_SAMPLE_TYPE;
        ps.d = d;

        memcpy(&hsize, (const uint8_t *) data + 8, 8);
        if (hsize == PERF_PIPE_HEADER_SIZE) {
                d->pipe = true;
                r = perf_data_parse_records(&ps, (const uint8_t *) data + PERF_PIPE_HEADER_SIZE,
                                            size - PERF_PIPE_HEADER_SIZE, PERF_PIPE_HEADER_SIZE, false);
        } else
                r = parse_file(&ps);
        if (r >= 0 && ps.pending.size > 0)
                r = perf_data_warn(&ps, "%zu bytes of compressed records end in the middle of a record",
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
