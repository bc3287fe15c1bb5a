/* SPDX-License-Identifier: MIT */

#include "common/basic/cursor.h"
#include "common/perf/record.h"

#define TAKE(c, field) cursor_take(c, &(field), sizeof(field))

/* A NUL-terminated string occupying the rest of the cursor (padding
 * included). */
static bool cur_string(Cursor *c, const char **ret) {
        if (c->left == 0 || !memchr(c->p, 0, c->left))
                return false;
        *ret = (const char *) c->p;
        c->p += c->left;
        c->left = 0;
        return true;
}

size_t perf_sample_id_size(uint64_t sample_type) {
        size_t n = 0;

        if (sample_type & PERF_SAMPLE_TID)
                n += 8;
        if (sample_type & PERF_SAMPLE_TIME)
                n += 8;
        if (sample_type & PERF_SAMPLE_ID)
                n += 8;
        if (sample_type & PERF_SAMPLE_STREAM_ID)
                n += 8;
        if (sample_type & PERF_SAMPLE_CPU)
                n += 8;
        if (sample_type & PERF_SAMPLE_IDENTIFIER)
                n += 8;
        return n;
}

int perf_record_time(const void *buf, size_t size, uint64_t sample_type, uint64_t *ret) {
        struct perf_event_header h;
        const uint8_t *p;
        size_t sid_size;

        if (size < sizeof(h))
                return -EBADMSG;
        memcpy(&h, buf, sizeof(h));
        if (h.size != size)
                return -EBADMSG;
        if (!(sample_type & PERF_SAMPLE_TIME) || h.type == PERF_RECORD_SAMPLE || h.type >= PERF_RECORD_MAX)
                return -ENODATA;
        sid_size = perf_sample_id_size(sample_type);
        if (size - sizeof(h) < sid_size)
                return -EBADMSG;
        /* The trailer's order: TID, TIME, ... */
        p = (const uint8_t *) buf + size - sid_size + (sample_type & PERF_SAMPLE_TID ? 8 : 0);
        memcpy(ret, p, sizeof(*ret));
        return 0;
}

static void parse_sample_id(const uint8_t *p, uint64_t sample_type, PerfSampleId *sid) {
        Cursor c = { p, perf_sample_id_size(sample_type) };
        uint32_t res;

        *sid = (PerfSampleId){ .sample_type = sample_type & PERF_SAMPLE_ID_MASK };
        if (sample_type & PERF_SAMPLE_TID) {
                (void) TAKE(&c, sid->pid);
                (void) TAKE(&c, sid->tid);
        }
        if (sample_type & PERF_SAMPLE_TIME)
                (void) TAKE(&c, sid->time);
        if (sample_type & PERF_SAMPLE_ID)
                (void) TAKE(&c, sid->id);
        if (sample_type & PERF_SAMPLE_STREAM_ID)
                (void) TAKE(&c, sid->stream_id);
        if (sample_type & PERF_SAMPLE_CPU) {
                (void) TAKE(&c, sid->cpu);
                (void) TAKE(&c, res);
        }
        if (sample_type & PERF_SAMPLE_IDENTIFIER)
                (void) TAKE(&c, sid->id);
}

const char *perf_record_type_to_string(uint32_t type) {
        static const char *const names[] = {
                [PERF_RECORD_MMAP] = "MMAP",
                [PERF_RECORD_LOST] = "LOST",
                [PERF_RECORD_COMM] = "COMM",
                [PERF_RECORD_EXIT] = "EXIT",
                [PERF_RECORD_THROTTLE] = "THROTTLE",
                [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
                [PERF_RECORD_FORK] = "FORK",
                [PERF_RECORD_READ] = "READ",
                [PERF_RECORD_SAMPLE] = "SAMPLE",
                [PERF_RECORD_MMAP2] = "MMAP2",
                [PERF_RECORD_AUX] = "AUX",
                [PERF_RECORD_ITRACE_START] = "ITRACE_START",
                [PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
                [PERF_RECORD_SWITCH] = "SWITCH",
                [PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
                [PERF_RECORD_NAMESPACES] = "NAMESPACES",
                [PERF_RECORD_KSYMBOL] = "KSYMBOL",
                [PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
                [PERF_RECORD_CGROUP] = "CGROUP",
                [PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
                [PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
        };

        if (type < ELEMENTSOF(names) && names[type])
                return names[type];
        return "UNKNOWN";
}

int perf_record_parse(const void *buf, size_t size, uint64_t sample_type, bool sample_id_all,
                      PerfRecord *ret) {
        struct perf_event_header h;
        size_t sid_size = 0;
        Cursor c;

        if (size < sizeof(h))
                return -EBADMSG;
        memcpy(&h, buf, sizeof(h));
        if (h.size != size || h.size < sizeof(h))
                return -EBADMSG;

        *ret = (PerfRecord){ .type = h.type, .misc = h.misc, .size = h.size };

        /* SAMPLE records carry their fields at the front, not a trailer; we
         * never request samples, so they are only identified. */
        if (sample_id_all && h.type != PERF_RECORD_SAMPLE && h.type < PERF_RECORD_MAX) {
                sid_size = perf_sample_id_size(sample_type);
                if (size - sizeof(h) < sid_size)
                        return -EBADMSG;
                if (sid_size > 0) {
                        parse_sample_id((const uint8_t *) buf + size - sid_size, sample_type, &ret->sid);
                        ret->has_sample_id = true;
                }
        }

        c = (Cursor){ (const uint8_t *) buf + sizeof(h), size - sizeof(h) - sid_size };

        switch (h.type) {
        case PERF_RECORD_MMAP:
                if (!TAKE(&c, ret->mmap.pid) || !TAKE(&c, ret->mmap.tid) || !TAKE(&c, ret->mmap.addr) ||
                    !TAKE(&c, ret->mmap.len) || !TAKE(&c, ret->mmap.pgoff) || !cur_string(&c, &ret->mmap.filename))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_MMAP2: {
                if (!TAKE(&c, ret->mmap2.pid) || !TAKE(&c, ret->mmap2.tid) || !TAKE(&c, ret->mmap2.addr) ||
                    !TAKE(&c, ret->mmap2.len) || !TAKE(&c, ret->mmap2.pgoff))
                        return -EBADMSG;
                if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
                        uint8_t res1;
                        uint16_t res2;
                        ret->mmap2.has_build_id = true;
                        if (!TAKE(&c, ret->mmap2.build_id_size) || !TAKE(&c, res1) || !TAKE(&c, res2) ||
                            !cursor_take(&c, ret->mmap2.build_id, PERF_BUILD_ID_MAX))
                                return -EBADMSG;
                        if (ret->mmap2.build_id_size > PERF_BUILD_ID_MAX)
                                return -EBADMSG;
                } else if (!TAKE(&c, ret->mmap2.maj) || !TAKE(&c, ret->mmap2.min) || !TAKE(&c, ret->mmap2.ino) ||
                           !TAKE(&c, ret->mmap2.ino_generation))
                        return -EBADMSG;
                if (!TAKE(&c, ret->mmap2.prot) || !TAKE(&c, ret->mmap2.flags) ||
                    !cur_string(&c, &ret->mmap2.filename))
                        return -EBADMSG;
                return 0;
        }

        case PERF_RECORD_COMM:
                ret->comm.exec = h.misc & PERF_RECORD_MISC_COMM_EXEC;
                if (!TAKE(&c, ret->comm.pid) || !TAKE(&c, ret->comm.tid) || !cur_string(&c, &ret->comm.comm))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                if (!TAKE(&c, ret->fork.pid) || !TAKE(&c, ret->fork.ppid) || !TAKE(&c, ret->fork.tid) ||
                    !TAKE(&c, ret->fork.ptid) || !TAKE(&c, ret->fork.time))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_LOST:
                if (!TAKE(&c, ret->lost.id) || !TAKE(&c, ret->lost.lost))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_LOST_SAMPLES:
                if (!TAKE(&c, ret->lost_samples.lost))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_SWITCH:
        case PERF_RECORD_SWITCH_CPU_WIDE:
                ret->switch_.out = h.misc & PERF_RECORD_MISC_SWITCH_OUT;
                ret->switch_.preempt = h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
                if (h.type == PERF_RECORD_SWITCH_CPU_WIDE &&
                    (!TAKE(&c, ret->switch_.next_prev_pid) || !TAKE(&c, ret->switch_.next_prev_tid)))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_AUX:
                if (!TAKE(&c, ret->aux.aux_offset) || !TAKE(&c, ret->aux.aux_size) || !TAKE(&c, ret->aux.flags))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_ITRACE_START:
                if (!TAKE(&c, ret->itrace_start.pid) || !TAKE(&c, ret->itrace_start.tid))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_KSYMBOL:
                if (!TAKE(&c, ret->ksymbol.addr) || !TAKE(&c, ret->ksymbol.len) || !TAKE(&c, ret->ksymbol.ksym_type) ||
                    !TAKE(&c, ret->ksymbol.flags) || !cur_string(&c, &ret->ksymbol.name))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_BPF_EVENT:
                if (!TAKE(&c, ret->bpf_event.type) || !TAKE(&c, ret->bpf_event.flags) || !TAKE(&c, ret->bpf_event.id) ||
                    !cursor_take(&c, ret->bpf_event.tag, sizeof(ret->bpf_event.tag)))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_TEXT_POKE:
                if (!TAKE(&c, ret->text_poke.addr) || !TAKE(&c, ret->text_poke.old_len) ||
                    !TAKE(&c, ret->text_poke.new_len))
                        return -EBADMSG;
                ret->text_poke.old_bytes = c.p;
                if (!cursor_take(&c, NULL, ret->text_poke.old_len))
                        return -EBADMSG;
                ret->text_poke.new_bytes = c.p;
                if (!cursor_take(&c, NULL, ret->text_poke.new_len))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_CGROUP:
                if (!TAKE(&c, ret->cgroup.id) || !cur_string(&c, &ret->cgroup.path))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_NAMESPACES: {
                uint64_t bytes;
                if (!TAKE(&c, ret->namespaces.pid) || !TAKE(&c, ret->namespaces.tid) ||
                    !TAKE(&c, ret->namespaces.nr_namespaces))
                        return -EBADMSG;
                if (MUL_OVERFLOW(ret->namespaces.nr_namespaces, (uint64_t) sizeof(struct perf_ns_link_info), &bytes) ||
                    bytes > c.left)
                        return -EBADMSG;
                ret->namespaces.links = (const struct perf_ns_link_info *) c.p;
                return 0;
        }

        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
                if (!TAKE(&c, ret->throttle.time) || !TAKE(&c, ret->throttle.id) || !TAKE(&c, ret->throttle.stream_id))
                        return -EBADMSG;
                return 0;

        case PERF_RECORD_AUX_OUTPUT_HW_ID:
                if (!TAKE(&c, ret->aux_output_hw_id.hw_id))
                        return -EBADMSG;
                return 0;

        default:
                return -EOPNOTSUPP;
        }
}

/* ---- building ---- */

static int append_sample_id(Buffer *b, const PerfSampleId *sid) {
        uint64_t st = sid->sample_type;
        uint32_t zero = 0;
        int r = 0;

        if (st & PERF_SAMPLE_TID) {
                r = buffer_append(b, &sid->pid, 4);
                if (r >= 0)
                        r = buffer_append(b, &sid->tid, 4);
        }
        if (r >= 0 && (st & PERF_SAMPLE_TIME))
                r = buffer_append(b, &sid->time, 8);
        if (r >= 0 && (st & PERF_SAMPLE_ID))
                r = buffer_append(b, &sid->id, 8);
        if (r >= 0 && (st & PERF_SAMPLE_STREAM_ID))
                r = buffer_append(b, &sid->stream_id, 8);
        if (r >= 0 && (st & PERF_SAMPLE_CPU)) {
                r = buffer_append(b, &sid->cpu, 4);
                if (r >= 0)
                        r = buffer_append(b, &zero, 4);
        }
        if (r >= 0 && (st & PERF_SAMPLE_IDENTIFIER))
                r = buffer_append(b, &sid->id, 8);
        return r;
}

/* Start a record: remember where its header is. */
static int record_begin(Buffer *b, uint32_t type, uint16_t misc, size_t *ret_start) {
        struct perf_event_header h = { .type = type, .misc = misc };

        *ret_start = b->size;
        return buffer_append(b, &h, sizeof(h));
}

/* Pad the body to 8 bytes, add the trailer and fix up the size. On failure
 * the partial record is removed, so the buffer stays a valid stream. */
static int record_end(Buffer *b, size_t start, const PerfSampleId *sid, int r) {
        size_t body = b->size - start, size;

        if (r >= 0 && body % 8 != 0 && !buffer_append_zero(b, 8 - body % 8))
                r = -ENOMEM;
        if (r >= 0 && sid)
                r = append_sample_id(b, sid);
        size = b->size - start;
        if (r >= 0 && size > PERF_RECORD_MAX_SIZE)
                r = -EINVAL;
        if (r < 0) {
                b->size = start;
                return r;
        }
        uint16_t s16 = (uint16_t) size;
        memcpy(b->data + start + offsetof(struct perf_event_header, size), &s16, sizeof(s16));
        return 0;
}

static int append_string(Buffer *b, const char *s, size_t max) {
        size_t l = strlen(s);

        if (l >= max)
                return -EINVAL;
        return buffer_append(b, s, l + 1);
}

#define APPEND(b, v) buffer_append(b, &(v), sizeof(v))

int perf_record_append_mmap2(Buffer *b, uint16_t misc, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
                             uint64_t pgoff, const uint8_t *build_id, size_t build_id_size, uint32_t maj,
                             uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags, const char *filename,
                             const PerfSampleId *sid) {
        size_t start;
        int r;

        if (build_id_size > PERF_BUILD_ID_MAX)
                return -EINVAL;
        if (build_id)
                misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
        else
                misc &= (uint16_t) ~PERF_RECORD_MISC_MMAP_BUILD_ID;

        r = record_begin(b, PERF_RECORD_MMAP2, misc, &start);
        if (r < 0)
                return r;
        r = APPEND(b, pid);
        if (r >= 0)
                r = APPEND(b, tid);
        if (r >= 0)
                r = APPEND(b, addr);
        if (r >= 0)
                r = APPEND(b, len);
        if (r >= 0)
                r = APPEND(b, pgoff);
        if (r >= 0 && build_id) {
                uint8_t hdr[4] = { (uint8_t) build_id_size, 0, 0, 0 }, id[PERF_BUILD_ID_MAX] = {};
                memcpy(id, build_id, build_id_size);
                r = buffer_append(b, hdr, sizeof(hdr));
                if (r >= 0)
                        r = buffer_append(b, id, sizeof(id));
        } else if (r >= 0) {
                uint64_t gen = 0;
                r = APPEND(b, maj);
                if (r >= 0)
                        r = APPEND(b, min);
                if (r >= 0)
                        r = APPEND(b, ino);
                if (r >= 0)
                        r = APPEND(b, gen);
        }
        if (r >= 0)
                r = APPEND(b, prot);
        if (r >= 0)
                r = APPEND(b, flags);
        if (r >= 0)
                r = append_string(b, filename, 4096);
        return record_end(b, start, sid, r);
}

int perf_record_append_comm(Buffer *b, bool exec, uint32_t pid, uint32_t tid, const char *comm,
                            const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, pid);
        if (r >= 0)
                r = APPEND(b, tid);
        if (r >= 0)
                r = append_string(b, comm, PERF_COMM_MAX);
        return record_end(b, start, sid, r);
}

int perf_record_append_fork(Buffer *b, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
                            uint64_t time, const PerfSampleId *sid) {
        size_t start;
        int r;

        if (type != PERF_RECORD_FORK && type != PERF_RECORD_EXIT)
                return -EINVAL;
        r = record_begin(b, type, 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, pid);
        if (r >= 0)
                r = APPEND(b, ppid);
        if (r >= 0)
                r = APPEND(b, tid);
        if (r >= 0)
                r = APPEND(b, ptid);
        if (r >= 0)
                r = APPEND(b, time);
        return record_end(b, start, sid, r);
}

static uint16_t switch_misc(bool out, bool preempt) {
        return (uint16_t) ((out ? PERF_RECORD_MISC_SWITCH_OUT : 0) |
                           (out && preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0));
}

int perf_record_append_switch_cpu_wide(Buffer *b, bool out, bool preempt, uint32_t next_prev_pid,
                                       uint32_t next_prev_tid, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_SWITCH_CPU_WIDE, switch_misc(out, preempt), &start);
        if (r < 0)
                return r;
        r = APPEND(b, next_prev_pid);
        if (r >= 0)
                r = APPEND(b, next_prev_tid);
        return record_end(b, start, sid, r);
}

int perf_record_append_switch(Buffer *b, bool out, bool preempt, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_SWITCH, switch_misc(out, preempt), &start);
        if (r < 0)
                return r;
        return record_end(b, start, sid, 0);
}

int perf_record_append_itrace_start(Buffer *b, uint32_t pid, uint32_t tid, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_ITRACE_START, 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, pid);
        if (r >= 0)
                r = APPEND(b, tid);
        return record_end(b, start, sid, r);
}

int perf_record_append_aux(Buffer *b, uint64_t aux_offset, uint64_t aux_size, uint64_t flags,
                           const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_AUX, 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, aux_offset);
        if (r >= 0)
                r = APPEND(b, aux_size);
        if (r >= 0)
                r = APPEND(b, flags);
        return record_end(b, start, sid, r);
}

int perf_record_append_lost(Buffer *b, uint64_t id, uint64_t lost, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_LOST, 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, id);
        if (r >= 0)
                r = APPEND(b, lost);
        return record_end(b, start, sid, r);
}

int perf_record_append_ksymbol(Buffer *b, uint64_t addr, uint32_t len, uint16_t ksym_type, uint16_t flags,
                               const char *name, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_KSYMBOL, 0, &start);
        if (r < 0)
                return r;
        r = APPEND(b, addr);
        if (r >= 0)
                r = APPEND(b, len);
        if (r >= 0)
                r = APPEND(b, ksym_type);
        if (r >= 0)
                r = APPEND(b, flags);
        if (r >= 0)
                r = append_string(b, name, 512); /* KSYM_NAME_LEN */
        return record_end(b, start, sid, r);
}

int perf_record_append_text_poke(Buffer *b, uint64_t addr, const uint8_t *old_bytes, uint16_t old_len,
                                 const uint8_t *new_bytes, uint16_t new_len, const PerfSampleId *sid) {
        size_t start;
        int r;

        r = record_begin(b, PERF_RECORD_TEXT_POKE, PERF_RECORD_MISC_KERNEL, &start);
        if (r < 0)
                return r;
        r = APPEND(b, addr);
        if (r >= 0)
                r = APPEND(b, old_len);
        if (r >= 0)
                r = APPEND(b, new_len);
        if (r >= 0)
                r = buffer_append(b, old_bytes, old_len);
        if (r >= 0)
                r = buffer_append(b, new_bytes, new_len);
        return record_end(b, start, sid, r);
}

int perf_record_append_raw(Buffer *b, const void *record, size_t size) {
        struct perf_event_header h;

        if (size < sizeof(h))
                return -EINVAL;
        memcpy(&h, record, sizeof(h));
        if (h.size != size)
                return -EINVAL;
        return buffer_append(b, record, size);
}

int perf_record_stream_next(PerfRecordStream *s, const void **ret, size_t *ret_size) {
        struct perf_event_header h;

        if (s->offset == s->size)
                return 0;
        if (s->size - s->offset < sizeof(h))
                return -EBADMSG;
        memcpy(&h, s->data + s->offset, sizeof(h));
        if (h.size < sizeof(h) || h.size > s->size - s->offset)
                return -EBADMSG;
        *ret = s->data + s->offset;
        *ret_size = h.size;
        s->offset += h.size;
        return 1;
}

void perf_sample_id_parse(const void *p, uint64_t sample_type, PerfSampleId *ret) {
        parse_sample_id(p, sample_type, ret);
}

int perf_sample_id_append(Buffer *b, const PerfSampleId *sid) {
        return append_sample_id(b, sid);
}
