#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The BPF objects' licence string matches the project's (issue 18): the
# project is MIT (LICENSE), and the objects say "Dual MIT/GPL", which the
# kernel's license_is_gpl_compatible() accepts for the GPL-only helpers.
set -euo pipefail
src=$1 build=$2
grep -q "MIT License" "$src/LICENSE" || { echo "FAIL: LICENSE is not the MIT licence any more: update this test"; exit 1; }
command -v readelf >/dev/null || { echo "SKIP: readelf is not installed"; exit 77; }
n=0
for o in "$build"/daemon/trigger/bpf/*.bpf.o; do
    case $o in *.tmp.bpf.o) continue ;; esac
    [ -e "$o" ] || continue
    lic=$(readelf -p license "$o" | sed -n 's/^ *\[ *0\] *//p')
    [ "$lic" = "Dual MIT/GPL" ] || { echo "FAIL: $(basename "$o") says licence '$lic', not 'Dual MIT/GPL'"; exit 1; }
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "SKIP: no BPF objects built"; exit 77; }
echo "$n BPF objects say Dual MIT/GPL"
