/* SPDX-License-Identifier: MIT */

/*
 * Every byte through libipt's packet decoder, PSBs where the truth says;
 * and the side-band against what the CPUs did.
 */

#include "check-internal.h"

/* Packets */

int synth_check_packets(const SynthResult *res, SynthCheckStats *stats, char **ret_error) {
        SynthCheckStats dummy = {};

        if (!stats)
                stats = &dummy;
        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];
                const SynthTruthMark *mark = NULL;
                struct pt_packet_decoder *dec;
                struct pt_config cfg;
                uint64_t off = 0, expect = 0, first = 0;
                size_t psb_event = 0;
                int status;

                config_init(res, c, &cfg);
                dec = pt_pkt_alloc_decoder(&cfg);
                if (!dec)
                        return -ENOMEM;
                status = pt_pkt_sync_forward(dec);
                if (status < 0) {
                        pt_pkt_free_decoder(dec);
                        /* A ring smaller than the PSB period may hold none. */
                        if (status == -pte_eos && synth_truth_window(c->truth, c->window_start, &mark) < 0)
                                continue;
                        return check_fail(ret_error, "cpu%u: no PSB in %zu bytes: %s", c->cpu, c->aux_size,
                                          pt_errstr(pt_errcode(status)));
                }
                (void)pt_pkt_get_offset(dec, &first);
                expect = first;
                if (synth_truth_window(c->truth, c->window_start, &mark) >= 0) {
                        if (mark->offset - c->window_start != first) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error,
                                                  "cpu%u: first PSB at 0x%" PRIx64
                                                  ", the truth says 0x%" PRIx64,
                                                  c->cpu, first, mark->offset - c->window_start);
                        }
                        psb_event = mark->event_idx;
                }
                for (;;) {
                        struct pt_packet pkt;

                        (void)pt_pkt_get_offset(dec, &off);
                        status = pt_pkt_next(dec, &pkt, sizeof pkt);
                        if (status == -pte_eos) {
                                /* The snapshot cuts the last packet at most. */
                                if (off != c->aux_size && c->aux_size - off > 16) {
                                        pt_pkt_free_decoder(dec);
                                        return check_fail(ret_error,
                                                          "cpu%u: %" PRIu64 " bytes left at the end", c->cpu,
                                                          c->aux_size - off);
                                }
                                break;
                        }
                        if (status < 0) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error, "cpu%u: packet error at 0x%" PRIx64 ": %s",
                                                  c->cpu, off, pt_errstr(pt_errcode(status)));
                        }
                        if (off != expect) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error, "cpu%u: gap before the packet at 0x%" PRIx64,
                                                  c->cpu, off);
                        }
                        expect = off + pkt.size;
                        check_count_packet(stats, &pkt);
                        if (pkt.type == ppt_psb) {
                                stats->psbs++;
                                /* Each PSB is one the truth lists. */
                                while (psb_event < c->truth->n_events &&
                                       c->truth->events[psb_event].kind != SYNTH_EVENT_PSB)
                                        psb_event++;
                                if (!mark || psb_event >= c->truth->n_events ||
                                    c->truth->events[psb_event].a != c->window_start + off) {
                                        pt_pkt_free_decoder(dec);
                                        return check_fail(ret_error,
                                                          "cpu%u: PSB at 0x%" PRIx64 " is not in the truth",
                                                          c->cpu, off);
                                }
                                psb_event++;
                        }
                }
                stats->bytes += c->aux_size - first;
                pt_pkt_free_decoder(dec);
        }
        return 0;
}

/* Side-band */

int synth_check_sideband(const SynthResult *res, char **ret_error) {
        PerfRecordStream s;
        const void *rec;
        size_t size, *next_switch;
        uint64_t last_time = 0, n = 0;
        int r;

        next_switch = calloc(res->n_cpus, sizeof *next_switch);
        if (!next_switch)
                return -ENOMEM;
        perf_record_stream_init(&s, res->sideband, res->sideband_size);
        while ((r = perf_record_stream_next(&s, &rec, &size)) > 0) {
                PerfRecord pr;
                const SynthCpuResult *c;

                n++;
                r = perf_record_parse(rec, size, SYNTH_SAMPLE_TYPE, true, &pr);
                if (r < 0) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " does not parse: %s", n,
                                       strerror(-r));
                        break;
                }
                if (!pr.has_sample_id || pr.sid.cpu >= res->n_cpus) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " lacks a valid sample_id", n);
                        break;
                }
                if (pr.sid.time < last_time) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " goes back in time", n);
                        break;
                }
                last_time = pr.sid.time;
                if (pr.type != PERF_RECORD_SWITCH_CPU_WIDE)
                        continue;
                c = &res->cpus[pr.sid.cpu];
                /* As Linux writes a switch (TRUTH.md, "Side-band"): the out
                 * record, naming the next thread, at or before the CPU's
                 * swap; the in record, in the next thread, at or after it. */
                if (pr.switch_.out) {
                        const SynthSwitchLog *sw;

                        if (next_switch[pr.sid.cpu] >= c->n_switches) {
                                r = check_fail(ret_error, "cpu%u: side-band has a switch the CPU did not make",
                                               c->cpu);
                                break;
                        }
                        sw = &c->switches[next_switch[pr.sid.cpu]++];
                        if (pr.switch_.next_prev_tid != sw->tid ||
                            pr.sid.time > perf_tsc_to_time(&res->conversion, sw->tsc)) {
                                r = check_fail(ret_error,
                                               "cpu%u: side-band switch out to %" PRIu32 " at %" PRIu64
                                               " but the CPU switched to %" PRIu32 " at %" PRIu64,
                                               c->cpu, pr.switch_.next_prev_tid, pr.sid.time, sw->tid,
                                               perf_tsc_to_time(&res->conversion, sw->tsc));
                                break;
                        }
                } else {
                        const SynthSwitchLog *sw =
                                next_switch[pr.sid.cpu] > 0 ? &c->switches[next_switch[pr.sid.cpu] - 1] : NULL;

                        if (!sw || pr.sid.tid != sw->tid ||
                            pr.sid.time < perf_tsc_to_time(&res->conversion, sw->tsc)) {
                                r = check_fail(ret_error,
                                               "cpu%u: side-band switch in of %" PRIu32 " at %" PRIu64
                                               " does not follow the CPU's switch to %" PRIu32,
                                               c->cpu, pr.sid.tid, pr.sid.time, sw ? sw->tid : 0);
                                break;
                        }
                }
        }
        if (r == 0)
                for (size_t i = 0; i < res->n_cpus; i++)
                        if (next_switch[i] != res->cpus[i].n_switches) {
                                r = check_fail(ret_error, "cpu%zu: %zu switches missing from the side-band",
                                               i, res->cpus[i].n_switches - next_switch[i]);
                                break;
                        }
        if (r == 0 && n != res->n_records)
                r = check_fail(ret_error, "side-band has %" PRIu64 " records, expected %" PRIu64, n,
                               res->n_records);
        free(next_switch);
        return r < 0 ? r : 0;
}
