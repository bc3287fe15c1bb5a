/* SPDX-License-Identifier: MIT */

#include "client/decode/addr-filters.h"
#include "common/basic/string-util.h"

/* Where a mapping puts a file range, as the kernel's
 * perf_addr_filter_vma_adjust() (kernel/events/core.c) does for the VMA:
 * false when the mapping holds none of it. */
static bool place_in_mapping(const DecodeAddrFilter *f, const DecodeMapping *m, uint64_t *ret_start,
                             uint64_t *ret_size) {
        uint64_t vma_size = m->end - m->start, off = m->pgoff;

        if (f->start > off + vma_size || f->start + f->size <= off)
                return false;
        if (f->start < off) {
                *ret_start = m->start;
                *ret_size = MIN(vma_size, f->size - (off - f->start));
        } else {
                *ret_start = m->start + f->start - off;
                *ret_size = MIN(m->end - *ret_start, f->size);
        }
        return true;
}

/* A file range: where every mapping of the file puts it, when they agree.
 * Not mapped at all: 0/0, the kernel's IA32_RTIT_ADDRn_A/B then
 * (arch/x86/events/intel/pt.c, pt_event_addr_filters_sync()). */
static int place_file_range(const DecodeAddrFilter *f, const DecodeContext *ctx, uint64_t *ret_a,
                            uint64_t *ret_b) {
        bool found = false;
        uint64_t a = 0, size = 0, key;
        void *value;

        for (size_t i = 0; u64map_next(&ctx->processes, &i, &key, &value);) {
                const DecodeProcess *p = value;

                for (size_t j = 0; j < p->n_maps; j++) {
                        uint64_t s, n;

                        if (!p->maps[j].filename || !streq(p->maps[j].filename, f->file) ||
                            !place_in_mapping(f, &p->maps[j], &s, &n))
                                continue;
                        if (found && (s != a || n != size))
                                return -ENXIO;
                        found = true;
                        a = s;
                        size = n;
                }
        }
        *ret_a = found ? a : 0;
        *ret_b = found ? a + size - 1 : 0;
        return 0;
}

int decode_addr_filters_config(const DecodeInput *in, const DecodeContext *ctx, struct pt_conf_addr_filter *ret,
                               char **ret_note) {
        struct pt_conf_addr_filter c = {};
        uint64_t *ab[DECODE_ADDR_FILTERS_MAX][2] = {
                { &c.addr0_a, &c.addr0_b },
                { &c.addr1_a, &c.addr1_b },
                { &c.addr2_a, &c.addr2_b },
                { &c.addr3_a, &c.addr3_b },
        };

        assert(in->n_addr_filters <= DECODE_ADDR_FILTERS_MAX);
        *ret = c;
        if (in->n_addr_filters == 0)
                return 0;
        for (size_t i = 0; i < in->n_addr_filters; i++) {
                const DecodeAddrFilter *f = &in->addr_filters[i];
                /* IA32_RTIT_CTL.ADDRn_CFG: 1 FilterEn, 2 TraceStop. */
                unsigned cfg = f->stop ? 2 : 1;

                if (f->file) {
                        if (place_file_range(f, ctx, ab[i][0], ab[i][1]) < 0)
                                return set_error_message(-ENXIO, ret_note,
                                                         "the address filter in %s lies at different addresses in "
                                                         "different processes: libipt takes one, so its SKL014 "
                                                         "workaround is off",
                                                         f->file);
                } else {
                        *ab[i][0] = f->start;
                        *ab[i][1] = f->start + f->size - 1;
                }
                switch (i) {
                case 0:
                        c.config.ctl.addr0_cfg = cfg;
                        break;
                case 1:
                        c.config.ctl.addr1_cfg = cfg;
                        break;
                case 2:
                        c.config.ctl.addr2_cfg = cfg;
                        break;
                default:
                        c.config.ctl.addr3_cfg = cfg;
                        break;
                }
        }
        *ret = c;
        return 1;
}
