/* SPDX-License-Identifier: MIT */

/*
 * Output: the synthesized stream buffered and handed to the PMU in whole
 * packets.
 */

#include "daemon/sim/source/internal.h"

uint64_t sim_cpu_tsc(const SimCpu *c) {
        return synth_cpu_tsc(&c->sc);
}

void sim_out_sink(void *userdata, const uint8_t *p, size_t n) {
        SimCpu *c = userdata;
        uint64_t end;

        if (c->sink_error < 0)
                return;
        if (c->out.size == c->out_head)
                c->out_first_tsc = sim_cpu_tsc(c);
        if (buffer_append(&c->out, p, n) < 0) {
                c->sink_error = -ENOMEM;
                return;
        }
        end = c->out_off + (c->out.size - c->out_head);
        if (c->n_bounds == c->a_bounds) {
                size_t na = MAX(c->a_bounds * 2, (size_t)256);
                uint64_t *a;

                if (c->bounds_head > 0) {
                        memmove(c->bounds, c->bounds + c->bounds_head,
                                (c->n_bounds - c->bounds_head) * sizeof *a);
                        c->n_bounds -= c->bounds_head;
                        c->bounds_head = 0;
                }
                if (c->n_bounds == c->a_bounds) {
                        a = realloc(c->bounds, na * sizeof *a);
                        if (!a) {
                                c->sink_error = -ENOMEM;
                                return;
                        }
                        c->bounds = a;
                        c->a_bounds = na;
                }
        }
        c->bounds[c->n_bounds++] = end;
}

size_t sim_out_pending(const SimCpu *c) {
        return c->out.size - c->out_head;
}

void sim_out_reset(SimCpu *c, uint64_t off) {
        buffer_clear(&c->out);
        c->out_head = 0;
        c->out_off = off;
        c->n_bounds = c->bounds_head = 0;
        c->sink_error = 0;
}

/* The longest prefix of whole packets of p[0..n) not longer than max. */
static size_t packet_prefix(const uint8_t *p, size_t n, size_t max) {
        struct pt_packet_decoder *dec;
        struct pt_config cfg;
        size_t good = 0;

        pt_config_init(&cfg);
        cfg.begin = (uint8_t *)p;
        cfg.end = (uint8_t *)p + n;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return 0;
        if (pt_pkt_sync_set(dec, 0) >= 0)
                for (;;) {
                        struct pt_packet pkt;
                        int r = pt_pkt_next(dec, &pkt, sizeof pkt);

                        if (r <= 0 || good + (size_t)r > max)
                                break;
                        good += (size_t)r;
                }
        pt_pkt_free_decoder(dec);
        return good;
}

ssize_t sim_out_take(SimCpu *c, uint8_t *buf, size_t max) {
        size_t avail = sim_out_pending(c), n = 0;
        uint64_t limit;

        if (avail == 0 || max == 0)
                return 0;
        if (avail < max && !c->fresh && !c->stopped &&
            sim_cpu_tsc(c) - MIN(sim_cpu_tsc(c), c->out_first_tsc) < HOLD)
                return 0;
        limit = c->out_off + MIN(avail, max);
        while (c->bounds_head < c->n_bounds && c->bounds[c->bounds_head] <= c->out_off)
                c->bounds_head++;
        for (size_t i = c->bounds_head; i < c->n_bounds && c->bounds[i] <= limit; i++)
                n = (size_t)(c->bounds[i] - c->out_off);
        if (n == 0) {
                /* A chunk longer than max: cut it where a packet ends. */
                n = packet_prefix(c->out.data + c->out_head, avail, max);
                if (n == 0)
                        return max >= avail ? -EBADMSG : 0;
        }
        memcpy(buf, c->out.data + c->out_head, n);
        c->out_head += n;
        c->out_off += n;
        if (c->out_head == c->out.size) {
                buffer_clear(&c->out);
                c->out_head = 0;
        } else if (c->out_head >= 65536 && c->out_head * 2 >= c->out.size) {
                memmove(c->out.data, c->out.data + c->out_head, c->out.size - c->out_head);
                c->out.size -= c->out_head;
                c->out_head = 0;
        }
        c->stats.bytes += n;
        return (ssize_t)n;
}
