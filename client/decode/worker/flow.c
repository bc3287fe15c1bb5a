/* SPDX-License-Identifier: MIT */

/* The two flows behind one set of calls (client/decode/worker/flow.h). */

#include "client/decode/worker/fastblk.h"

int decode_flow_new(DecodeFlowKind kind, const struct pt_config *cfg, FastCache *cache, DecodeFlow *ret) {
        if (kind == DECODE_FLOW_FAST) {
                FastBlk *b;
                int r;

                if (!cache)
                        return -EOPNOTSUPP;
                r = fast_blk_new(cfg, cache, &b);
                if (r < 0)
                        return r;
                *ret = (DecodeFlow){
                        .kind = kind, .fast = b, .qry = fast_blk_query(b), .fast_class = fast_blk_class(b)
                };
                return 0;
        }
        *ret = (DecodeFlow){ .kind = DECODE_FLOW_LIBIPT, .blk = pt_blk_alloc_decoder(cfg) };
        return ret->blk ? 0 : -ENOMEM;
}

void decode_flow_free(DecodeFlow *f) {
        if (f->kind == DECODE_FLOW_FAST)
                fast_blk_free(f->fast);
        else
                pt_blk_free_decoder(f->blk);
        *f = (DecodeFlow){};
}

int decode_flow_sync_set(DecodeFlow *f, uint64_t offset) {
        return f->kind == DECODE_FLOW_FAST ? fast_blk_sync_set(f->fast, offset) : pt_blk_sync_set(f->blk, offset);
}

int decode_flow_sync_forward(DecodeFlow *f) {
        return f->kind == DECODE_FLOW_FAST ? fast_blk_sync_forward(f->fast) : pt_blk_sync_forward(f->blk);
}

int decode_flow_next(DecodeFlow *f, struct pt_block *b) {
        return f->kind == DECODE_FLOW_FAST ? fast_blk_next(f->fast, b) : pt_blk_next(f->blk, b, sizeof(*b));
}

int decode_flow_event(DecodeFlow *f, struct pt_event *ev) {
        return f->kind == DECODE_FLOW_FAST ? fast_blk_event(f->fast, ev) : pt_blk_event(f->blk, ev, sizeof(*ev));
}

int decode_flow_time(DecodeFlow *f, uint64_t *tsc, uint32_t *lost_mtc, uint32_t *lost_cyc) {
        if (f->kind == DECODE_FLOW_FAST)
                return pt_qry_time(fast_blk_query(f->fast), tsc, lost_mtc, lost_cyc);
        return pt_blk_time(f->blk, tsc, lost_mtc, lost_cyc);
}

int decode_flow_core_bus_ratio(DecodeFlow *f, uint32_t *cbr) {
        if (f->kind == DECODE_FLOW_FAST)
                return pt_qry_core_bus_ratio(fast_blk_query(f->fast), cbr);
        return pt_blk_core_bus_ratio(f->blk, cbr);
}

int decode_flow_get_sync_offset(const DecodeFlow *f, uint64_t *ret) {
        if (f->kind == DECODE_FLOW_FAST)
                return pt_qry_get_sync_offset(fast_blk_query(f->fast), ret);
        return pt_blk_get_sync_offset(f->blk, ret);
}

int decode_flow_set_image(DecodeFlow *f, struct pt_image *img, const DecodeView *v) {
        if (f->kind == DECODE_FLOW_FAST) {
                fast_blk_set_view(f->fast, v);
                return 0;
        }
        return pt_blk_set_image(f->blk, img) < 0 ? -EIO : 0;
}
