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

/* CPUs libipt 2.0.5's pt_cpu_errata() does not know, with the errata
 * libipt's current table gives them: intel/libipt libipt/src/pt_config.c,
 * pt_cpu_errata(), at commit 8978561f (January 2026), which added them
 * in "support 6/207" (c91ee4fa), "support 6/186, 6/204 and 6/221"
 * (45d74c4f), "support 6/189, 6/197 and 6/198" (cc0074c9), "support 19/1"
 * (cb0dc172) and "support 18/1, 18/3, and 6/213" (e7ae2d75); each from
 * the specification update of that processor. SKL014 is not among them:
 * "skl014 fixed on recent processors" (d1c66a87). CPUs libipt 2.0.5 knows
 * keep libipt's answer. Models are listed up to the first 0. */
static const struct {
        uint16_t family;
        unsigned flags;
        uint8_t models[12];
} table[] = {
        { 6, E_BDM70 | E_SKD022 | E_SKZ84, { 0xcf, 0xad, 0xae } },
        { 6, E_BDM70 | E_SKD022 | E_APL11, { 0xba, 0xb7, 0xc5, 0xc6, 0xb5, 0xaa, 0xac, 0xbd, 0xcc, 0xd5 } },
        { 6, E_APL11, { 0xb6, 0xaf, 0xdd } },
        { 18, E_BDM70 | E_SKD022 | E_APL11, { 0x01, 0x03 } },
        { 19, E_BDM70 | E_SKD022 | E_SKZ84, { 0x01 } },
};

static unsigned table_flags(uint16_t family, uint8_t model) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                for (size_t j = 0; table[i].family == family && j < ELEMENTSOF(table[i].models) && table[i].models[j];
                     j++)
                        if (table[i].models[j] == model)
                                return table[i].flags;
        return 0;
}

int decode_errata_for_cpu(const struct pt_cpu *cpu, struct pt_errata *ret) {
        unsigned flags;

        assert(cpu);
        assert(ret);

        if (pt_cpu_errata(ret, cpu) >= 0)
                return DECODE_ERRATA_LIBIPT;
        memset(ret, 0, sizeof(*ret));
        if (cpu->vendor != pcv_intel)
                return -ENOENT;
        flags = table_flags(cpu->family, cpu->model);
        if (flags == 0)
                return -ENOENT;
        ret->bdm70 = !!(flags & E_BDM70);
        ret->skd022 = !!(flags & E_SKD022);
        ret->skz84 = !!(flags & E_SKZ84);
        ret->apl11 = !!(flags & E_APL11);
        return DECODE_ERRATA_OWN_TABLE;
}

