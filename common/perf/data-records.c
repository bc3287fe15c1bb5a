/* SPDX-License-Identifier: MIT */

/*
 * perf.data's records, in either mode: perf's own (HEADER_ATTR,
 * AUXTRACE_INFO, TIME_CONV...), AUXTRACE with the trace bytes that follow
 * it, COMPRESSED (zstd frames of further records), and the kernel's
 * side-band records.
 *
 * Side-band records are kept re-encoded with one sample_id layout
 * (PERF_DATA_SIDEBAND_SAMPLE_TYPE, what ptraced writes and the decoder
 * reads): perf.data mixes events whose sample_types differ (an intel_pt
 * event, a cycles event, a dummy event), and only the event a record
 * belongs to says how its trailer is laid out. As perf does, the event is
 * found by the record's id, at the position the first event's sample_type
 * gives (perf requires every event to agree on it).
 */

#include <inttypes.h>
#include <zstd.h>

#include "common/perf/data-parser.h"
#include "common/perf/record.h"

static int keep_sideband(PerfDataParser *ps, const uint8_t *rec, size_t size) {
        PerfData *d = ps->d;
        const PerfDataEvent *ev = perf_data_record_event(ps, rec, size);
        struct perf_event_header h;
        PerfSampleId sid = {};
        size_t trailer = 0, start = d->sideband.size, new_size;
        int r;

        memcpy(&h, rec, sizeof(h));
        if (!ev && ps->d->n_events > 0) {
                /* perf stops here ("Can't parse sample"); one record with an
                 * id no event claims costs that record. */
                return perf_data_warn(ps, "%s record with an id no event has: skipped",
                                      strna(perf_data_record_type_to_string(h.type)));
        }
        if (ev && ev->attr.sample_id_all) {
                trailer = perf_sample_id_size(ev->attr.sample_type);
                if (trailer > size - sizeof(h))
                        return perf_data_warn(ps, "%s record too short for its sample_id: skipped",
                                              strna(perf_data_record_type_to_string(h.type)));
                perf_sample_id_parse(rec + size - trailer, ev->attr.sample_type, &sid);
        }
        if (!ev || !(ev->attr.sample_id_all && (ev->attr.sample_type & PERF_SAMPLE_CPU)))
                sid.cpu = UINT32_MAX;
        if (!ev || !(ev->attr.sample_id_all && (ev->attr.sample_type & PERF_SAMPLE_TID)))
                sid.pid = sid.tid = UINT32_MAX;
        sid.sample_type = PERF_DATA_SIDEBAND_SAMPLE_TYPE;

        new_size = size - trailer + perf_sample_id_size(PERF_DATA_SIDEBAND_SAMPLE_TYPE);
        if (new_size > PERF_RECORD_MAX_SIZE)
                return perf_data_warn(ps, "%s record too large to re-encode: skipped",
                                      strna(perf_data_record_type_to_string(h.type)));
        if (d->sideband.size + new_size > ps->lim->max_sideband_size)
                return perf_data_fail(ps, -E2BIG, "side-band records exceed %" PRIu64 " bytes",
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

static int parse_compressed(PerfDataParser *ps, const uint8_t *p, size_t n, uint64_t at) {
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
                        return perf_data_fail(ps, -E2BIG,
                                              "compressed records expand beyond %" PRIu64 " bytes",
                                              ps->lim->max_decompressed);
                r = buffer_reserve(&ps->pending, cap);
                if (r < 0)
                        return r;
                ob = (ZSTD_outBuffer){ ps->pending.data + ps->pending.size, cap, 0 };
                k = ZSTD_decompressStream(ps->zstd, &ob, &in);
                if (ZSTD_isError(k))
                        return perf_data_fail(ps, -EBADMSG, "COMPRESSED record at 0x%" PRIx64 ": %s", at,
                                              ZSTD_getErrorName(k));
                ps->pending.size += ob.pos;
                ps->decompressed += ob.pos;
                if (ob.pos == 0 && in.pos == in_before)
                        return perf_data_fail(ps, -EBADMSG,
                                              "COMPRESSED record at 0x%" PRIx64 ": decompression stalled",
                                              at);
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
                        return perf_data_fail(ps, -EBADMSG,
                                              "record of size %u inside COMPRESSED at 0x%" PRIx64, h.size,
                                              at);
                if (h.size > ps->pending.size - used)
                        break;
                used += h.size;
        }
        if (used == 0)
                return 0;
        r = perf_data_parse_records(ps, ps->pending.data, used, at, true);
        if (r < 0)
                return r;
        memmove(ps->pending.data, ps->pending.data + used, ps->pending.size - used);
        ps->pending.size -= used;
        return 0;
}

static int add_aux(PerfDataParser *ps, const PerfAuxtraceRecord *a, const uint8_t *data,
                   uint64_t file_offset) {
        PerfData *d = ps->d;
        PerfDataAux *l;

        if (d->n_aux >= ps->lim->max_aux_buffers)
                return perf_data_fail(ps, -E2BIG, "more than %" PRIu64 " AUXTRACE buffers",
                                      ps->lim->max_aux_buffers);
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

/* An AUXTRACE record at p + off and the trace bytes that follow it in the
 * stream; *ret_next is the offset past both. */
static int parse_auxtrace(PerfDataParser *ps, const uint8_t *p, size_t n, size_t off, uint64_t base, bool nested,
                          size_t *ret_next) {
        struct perf_event_header h;
        PerfAuxtraceRecord a;
        uint64_t at = base + off;
        size_t data_at;
        int r;

        memcpy(&h, p + off, sizeof(h));
        if (h.size < sizeof(a))
                return perf_data_fail(ps, -EBADMSG, "AUXTRACE record at 0x%" PRIx64 " too short", at);
        memcpy(&a, p + off, sizeof(a));
        data_at = off + h.size;
        if (a.size > n - data_at)
                return perf_data_fail(ps, -EBADMSG,
                                      "AUXTRACE record at 0x%" PRIx64 ": %" PRIu64 " trace bytes, %zu left", at,
                                      a.size, n - data_at);
        if (nested)
                r = perf_data_warn(ps, "AUXTRACE inside a COMPRESSED record at 0x%" PRIx64 ": skipped", at);
        else
                r = add_aux(ps, &a, p + data_at, base + data_at);
        if (r < 0)
                return r;
        *ret_next = data_at + (size_t) a.size;
        return 0;
}

/* One record (not AUXTRACE: its payload is handled by the caller). */
static int parse_record(PerfDataParser *ps, const uint8_t *rec, size_t size, uint64_t at, bool nested) {
        PerfData *d = ps->d;
        struct perf_event_header h;
        int r;

        memcpy(&h, rec, sizeof(h));
        switch (h.type) {
        case PERF_DATA_RECORD_HEADER_ATTR: {
                struct perf_event_attr attr = {};
                uint32_t asz;

                if (size < sizeof(h) + PERF_ATTR_SIZE_VER0)
                        return perf_data_fail(ps, -EBADMSG, "ATTR record at 0x%" PRIx64 " too short", at);
                memcpy(&asz, rec + sizeof(h) + offsetof(struct perf_event_attr, size), sizeof(asz));
                if (asz == 0)
                        asz = PERF_ATTR_SIZE_VER0;
                if (asz < PERF_ATTR_SIZE_VER0 || asz > size - sizeof(h) || (size - sizeof(h) - asz) % 8 != 0)
                        return perf_data_fail(ps, -EBADMSG, "ATTR record at 0x%" PRIx64 ": attr size %u", at,
                                              asz);
                memcpy(&attr, rec + sizeof(h), MIN((size_t) asz, sizeof(attr)));
                attr.size = asz;
                {
                        size_t n_ids = (size - sizeof(h) - asz) / 8;
                        _cleanup_free_ uint64_t *ids = n_ids > 0 ? malloc(n_ids * 8) : NULL;
                        if (n_ids > 0 && !ids)
                                return -ENOMEM;
                        if (n_ids > 0)
                                memcpy(ids, rec + sizeof(h) + asz, n_ids * 8);
                        return perf_data_add_event(ps, &attr, sizeof(attr), ids, n_ids);
                }
        }
        case PERF_DATA_RECORD_HEADER_FEATURE: {
                uint64_t feat;

                if (size < sizeof(h) + 8)
                        return perf_data_fail(ps, -EBADMSG, "FEATURE record at 0x%" PRIx64 " too short", at);
                memcpy(&feat, rec + sizeof(h), sizeof(feat));
                if (feat == 0 || feat >= _PERF_DATA_FEAT_MAX)
                        return perf_data_warn(ps, "FEATURE record for unknown feature %" PRIu64 ": skipped",
                                              feat);
                return perf_data_parse_feature(ps, (unsigned) feat, rec + sizeof(h) + 8,
                                               size - sizeof(h) - 8);
        }
        case PERF_DATA_RECORD_HEADER_BUILD_ID:
                return perf_data_parse_build_id(ps, rec, size);
        case PERF_DATA_RECORD_AUXTRACE_INFO: {
                uint32_t type;

                if (size < sizeof(h) + 8)
                        return perf_data_fail(ps, -EBADMSG,
                                              "AUXTRACE_INFO record at 0x%" PRIx64 " too short", at);
                if (d->has_auxtrace_info)
                        return perf_data_warn(ps, "second AUXTRACE_INFO record at 0x%" PRIx64 ": ignored",
                                              at);
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
                                return perf_data_warn(ps, "AUXTRACE_INFO at 0x%" PRIx64 " unusable: %s", at,
                                                      strna(e));
                        if (r < 0)
                                return r;
                }
                d->has_intel_pt = true;
                return 0;
        }
        case PERF_DATA_RECORD_TIME_CONV: {
                PerfTimeConvRecord tc = {};

                if (size < sizeof(h) + 24)
                        return perf_data_fail(ps, -EBADMSG, "TIME_CONV record at 0x%" PRIx64 " too short",
                                              at);
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
                        return perf_data_fail(ps, -EBADMSG,
                                              "COMPRESSED record inside a COMPRESSED record at 0x%" PRIx64,
                                              at);
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

int perf_data_parse_records(PerfDataParser *ps, const uint8_t *p, size_t n, uint64_t base, bool nested) {
        PerfData *d = ps->d;
        size_t off = 0;
        int r;

        while (off < n) {
                struct perf_event_header h;
                uint64_t at = base + off;

                if (n - off < sizeof(h))
                        return perf_data_fail(ps, -EBADMSG, "record header cut short at 0x%" PRIx64, at);
                memcpy(&h, p + off, sizeof(h));
                if (h.size < sizeof(h) || h.size > n - off)
                        return perf_data_fail(ps, -EBADMSG,
                                              "record at 0x%" PRIx64 " has size %u (%zu bytes left)", at,
                                              h.size, n - off);
                if (d->n_records >= ps->lim->max_records)
                        return perf_data_fail(ps, -E2BIG, "more than %" PRIu64 " records",
                                              ps->lim->max_records);
                d->n_records++;
                if (h.type < PERF_DATA_RECORD_TYPES)
                        d->counts[h.type]++;
                else
                        d->n_unknown_records++;
                if (nested)
                        d->n_compressed_records++;

                if (h.type == PERF_DATA_RECORD_AUXTRACE) {
                        r = parse_auxtrace(ps, p, n, off, base, nested, &off);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = parse_record(ps, p + off, h.size, at, nested);
                if (r < 0)
                        return r;
                off += h.size;
        }
        return 0;
}
