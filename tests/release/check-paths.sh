#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-paths.sh SOURCE_ROOT BUILD_ROOT FILE...
#
# No path of the source or build tree in the programs we install: such a
# path breaks an installed copy once the tree is gone (the trace
# synthesizer's kernel image was once found that way) and makes two builds
# of one commit differ (tests/release/check-reproducible.sh). The compiler
# flags that keep them out are in the top-level meson.build.
set -euo pipefail
src=$1 build=$2
shift 2

command -v strings >/dev/null || { echo "SKIP: no strings (binutils)"; exit 77; }
bad=0
for f in "$@"; do
    [ -f "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }
    for root in "$src" "$build"; do
        if hits=$(strings -a "$f" | grep -F -- "$root"); then
            echo "FAIL: $(basename "$f") contains $root:" >&2
            echo "$hits" | sort -u | head -n 20 | sed 's/^/  /' >&2
            bad=1
        fi
    done
done
[ "$bad" -eq 0 ] || exit 1
echo "no source or build path in: $*"
