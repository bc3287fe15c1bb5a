/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <string.h>

#include "client/decode/errata.h"
#include "common/basic/macro.h"

enum {
        E_BDM70 = 1 << 0,
        E_SKD022 = 1 << 1,
        E_SKZ84 = 1 << 2,
        E_APL11 = 1 << 3,
};

typedef struct CpuErrata {
        uint16_t family;
        uint8_t model;
        unsigned flags;
} CpuErrata;

/* CPUs libipt 2.0.5's pt_cpu_errata() does not know, with the errata
 * libipt's current table gives them: intel/libipt libipt/src/pt_config.c,
 * pt_cpu_errata(), at commit 8978561f (January 2026), which added them
 * in "support 6/207" (c91ee4fa), "support 6/186, 6/204 and 6/221"
 * (45d74c4f), "support 6/189, 6/197 and 6/198" (cc0074c9), "support 19/1"
 * (cb0dc172) and "support 18/1, 18/3, and 6/213" (e7ae2d75); each from
 * the specification update of that processor. SKL014 is not among them:
 * "skl014 fixed on recent processors" (d1c66a87). CPUs libipt 2.0.5 knows
 * keep libipt's answer. */
static const CpuErrata table[] = {
        /* family 6: server cores */
        { 6, 0xcf, E_BDM70 | E_SKD022 | E_SKZ84 },
        { 6, 0xad, E_BDM70 | E_SKD022 | E_SKZ84 },
        { 6, 0xae, E_BDM70 | E_SKD022 | E_SKZ84 },
        /* family 6: client cores */
        { 6, 0xba, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xb7, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xc5, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xc6, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xb5, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xaa, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xac, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xbd, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xcc, E_BDM70 | E_SKD022 | E_APL11 },
        { 6, 0xd5, E_BDM70 | E_SKD022 | E_APL11 },
        /* family 6: Atom cores */
        { 6, 0xb6, E_APL11 },
        { 6, 0xaf, E_APL11 },
        { 6, 0xdd, E_APL11 },
        /* families 18 and 19 */
        { 18, 0x01, E_BDM70 | E_SKD022 | E_APL11 },
        { 18, 0x03, E_BDM70 | E_SKD022 | E_APL11 },
        { 19, 0x01, E_BDM70 | E_SKD022 | E_SKZ84 },
};

int decode_errata_for_cpu(const struct pt_cpu *cpu, struct pt_errata *ret) {
        assert(cpu);
        assert(ret);

        if (pt_cpu_errata(ret, cpu) >= 0)
                return DECODE_ERRATA_LIBIPT;
        memset(ret, 0, sizeof(*ret));
        if (cpu->vendor != pcv_intel)
                return -ENOENT;
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                if (table[i].family != cpu->family || table[i].model != cpu->model)
                        continue;
                ret->bdm70 = !!(table[i].flags & E_BDM70);
                ret->skd022 = !!(table[i].flags & E_SKD022);
                ret->skz84 = !!(table[i].flags & E_SKZ84);
                ret->apl11 = !!(table[i].flags & E_APL11);
                return DECODE_ERRATA_OWN_TABLE;
        }
        return -ENOENT;
}
