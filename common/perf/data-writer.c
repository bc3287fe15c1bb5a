/* SPDX-License-Identifier: MIT */

/*
 * perf.data writer. File mode lays the file out as perf record does:
 * header, ids, attrs, data, then the feature index right after the data
 * and the features behind it; the header is written last, when every
 * offset is known. Records are batched in memory and written in large
 * chunks; trace bytes go straight from the caller's buffer to the file.
 */

#include "common/basic/fileio.h"
#include "common/perf/data.h"
#include "common/perf/record.h"

#define WRITE_BATCH (1U << 20)

typedef struct WriterEvent {
        struct perf_event_attr attr;
        char *name;
        uint64_t *ids;
        size_t n_ids;
} WriterEvent;

typedef struct AuxIndexEntry {
        uint64_t file_offset, sz;
} AuxIndexEntry;

struct PerfDataWriter {
        int fd;
        bool pipe;
        bool data_started;
        bool finished;
        int error; /* sticky: a failed write spoils the file */

        WriterEvent *events;
        size_t n_events;

        Buffer features[_PERF_DATA_FEAT_MAX];
        bool has_feature[_PERF_DATA_FEAT_MAX];

        uint64_t data_offset; /* file mode */
        uint64_t pos;         /* next byte to write */
        Buffer batch;

        AuxIndexEntry *index;
        size_t n_index;
};

int perf_data_writer_new(int fd, bool pipe, PerfDataWriter **ret) {
        PerfDataWriter *w;

        assert(fd >= 0);
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->fd = fd;
        w->pipe = pipe;
        *ret = w;
        return 0;
}

PerfDataWriter *perf_data_writer_free(PerfDataWriter *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_events; i++) {
                free(w->events[i].name);
                free(w->events[i].ids);
        }
        free(w->events);
        for (size_t i = 0; i < _PERF_DATA_FEAT_MAX; i++)
                buffer_done(&w->features[i]);
        buffer_done(&w->batch);
        free(w->index);
        free(w);
        return NULL;
}

int perf_data_writer_add_event(PerfDataWriter *w, const struct perf_event_attr *attr, const char *name,
                               const uint64_t *ids, size_t n_ids) {
        WriterEvent *l, *e;

        if (w->data_started)
                return -EBUSY;
        if (n_ids > (UINT16_MAX - PERF_DATA_ATTR_SIZE) / 8)
                return -E2BIG; /* pipe mode puts them into one HEADER_ATTR record */
        l = reallocarray(w->events, w->n_events + 1, sizeof(WriterEvent));
        if (!l)
                return -ENOMEM;
        w->events = l;
        e = &w->events[w->n_events];
        *e = (WriterEvent){ .attr = *attr };
        e->attr.size = PERF_DATA_ATTR_SIZE;
        if (name && !(e->name = strdup(name)))
                return -ENOMEM;
        if (n_ids > 0) {
                e->ids = malloc(n_ids * sizeof(uint64_t));
                if (!e->ids) {
                        free(e->name);
                        return -ENOMEM;
                }
                memcpy(e->ids, ids, n_ids * sizeof(uint64_t));
        }
        e->n_ids = n_ids;
        w->n_events++;
        return 0;
}

int perf_data_writer_set_feature(PerfDataWriter *w, PerfDataFeature feat, const void *data, size_t size) {
        if ((unsigned) feat == 0 || (unsigned) feat >= _PERF_DATA_FEAT_MAX ||
            feat == PERF_DATA_FEAT_EVENT_DESC || feat == PERF_DATA_FEAT_AUXTRACE)
                return -EINVAL;
        if (w->pipe && w->data_started)
                return -EBUSY;
        buffer_clear(&w->features[feat]);
        w->has_feature[feat] = true;
        return buffer_append(&w->features[feat], data, size);
}

/* ---- output ---- */

static int out_flush(PerfDataWriter *w) {
        int r;

        if (w->error < 0)
                return w->error;
        if (w->batch.size == 0)
                return 0;
        if (w->pipe)
                r = loop_write(w->fd, w->batch.data, w->batch.size);
        else {
                size_t done = 0;
                r = 0;
                while (done < w->batch.size) {
                        ssize_t k = pwrite(w->fd, w->batch.data + done, w->batch.size - done,
                                           (off_t) (w->pos - w->batch.size + done));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0) {
                                r = k < 0 ? -errno : -EIO;
                                break;
                        }
                        done += (size_t) k;
                }
        }
        buffer_clear(&w->batch);
        if (r < 0)
                w->error = r;
        return r;
}

/* Queue bytes at w->pos. Large blocks skip the batch. */
static int out_write(PerfDataWriter *w, const void *p, size_t n) {
        int r;

        if (w->error < 0)
                return w->error;
        if (n == 0)
                return 0;
        if (n >= WRITE_BATCH) {
                r = out_flush(w);
                if (r < 0)
                        return r;
                if (w->pipe)
                        r = loop_write(w->fd, p, n);
                else {
                        const uint8_t *q = p;
                        size_t done = 0;
                        r = 0;
                        while (done < n) {
                                ssize_t k = pwrite(w->fd, q + done, n - done, (off_t) (w->pos + done));
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k <= 0) {
                                        r = k < 0 ? -errno : -EIO;
                                        break;
                                }
                                done += (size_t) k;
                        }
                }
                if (r < 0)
                        return (w->error = r);
                w->pos += n;
                return 0;
        }
        r = buffer_append(&w->batch, p, n);
        if (r < 0)
                return r;
        w->pos += n;
        return w->batch.size >= WRITE_BATCH ? out_flush(w) : 0;
}

static int out_zero(PerfDataWriter *w, size_t n) {
        static const uint8_t zero[8] = {};

        assert(n <= sizeof(zero));
        return n > 0 ? out_write(w, zero, n) : 0;
}

/* Pipe mode: a HEADER_FEATURE record per feature perf reads there. */
static int pipe_write_features(PerfDataWriter *w) {
        int r;

        for (unsigned f = 1; f < _PERF_DATA_FEAT_MAX; f++) {
                struct perf_event_header h = { .type = PERF_DATA_RECORD_HEADER_FEATURE };
                uint64_t feat = f;
                Buffer *c = &w->features[f];

                if (!w->has_feature[f])
                        continue;
                if (f == PERF_DATA_FEAT_BUILD_ID) {
                        /* perf reads build-ids in pipe mode only as
                         * HEADER_BUILD_ID records: the feature's entries with
                         * their type set. */
                        for (size_t off = 0; off + sizeof(h) <= c->size;) {
                                struct perf_event_header bh;

                                memcpy(&bh, c->data + off, sizeof(bh));
                                if (bh.size < sizeof(bh) || bh.size > c->size - off)
                                        return -EINVAL;
                                bh.type = PERF_DATA_RECORD_HEADER_BUILD_ID;
                                r = out_write(w, &bh, sizeof(bh));
                                if (r >= 0)
                                        r = out_write(w, c->data + off + sizeof(bh), bh.size - sizeof(bh));
                                if (r < 0)
                                        return r;
                                off += bh.size;
                        }
                        continue;
                }
                /* Unpadded, as perf writes them (the next record may
                 * start 4-aligned: pipe readers copy records out). */
                if (sizeof(h) + sizeof(feat) + c->size > PERF_RECORD_MAX_SIZE)
                        return -E2BIG;
                h.size = (uint16_t) (sizeof(h) + sizeof(feat) + c->size);
                r = out_write(w, &h, sizeof(h));
                if (r >= 0)
                        r = out_write(w, &feat, sizeof(feat));
                if (r >= 0)
                        r = out_write(w, c->data, c->size);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int begin_data(PerfDataWriter *w) {
        int r;

        if (w->data_started)
                return 0;
        w->data_started = true;

        if (w->pipe) {
                uint64_t hdr[2] = { PERF_DATA_MAGIC, PERF_PIPE_HEADER_SIZE };

                w->pos = 0;
                r = out_write(w, hdr, sizeof(hdr));
                for (size_t i = 0; r >= 0 && i < w->n_events; i++) {
                        const WriterEvent *e = &w->events[i];
                        struct perf_event_header h = {
                                .type = PERF_DATA_RECORD_HEADER_ATTR,
                                .size = (uint16_t) (sizeof(h) + PERF_DATA_ATTR_SIZE + 8 * e->n_ids),
                        };
                        r = out_write(w, &h, sizeof(h));
                        if (r >= 0)
                                r = out_write(w, &e->attr, PERF_DATA_ATTR_SIZE);
                        if (r >= 0 && e->n_ids > 0)
                                r = out_write(w, e->ids, 8 * e->n_ids);
                }
                if (r >= 0)
                        r = pipe_write_features(w);
                return r;
        }

        /* File mode: ids, then the attrs pointing at them, then data. */
        w->pos = sizeof(PerfFileHeader);
        uint64_t ids_at = w->pos;
        for (size_t i = 0; i < w->n_events; i++) {
                r = out_write(w, w->events[i].ids, 8 * w->events[i].n_ids);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < w->n_events; i++) {
                const WriterEvent *e = &w->events[i];
                PerfFileSection ids = { .offset = ids_at, .size = 8 * e->n_ids };

                r = out_write(w, &e->attr, PERF_DATA_ATTR_SIZE);
                if (r >= 0)
                        r = out_write(w, &ids, sizeof(ids));
                if (r < 0)
                        return r;
                ids_at += ids.size;
        }
        w->data_offset = w->pos;
        return 0;
}

int perf_data_writer_add_record(PerfDataWriter *w, const void *record, size_t size) {
        struct perf_event_header h;
        int r;

        if (w->finished)
                return -ESTALE;
        if (size < sizeof(h))
                return -EINVAL;
        memcpy(&h, record, sizeof(h));
        if (h.size != size || h.type == PERF_DATA_RECORD_AUXTRACE)
                return -EINVAL;
        r = begin_data(w);
        if (r < 0)
                return r;
        return out_write(w, record, size);
}

int perf_data_writer_add_auxtrace(PerfDataWriter *w, uint32_t idx, uint32_t cpu, uint32_t tid,
                                  uint64_t offset, uint64_t reference, const void *data, size_t size) {
        size_t pad = ALIGN_TO(size, (size_t) 8) - size;
        PerfAuxtraceRecord rec = {
                .header = { .type = PERF_DATA_RECORD_AUXTRACE, .size = sizeof(PerfAuxtraceRecord) },
                .size = size + pad,
                .offset = offset,
                .reference = reference,
                .idx = idx,
                .tid = tid,
                .cpu = cpu,
        };
        AuxIndexEntry *l;
        int r;

        if (w->finished)
                return -ESTALE;
        r = begin_data(w);
        if (r < 0)
                return r;
        if (!w->pipe) {
                l = reallocarray(w->index, w->n_index + 1, sizeof(AuxIndexEntry));
                if (!l)
                        return -ENOMEM;
                w->index = l;
                /* sz is the record header's size: perf checks the two agree. */
                w->index[w->n_index++] = (AuxIndexEntry){ .file_offset = w->pos, .sz = sizeof(rec) };
        }
        r = out_write(w, &rec, sizeof(rec));
        if (r >= 0 && size > 0)
                r = out_write(w, data, size);
        if (r >= 0)
                r = out_zero(w, pad);
        return r;
}

static int build_event_desc(PerfDataWriter *w, Buffer *b) {
        uint32_t nr = (uint32_t) w->n_events, sz = PERF_DATA_ATTR_SIZE;
        int r;

        r = buffer_append(b, &nr, sizeof(nr));
        if (r >= 0)
                r = buffer_append(b, &sz, sizeof(sz));
        for (size_t i = 0; r >= 0 && i < w->n_events; i++) {
                const WriterEvent *e = &w->events[i];
                uint32_t n = (uint32_t) e->n_ids;

                r = buffer_append(b, &e->attr, PERF_DATA_ATTR_SIZE);
                if (r >= 0)
                        r = buffer_append(b, &n, sizeof(n));
                if (r >= 0)
                        r = perf_data_feature_append_string(b, e->name ?: "");
                if (r >= 0 && n > 0)
                        r = buffer_append(b, e->ids, 8 * e->n_ids);
        }
        return r;
}

int perf_data_writer_finish(PerfDataWriter *w) {
        _cleanup_buffer_ Buffer desc = BUFFER_NULL, aux = BUFFER_NULL;
        PerfFileHeader hdr = {
                .magic = PERF_DATA_MAGIC,
                .size = sizeof(PerfFileHeader),
                .attr_size = PERF_DATA_ATTR_SIZE + sizeof(PerfFileSection),
        };
        const Buffer *content[_PERF_DATA_FEAT_MAX] = {};
        PerfFileSection *secs = NULL;
        size_t n_secs = 0;
        uint64_t at;
        int r;

        if (w->finished)
                return -ESTALE;
        r = begin_data(w);
        if (r < 0)
                return r;
        w->finished = true;
        if (w->pipe)
                return out_flush(w);

        hdr.attrs = (PerfFileSection){
                .offset = w->data_offset - w->n_events * hdr.attr_size,
                .size = w->n_events * hdr.attr_size,
        };
        hdr.data = (PerfFileSection){ .offset = w->data_offset, .size = w->pos - w->data_offset };

        for (unsigned f = 1; f < _PERF_DATA_FEAT_MAX; f++)
                if (w->has_feature[f])
                        content[f] = &w->features[f];
        if (w->n_events > 0) {
                r = build_event_desc(w, &desc);
                if (r < 0)
                        return r;
                content[PERF_DATA_FEAT_EVENT_DESC] = &desc;
        }
        if (w->n_index > 0) {
                uint64_t n = w->n_index;
                r = buffer_append(&aux, &n, sizeof(n));
                if (r >= 0)
                        r = buffer_append(&aux, w->index, w->n_index * sizeof(AuxIndexEntry));
                if (r < 0)
                        return r;
                content[PERF_DATA_FEAT_AUXTRACE] = &aux;
        }

        for (unsigned f = 1; f < _PERF_DATA_FEAT_MAX; f++)
                if (content[f]) {
                        hdr.adds_features[f / 64] |= UINT64_C(1) << (f % 64);
                        n_secs++;
                }
        secs = calloc(MAX(n_secs, (size_t) 1), sizeof(PerfFileSection));
        if (!secs)
                return -ENOMEM;
        /* Feature index right after the data (perf finds it there), then
         * each feature's bytes in bit order. */
        at = w->pos + n_secs * sizeof(PerfFileSection);
        for (unsigned f = 1, i = 0; f < _PERF_DATA_FEAT_MAX; f++)
                if (content[f]) {
                        secs[i++] = (PerfFileSection){ .offset = at, .size = content[f]->size };
                        at += content[f]->size;
                }
        r = out_write(w, secs, n_secs * sizeof(PerfFileSection));
        free(secs);
        for (unsigned f = 1; r >= 0 && f < _PERF_DATA_FEAT_MAX; f++)
                if (content[f])
                        r = out_write(w, content[f]->data, content[f]->size);
        if (r >= 0)
                r = out_flush(w);
        if (r < 0)
                return r;

        if (pwrite(w->fd, &hdr, sizeof(hdr), 0) != (ssize_t) sizeof(hdr))
                return (w->error = errno > 0 ? -errno : -EIO);
        return 0;
}
