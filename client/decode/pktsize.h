/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The size and type of the packet at pos, for the packets a whole-trace
 * walk meets nearly every time (TNT, TIP and its kin, FUP, PAD, MTC, TSC,
 * CYC, CBR, PSBEND, OVF, PIP), read by the SDM's encodings (Vol. 3C,
 * "Intel Processor Trace", "Packet Descriptions") without libipt's
 * per-packet calls. 0 for everything else, and wherever libipt's
 * pt_pkt_next() (libipt 2.0.5: pt_df_fetch() and the pt_pkt_read_*()
 * of src/pt_packet.c) would fail: a packet cut by the end, a reserved
 * IP compression, a TNT without its stop bit, a CYC too long. The caller
 * then asks libipt itself, so a walk that uses this gives what libipt's
 * packet decoder gives, packet for packet (test-decode-pktsize and
 * fuzz-decode-paths check that against libipt on every offset).
 */

#include <intel-pt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* IP bytes by the 3-bit IP compression (IPBytes); -1: reserved. */
static inline int decode_pkt_ip_bytes(unsigned ipc) {
        static const int8_t bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };
        return bytes[ipc & 7];
}

static inline size_t decode_pkt_size(const uint8_t *pos, const uint8_t *end, enum pt_packet_type *ret_type) {
        size_t avail = (size_t) (end - pos), n;
        uint8_t opc;

        if (avail == 0)
                return 0;
        opc = pos[0];
        switch (opc) {
        case 0x00:
                *ret_type = ppt_pad;
                return 1;
        case 0x19: /* TSC */
                n = 8;
                *ret_type = ppt_tsc;
                break;
        case 0x59: /* MTC */
                n = 2;
                *ret_type = ppt_mtc;
                break;
        case 0x99: /* MODE: libipt checks the leaf */
                return 0;
        case 0x02: /* extended */
                if (avail < 2)
                        return 0;
                switch (pos[1]) {
                case 0x23:
                        n = 2;
                        *ret_type = ppt_psbend;
                        break;
                case 0x03:
                        n = 4;
                        *ret_type = ppt_cbr;
                        break;
                case 0xf3:
                        n = 2;
                        *ret_type = ppt_ovf;
                        break;
                case 0x43:
                        n = 8;
                        *ret_type = ppt_pip;
                        break;
                case 0xa3: { /* TNT-64: a 48-bit payload with its stop bit */
                        uint64_t payload = 0;

                        if (avail < 8)
                                return 0;
                        for (int i = 0; i < 6; i++)
                                payload |= (uint64_t) pos[2 + i] << (8 * i);
                        if (payload <= 1)
                                return 0;
                        *ret_type = ppt_tnt_64;
                        return 8;
                }
                default:
                        return 0;
                }
                break;
        default:
                if ((opc & 0x01) == 0) { /* TNT-8: the opcode's bits above bit 0, 0x02 and 0x00 aside */
                        *ret_type = ppt_tnt_8;
                        return 1;
                }
                if ((opc & 0x03) == 0x03) { /* CYC: more bytes while bit 2, then bit 0, says so */
                        size_t k = 0;
                        bool ext = opc & 0x04;

                        while (ext) {
                                if (1 + k >= avail || k == 8)
                                        return 0; /* libipt: cut (eos), or longer than 64 bits (bad packet) */
                                ext = pos[1 + k] & 0x01;
                                k++;
                        }
                        *ret_type = ppt_cyc;
                        return 1 + k;
                }
                switch (opc & 0x1f) {
                case 0x0d: *ret_type = ppt_tip; break;
                case 0x1d: *ret_type = ppt_fup; break;
                case 0x11: *ret_type = ppt_tip_pge; break;
                case 0x01: *ret_type = ppt_tip_pgd; break;
                default: return 0;
                }
                if (decode_pkt_ip_bytes(opc >> 5) < 0)
                        return 0;
                n = 1 + (size_t) decode_pkt_ip_bytes(opc >> 5);
                break;
        }
        return n <= avail ? n : 0;
}
